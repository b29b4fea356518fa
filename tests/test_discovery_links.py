"""`envcheck DIR` never leaves DIR through a symbolic link, and reads each real file once (issue 13's
"folders never escape", for project discovery as for binary folders)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from conftest import run_envcheck


def _report(folder: Path) -> dict[str, list[dict[str, object]]]:
    done = run_envcheck("-f", "json", "--fail-on", "never", ".", cwd=folder)
    assert done.returncode == 0, done.stderr
    return {t["target"]: t["findings"] for t in json.loads(done.stdout)["targets"]}


def test_a_link_to_a_file_outside_the_folder_is_not_followed_and_said_once(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "requirements.txt").write_text("torch==2.5.1+cu121\n", encoding="utf-8")
    project = tmp_path / "project"
    project.mkdir()
    (project / "requirements.txt").write_text("numpy==2.1.0\n", encoding="utf-8")
    os.symlink(outside / "requirements.txt", project / "requirements-out.txt")
    os.symlink("/etc/passwd", project / "requirements-etc.txt")
    by_target = _report(project)
    assert set(by_target) == {"requirements.txt", "."}
    notes = by_target["."]
    assert [(f["rule"], f["status"]) for f in notes] == [("input-skipped", "INFO")]
    assert "2 symbolic links lead outside the folder" in str(notes[0]["message"])
    assert all(f["rule"] != "G1-cuda12-local-version" for fs in by_target.values() for f in fs)
    # issue 26 item 10: each such link is said on stderr without -v, with where it leads
    said = run_envcheck("--fail-on", "never", ".", cwd=project).stderr
    assert f"requirements-out.txt: a symbolic link to {os.path.realpath(outside / 'requirements.txt')}, outside the folder" in said


def test_a_link_inside_the_folder_is_read_once(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "requirements.txt").write_text("torch==2.5.1+cu121\n", encoding="utf-8")
    os.symlink("sub/requirements.txt", tmp_path / "requirements.txt")
    by_target = _report(tmp_path)
    assert len(by_target) == 1
    [findings] = by_target.values()
    assert [f["status"] for f in findings if f["rule"] == "G1-cuda12-local-version"] == ["FAIL"]


def test_a_link_to_a_file_that_is_not_checked_otherwise_is_read(tmp_path: Path) -> None:
    (tmp_path / "pinned").mkdir()
    (tmp_path / "pinned" / "torch.txt").write_text("torch==2.5.1+cu121\n", encoding="utf-8")  # no input name
    os.symlink("pinned/torch.txt", tmp_path / "requirements.txt")
    by_target = _report(tmp_path)
    assert list(by_target) == ["requirements.txt"]


def test_a_broken_link_named_like_an_input_is_an_error_and_a_folder_of_links_alone_checked_nothing(tmp_path: Path) -> None:
    """Issue 26 item 10: a dangling requirements.txt next to a real file is reported (which file, where it
    points), and a folder whose only input is a link envcheck does not read is exit 2, not "nothing checked", 0."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "requirements-dev.txt").write_text("numpy==2.1.0\n", encoding="utf-8")
    os.symlink("/nonexistent/requirements.txt", project / "requirements.txt")
    done = run_envcheck("-f", "json", ".", cwd=project)
    assert done.returncode == 2, done.stdout + done.stderr
    by_target = {t["target"]: t["findings"] for t in json.loads(done.stdout)["targets"]}
    errors = [f for f in by_target["requirements.txt"] if f["status"] == "ERROR"]
    assert len(errors) == 1 and "/nonexistent/requirements.txt" in str(errors[0]["message"])
    assert [f["status"] for f in by_target["requirements-dev.txt"] if f["status"] != "PASS"] == []

    only_links = tmp_path / "links"
    only_links.mkdir()
    os.symlink(project / "requirements-dev.txt", only_links / "requirements.txt")  # leads outside: not read
    done = run_envcheck(str(only_links))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "nothing to check" in done.stdout and "not followed" in done.stdout
