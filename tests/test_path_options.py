"""Every option that takes a path says what is wrong with the path it was given, truly: an existing file is never
"no such file" (`--python requirements.txt` once said so, the name being looked up on PATH)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_envcheck


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "requirements.txt").write_text("numpy==2.2.0\n")
    (tmp_path / "folder").mkdir()
    (tmp_path / "broken").write_text("#!/bin/sh\nexit 3\n")
    (tmp_path / "broken").chmod(0o755)
    return tmp_path


@pytest.mark.parametrize(("given", "said"), [
    ("requirements.txt", "--python requirements.txt: is a file but not a program; --python takes a Python interpreter"),
    ("nope", "--python nope: no such file here and no program nope on PATH"),
    ("./nope", "--python ./nope: no such file;"),
    ("folder", "--python folder: is a folder with no bin/python"),
    ("./broken", "--python ./broken: not a Python interpreter, or a broken one (exit status 3)"),
])
def test_check_python_says_what_the_path_is(project: Path, given: str, said: str) -> None:
    done = run_envcheck("--python", given, "requirements.txt", cwd=project)
    assert done.returncode == 2 and said in done.stdout, done.stdout
    assert "No such file" not in done.stdout


def test_check_and_preflight_python_take_a_virtual_environment_folder(project: Path) -> None:
    venv = project / "venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "python").write_text("#!/bin/sh\necho '[]'\n")  # answers as a Python with no site-packages
    (venv / "python").chmod(0o755)
    done = run_envcheck("--python", "venv", "requirements.txt", cwd=project)
    assert "python:venv (folder): PASS" in done.stdout and done.returncode == 0, done.stdout + done.stderr
    done = run_envcheck("preflight", "--python", "requirements.txt", "--sample-seconds", "0", cwd=project)
    assert "--python requirements.txt: is a file but not a program" in done.stderr


@pytest.mark.parametrize(("args", "said"), [
    (("--profile", "nope.toml"), "profile nope.toml: no such file; --profile takes a shipped profile"),
    (("--profile", "folder"), "profile folder: is a folder"),
    (("--profile", "nope"), "unknown profile 'nope'; --profile takes a shipped profile (dgx-spark) or a profile TOML"),
    (("-o", "nodir/report.txt"), "-o nodir/report.txt: cannot write the report: its folder nodir does not exist"),
    (("-o", "folder"), "-o folder: cannot write the report: is a folder"),
    (("--config", "nope.toml"), "config file nope.toml: no such file; --config takes a TOML file"),
    (("--config", "folder"), "config file folder: is a folder; --config takes a TOML file"),
])
def test_file_options_say_what_is_wrong(project: Path, args: tuple[str, ...], said: str) -> None:
    done = run_envcheck(*args, "requirements.txt", cwd=project)
    assert done.returncode == 2 and said in done.stderr, done.stderr


def test_launch_config_that_is_a_folder_is_said_so(project: Path) -> None:
    done = run_envcheck("preflight", "--launch-config", "folder", "--sample-seconds", "0", cwd=project)
    assert "--launch-config folder: cannot read it: is a folder" in done.stdout + done.stderr


@pytest.mark.parametrize(("given", "said"), [("folder", "--baseline: cannot read folder: is a folder, not a file"),
                                             ("nope.json", "--baseline: cannot read nope.json: no such file")])
def test_a_baseline_snapshot_path_is_said_with_its_option(project: Path, given: str, said: str) -> None:
    done = run_envcheck("preflight", "--baseline", given, "--sample-seconds", "0", cwd=project)
    assert done.returncode == 2 and said in done.stderr, done.stderr
