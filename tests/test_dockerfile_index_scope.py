"""Where an index and a project file reach in a Dockerfile (audit findings of issue 12's real-project classes):
an index serves its own command, or its stage and the stages built on it when ENV/ARG set it; `uv sync`
with no uv.lock copied in installs from pyproject.toml."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_envcheck

CUDA13 = "nvcr.io/nvidia/cuda:13.0.1-devel-ubuntu24.04"
CU128 = "https://download.pytorch.org/whl/cu128"


def _torch_builds(folder: Path, text: str) -> dict[str | None, str]:
    """Stage -> status of the G1 finding on torch's CUDA build in that stage."""
    (folder / "Dockerfile").write_text(text, encoding="utf-8")
    done = run_envcheck("-f", "json", "--fail-on", "never", str(folder / "Dockerfile"))
    assert done.returncode == 0, done.stderr
    out = {}
    for target in json.loads(done.stdout)["targets"]:
        for f in target["findings"]:
            # a torch served by the cu12x index of its own line is that index's finding (one cause, one finding)
            if f["rule"] == "G1-cuda12-local-version" or (f["rule"] == "G1-cuda12-index" and "torch" in f["evidence"].get("packages", [])):
                out[f["location"].get("stage")] = f["status"]
    return out


def test_a_commands_index_does_not_reach_another_stage(tmp_path: Path) -> None:
    found = _torch_builds(tmp_path, f"FROM {CUDA13} AS a\nRUN pip install torch==2.8.0 --index-url {CU128}\n\n"
                                    f"FROM {CUDA13} AS b\nCOPY --from=a /opt /opt\nRUN pip install torch\n")
    assert found == {"a": "FAIL"}


def test_an_env_index_serves_later_runs_of_its_stage_and_the_stages_built_on_it(tmp_path: Path) -> None:
    found = _torch_builds(tmp_path, f"FROM {CUDA13} AS a\nENV UV_INDEX={CU128}\nRUN uv pip install --system torch\n\n"
                                    f"FROM {CUDA13} AS b\nRUN uv pip install --system torch\n\n"
                                    f"FROM a AS c\nRUN uv pip install --system torch\n")
    assert found == {"a": "FAIL", "c": "FAIL"}


def test_an_env_index_set_after_the_install_does_not_serve_it(tmp_path: Path) -> None:
    found = _torch_builds(tmp_path, f"FROM {CUDA13}\nRUN pip install torch\nENV PIP_INDEX_URL={CU128}\n")
    assert "FAIL" not in found.values()


def test_uv_sync_without_a_lock_installs_from_pyproject(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "demo"\nversion = "0.1"\ndependencies = ["transformers"]\n\n'
        '[project.optional-dependencies]\ncuda12 = ["torch==2.5.1+cu121"]\n', encoding="utf-8")
    dockerfile = f"FROM {CUDA13}\nWORKDIR /app\nCOPY pyproject.toml /app/\nRUN uv sync --extra cuda12\n"
    (tmp_path / "Dockerfile").write_text(dockerfile, encoding="utf-8")
    done = run_envcheck("-f", "json", "--fail-on", "never", str(tmp_path / "Dockerfile"))
    rules = {(f["rule"], f["status"]) for t in json.loads(done.stdout)["targets"] for f in t["findings"]}
    assert ("G1-cuda12-local-version", "FAIL") in rules


def test_a_projects_requirements_that_repin_torch_replace_the_hand_picked_cu130_torch(tmp_path: Path) -> None:
    """Issue 32: the project's own requirements pin another torch than the cu130 one installed first (vLLM's
    pattern without use_existing_torch.py): pip replaces it, here with PyPI's CPU-only 2.9.0, and the finding says so
    (WARN: the image then runs on the Grace CPU)."""
    (tmp_path / "requirements.txt").write_text("torch==2.9.0\ntransformers==4.57.1\n", encoding="utf-8")
    (tmp_path / "Dockerfile").write_text(
        f"FROM {CUDA13}\nENV PIP_BREAK_SYSTEM_PACKAGES=1\n"
        "RUN pip install torch==2.9.1+cu130 --index-url https://download.pytorch.org/whl/cu130\n"
        "COPY requirements.txt .\nRUN pip install -r requirements.txt\n", encoding="utf-8")
    done = run_envcheck("-f", "json", "--fail-on", "never", str(tmp_path / "Dockerfile"))
    failing = [f for t in json.loads(done.stdout)["targets"] for f in t["findings"]
               if f["status"] in ("FAIL", "WARN") and f["rule"].startswith("G1")]
    assert [(f["rule"], f["status"], f["location"]["path"].rsplit("/", 1)[-1], f["location"]["line"]) for f in failing] == [
        ("G1-cpu-build", "WARN", "requirements.txt", 1)]
    assert "replace the CUDA 13 torch 2.9.1+cu130 installed at Dockerfile:3" in failing[0]["message"]
