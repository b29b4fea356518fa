"""The README and docs stay true: the README's first command works, docs/examples.md matches real output."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from tests.conftest import REPO, require


def _readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    block = text.split("```bash", 1)[1].split("```", 1)[0]
    return [line.split("#", 1)[0].strip() for line in block.strip().splitlines()]


def test_readme_starts_with_the_two_commands() -> None:
    run, test = _readme_commands()[:2]
    assert run.startswith("pip install . && envcheck ")
    assert test == "bash .ci/run"
    ci = (REPO / ".ci" / "run").read_text()
    assert "python3 -m pytest" in ci


def test_readme_first_command_on_the_shipped_examples() -> None:
    """Runs the part after `pip install . &&` with the installed console script, from the repo root."""
    exe = shutil.which("envcheck")
    require(exe is not None, "envcheck console script not installed")
    args = _readme_commands()[0].split("&&", 1)[1].split()[1:]
    proc = subprocess.run([exe, *args], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr  # the examples are meant to fail
    assert "Traceback" not in proc.stderr
    for gotcha in ("G1 FAIL", "G2 FAIL", "G9 FAIL", "ARCH FAIL"):
        assert gotcha in proc.stdout.splitlines()[-1], proc.stdout.splitlines()[-1]


def test_examples_doc_matches_real_output() -> None:
    env = dict(os.environ)
    proc = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, 'scripts'); import gen_examples_doc as g; print(g.render(), end='')"],
                          cwd=REPO, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    assert (REPO / "docs" / "examples.md").read_text() == proc.stdout, "docs/examples.md is stale: run `python scripts/gen_examples_doc.py`"


def test_every_example_has_its_expected_output_documented() -> None:
    doc = (REPO / "docs" / "examples.md").read_text()
    for path in sorted((REPO / "examples").rglob("*")):
        if path.is_file() and path.name != "requirements.in":
            assert f"`{path.relative_to(REPO)}`" in doc, path
    for path in sorted((REPO / "dockerfiles").glob("*/Dockerfile")):
        assert f"`{path.relative_to(REPO)}`" in doc, path
