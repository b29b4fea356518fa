"""A build setting exported in a RUN of its own ends with that RUN's shell: a later RUN that builds a CUDA
extension gets the ENV/ARG or base image's TORCH_CUDA_ARCH_LIST, not the exported one (issue 32)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import run_envcheck

HEAD = """
    FROM nvcr.io/nvidia/vllm:25.10-py3
    WORKDIR /workspace
    RUN git clone https://github.com/vllm-project/vllm.git
    WORKDIR /workspace/vllm
"""


def _run_only(tmp_path: Path, body: str) -> list[dict[str, Any]]:
    path = tmp_path / "Dockerfile"
    path.write_text(textwrap.dedent(HEAD).lstrip("\n") + textwrap.dedent(body).lstrip("\n"), encoding="utf-8")
    done = run_envcheck("-f", "json", "-v", "--fail-on", "never", str(path))
    findings: list[dict[str, Any]] = json.loads(done.stdout)["targets"][0]["findings"]
    return [f for f in findings if f["rule"] == "G7-arch-list-run-only"]


@pytest.mark.parametrize("setting", ["RUN export TORCH_CUDA_ARCH_LIST=12.1a", "RUN TORCH_CUDA_ARCH_LIST='12.1a'"])
def test_an_arch_list_set_in_a_run_of_its_own_does_not_reach_a_later_build(tmp_path: Path, setting: str) -> None:
    (finding,) = _run_only(tmp_path, f"""
        {setting}
        RUN export PATH=/usr/local/cuda/bin:$PATH
        RUN python use_existing_torch.py && \\
            pip install --no-build-isolation -e .
    """)
    assert finding["status"] == "WARN" and finding["location"]["line"] == 5
    assert "vllm, built from source on line 8" in finding["message"] and "ENV or ARG" in finding["message"]


def test_exported_in_the_run_that_builds_it_is_in_effect(tmp_path: Path) -> None:
    assert _run_only(tmp_path, """
        RUN export TORCH_CUDA_ARCH_LIST=12.1a && \\
            pip install --no-build-isolation -e .
    """) == []
    # with ENV before it, the later build gets the ENV's list, and the finding names it
    (finding,) = _run_only(tmp_path, """
        ENV TORCH_CUDA_ARCH_LIST="12.0"
        RUN export TORCH_CUDA_ARCH_LIST=12.1a
        RUN pip install --no-build-isolation -e .
    """)
    assert finding["status"] == "WARN" and "TORCH_CUDA_ARCH_LIST='12.0' from ENV/ARG" in finding["message"]
