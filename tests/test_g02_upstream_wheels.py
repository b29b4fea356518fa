"""flash-attn from a wheel URL: an upstream aarch64 wheel built for an older CUDA major is not a prebuilt fit."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_envcheck

RELEASES = "https://github.com/Dao-AILab/flash-attention/releases/download"


def _g2(tmp_path: Path, wheel: str) -> list[tuple[str, int]]:
    path = tmp_path / "Dockerfile"
    path.write_text(f"FROM nvcr.io/nvidia/pytorch:25.10-py3\nRUN pip install -U {RELEASES}/{wheel}\n", encoding="utf-8")
    proc = run_envcheck("--format", "json", "--fail-on", "never", str(path))
    return [(f["status"], f["location"]["line"]) for t in json.loads(proc.stdout)["targets"] for f in t["findings"]
            if f["rule"] == "G2-flash-attn-build"]


def test_an_upstream_cuda12_aarch64_flash_attn_wheel_fails(tmp_path: Path) -> None:
    assert _g2(tmp_path, "v2.8.3/flash_attn-2.8.3+cu12torch2.9cxx11abiTRUE-cp312-cp312-linux_aarch64.whl") == [("FAIL", 2)]


def test_an_aarch64_flash_attn_wheel_for_cuda13_passes(tmp_path: Path) -> None:
    assert _g2(tmp_path, "v2.8.3/flash_attn-2.8.3+cu13torch2.9cxx11abiTRUE-cp312-cp312-linux_aarch64.whl") == [("PASS", 2)]
