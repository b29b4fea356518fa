"""A host script that picks its wheel index from the machine's CUDA (``CUDA_MAJOR=$(nvcc --version | grep release |
awk '{print $6}' | cut -d. -f1 | tr -d V)``, ``nvidia-smi | grep "CUDA Version"``) takes the CUDA 13 branch on a
Spark: the other branch's cu126 index does not run there, and the cu130 install is not "one of several builds".
A Dockerfile's ``nvcc`` is its base image's: there the branch stays undecided."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import run_envcheck

from envcheck.inspect.host_probes import host_probe, on_host

NVCC = """
    #!/bin/bash
    set -e
    install_torch() {{
        CUDA_MAJOR=$(nvcc --version | grep "release" | awk '{{print $6}}' | cut -d'.' -f1 | tr -d 'V')
        if [[ "$CUDA_MAJOR" {op} 13 ]]; then
            uv pip install torch torchaudio --index-url https://download.pytorch.org/whl/cu130
        else
            uv pip install torch torchaudio --index-url https://download.pytorch.org/whl/cu126
        fi
    }}
    install_torch
"""

SMI = """
    #!/usr/bin/env bash
    CUDA_VERSION=$(nvidia-smi | grep "CUDA Version" | awk '{print $9}')
    case "$CUDA_VERSION" in
      12.*) pip install torch==2.7.1 --index-url https://download.pytorch.org/whl/cu128 ;;
      *) pip install torch==2.9.1 --index-url https://download.pytorch.org/whl/cu130 ;;
    esac
"""


def _g1(path: Path) -> list[dict[str, Any]]:
    done = run_envcheck("--format", "json", "-v", str(path))
    assert done.returncode in (0, 1), done.stderr
    findings = json.loads(done.stdout)["targets"][0]["findings"]
    return [f for f in findings if f["gotcha"] == "G1" and f["status"] in ("WARN", "FAIL")]


def _write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def test_the_cuda_13_branch_of_an_nvcc_probe_is_the_one_a_spark_runs(tmp_path: Path) -> None:
    assert _g1(_write(tmp_path / "install.sh", NVCC.format(op="-ge"))) == []
    # the same probe with the branches swapped installs cu126 on a Spark: a CUDA 12 torch, at its line
    found = _g1(_write(tmp_path / "swapped.sh", NVCC.format(op="-lt")))
    assert [(f["rule"], f["location"]["line"]) for f in found] == [("G1-cuda12-index", 8)], found
    assert "conditional" not in found[0]["message"] and "fallback" not in found[0]["message"], found


def test_an_nvidia_smi_probe_decides_a_case(tmp_path: Path) -> None:
    assert _g1(_write(tmp_path / "smi.sh", SMI)) == []
    found = _g1(_write(tmp_path / "smi12.sh", SMI.replace("12.*)", "13.*)")))
    assert [f["location"]["line"] for f in found] == [4], found


def test_a_dockerfiles_nvcc_is_its_base_images_and_stays_undecided(tmp_path: Path) -> None:
    script = textwrap.dedent(NVCC.format(op="-ge")).lstrip("\n").split("\n", 2)[2]
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text(f"FROM nvcr.io/nvidia/cuda:13.0.1-devel-ubuntu24.04\nRUN <<EOF\n{script}EOF\n", encoding="utf-8")
    messages = [f["message"] for f in _g1(dockerfile)]
    assert messages and all("conditional branch" in m or "fallback" in m for m in messages), messages


@pytest.mark.parametrize("command, printed", [
    ("nvcc --version | grep release | awk '{print $6}' | cut -d, -f1", "V13.0.88"),
    ("nvcc -V | grep -oP 'release \\K[0-9]+\\.[0-9]+'", "13.0"),
    ("nvcc --version | sed -n 's/.*release \\([0-9]*\\)\\.\\([0-9]*\\).*/\\1\\2/p'", "130"),
    ("nvidia-smi | awk -F'CUDA Version: ' '/CUDA Version/ {print $2}' | awk '{print $1}'", None),
    ("/usr/local/cuda/bin/nvcc --version | tail -1", "Build cuda_13.0.r13.0/compiler.36424714_0"),
    ("nvidia-smi --query-gpu=memory.free --format=csv", None),
])
def test_the_probes_print_what_the_spark_prints(command: str, printed: str | None) -> None:
    assert host_probe(command) is None  # outside a host script: unknown
    with on_host():
        assert host_probe(command) == printed
