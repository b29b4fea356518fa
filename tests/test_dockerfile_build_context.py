"""The build context a Dockerfile's COPY reads from: its own folder, a compose service's `build.context`, or (for
`docker build -f docker/Dockerfile .`, the usual layout) the nearest folder above that holds every file it copies."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import run_envcheck

DOCKERFILE = ("FROM nvcr.io/nvidia/cuda:13.0.1-devel-ubuntu24.04\nWORKDIR /app\nCOPY requirements.txt .\n"
              "COPY src/ src/\nRUN pip install -r requirements.txt\n")
CU121 = "--extra-index-url https://download.pytorch.org/whl/cu121\ntorch==2.5.1+cu121\n"


def _findings(path: Path) -> list[dict[str, Any]]:
    done = run_envcheck("-f", "json", "--fail-on", "never", "-v", str(path))
    assert done.returncode == 0, done.stderr
    return [f for t in json.loads(done.stdout)["targets"] for f in t["findings"]]


def _repo(tmp_path: Path, requirements: str = CU121) -> Path:
    repo = tmp_path / "repo"
    (repo / "docker").mkdir(parents=True)
    (repo / "src").mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "requirements.txt").write_text(requirements, encoding="utf-8")
    (repo / "docker" / "Dockerfile").write_text(DOCKERFILE, encoding="utf-8")
    return repo


def test_a_dockerfile_in_a_subfolder_reads_what_it_copies_from_the_folder_above_and_says_so(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    found = _findings(repo / "docker" / "Dockerfile")
    failed = {(f["rule"], f["location"]["path"]) for f in found if f["status"] == "FAIL"}
    assert ("G1-cuda12-local-version", str(repo / "requirements.txt")) in failed, found
    notes = [f["message"] for f in found if f["rule"] == "input-skipped"]
    assert any(f"build context taken as {repo}" in m and "requirements.txt" in m for m in notes), notes


def test_the_dockerfiles_own_folder_wins_when_it_holds_what_is_copied(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    (repo / "docker" / "requirements.txt").write_text("torch==2.11.0\n", encoding="utf-8")
    (repo / "docker" / "src").mkdir()
    found = _findings(repo / "docker" / "Dockerfile")
    assert not [f for f in found if f["status"] == "FAIL"], found
    assert not [f for f in found if "build context taken" in f["message"]], found


@pytest.mark.parametrize("where", ["docker/Dockerfile", "Dockerfile"])
def test_no_folder_past_the_repository_root_is_taken(tmp_path: Path, where: str) -> None:
    """A decoy beside the repository is never the context, for a Dockerfile in a subfolder or at the root."""
    repo = _repo(tmp_path)
    (repo / "requirements.txt").unlink()
    (repo / where).write_text(DOCKERFILE, encoding="utf-8")
    (tmp_path / "requirements.txt").write_text(CU121, encoding="utf-8")  # beside the repository, not in it
    (tmp_path / "src").mkdir()
    found = _findings(repo / where)
    assert not [f for f in found if f["status"] == "FAIL"], found
    assert not [f for f in found if "build context taken" in f["message"]], found


def test_a_compose_services_build_context_is_the_one_read(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    # a decoy beside the Dockerfile: compose builds from the repository root, so the root's file is the one installed
    (repo / "docker" / "requirements.txt").write_text("torch==2.11.0\n", encoding="utf-8")
    (repo / "docker" / "src").mkdir()
    compose = repo / "compose.yaml"
    compose.write_text("services:\n  app:\n    build:\n      context: .\n      dockerfile: docker/Dockerfile\n", encoding="utf-8")
    failed = [f for f in _findings(compose) if f["status"] == "FAIL"]
    assert [(f["rule"], f["location"]["path"]) for f in failed] == [("G1-cuda12-local-version", str(repo / "requirements.txt")),
                                                                    ("G1-cuda12-index", str(repo / "requirements.txt"))], failed
