"""`envcheck DIR`: projects versus environments, the whole tree, what is skipped, .gitignore, nothing to check,
and folders that cannot be read."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import require, run_envcheck

from envcheck import sources
from envcheck.sources.gitignore import IgnoreRules

CUDA12_REQS = "torch==2.5.1+cu121\n"
CUDA12_RECIPE = "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\nRUN true\n"


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def _report(*args: str, cwd: Path | None = None) -> tuple[int, dict[str, list[dict[str, object]]], str]:
    proc = run_envcheck("--format", "json", *args, cwd=cwd)
    data = json.loads(proc.stdout) if proc.stdout.strip() else {"targets": []}
    return proc.returncode, {t["target"]: t["findings"] for t in data["targets"]}, proc.stderr


def test_a_project_with_build_leftovers_is_a_project(tmp_path: Path) -> None:
    """`pip install -e .` leaves *.egg-info at the root: the project's files are still read (no false PASS)."""
    project = _write(tmp_path / "proj", {"requirements.txt": CUDA12_REQS, "Dockerfile": CUDA12_RECIPE,
                                         "proj.egg-info/PKG-INFO": "Name: proj\n"})
    assert sources.detect(project) == "project"
    code, found, _ = _report(str(project))
    assert code == 1
    assert {Path(t).name for t in found} == {"requirements.txt", "Dockerfile"}
    assert any(f["rule"] == "G1-cuda12-local-version" for f in found[str(project / "requirements.txt")])


@pytest.mark.parametrize(("layout", "environment"), [
    ({"pyvenv.cfg": "home = /usr/bin\n"}, True),
    ({"lib/python3.12/site-packages/x.py": ""}, True),
    ({"torch-2.9.0.dist-info/RECORD": "", "torch-2.9.0.dist-info/METADATA": "Name: torch\n"}, True),
    ({"conda-meta/history": ""}, True),
    ({"proj.egg-info/PKG-INFO": "", "setup.py": ""}, False),
    ({"torch-2.9.0.dist-info/METADATA": "Name: torch\n"}, False),  # no RECORD: not an installed distribution
    ({"src/app.py": ""}, False),
])
def test_what_an_environment_is(tmp_path: Path, layout: dict[str, str], environment: bool) -> None:
    assert sources.is_environment(_write(tmp_path / "f", layout)) is environment
    assert sources.is_environment(_write(tmp_path / "site-packages", {"x.py": ""}))


def test_discovery_reaches_the_whole_tree_and_says_what_it_skipped(tmp_path: Path) -> None:
    project = _write(tmp_path / "mono", {
        "a/b/c/d/e/f/Dockerfile": CUDA12_RECIPE,
        "a/b/c/d/e/f/uv.lock": "version = 1\n",
        ".github/requirements.txt": CUDA12_REQS,  # hidden folders are projects' too
        ".git/requirements.txt": CUDA12_REQS,
        "node_modules/pkg/requirements.txt": CUDA12_REQS,
        ".venv/pyvenv.cfg": "home = /usr/bin\n",
        ".venv/requirements.txt": CUDA12_REQS,
        "env/pyvenv.cfg": "home = /usr/bin\n",
        "env/requirements.txt": CUDA12_REQS,
        "build/requirements.txt": CUDA12_REQS,
        "docs/dockerfiles.md": "# notes\n",
        "tools/dockerfile.py": "print()\n",
        ".gitignore": "build/\n",
    })
    (project / "linked").symlink_to(project / "a", target_is_directory=True)
    found = sources.discover_tree(project)
    assert sorted(p.relative_to(project).as_posix() for p, _ in found.files) == [
        ".github/requirements.txt", "a/b/c/d/e/f/Dockerfile", "a/b/c/d/e/f/uv.lock"]
    reasons = {p.relative_to(project).as_posix(): why for p, why in found.skipped}
    assert reasons == {".git": "version control", "node_modules": "node_modules",
                       ".venv": "a virtualenv (by its name)", "env": "a virtual environment (pyvenv.cfg)", "build": "excluded by .gitignore (build/)",
                       "linked": "a symbolic link to a folder (not followed)"}
    proc = run_envcheck("-v", "--fail-on", "never", str(project))
    assert proc.returncode == 0, proc.stderr
    assert f"envcheck: skipped {project / 'node_modules'}: node_modules" in proc.stderr
    assert "a/b/c/d/e/f/Dockerfile (dockerfile)" in proc.stdout


