"""conda environment files: the reader against a real YAML parser, its problems, and the G1 verdicts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FIXTURES, run_envcheck

from envcheck import sources
from envcheck.sources import ReadOptions
from envcheck.sources.conda import parse, read

EXAMPLES = sorted(FIXTURES.glob("rules/*/*/environment.yml"))

SHAPES = """\
# leading comment
name: "quoted name"   # trailing comment
channels: [pytorch, 'nvidia', conda-forge]
variables:
  CUDA_HOME: /usr/local/cuda
dependencies:
- python=3.11   # at the key's indentation, as conda env export writes it
- 'pytorch::pytorch=2.4.1'
- "cuda-version >=12,<13"
- pip
- pip:
  - --extra-index-url https://download.pytorch.org/whl/cu121
  - "transformers==4.44.2"
  - flash-attn  # comment
prefix: /opt/conda/envs/x
"""


def _yaml_view(text: str) -> tuple[list[str], list[str], list[str]]:
    yaml = pytest.importorskip("yaml")  # pre-commit's own dependency: the oracle
    data = yaml.safe_load(text)
    deps = data.get("dependencies") or []
    pip = [item for d in deps if isinstance(d, dict) for item in d.get("pip", [])]
    return list(data.get("channels") or []), [d for d in deps if isinstance(d, str)], pip


@pytest.mark.parametrize("text", [SHAPES, *(p.read_text(encoding="utf-8") for p in EXAMPLES)],
                         ids=["shapes", *(str(p.relative_to(FIXTURES)) for p in EXAMPLES)])
def test_reader_agrees_with_a_yaml_parser(text: str) -> None:
    env = parse(text)
    assert not env.problems
    assert ([c for _, c in env.channels], [d for _, d in env.dependencies], [p for _, p in env.pip]) == _yaml_view(text)


def test_items_keep_their_lines() -> None:
    env = parse(SHAPES)
    assert dict((v, n) for n, v in env.dependencies)["cuda-version >=12,<13"] == 9
    assert [n for n, _ in env.pip] == [12, 13, 14]


def test_what_the_reader_does_not_take_is_a_problem_at_its_line(tmp_path: Path) -> None:
    """Nested mappings, lists and empty items are named with their line; the rest (anchors and tags
    included: the file is YAML) is still read."""
    path = tmp_path / "environment.yml"
    path.write_text("name: x\ndependencies:\n  - &anchor numpy\n  - {name: scipy}\n  - pytorch-cuda=12.1\n"
                    "  - pip:\n    - !!str torch\n    - [nested]\n    - transformers==4.57.1\n  -\n", encoding="utf-8")
    inv = read(path, ReadOptions())
    assert sorted(p.location.line for p in inv.problems if p.location) == [4, 8, 10]
    assert {p.name for p in inv.packages} == {"numpy", "pytorch-cuda", "torch", "transformers"}
    proc = run_envcheck("--format", "json", str(path))
    assert proc.returncode == 2  # ERROR findings for the unread lines, and the rest still judged
    rules = {f["rule"] for f in json.loads(proc.stdout)["targets"][0]["findings"]}
    assert {"input-error", "G1-cuda12-distribution"} <= rules


def test_not_an_environment_file(tmp_path: Path) -> None:
    path = tmp_path / "environment.yml"
    path.write_text("jobs:\n  build:\n    runs-on: ubuntu-latest\n", encoding="utf-8")
    inv = read(path, ReadOptions())
    assert [p.message for p in inv.problems] == ["environment.yml has no `dependencies:` list: not a conda environment file?"]


def test_detected_by_name_and_by_content(tmp_path: Path) -> None:
    named = tmp_path / "environment-gpu.yaml"
    named.write_text("name: x\ndependencies: [numpy]\n", encoding="utf-8")
    other = tmp_path / "deps.yml"
    other.write_text("name: x\nchannels: [conda-forge]\ndependencies:\n  - numpy\n", encoding="utf-8")
    workflow = tmp_path / "ci.yml"
    workflow.write_text("on: push\njobs: {}\n", encoding="utf-8")
    assert [sources.detect(p) for p in (named, other, workflow)] == ["conda", "conda", None]


def test_pip_includes_are_relative_to_the_environment_file(tmp_path: Path) -> None:
    (tmp_path / "requirements-gpu.txt").write_text("torch==2.5.1+cu121\n", encoding="utf-8")
    env = tmp_path / "environment.yml"
    env.write_text("name: x\ndependencies:\n  - python=3.11\n  - pip:\n    - -r requirements-gpu.txt\n", encoding="utf-8")
    proc = run_envcheck("--format", "json", str(env))
    found = json.loads(proc.stdout)["targets"][0]["findings"]
    hits = [f for f in found if f["rule"] == "G1-cuda12-local-version"]
    assert hits and hits[0]["location"]["path"].endswith("requirements-gpu.txt")


def test_conda_fix_names_the_cuda13_route() -> None:
    path = FIXTURES / "rules" / "G1-cuda12-distribution" / "positive" / "environment.yml"
    found = json.loads(run_envcheck("--format", "json", str(path)).stdout)["targets"][0]["findings"]
    fix = next(f["fix"] for f in found if f["rule"] == "G1-cuda12-distribution")
    assert "cu130" in fix and "cuda-version>=13" in fix and "conda-forge" in fix


HOSTILE = {
    "spaces": "dependencies:\n  - a" + " " * 2_000_000 + "b\n",
    "operators": "dependencies:\n  - a" + " >" * 500_000 + "\n",
    "quotes": "dependencies:\n  - " + "'" * 1_000_001 + "\n",
    "colons": "dependencies:\n  - " + "a:" * 1_000_000 + "\n",
    "many-items": "name: x\ndependencies:\n" + "  - numpy=1.0\n" * 200_000,
    "key-spaces": "dependencies" + " " * 2_000_000 + ":x\n",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_environment_files_finish_in_bounds(name: str, tmp_path: Path) -> None:
    """Each hostile shape is read in linear time (a regex with nested whitespace runs went quadratic)."""
    from bounded import run_envcheck_bounded

    path = tmp_path / "environment.yml"
    path.write_text(HOSTILE[name], encoding="utf-8")
    run = run_envcheck_bounded(str(path), "--format", "json", "--fail-on", "never")
    run.assert_within(seconds=10, rss_mb=300)
    assert run.returncode in (0, 2), run.stderr
    assert "internal error" not in run.stderr


def test_any_text_is_read_without_an_exception() -> None:
    """Property: whatever the text, the reader returns entries and problems (never raises)."""
    hypothesis = pytest.importorskip("hypothesis")
    from hypothesis import strategies as st

    pieces = st.sampled_from(["dependencies:", "channels:", "name: x", "  - ", "- ", "pip:", "  - pip:", "    - ",
                              "[a, b]", "'q'", '"q"', "#c", " # c", "&a", "*a", "::", ": ", "\n", "\t", "{", "}",
                              "cuda-version >=12,<13", "pytorch-cuda=12.1"])

    @hypothesis.settings(max_examples=300, deadline=None, database=None)
    @hypothesis.given(st.lists(st.one_of(pieces, st.text(max_size=8)), max_size=40))
    def check(parts: list[str]) -> None:
        env = parse("".join(parts))
        assert all(isinstance(line, int) and line >= 1 for line, _ in [*env.channels, *env.dependencies, *env.pip])

    check()
