"""The README and docs stay true: the README's first command works, docs/examples.md matches real output."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, offline_pip_env, require


def _readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    block = text.split("```bash", 1)[1].split("```", 1)[0]
    return [line.split("#", 1)[0].strip() for line in block.strip().splitlines()]


def test_readme_starts_with_the_two_commands() -> None:
    run, test = _readme_commands()[:2]
    # A virtualenv first: Debian's interpreter refuses `pip install .` outside one (PEP 668).
    assert run.startswith("python3 -m venv .venv && . .venv/bin/activate && pip install . && envcheck ")
    assert test == "bash .ci/run"
    ci = (REPO / ".ci" / "run").read_text()
    assert "python3 -m pytest" in ci


def _envcheck_args() -> list[str]:
    """The arguments of the first command's `envcheck` (after the install)."""
    return _readme_commands()[0].rsplit("&&", 1)[1].split()[1:]


def test_readme_first_command_on_the_shipped_examples() -> None:
    """Runs the `envcheck ...` part with the installed console script (next to this interpreter, in a
    virtualenv that is not activated, or on PATH), from the repo root."""
    beside = Path(sys.executable).parent / "envcheck"
    exe = str(beside) if beside.is_file() else shutil.which("envcheck")
    require(exe is not None, "envcheck console script not installed")
    args = _envcheck_args()
    proc = subprocess.run([exe, *args], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr  # the examples are meant to fail
    assert "Traceback" not in proc.stderr
    for gotcha in ("G1 FAIL", "G2 FAIL", "G9 FAIL", "ARCH FAIL"):
        assert gotcha in proc.stdout.splitlines()[-1], proc.stdout.splitlines()[-1]


@pytest.mark.slow
def test_readme_first_command_in_a_fresh_clone(tmp_path: Path) -> None:
    """The README's first line, verbatim, in a copy of the tracked files: a new virtualenv, `pip install .`
    into it, then the examples. Offline: pip finds the dependencies this interpreter already has and the
    build backend in virtualenv's wheels (conftest.offline_pip_env); nothing else is given to the command."""
    clone = tmp_path / "clone"
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    for name in filter(None, files.split("\0")):
        source = REPO / name
        if source.is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, clone / name, follow_symlinks=False)
    env = offline_pip_env(tmp_path / "dependencies")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"  # python3 = this interpreter
    env.pop("VIRTUAL_ENV", None)
    done = subprocess.run(["bash", "-c", _readme_commands()[0]], cwd=clone, capture_output=True, text=True,
                          timeout=600, env=env)
    assert (clone / ".venv" / "bin" / "envcheck").is_file(), done.stdout[-3000:] + done.stderr[-3000:]
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]  # the examples are meant to fail
    assert "Traceback" not in done.stderr
    assert done.stdout.splitlines()[-1].startswith("summary: ") and "G1 FAIL" in done.stdout.splitlines()[-1]


def test_readme_example_is_what_envcheck_prints() -> None:
    """The README's Example block, lines left out as `...`: every line shown is a line of the real output, in order."""
    block = (REPO / "README.md").read_text().split("## Example", 1)[1].split("```console\n", 1)[1].split("```", 1)[0]
    command, *shown = block.splitlines()
    proc = subprocess.run([sys.executable, "-m", "envcheck", *command.split()[2:]], cwd=REPO, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    real = iter(proc.stdout.splitlines())
    assert all(line in real for line in shown if line.strip() != "..."), proc.stdout


def test_readme_pre_commit_snippet_lists_every_hook() -> None:
    """The snippet shows every hook the repository publishes, and a rev of a form pre-commit accepts."""
    text = (REPO / "README.md").read_text()
    snippet = text.split("# .pre-commit-config.yaml", 1)[1].split("```", 1)[0]
    hooks = (REPO / ".pre-commit-hooks.yaml").read_text()
    published = re.findall(r"^- id: (\S+)", hooks, re.M)
    shown = re.findall(r"- id: (\S+)", snippet)
    assert published and shown == published
    rev = re.search(r"rev: (\S+)", snippet)
    assert rev is not None
    tags = subprocess.run(["git", "tag"], cwd=REPO, capture_output=True, text=True).stdout.split()
    assert re.fullmatch(r"[0-9a-f]{40}", rev.group(1)) or rev.group(1) in tags, rev.group(1)
    for page in sorted((REPO / "docs").glob("*.md")):  # the docs' snippets too (no release tag such as v0.1.0 exists)
        for other in re.findall(r"^\s*rev: (\S+)", page.read_text(encoding="utf-8"), re.M):
            assert re.fullmatch(r"[0-9a-f]{40}", other) or other in tags, f"{page.name}: rev: {other}"


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


def test_every_install_line_names_our_distribution() -> None:
    """`envcheck` on PyPI is an unrelated project: the distribution is envcheck-spark (the command and the
    import package stay `envcheck`), and no install line in the README, docs, action or messages names the
    other project (issue 26 item 18)."""
    import tomllib

    assert tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["name"] == "envcheck-spark"
    wrong = re.compile(r"""pip install\s+(?:-\S+\s+)*["']?envcheck(?![-\w])""")
    files = [REPO / "README.md", REPO / "action.yml", *(REPO / "docs").rglob("*.md"), *(REPO / "envcheck").rglob("*.py")]
    found = [f"{p.relative_to(REPO)}: {m.group(0)}" for p in files for m in wrong.finditer(p.read_text(encoding="utf-8"))]
    assert not found, found
    # nor envcheck-spark by its bare name: it is not on PyPI yet (a checkout, `@ URL`, or extras of an installed one)
    bare = re.compile(r"""pip install\s+(?:-\S+\s+)*["']?envcheck-spark["']?(?=\s|$)(?!\s+@)""", re.M)
    found = [f"{p.relative_to(REPO)}: {m.group(0)}" for p in files for m in bare.finditer(p.read_text(encoding="utf-8"))]
    assert not found, found
    assert "envcheck-spark" in (REPO / "README.md").read_text()