# .gitignore patterns and paths to try them on (dir paths end in /); git check-ignore is the oracle.
GITIGNORE = """\
# comment
*.log
!keep.log
/top-only.txt
build/
docs/**/generated
**/cache-dir
a/**/b.txt
req[0-9].txt
\\#hash.txt
sub/anchored.txt
"""
PATHS = ["x.log", "deep/x.log", "keep.log", "deep/keep.log", "top-only.txt", "deep/top-only.txt", "build/",
         "deep/build/", "build", "docs/generated", "docs/x/y/generated", "other/generated", "cache-dir/",
         "deep/cache-dir/", "a/b.txt", "a/x/y/b.txt", "req1.txt", "reqx.txt", "#hash.txt", "sub/anchored.txt",
         "deep/sub/anchored.txt", "requirements.txt"]


def test_gitignore_subset_agrees_with_git(tmp_path: Path) -> None:
    require(shutil.which("git") is not None, "git is not installed")
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    (repo / ".gitignore").write_text(GITIGNORE, encoding="utf-8")
    for rel in PATHS:
        target = repo / rel.rstrip("/")
        if rel.endswith("/"):
            target.mkdir(parents=True, exist_ok=True)
        elif not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("", encoding="utf-8")
    proc = subprocess.run(["git", "check-ignore", "--no-index", *[p.rstrip("/") for p in PATHS]], cwd=repo,
                          capture_output=True, text=True)
    git_says = set(proc.stdout.split())
    rules = IgnoreRules().add_file(repo / ".gitignore", repo)
    ours = {p.rstrip("/") for p in PATHS if rules.excluded(repo / p.rstrip("/"), is_dir=(repo / p.rstrip("/")).is_dir())}
    assert ours == git_says
    assert {"x.log", "top-only.txt", "build", "req1.txt", "#hash.txt"} <= ours  # the test can fail


def test_nested_gitignore_and_negation(tmp_path: Path) -> None:
    project = _write(tmp_path / "p", {".gitignore": "*.txt\n", "sub/.gitignore": "!requirements.txt\n",
                                      "sub/requirements.txt": CUDA12_REQS, "requirements.txt": CUDA12_REQS})
    assert [p.relative_to(project).as_posix() for p, _ in sources.discover(project)] == ["sub/requirements.txt"]


@pytest.mark.parametrize("files", [{}, {"README.md": "# hello\n", "src/app.py": "print()\n"}], ids=["empty", "no-inputs"])
def test_nothing_to_check_is_exit_2(tmp_path: Path, files: dict[str, str]) -> None:
    folder = _write(tmp_path / "nothing", files)
    folder.mkdir(exist_ok=True)
    proc = run_envcheck(str(folder))
    assert proc.returncode == 2
    assert f"nothing to check in {folder}" in proc.stdout
    assert "compose file, Kubernetes manifest, shell script, notebook" in proc.stdout  # every kind a folder walk finds
    assert run_envcheck("--allow-empty", str(folder)).returncode == 0
    proc = run_envcheck(cwd=folder)
    assert proc.returncode == 2 and "nothing to check in the current folder" in proc.stderr
    assert "shell script, notebook or wheel); pass a PATH, or --allow-empty" in proc.stderr
    assert run_envcheck("--allow-empty", cwd=folder).returncode == 0


def test_a_folder_of_binaries_is_still_scanned(fixtures_dir: Path) -> None:
    code, found, _ = _report("--fail-on", "never", str(fixtures_dir / "binaries"))
    assert code == 0 and list(found) == [str(fixtures_dir / "binaries")]
    assert any(f["rule"] == "G1-binary-soname" for f in found[str(fixtures_dir / "binaries")])


def _cannot_read_as_root_without_caps(folder: Path) -> bool:
    """Does dropping CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH (setpriv) make a mode-000 folder unreadable?"""
    proc = subprocess.run(["setpriv", "--bounding-set=-dac_override,-dac_read_search", "ls", str(folder)],
                          capture_output=True, text=True)
    return proc.returncode != 0 and "Permission denied" in proc.stderr


