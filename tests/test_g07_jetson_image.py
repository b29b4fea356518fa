"""G7-jetson-image: an image built for a Jetson GPU (L4T, jetson-containers, NVIDIA-AI-IOT) on a Spark."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from conftest import run_envcheck


def _findings(path: Path, text: str) -> list[dict[str, Any]]:
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    proc = run_envcheck("-f", "json", path.name, cwd=path.parent)
    return [f for t in json.loads(proc.stdout)["targets"] for f in t["findings"] if f["rule"] == "G7-jetson-image"]


def test_a_thor_image_in_compose_warns_and_an_l4t_base_fails(tmp_path: Path) -> None:
    (served,) = _findings(tmp_path / "compose.yaml", """
        services:
          vllm:
            image: ghcr.io/nvidia-ai-iot/vllm:latest-jetson-thor
            command: vllm serve Qwen/Qwen3-8B --gpu-memory-utilization 0.4
          web:
            image: nginx:1.27
    """)
    assert (served["status"], served["location"]["line"]) == ("WARN", 3) and "sm_110" in served["message"]
    (l4t,) = _findings(tmp_path / "Dockerfile", """
        FROM dustynv/l4t-pytorch:r36.2.0
        RUN pip install transformers==4.57.1
    """)
    assert l4t["status"] == "FAIL" and "Orin" in l4t["message"]
    # a Jetson tag that names CUDA 12 is G1-cuda12-base's FAIL: one cause, one finding
    (cu128,) = _findings(tmp_path / "run.sh", "docker run --gpus all dustynv/vllm:0.8.6-r36.4-cu128-24.04 vllm serve x\n")
    assert cu128["status"] == "INFO"


def test_a_per_platform_menu_reports_only_the_stage_it_builds(tmp_path: Path) -> None:
    """FROM base-${PLATFORM}: the L4T stages are other machines' alternatives (INFO); a Spark build is clean."""
    text = """
        ARG PLATFORM=spark
        FROM nvidia/cuda:13.0.1-cudnn-devel-ubuntu24.04 AS base-spark
        FROM nvcr.io/nvidia/l4t-cuda:12.6.68-runtime AS base-orin
        FROM base-${PLATFORM} AS base
        RUN echo ready
    """
    found = _findings(tmp_path / "Dockerfile", text)
    assert [(f["status"], f["location"]["line"]) for f in found] == [("INFO", 3)]
    (built,) = _findings(tmp_path / "Dockerfile", text.replace("PLATFORM=spark", "PLATFORM=orin"))
    assert built["status"] == "FAIL"
    assert not _findings(tmp_path / "Dockerfile", "FROM nvcr.io/nvidia/vllm:25.11-py3\n")
