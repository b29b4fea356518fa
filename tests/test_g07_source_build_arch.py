"""G7-source-build-arch through the CLI: a CUDA extension built from source in a Dockerfile, judged by the
TORCH_CUDA_ARCH_LIST in force, the NGC base that sets one, or a base envcheck cannot see into."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import run_envcheck

BUILD = """RUN git clone https://github.com/vllm-project/vllm.git /tmp/vllm && cd /tmp/vllm && \\
    python3 use_existing_torch.py && \\
    pip install --no-build-isolation --no-deps .
"""


def _arch(tmp_path: Path, head: str) -> dict[str, Any]:
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text(head + BUILD, encoding="utf-8")
    proc = run_envcheck("--format", "json", str(dockerfile))
    assert proc.returncode in (0, 1), proc.stderr
    (target,) = json.loads(proc.stdout)["targets"]
    (finding,) = [f for f in target["findings"] if f["rule"] == "G7-source-build-arch"]
    assert finding["location"]["line"] == head.count("\n") + 3
    return finding


def test_a_source_build_on_a_local_base_says_the_base_may_set_the_list(tmp_path: Path) -> None:
    # the base is a local build (another Dockerfile of the project): its ENV may set TORCH_CUDA_ARCH_LIST
    finding = _arch(tmp_path, "ARG BASE_IMAGE=vllm-node-mxfp4\nFROM ${BASE_IMAGE}\n")
    assert finding["status"] == "WARN"
    assert "cannot see whether the base image vllm-node-mxfp4 sets one" in finding["message"]
    assert finding["evidence"]["base"] == "vllm-node-mxfp4"


@pytest.mark.parametrize("base", ["python:3.12-slim", "nvidia/cuda:13.0.1-devel-ubuntu24.04"])
def test_a_source_build_on_a_known_base_without_a_list_is_warned(tmp_path: Path, base: str) -> None:
    # these bases set no TORCH_CUDA_ARCH_LIST: the build gets torch's default list
    finding = _arch(tmp_path, f"FROM {base}\n")
    assert finding["status"] == "WARN"
    assert "with no TORCH_CUDA_ARCH_LIST" in finding["message"] and "cannot see" not in finding["message"]


def test_a_source_build_on_ngc_or_with_a_list_for_sm121_passes(tmp_path: Path) -> None:
    assert _arch(tmp_path, "FROM nvcr.io/nvidia/pytorch:25.11-py3\n")["status"] == "PASS"
    assert _arch(tmp_path, "FROM vllm-node-mxfp4\nENV TORCH_CUDA_ARCH_LIST=12.1a\n")["status"] == "PASS"
