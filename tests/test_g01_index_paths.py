"""G1-cuda12-index for any index whose path names a CUDA 11/12 build, and its level when pip keeps what the base
image ships (real files, through the CLI)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import run_envcheck

NGC_CUDA13 = "nvcr.io/nvidia/pytorch:25.11-py3"  # CUDA 13.0: ships torch 2.10.0a0+b558c986e8.nv25.11 and flash-attn


def _g1(path: Path) -> list[tuple[str, int | None, str]]:
    done = run_envcheck("--format", "json", str(path))
    assert done.returncode in (0, 1), done.stderr
    report = json.loads(done.stdout)
    found: list[dict[str, Any]] = [f for t in report["targets"] for f in t["findings"]]
    return sorted((f["rule"], f.get("location", {}).get("line"), f["status"]) for f in found
                  if f["rule"].startswith("G1-") and f["status"] in ("FAIL", "WARN"))


@pytest.mark.parametrize(("url", "flagged"), [
    ("https://pypi.jetson-ai-lab.dev/sbsa/cu128", True),
    ("https://pypi.jetson-ai-lab.dev/jp6/cu126/", True),
    ("https://mirror.corp.example/cu121/simple", True),
    ("https://pypi.jetson-ai-lab.dev/sbsa/cu130", False),  # a CUDA 13 build
    ("https://cu128.example/simple", False),  # a host name is not a path segment
    ("https://docs.example/pkgs/cu128-notes/simple", False),  # a word that starts with a tag is not one
    ("https://pypi.example/simple?flavor=cu128", False),  # nor is a query
])
def test_an_index_whose_path_names_a_cuda12_build_serves_cuda12(tmp_path: Path, url: str, flagged: bool) -> None:
    req = tmp_path / "requirements.txt"
    req.write_text(f"--extra-index-url {url}\nflash-attn\n")
    assert (("G1-cuda12-index", 1, "FAIL") in _g1(req)) is flagged
    if not flagged:
        assert [f for f in _g1(req) if f[0] == "G1-cuda12-index"] == []


@pytest.mark.parametrize(("run", "level"), [
    # everything the line takes from the CUDA 12 index is already in the base: pip keeps it (latent)
    ("pip install --no-cache-dir flash-attn --index-url https://pypi.jetson-ai-lab.dev/sbsa/cu128", "WARN"),
    ("pip install torch --index-url https://download.pytorch.org/whl/cu128", "WARN"),
    # the base does not have it, or pip is told to replace it, or the pin differs: the index is used
    ("pip install flash-attn einops --index-url https://pypi.jetson-ai-lab.dev/sbsa/cu128", "FAIL"),
    ("pip install -U flash-attn --index-url https://pypi.jetson-ai-lab.dev/sbsa/cu128", "FAIL"),
    ("pip install torch==2.9.1 --index-url https://download.pytorch.org/whl/cu128", "FAIL"),
])
def test_a_cuda12_index_for_what_the_base_ships_is_latent(tmp_path: Path, run: str, level: str) -> None:
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text(f"FROM {NGC_CUDA13}\nRUN {run}\nCMD [\"python\"]\n")
    found = _g1(dockerfile)
    assert ("G1-cuda12-index", 2, level) in found
    assert [f for f in found if f[2] == "FAIL" and f[0] != "G1-cuda12-index"] == []
    if level == "WARN":
        done = run_envcheck("--format", "json", str(dockerfile))
        message = next(f["message"] for t in json.loads(done.stdout)["targets"] for f in t["findings"]
                       if f["rule"] == "G1-cuda12-index")
        assert "latent" in message and "shipped by the base image at Dockerfile:1" in message
