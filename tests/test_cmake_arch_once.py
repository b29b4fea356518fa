"""One CMake GPU-target setting, one finding: a RUN that exports CMAKE_ARGS and passes it to `cmake -B`, then runs
`cmake --build`, sets CMAKE_CUDA_ARCHITECTURES once. cmake itself does not read the CMAKE_ARGS variable (pip builds
such as llama-cpp-python do) and `cmake --build` configures nothing (issue 32, corpus seventh batch: llama.cpp's
Spark Dockerfile pattern)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import run_envcheck

LLAMA = """FROM nvidia/cuda:13.0.1-devel-ubuntu24.04
ARG CUDA_DOCKER_ARCH={arch}
RUN if [ "${{CUDA_DOCKER_ARCH}}" != "default" ]; then \\
    export CMAKE_ARGS="-DCMAKE_CUDA_ARCHITECTURES=${{CUDA_DOCKER_ARCH}}"; \\
    fi && \\
    cmake -B build -DGGML_CUDA=ON ${{CMAKE_ARGS}} && \\
    cmake --build build -j$(nproc)
"""


def _cmake_findings(tmp_path: Path, text: str) -> list[dict[str, Any]]:
    path = tmp_path / "Dockerfile"
    path.write_text(text, encoding="utf-8")
    done = run_envcheck("-f", "json", "-v", "--fail-on", "never", str(path))
    return [f for f in json.loads(done.stdout)["targets"][0]["findings"] if f["rule"] == "G7-cmake-cuda-architectures"]


@pytest.mark.parametrize(("arch", "status"), [("86", "WARN"), ("121", "PASS")])
def test_an_exported_cmake_args_list_is_one_setting(tmp_path: Path, arch: str, status: str) -> None:
    (finding,) = _cmake_findings(tmp_path, LLAMA.format(arch=arch))
    assert finding["status"] == status and finding["location"]["line"] == 6


def test_cmake_args_still_reaches_a_pip_build(tmp_path: Path) -> None:
    (finding,) = _cmake_findings(tmp_path, "FROM nvidia/cuda:13.0.1-devel-ubuntu24.04\n"
                                           "RUN CMAKE_ARGS='-DGGML_CUDA=on -DCMAKE_CUDA_ARCHITECTURES=86' pip install llama-cpp-python==0.3.16\n")
    assert finding["status"] == "WARN" and finding["location"]["line"] == 2
