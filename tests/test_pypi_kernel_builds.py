"""A pinned PyPI package that is, or requires at one exact version, a compiled build linking CUDA 12 on
linux/aarch64 (sglang 0.5.8 requires sgl-kernel==0.3.21) fails on a Spark: a cause of its own beside the
torch of the same install. And a CPU-only torch beside a package that runs only on CUDA (sglang, vLLM,
flash-attn) does not degrade to the CPU: what needs CUDA does not start, so it is a FAIL there."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import run_envcheck

PYPROJECT = """\
[project]
name = "demo"
version = "0.1.0"
requires-python = ">=3.10"
dependencies = [
    "numpy==1.26.4",
    "torch==2.9.1",
    "sglang==0.5.8",
]
"""


def _findings(path: Path) -> list[dict[str, Any]]:
    proc = run_envcheck("--format", "json", "--fail-on", "never", str(path))
    assert proc.returncode == 0, proc.stderr
    return [f for t in json.loads(proc.stdout)["targets"] for f in t["findings"] if f["status"] in ("WARN", "FAIL")]


def _at(findings: list[dict[str, Any]], rule: str) -> list[tuple[int, str]]:
    return [(f["location"]["line"], f["status"]) for f in findings if f["rule"] == rule]


def test_an_exact_pin_that_requires_a_cuda12_kernel_build_fails_at_its_line(tmp_path: Path) -> None:
    project = tmp_path / "pyproject.toml"
    project.write_text(PYPROJECT, encoding="utf-8")
    found = _findings(project)
    assert _at(found, "G1-pypi-dependency-cuda12") == [(8, "FAIL")]
    message = next(f["message"] for f in found if f["rule"] == "G1-pypi-dependency-cuda12")
    assert "sgl-kernel==0.3.21" in message and "libcudart.so.12" in message
    # the CPU-only torch is the other cause, reported at its own line, and sglang cannot run on it
    assert _at(found, "G1-cpu-build") == [(7, "FAIL")]


def test_the_kernel_package_pinned_itself_fails_and_a_cuda13_release_does_not(tmp_path: Path) -> None:
    req = tmp_path / "requirements.txt"
    req.write_text("sgl-kernel==0.3.21\n", encoding="utf-8")
    assert _at(_findings(req), "G1-pypi-dependency-cuda12") == [(1, "FAIL")]
    req.write_text("torch==2.11.0\nsglang==0.5.14\n", encoding="utf-8")
    assert _at(_findings(req), "G1-pypi-dependency-cuda12") == []
    # bitsandbytes bundles a library per CUDA release and loads the one matching torch's
    req.write_text("torch==2.11.0\nbitsandbytes==0.50.2\n", encoding="utf-8")
    assert _at(_findings(req), "G1-pypi-dependency-cuda12") == []


def test_a_pin_served_by_another_index_is_not_pypis_build(tmp_path: Path) -> None:
    req = tmp_path / "requirements.txt"
    req.write_text("--index-url https://wheels.example.org/cu130/simple\nsglang==0.5.8\n", encoding="utf-8")
    assert _at(_findings(req), "G1-pypi-dependency-cuda12") == []


def test_a_cpu_only_torch_is_a_warn_alone_and_a_fail_beside_a_cuda_only_package(tmp_path: Path) -> None:
    req = tmp_path / "requirements.txt"
    req.write_text("torch==2.6.0\nsentence-transformers==2.3.1\n", encoding="utf-8")
    assert _at(_findings(req), "G1-cpu-build") == [(1, "WARN")]
    req.write_text("torch==2.6.0\nflash-attn==2.7.4.post1\n", encoding="utf-8")
    assert _at(_findings(req), "G1-cpu-build") == [(1, "FAIL")]


def test_a_cuda_only_package_of_another_stage_does_not_raise_the_level(tmp_path: Path) -> None:
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text(
        "FROM nvcr.io/nvidia/vllm:26.03-py3 AS serve\n"
        "RUN pip install flash-attn==2.7.4.post1\n"
        "FROM python:3.12-slim AS embed\n"
        "COPY --from=serve /opt /opt\n"
        "RUN pip install torch==2.6.0 sentence-transformers==2.3.1\n", encoding="utf-8")
    assert _at(_findings(dockerfile), "G1-cpu-build") == [(5, "WARN")]