def test_an_unreadable_subfolder_is_one_error_and_the_rest_is_checked(tmp_path: Path) -> None:
    """The suite runs as root, which reads any folder; setpriv drops the two capabilities that let it, so a
    mode-000 folder really cannot be listed by the envcheck child (as for any user)."""
    require(shutil.which("setpriv") is not None, "setpriv (util-linux) is not installed")
    project = _write(tmp_path / "proj", {"requirements.txt": CUDA12_REQS, "secret/requirements.txt": CUDA12_REQS})
    locked = project / "secret"
    locked.chmod(0)
    try:
        if os.geteuid() == 0:
            require(_cannot_read_as_root_without_caps(locked), "setpriv cannot drop the DAC capabilities here")
            prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
        else:
            prefix = []
        proc = subprocess.run([*prefix, sys.executable, "-m", "envcheck", "--format", "json", str(project)],
                              capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parent.parent)
    finally:
        locked.chmod(0o755)
    assert proc.returncode == 2, proc.stderr
    assert "internal error" not in proc.stderr
    found = {t["target"]: t["findings"] for t in json.loads(proc.stdout)["targets"]}
    errors = [f for f in found[str(locked)] if f["status"] == "ERROR"]
    assert len(errors) == 1 and "cannot read this folder" in errors[0]["message"]
    assert any(f["rule"] == "G1-cuda12-local-version" for f in found[str(project / "requirements.txt")])


def test_an_unreadable_file_is_told_to_be_made_readable_not_to_change_kind(tmp_path: Path) -> None:
    """A file envcheck may not open (mode 000) is an ERROR whose fix is about its permissions, whatever its kind:
    the advice for a file that does not parse ("Fix the dockerfile file, or pass --kind") does not fit it."""
    require(shutil.which("setpriv") is not None, "setpriv (util-linux) is not installed")
    names = ("requirements.txt", "Dockerfile", "compose.yaml", "uv.lock")
    project = _write(tmp_path / "proj", {**{name: "" for name in names}, "ok/requirements.txt": CUDA12_REQS})
    for name in names:
        (project / name).chmod(0)
    prefix: list[str] = []
    if os.geteuid() == 0:
        prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
        denied = subprocess.run([*prefix, "cat", str(project / "Dockerfile")], capture_output=True, text=True)
        require(denied.returncode != 0 and "Permission denied" in denied.stderr, "setpriv cannot drop the DAC capabilities here")
    proc = subprocess.run([*prefix, sys.executable, "-m", "envcheck", "--format", "json", str(project)],
                          capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parent.parent)
    assert proc.returncode == 2 and "internal error" not in proc.stderr, proc.stderr
    found = {t["target"]: t["findings"] for t in json.loads(proc.stdout)["targets"]}
    for name in names:
        [error] = found[str(project / name)]
        assert error["status"] == "ERROR" and "Permission denied" in error["message"], error
        assert "readable" in error["fix"] and "--kind" not in error["fix"], error["fix"]
    assert any(f["rule"] == "G1-cuda12-local-version" for f in found[str(project / "ok" / "requirements.txt")])


def test_odd_names_are_found_and_shown_safely(tmp_path: Path) -> None:
    """A name that is not UTF-8 is still discovered and judged; a skipped name with a newline is escaped."""
    project = tmp_path / "odd"
    project.mkdir()
    with open(os.path.join(os.fsencode(project), b"requirements-\xff.txt"), "wb") as fh:
        fh.write(CUDA12_REQS.encode())
    (project / ".gitignore").write_text("bad*\n", encoding="utf-8")
    (project / "bad\nname").mkdir()
    proc = run_envcheck("-v", "--format", "json", str(project))
    assert proc.returncode == 1, proc.stderr
    findings = [f for t in json.loads(proc.stdout)["targets"] for f in t["findings"]]
    assert any(f["rule"] == "G1-cuda12-local-version" for f in findings)
    skipped = [line for line in proc.stderr.splitlines() if line.startswith("envcheck: skipped")]
    assert skipped == [f"envcheck: skipped {project}/bad\\nname: excluded by .gitignore (bad*)"]


def test_snapshot_of_a_folder_of_binaries(fixtures_dir: Path, tmp_path: Path) -> None:
    """`envcheck snapshot DIR` shares the rule: no input file -> the folder's binaries; nothing -> exit 2."""
    assert run_envcheck("snapshot", str(fixtures_dir / "binaries"), "-o", str(tmp_path / "s.json")).returncode == 0
    (tmp_path / "empty").mkdir()
    assert run_envcheck("snapshot", str(tmp_path / "empty"), "-o", str(tmp_path / "e.json")).returncode == 2
