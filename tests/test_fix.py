"""envcheck --fix / --diff (issue 17): certain, local edits as byte spans; formatting kept byte for byte.

Round trips over every example, recipe and positive rule fixture (fix, check again, fix again), generated
variants (comments, continuations, CRLF, markers, --hash), a property test that bytes outside the reported
spans never change, and the pre-commit hook with ``args: [--fix]``."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import test_dockerfile_hooks as hooks
from conftest import REPO, run_envcheck
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# Every example and recipe in the repository, and the positive input of every rule fixture.
TREES = ("examples", "dockerfiles", "fixtures/rules")


def _targets(root: Path) -> list[str]:
    out = [str(p.relative_to(root)) for p in sorted((root / "examples").iterdir())]
    out += [str(p.relative_to(root)) for p in sorted((root / "dockerfiles").iterdir()) if p.is_dir() and p.name != "test-images"]
    out += [str(p.relative_to(root)) for p in sorted((root / "fixtures" / "rules").glob("*/positive"))]
    return out


def _findings(stdout: str) -> list[dict[str, Any]]:
    report = json.loads(stdout)
    return [f for t in report["targets"] for f in t["findings"]]


def _applied(data: bytes, edits: list[dict[str, Any]]) -> bytes:
    """``data`` with the reported byte spans replaced, nothing else touched (what --fix must write)."""
    out, at = [], 0
    for e in sorted({(e["offset"], e["length"], e["replacement"]) for e in edits}):
        assert e[0] >= at, f"overlapping edits {edits}"
        out += [data[at:e[0]], e[2].encode("utf-8", "surrogateescape")]
        at = e[0] + e[1]
    return b"".join([*out, data[at:]])


@pytest.fixture(scope="module")
def repo_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fix-round-trip")
    for tree in TREES:
        shutil.copytree(REPO / tree, root / tree)
    return root


def test_round_trip_over_every_example_recipe_and_rule_fixture(repo_copy: Path) -> None:
    """Check (JSON edits), --fix, check again, --fix again: the file equals the original with exactly the
    reported spans replaced, the fixed findings are gone, and the second --fix changes nothing."""
    targets = _targets(repo_copy)
    before_files = {p: p.read_bytes() for tree in TREES for p in (repo_copy / tree).rglob("*") if p.is_file()}
    checked = run_envcheck("-f", "json", "--fail-on", "never", *targets, cwd=repo_copy, timeout=600)
    assert checked.returncode == 0, checked.stderr
    fixed_findings = [f for f in _findings(checked.stdout) if f.get("edits")]
    rules_fixed = {f["rule"] for f in fixed_findings}
    # each declared fix is exercised by the repository's own inputs
    assert {"G1-cuda12-index", "G1-cuda12-distribution", "G1-cuda12-local-version", "G7-torch-cuda-arch-list",
            "ARCH-base-platform", "G1-cuda12-base"} <= rules_fixed, rules_fixed
    edits_by_path: dict[Path, list[dict[str, Any]]] = {}
    for f in fixed_findings:
        for e in f["edits"]:
            edits_by_path.setdefault((repo_copy / e["path"]).resolve(), []).append(e)

    diff = run_envcheck("--diff", *targets, cwd=repo_copy, timeout=600)
    assert diff.returncode == 1 and diff.stdout.startswith("--- a/"), diff.stderr
    assert {p for p, data in before_files.items() if p.read_bytes() != data} == set(), "--diff wrote a file"

    fixed = run_envcheck("--fix", "--fail-on", "never", *targets, cwd=repo_copy, timeout=600)
    assert fixed.returncode == 0, fixed.stderr
    changed = {p.resolve() for p, data in before_files.items() if p.read_bytes() != data}
    assert changed == set(edits_by_path)
    for path, edits in edits_by_path.items():
        assert path.read_bytes() == _applied(before_files[path], edits), path

    again = run_envcheck("-f", "json", "--fail-on", "never", *targets, cwd=repo_copy, timeout=600)
    left = {(f["rule"], f["location"]["path"], f["location"].get("line")) for f in _findings(again.stdout)
            if f.get("location") and f["status"] in ("WARN", "FAIL", "ERROR")}
    for f in fixed_findings:
        assert (f["rule"], f["location"]["path"], f["location"]["line"]) not in left, f
    assert not [f for f in _findings(again.stdout) if f.get("edits")]
    second = run_envcheck("--diff", *targets, cwd=repo_copy, timeout=600)
    assert second.returncode == 0 and second.stdout == "", second.stdout


def _cli(*args: str, cwd: Path) -> tuple[int, str, str]:
    """The command line in this process (fast enough for the property test)."""
    from envcheck.cli import main

    out, err = io.StringIO(), io.StringIO()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
    finally:
        os.chdir(old)
    return code, out.getvalue(), err.getvalue()


# (written, fixed) pairs: the fix of each rule, in the forms users write.
REQUIREMENT_CASES = [
    ("--index-url https://download.pytorch.org/whl/cu128", "--index-url https://download.pytorch.org/whl/cu130"),
    ("--extra-index-url=https://download.pytorch.org/whl/cu126/  # torch", "--extra-index-url=https://download.pytorch.org/whl/cu130/  # torch"),
    ("torch==2.9.0+cu128", "torch==2.9.0+cu130"),
    ("Torch == 2.9.1+cu126 ; platform_machine == 'aarch64'", "Torch == 2.9.1+cu130 ; platform_machine == 'aarch64'"),
    ("nvidia_cublas_cu12==12.8.4.1  # from an x86 freeze", "nvidia-cublas>=13  # from an x86 freeze"),
    ("nvidia-cuda-runtime-cu12", "nvidia-cuda-runtime>=13"),
    ("nvidia-cudnn-cu12 ; sys_platform == 'linux'", "nvidia-cudnn-cu13 ; sys_platform == 'linux'"),
    ("cupy-cuda12x", "cupy-cuda13x"),
]


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
@pytest.mark.parametrize(("written", "expected"), REQUIREMENT_CASES)
def test_requirement_variants_keep_everything_but_the_span(tmp_path: Path, written: str, expected: str, newline: str) -> None:
    text = newline.join(["# pinned for the lab", written, "einops==0.8.1 \\", "    # a comment inside a continuation", ""])
    path = tmp_path / "requirements.txt"
    path.write_bytes(text.encode())
    code, out, err = _cli("--diff", "requirements.txt", cwd=tmp_path)
    assert code == 1 and f"+{expected}" in out.replace("\r", ""), (out, err)
    code, _, err = _cli("--fix", "--fail-on", "never", "requirements.txt", cwd=tmp_path)
    assert code == 0 and "fixed" in err
    assert path.read_bytes() == text.replace(written, expected).encode()
    assert _cli("--diff", "requirements.txt", cwd=tmp_path)[:2] == (0, "")


def test_a_requirement_with_hashes_is_refused_and_left_alone(tmp_path: Path) -> None:
    text = "torch==2.9.0+cu128 \\\n    --hash=sha256:" + "a" * 64 + "\nnvidia-cublas-cu12==12.8.4.1 --hash=sha256:" + "b" * 64 + "\n"
    path = tmp_path / "requirements.txt"
    path.write_text(text)
    _, out, _ = _cli("-f", "json", "requirements.txt", cwd=tmp_path)
    refused = [f for f in _findings(out) if f.get("fix_refused")]
    assert {f["rule"] for f in refused} == {"G1-cuda12-local-version", "G1-cuda12-distribution"}
    assert all("--hash" in f["fix_refused"] and not f.get("edits") for f in refused)
    assert _cli("--fix", "requirements.txt", cwd=tmp_path)[0] == 1
    assert path.read_text() == text


def test_an_index_and_the_torch_it_serves_on_another_line_are_one_finding_and_move_together(tmp_path: Path) -> None:
    text = "-r base.txt\n\n--extra-index-url https://download.pytorch.org/whl/cu129\ntorch==2.11.0+cu129\n"
    path = tmp_path / "requirements.txt"
    path.write_text(text)
    (tmp_path / "base.txt").write_text("einops==0.8.1\n")
    _, out, _ = _cli("-f", "json", "requirements.txt", cwd=tmp_path)
    g1 = [f for f in _findings(out) if f["rule"].startswith("G1-") and f["status"] == "FAIL"]
    assert [(f["rule"], f["location"]["line"]) for f in g1] == [("G1-cuda12-index", 3)]
    assert g1[0]["evidence"]["lines"] == [4] and "torch 2.11.0+cu129 on line 4" in g1[0]["message"]
    assert _cli("--fix", "--fail-on", "never", "requirements.txt", cwd=tmp_path)[0] == 0
    assert path.read_text() == text.replace("cu129", "cu130")
    assert _cli("--diff", "requirements.txt", cwd=tmp_path)[:2] == (0, "")


def test_nothing_without_a_certain_fix_is_touched(tmp_path: Path) -> None:
    """A torch with no cu130 build keeps its pin and its index (they move together, by hand); a pinned cupy is
    refused; an unsloth command that also installs transformers keeps its dependencies."""
    (tmp_path / "requirements.txt").write_text("--extra-index-url https://download.pytorch.org/whl/cu121\ntorch==2.5.1+cu121\ncupy-cuda12x==13.3.0\n")
    (tmp_path / "Dockerfile").write_text("FROM nvcr.io/nvidia/pytorch:25.11-py3\nRUN pip install unsloth transformers==4.57.1\n")
    _, out, _ = _cli("-f", "json", "--fail-on", "never", "requirements.txt", "Dockerfile", cwd=tmp_path)
    findings = _findings(out)
    assert not [f for f in findings if f.get("edits")]
    reasons = {f["rule"]: f["fix_refused"] for f in findings if f.get("fix_refused")}
    assert "torch==2.5.1+cu121" in reasons["G1-cuda12-index"] and "cupy-cuda13x" in reasons["G1-cuda12-distribution"]
    assert "transformers" in reasons["G9-unsloth-with-deps"]
    assert _cli("--diff", "requirements.txt", "Dockerfile", cwd=tmp_path)[:2] == (0, "")


DOCKERFILE_CASES = [
    ("FROM --platform=linux/amd64 nvcr.io/nvidia/pytorch:25.11-py3 AS base", "FROM nvcr.io/nvidia/pytorch:25.11-py3 AS base"),
    ("FROM nvcr.io/nvidia/pytorch:25.11-py3\nENV TORCH_CUDA_ARCH_LIST=\"8.0 9.0+PTX\"", "FROM nvcr.io/nvidia/pytorch:25.11-py3\nENV TORCH_CUDA_ARCH_LIST=\"8.0 9.0+PTX 12.1\""),
    ("FROM nvcr.io/nvidia/pytorch:25.11-py3\nENV TORCH_CUDA_ARCH_LIST=8.0 MAX_JOBS=4", "FROM nvcr.io/nvidia/pytorch:25.11-py3\nENV TORCH_CUDA_ARCH_LIST=8.0;12.1 MAX_JOBS=4"),
    ("FROM nvcr.io/nvidia/pytorch:25.11-py3\nRUN pip install \\\n    unsloth unsloth_zoo", "FROM nvcr.io/nvidia/pytorch:25.11-py3\nRUN pip install --no-deps \\\n    unsloth unsloth_zoo"),
    ("FROM nvidia/cuda:12.8.0-devel-ubuntu24.04", "FROM nvidia/cuda:13.0.1-devel-ubuntu24.04"),
    ("FROM nvcr.io/nvidia/cuda:12.6.3-runtime-ubuntu24.04 AS run", "FROM nvcr.io/nvidia/cuda:13.0.1-runtime-ubuntu24.04 AS run"),
    ("FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04", "FROM nvidia/cuda:13.0.1-runtime-ubuntu22.04"),
    ("FROM nvidia/cuda:12.1.1-devel-ubuntu22.04 AS build", "FROM nvidia/cuda:13.0.1-devel-ubuntu22.04 AS build"),
    ("FROM nvidia/cuda:12.8.0-cudnn-devel-ubuntu24.04", "FROM nvidia/cuda:13.0.1-cudnn-devel-ubuntu24.04"),
    ("FROM nvidia/cuda:12.6.3-cudnn-runtime-ubuntu22.04", "FROM nvidia/cuda:13.0.1-cudnn-runtime-ubuntu22.04"),
    ("FROM nvidia/cuda:12.3.2-cudnn9-runtime-ubuntu22.04", "FROM nvidia/cuda:13.0.1-cudnn-runtime-ubuntu22.04"),
    # a 'base' stage that compiles (a stage that uses none of its CUDA is INFO, left alone)
    ("FROM nvidia/cuda:12.2.2-base-ubuntu22.04\nRUN make", "FROM nvidia/cuda:13.0.1-base-ubuntu22.04\nRUN make"),
    ("FROM nvcr.io/nvidia/pytorch:25.11-py3\nRUN pip install nvidia-cublas-cu12 && \\\n    pip install cupy-cuda12x",
     "FROM nvcr.io/nvidia/pytorch:25.11-py3\nRUN pip install 'nvidia-cublas>=13' && \\\n    pip install cupy-cuda13x"),
]


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
@pytest.mark.parametrize(("written", "expected"), DOCKERFILE_CASES)
def test_dockerfile_variants(tmp_path: Path, written: str, expected: str, newline: str) -> None:
    tail = "# keep this comment\nRUN echo done  # and this\n"
    path = tmp_path / "Dockerfile"
    path.write_bytes((written + "\n" + tail).replace("\n", newline).encode())
    path.chmod(0o640)
    code, _, err = _cli("--fix", "--fail-on", "never", "Dockerfile", cwd=tmp_path)
    assert code == 0, err
    assert path.read_bytes() == (expected + "\n" + tail).replace("\n", newline).encode()
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert _cli("--diff", "Dockerfile", cwd=tmp_path)[:2] == (0, "")


def test_nvfp4_adds_the_arch_specific_target(tmp_path: Path) -> None:
    path = tmp_path / "Dockerfile"
    path.write_text("FROM nvcr.io/nvidia/pytorch:25.11-py3\nENV TORCH_CUDA_ARCH_LIST='8.0;9.0'\n")
    assert _cli("--fix", "--nvfp4", "--fail-on", "never", "Dockerfile", cwd=tmp_path)[0] == 0
    assert path.read_text().endswith("ENV TORCH_CUDA_ARCH_LIST='8.0;9.0;12.1;12.1a'\n")


def test_a_flash_attn_source_build_says_why_it_is_left(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("torch==2.9.0+cu130\n--extra-index-url https://download.pytorch.org/whl/cu130\nflash-attn==2.8.3\n")
    _, out, _ = _cli("-f", "json", "requirements.txt", cwd=tmp_path)
    [flash] = [f for f in _findings(out) if f["rule"] == "G2-flash-attn-build"]
    assert "removing flash-attn" in flash["fix_refused"] and not flash.get("edits")


def test_a_symlink_leading_outside_the_target_is_not_written(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    real = outside / "requirements.txt"
    real.write_text("cupy-cuda12x\n")
    project = tmp_path / "project"
    project.mkdir()
    (project / "requirements.txt").symlink_to(real)
    code, _, err = _cli("--fix", "requirements.txt", cwd=project)
    assert "symbolic link" in err and real.read_text() == "cupy-cuda12x\n"
    assert code == 1
    # a link that stays inside the target's folder is followed (the file is written, the link stays a link)
    (outside / "requirements-inner.txt").symlink_to(real)
    assert _cli("--fix", "--fail-on", "never", "requirements-inner.txt", cwd=outside)[0] == 0
    assert real.read_text() == "cupy-cuda13x\n" and (outside / "requirements-inner.txt").is_symlink()


def test_diff_exit_codes(tmp_path: Path) -> None:
    """--diff: 0 nothing to change, 1 something to change, 2 an unreadable target (the others still shown)."""
    (tmp_path / "requirements.txt").write_text("einops==0.8.1\n")
    assert _cli("--diff", "requirements.txt", cwd=tmp_path)[:2] == (0, "")
    (tmp_path / "Dockerfile").write_text("FROM --platform=linux/amd64 nvcr.io/nvidia/pytorch:25.11-py3\n")
    code, out, _ = _cli("--diff", "requirements.txt", "Dockerfile", cwd=tmp_path)
    assert code == 1 and "+FROM nvcr.io/nvidia/pytorch:25.11-py3" in out
    code, out, _ = _cli("--diff", "missing.txt", "Dockerfile", cwd=tmp_path)
    assert code == 2 and "+FROM nvcr.io/nvidia/pytorch:25.11-py3" in out
    assert (tmp_path / "Dockerfile").read_text().startswith("FROM --platform")


def test_a_diff_applies_with_git_apply_and_patch_for_relative_and_absolute_paths(tmp_path: Path) -> None:
    """--diff of an absolute path printed `a//tmp/x`, which `patch -p1` refuses as a dangerous name: its headers
    are what `git diff --no-index` writes (`a/tmp/x`), so the diff applies from / as a relative one applies from
    the folder envcheck ran in, with `git apply` or `patch -p1`, and gives what --fix writes."""
    text = "--extra-index-url https://download.pytorch.org/whl/cu126\ntorch==2.9.0+cu126\ncupy-cuda12x\n"
    req = tmp_path / "requirements.txt"
    req.write_text(text)
    assert _cli("--fix", "--fail-on", "never", "requirements.txt", cwd=tmp_path)[0] == 0
    fixed = req.read_text()
    assert fixed != text
    tools = [["git", "apply"], *([["patch", "-p1", "--quiet"]] if shutil.which("patch") else [])]
    for tool in tools:
        for name, root in (("requirements.txt", tmp_path), (str(req), Path("/"))):
            req.write_text(text)
            code, diff, _ = _cli("--diff", name, cwd=tmp_path)
            assert code == 1 and diff.startswith(f"--- a/{name.lstrip('/')}\n+++ b/{name.lstrip('/')}\n"), diff
            done = subprocess.run(tool, input=diff, text=True, capture_output=True, cwd=root, timeout=60)
            assert done.returncode == 0 and req.read_text() == fixed, (tool, name, done.stderr)


def test_sarif_and_json_carry_the_edits(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_bytes(b"# \xc3\xa9t\xc3\xa9\r\ncupy-cuda12x ; platform_machine == 'aarch64'\r\n")
    _, out, _ = _cli("-f", "sarif", "requirements.txt", cwd=tmp_path)
    [result] = [r for r in json.loads(out)["runs"][0]["results"] if r.get("fixes")]
    [change] = result["fixes"][0]["artifactChanges"]
    assert change["artifactLocation"]["uri"] == "requirements.txt"
    assert change["replacements"] == [{"deletedRegion": {"byteOffset": 9, "byteLength": 12}, "insertedContent": {"text": "cupy-cuda13x"}}]
    _, out, _ = _cli("-f", "json", "requirements.txt", cwd=tmp_path)
    [edit] = [e for f in _findings(out) for e in f.get("edits", [])]
    assert edit == {"path": "requirements.txt", "offset": 9, "length": 12, "replacement": "cupy-cuda13x",
                    "line": 2, "column": 1, "end_line": 2, "end_column": 13}


_LINE = st.sampled_from([
    "torch==2.9.0+cu128", "--extra-index-url https://download.pytorch.org/whl/cu128", "nvidia-cublas-cu12==12.8.4.1",
    "nvidia_nvjitlink_cu12", "cupy-cuda12x", "einops==0.8.1", "# a comment", "", "   ",
    "numpy>=1.26 ; python_version >= '3.10'", "nvidia-cudnn-cu12 \\", "  --no-binary :all:", "transformers==4.57.1  # é",
    "torchaudio", "flash-attn", "nvidia-cufft-cu12==11.3.3.83",
])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(lines=st.lists(_LINE, min_size=1, max_size=10), newline=st.sampled_from(["\n", "\r\n"]), final=st.booleans())
def test_bytes_outside_the_reported_spans_never_change(tmp_path: Path, lines: list[str], newline: str, final: bool) -> None:
    path = tmp_path / "requirements.txt"
    data = (newline.join(lines) + (newline if final else "")).encode()
    path.write_bytes(data)
    _, out, _ = _cli("-f", "json", "--fail-on", "never", "requirements.txt", cwd=tmp_path)
    edits = [e for f in _findings(out) for e in f.get("edits", [])]
    _cli("--fix", "--fail-on", "never", "requirements.txt", cwd=tmp_path)
    assert path.read_bytes() == _applied(data, edits)
    assert _cli("--diff", "requirements.txt", cwd=tmp_path)[1] == ""


_DOCKER_LINE = st.sampled_from([
    "FROM --platform=linux/amd64 nvcr.io/nvidia/pytorch:25.11-py3 AS build", "FROM nvidia/cuda:12.8.0-devel-ubuntu24.04",
    "FROM nvcr.io/nvidia/pytorch:25.11-py3", "ENV TORCH_CUDA_ARCH_LIST=\"8.0 9.0\"", "ARG TORCH_CUDA_ARCH_LIST=8.0;8.6",
    "RUN pip install unsloth unsloth_zoo", "RUN pip install --extra-index-url https://download.pytorch.org/whl/cu128 \\",
    "    torch==2.9.0+cu128 cupy-cuda12x", "# comment é", "", "RUN echo ok && \\", "    # a comment in a continuation",
    "    pip install nvidia-nvjitlink-cu12==12.8.93", "ENV PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cu126",
])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(lines=st.lists(_DOCKER_LINE, min_size=1, max_size=8), newline=st.sampled_from(["\n", "\r\n"]))
def test_dockerfile_bytes_outside_the_reported_spans_never_change(tmp_path: Path, lines: list[str], newline: str) -> None:
    path = tmp_path / "Dockerfile"
    data = newline.join(["FROM nvcr.io/nvidia/pytorch:25.11-py3", *lines, ""]).encode()
    path.write_bytes(data)
    _, out, _ = _cli("-f", "json", "--fail-on", "never", "Dockerfile", cwd=tmp_path)
    edits = [e for f in _findings(out) for e in f.get("edits", [])]
    _cli("--fix", "--fail-on", "never", "Dockerfile", cwd=tmp_path)
    assert path.read_bytes() == _applied(data, edits)
    assert _cli("--diff", "Dockerfile", cwd=tmp_path)[1] == ""


def test_one_fix_run_makes_the_edits_of_findings_folded_into_one(tmp_path: Path) -> None:
    # a CUDA 12 index and a -cu12 pin in one RUN are one cause, one finding; --fix fixes both in one run
    path = tmp_path / "Dockerfile"
    path.write_text("FROM nvcr.io/nvidia/pytorch:25.11-py3\n"
                    "RUN pip install --extra-index-url https://download.pytorch.org/whl/cu128 \\\n"
                    "    einops nvidia-nvjitlink-cu12==12.8.93\n")
    _, out, _ = _cli("-f", "json", "--fail-on", "never", "Dockerfile", cwd=tmp_path)
    assert len([f for f in _findings(out) if f["status"] == "FAIL"]) == 1
    _cli("--fix", "--fail-on", "never", "Dockerfile", cwd=tmp_path)
    text = path.read_text()
    assert "whl/cu130" in text and "nvidia-nvjitlink>=13" in text and "cu12" not in text
    assert _cli("--diff", "Dockerfile", cwd=tmp_path)[1] == ""


def test_ignored_findings_are_not_fixed(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("cupy-cuda12x\n# envcheck: ignore=G1-cuda12-distribution kept for the x86 box\nnvidia-cudnn-cu12\n")
    assert _cli("--diff", "--ignore", "G1-cuda12-distribution", "requirements.txt", cwd=tmp_path)[:2] == (0, "")
    _, out, _ = _cli("--diff", "requirements.txt", cwd=tmp_path)
    assert "+cupy-cuda13x" in out and "+nvidia-cudnn" not in out


# The scratch hook repository, pre-commit home and user repository of the hook tests, shared.
hook_repo = hooks.hook_repo
pre_commit_home = hooks.pre_commit_home
user_repo = hooks.user_repo


@pytest.mark.slow
def test_pre_commit_hook_with_fix_fixes_the_staged_dockerfile_and_fails(
        hook_repo: Path, pre_commit_home: Path, user_repo: Callable[[str, str], Path]) -> None:
    git, offline_env = hooks._git, hooks._offline_env
    rev = git(hook_repo, "rev-parse", "HEAD").stdout.strip()
    repo = user_repo(".pre-commit-config.yaml",
                     f"repos:\n- repo: {hook_repo}\n  rev: {rev}\n  hooks:\n  - id: envcheck-dockerfile\n    args: [--fix]\n")
    repo = user_repo("Dockerfile", "FROM --platform=linux/amd64 nvcr.io/nvidia/pytorch:25.11-py3\nRUN pip install --no-deps einops==0.8.0\n")
    run = [sys.executable, "-m", "pre_commit", "run", "envcheck-dockerfile", "--files", "Dockerfile"]
    done = subprocess.run(run, cwd=repo, capture_output=True, text=True, env=offline_env(pre_commit_home), timeout=300)
    out = done.stdout + done.stderr
    assert done.returncode == 1 and "files were modified by this hook" in out, out
    assert (repo / "Dockerfile").read_text() == "FROM nvcr.io/nvidia/pytorch:25.11-py3\nRUN pip install --no-deps einops==0.8.0\n"
    git(repo, "add", "Dockerfile")
    done = subprocess.run(run, cwd=repo, capture_output=True, text=True, env=offline_env(pre_commit_home), timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr



def test_fix_attachment_never_reopens_a_fifo(tmp_path: Path) -> None:
    """A FIFO named on the command line (`envcheck <(pip freeze)`) is read once by its source; computing a
    fix's edits must not open it again (that blocked for ever): its findings come without edits."""
    import os
    import threading

    from bounded import run_envcheck_bounded

    fifo = tmp_path / "requirements.txt"
    os.mkfifo(fifo)

    def feed() -> None:
        with fifo.open("w", encoding="utf-8") as fh:
            fh.write("cupy-cuda12x==13.3.0\n")

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    run = run_envcheck_bounded("-f", "json", "--kind", "requirements", str(fifo), kill_after=30)
    writer.join(timeout=5)
    run.assert_within(seconds=10, rss_mb=300)
    findings = [f for t in json.loads(run.stdout)["targets"] for f in t["findings"]]
    assert any(f["rule"] == "G1-cuda12-distribution" for f in findings), findings
    assert all(not f.get("edits") for f in findings)


