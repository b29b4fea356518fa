"""Which COPY puts the file a RUN reads (`pip install -r PATH`): the latest COPY whose destination is that path or
a folder above it, whatever way the paths are written (a leading `//` included), and never a COPY elsewhere."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_envcheck


def _read_from(tmp_path: Path, dockerfile: str, files: dict[str, str]) -> set[tuple[str, str, int]]:
    """(rule, file the finding is in, line) of the G1 FAIL/WARN findings of the Dockerfile."""
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    (tmp_path / "Dockerfile").write_text(dockerfile, encoding="utf-8")
    done = run_envcheck("-f", "json", "--fail-on", "never", "--no-cache", str(tmp_path / "Dockerfile"), timeout=30)
    assert done.returncode == 0, done.stderr
    return {(f["rule"], str(Path(f["location"]["path"]).relative_to(tmp_path)), f["location"]["line"])
            for t in json.loads(done.stdout)["targets"] for f in t["findings"]
            if f["rule"].startswith("G1") and f["status"] in ("FAIL", "WARN")}


CU121 = "torch==2.5.1+cu121\n"


def test_paths_written_with_a_leading_double_slash_are_read(tmp_path: Path) -> None:
    # posixpath keeps a leading "//" (dirname("//") is "//"): such a path is still looked up, and ends
    found = _read_from(tmp_path, "FROM ubuntu:24.04\nCOPY deps/r.txt //opt/deps/\nRUN pip install -r //opt/deps/r.txt\n"
                       "WORKDIR //app\nCOPY a.txt .\nRUN pip install -r a.txt\n",
                       {"deps/r.txt": CU121, "a.txt": "\n" + CU121})
    assert found == {("G1-cuda12-local-version", "deps/r.txt", 1), ("G1-cuda12-local-version", "a.txt", 2)}


def test_the_latest_copy_that_reaches_the_path_wins_and_copies_elsewhere_do_not(tmp_path: Path) -> None:
    found = _read_from(tmp_path, "FROM ubuntu:24.04\nCOPY a/r.txt /x/r.txt\nCOPY b/ /x/\nCOPY c/r.txt /y/r.txt\n"
                       "COPY c/ /x/z/\nRUN pip install -r /x/r.txt\n",
                       {"a/r.txt": CU121, "b/r.txt": "\n" + CU121, "c/r.txt": "\n\n" + CU121})
    assert found == {("G1-cuda12-local-version", "b/r.txt", 2)}


def test_a_copy_to_the_root_reaches_a_file_below_it(tmp_path: Path) -> None:
    found = _read_from(tmp_path, "FROM ubuntu:24.04\nCOPY ctx /\nRUN pip install -r /deps/r.txt\n",
                       {"ctx/deps/r.txt": CU121})
    assert found == {("G1-cuda12-local-version", "ctx/deps/r.txt", 1)}