@pytest.mark.parametrize("include", ["ABSOLUTE", "../elsewhere/requirements.txt"])
def test_an_included_file_outside_the_targets_is_reported_not_written(tmp_path: Path, include: str) -> None:
    """`-r /elsewhere/requirements.txt` in a checked file: --fix writes only files inside what it was given;
    the included file is named, left as it was, and --diff does not offer its change either."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    outside = elsewhere / "requirements.txt"
    outside.write_text("cupy-cuda12x\n")
    project = tmp_path / "project"
    project.mkdir()
    (project / "requirements.txt").write_text(f"-r {outside if include == 'ABSOLUTE' else include}\nnvidia-cudnn-cu12\n")
    code, out, err = _cli("--diff", ".", cwd=project)
    assert code == 1 and "+nvidia-cudnn-cu13" in out and "cupy" not in out, (out, err)
    assert "outside the checked folders" in err and "elsewhere" in err
    code, _, err = _cli("--fix", ".", cwd=project)
    assert outside.read_text() == "cupy-cuda12x\n", err
    assert (project / "requirements.txt").read_text().endswith("nvidia-cudnn-cu13\n")
    assert "elsewhere/requirements.txt: not fixed: it is outside the checked folders" in err
    assert code == 1  # the included file's finding is still there
    # the report never promises the change --fix refuses: the finding says why instead, in text and in JSON
    for args in ((".",), ("--fix", ".")):
        _, out, _ = _cli(*args, cwd=project)
        _message, _fix, said = out[out.index("cupy-cuda12x"):].split("\n", 3)[:3]  # the finding's three lines
        assert "outside the checked folders" in said and "makes this change" not in said, out
    _, out, _ = _cli("-f", "json", ".", cwd=project)
    cupy = [f for t in json.loads(out)["targets"] for f in t["findings"] if "cupy" in f["message"] and f["status"] == "FAIL"]
    assert cupy and all(not f.get("edits") and "outside the checked folders" in f["fix_refused"] for f in cupy), cupy


def test_an_included_file_in_another_folder_of_the_target_is_written(tmp_path: Path) -> None:
    """Inside is what the user gave (here the whole folder), not only the folders where inputs were found."""
    (tmp_path / "app").mkdir()
    (tmp_path / "shared").mkdir()
    (tmp_path / "app" / "requirements.txt").write_text("-r ../shared/base.txt\n")
    (tmp_path / "shared" / "base.txt").write_text("cupy-cuda12x\n")
    code, _, err = _cli("--fix", "--fail-on", "never", ".", cwd=tmp_path)
    assert code == 0 and "not fixed" not in err, err
    assert (tmp_path / "shared" / "base.txt").read_text() == "cupy-cuda13x\n"


def test_findings_none_of_which_can_be_fixed_say_so(tmp_path: Path) -> None:
    """--diff and --fix --diff with findings but nothing to change say so, rather than print nothing."""
    (tmp_path / "requirements.txt").write_text("--extra-index-url https://download.pytorch.org/whl/cu130\ntorch==2.9.0+cu130\nflash-attn==2.8.3\n")
    for args in (("--diff",), ("--fix", "--diff"), ("--fix",)):
        code, out, err = _cli(*args, "requirements.txt", cwd=tmp_path)
        assert "1 finding, none that --fix can change" in err, (args, out, err)
        if "--diff" in args:
            assert out == "" and code == 0
        else:
            assert code == 1
    (tmp_path / "requirements.txt").write_text("einops==0.8.1\n")
    assert _cli("--diff", "requirements.txt", cwd=tmp_path) == (0, "", "")


@pytest.mark.parametrize("index", ["https://mirror.corp.example/pytorch/whl/cu126",
                                   "https://ci:S3cretMirror@pypi.corp.example/simple/whl/cu126",
                                   "https://pypi.jetson-ai-lab.dev/sbsa/cu126"])
def test_a_pin_and_an_index_that_cannot_move_stay_together(tmp_path: Path, index: str) -> None:
    """A mirror (or a private index with credentials) serving cu126: envcheck cannot know that it serves cu130,
    so neither the index nor the +cu126 pin moves (a cu130 pin on a cu126 index cannot be installed), and the
    one finding (the index's, naming the pin it serves) says why."""
    text = f"--extra-index-url {index}\ntorch==2.9.0+cu126\n"
    path = tmp_path / "requirements.txt"
    path.write_text(text)
    _, out, _ = _cli("-f", "json", "requirements.txt", cwd=tmp_path)
    refused = {f["rule"]: f["fix_refused"] for f in _findings(out) if f.get("fix_refused")}
    assert set(refused) == {"G1-cuda12-index"}, _findings(out)
    assert [f["evidence"].get("lines") for f in _findings(out) if f["rule"] == "G1-cuda12-index"] == [[2]]
    assert all("must move together" in reason and "S3cret" not in reason for reason in refused.values())
    assert not [f for f in _findings(out) if f.get("edits")]
    code, out, err = _cli("--diff", "requirements.txt", cwd=tmp_path)
    assert (code, out) == (0, "") and "none that --fix can change" in err
    assert _cli("--fix", "requirements.txt", cwd=tmp_path)[0] == 1 and path.read_text() == text


def test_the_pytorch_index_with_credentials_moves_with_its_pin(tmp_path: Path) -> None:
    path = tmp_path / "requirements.txt"
    path.write_text("--extra-index-url https://ci:S3cretIdx@download.pytorch.org/whl/cu126\ntorch==2.9.0+cu126\n")
    code, out, _ = _cli("--diff", "requirements.txt", cwd=tmp_path)
    assert code == 1 and "S3cretIdx" not in out and "+--extra-index-url https://***@download.pytorch.org/whl/cu130" in out
    assert _cli("--fix", "--fail-on", "never", "requirements.txt", cwd=tmp_path)[0] == 0
    assert path.read_text() == "--extra-index-url https://ci:S3cretIdx@download.pytorch.org/whl/cu130\ntorch==2.9.0+cu130\n"


@pytest.mark.parametrize(("base", "reason"), [
    ("nvidia/cuda:12.1.0-cudnn8-runtime-ubuntu22.04", "carry cuDNN 9 only"),
    ("nvidia/cuda:12.2.0-devel-ubi8", "knows no CUDA 13 tag of nvidia/cuda for devel on ubi8"),
    ("nvidia/cuda:${CUDA}-devel-ubuntu22.04", "built from build arguments"),
    ("nvcr.io/nvidia/pytorch:24.05-py3", "NGC framework image"),
])
def test_a_cuda12_base_without_a_certain_fix_says_why(tmp_path: Path, base: str, reason: str) -> None:
    """Every CUDA 12 base --fix leaves alone carries the reason (text report and JSON), and stays as written."""
    path = tmp_path / "Dockerfile"
    text = f"ARG CUDA=12.4.1\nFROM {base}\nRUN echo hi\n"
    path.write_text(text)
    _, out, _ = _cli("-f", "json", "Dockerfile", cwd=tmp_path)
    [finding] = [f for f in _findings(out) if f["rule"] == "G1-cuda12-base"]
    assert reason in finding["fix_refused"] and not finding.get("edits"), finding
    _, out, _ = _cli("Dockerfile", cwd=tmp_path)
    assert f"envcheck --fix: {finding['fix_refused'][:40]}" in out
    assert _cli("--fix", "Dockerfile", cwd=tmp_path)[0] == 1 and path.read_text() == text


def test_a_cu12x_index_and_its_torch_pin_on_one_line_are_one_finding_and_move_together(tmp_path: Path) -> None:
    """Issue 32 item 5 with issue 26 item 1: `pip install torch==X+cu128 --index-url .../cu128` is one cause, so one
    G1 finding, and its fix moves the index and the pin together (never a cu130 index asked for a +cu128 build)."""
    (tmp_path / "Dockerfile").write_text(
        "FROM nvcr.io/nvidia/cuda:13.0.1-runtime-ubuntu24.04\n"
        "RUN pip install --break-system-packages torch==2.9.0+cu128 --index-url https://download.pytorch.org/whl/cu128\n")
    _, out, _ = _cli("-f", "json", "--fail-on", "never", "Dockerfile", cwd=tmp_path)
    g1 = [f for f in _findings(out) if f["gotcha"] == "G1" and f["status"] == "FAIL"]
    assert [f["rule"] for f in g1] == ["G1-cuda12-index"] and "torch 2.9.0+cu128" in g1[0]["message"]
    _cli("--fix", "--fail-on", "never", "Dockerfile", cwd=tmp_path)
    assert "torch==2.9.0+cu130 --index-url https://download.pytorch.org/whl/cu130" in (tmp_path / "Dockerfile").read_text()


def test_compose_and_kubernetes_image_tags_move_to_cuda13(tmp_path: Path) -> None:
    """A compose service's (quoted) and a Kubernetes container's `image:` of nvidia/cuda 12 move to the CUDA 13 tag
    of the same flavour and OS, every other byte kept; an NGC framework image there is left, with the reason."""
    compose = ('services:\n  trainer:\n    image: "nvidia/cuda:12.4.1-runtime-ubuntu22.04"  # pinned\n'
               '    command: python3 train.py\n    gpus: all\n')
    job = ("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: train\nspec:\n  template:\n    spec:\n"
           "      restartPolicy: Never\n      containers:\n        - name: train\n"
           "          image: nvidia/cuda:12.6.2-devel-ubuntu24.04\n        - name: ngc\n"
           "          image: nvcr.io/nvidia/pytorch:24.05-py3\n")
    (tmp_path / "compose.yaml").write_text(compose)
    (tmp_path / "job.yaml").write_text(job)
    code, _out, err = _cli("--fix", ".", cwd=tmp_path)
    assert (tmp_path / "compose.yaml").read_text() == compose.replace("12.4.1-runtime", "13.0.1-runtime"), err
    assert (tmp_path / "job.yaml").read_text() == job.replace("12.6.2-devel", "13.0.1-devel")
    assert code == 1 and "NGC framework image" in err + _out


def test_a_compose_services_arch_list_gets_12_1_in_both_environment_forms(tmp_path: Path) -> None:
    """`environment:` as a mapping (`TORCH_CUDA_ARCH_LIST: "8.0 9.0"`) is fixed like the list form (`- NAME=...`)
    and a Dockerfile's ENV; an unquoted list keeps its spaces."""
    compose = ('services:\n  build:\n    image: nvcr.io/nvidia/pytorch:25.11-py3\n    gpus: all\n    environment:\n'
               '      TORCH_CUDA_ARCH_LIST: "8.0 9.0"\n  other:\n    image: nvcr.io/nvidia/pytorch:25.11-py3\n    gpus: all\n'
               '    environment:\n      TORCH_CUDA_ARCH_LIST: 8.0 9.0\n  third:\n    image: nvcr.io/nvidia/pytorch:25.11-py3\n'
               '    gpus: all\n    environment:\n      - TORCH_CUDA_ARCH_LIST=8.0;9.0\n')
    (tmp_path / "compose.yaml").write_text(compose)
    _cli("--fix", "--fail-on", "never", "compose.yaml", cwd=tmp_path)
    assert (tmp_path / "compose.yaml").read_text() == compose.replace('"8.0 9.0"', '"8.0 9.0 12.1"').replace(
        ": 8.0 9.0\n", ": 8.0 9.0 12.1\n").replace("=8.0;9.0", "=8.0;9.0;12.1")


def test_a_shell_scripts_cuda12_index_moves_with_its_line_kept(tmp_path: Path) -> None:
    """An install script is fixed as a Dockerfile's RUN would be: the cu128 index of a torch that has a cu130
    build moves; a torch without one is left, with the reason."""
    script = ("#!/bin/bash\nset -e\npip install torch==2.9.1 --index-url https://download.pytorch.org/whl/cu128\n"
              "pip install transformers==4.57.1\n")
    (tmp_path / "install.sh").write_text(script)
    _code, _out, err = _cli("--fix", "install.sh", cwd=tmp_path)
    assert (tmp_path / "install.sh").read_text() == script.replace("whl/cu128", "whl/cu130"), err
    old = script.replace("torch==2.9.1", "torch==2.5.1")
    (tmp_path / "old.sh").write_text(old)
    _code, out, err = _cli("--fix", "old.sh", cwd=tmp_path)
    assert (tmp_path / "old.sh").read_text() == old and "no cu130 build" in out + err


def test_stdin_is_said_to_be_unfixable_not_free_of_fixable_findings(tmp_path: Path) -> None:
    """`envcheck --fix -` said '4 findings, none that --fix can change' of a stream whose findings --fix changes
    in a file; a stream has no file to write, and --fix/--diff now say so (files given beside it are fixed)."""
    text = (REPO / "examples" / "requirements-cuda12.txt").read_text()
    for option in ("--fix", "--diff"):
        proc = run_envcheck(option, "--kind", "requirements", "-", input=text, cwd=tmp_path)
        assert "stdin (-) is not fixed" in proc.stderr and "none that --fix can change" not in proc.stderr, proc.stderr
    saved = tmp_path / "requirements.txt"
    saved.write_text(text)
    proc = run_envcheck("--diff", "--kind", "requirements", "-", str(saved), input=text, cwd=tmp_path)
    assert proc.returncode == 1 and "+nvidia-cuda-runtime>=13" in proc.stdout and "stdin (-) is not fixed" in proc.stderr
