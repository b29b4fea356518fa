"""G9-bare-pip-base is a complaint about unpinned packages: it sits at (and names) their line, never at an
exact CUDA 13 torch pin installed from the cu130 index (issue 32)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from conftest import run_envcheck

DOCKERFILE = """
    FROM nvidia/cuda:13.0.1-runtime-ubuntu24.04
    RUN apt-get update && apt-get install -y python3-pip
    RUN python3 -m pip install \\
          --extra-index-url https://download.pytorch.org/whl/cu130 \\
          torch==2.10.0 torchaudio==2.10.0

    # the service's own packages
    RUN python3 -m pip install \\
          "fastapi>=0.115" python-multipart \\
          "transformers>=4.46" accelerate
"""


def test_bare_pip_base_points_at_the_unpinned_packages(tmp_path: Path) -> None:
    path = tmp_path / "Dockerfile"
    path.write_text(textwrap.dedent(DOCKERFILE).lstrip("\n"), encoding="utf-8")
    done = run_envcheck("-f", "json", "--fail-on", "never", str(path))
    findings = json.loads(done.stdout)["targets"][0]["findings"]
    (bare,) = [f for f in findings if f["rule"] == "G9-bare-pip-base" and f["status"] == "WARN"]
    assert bare["location"]["line"] == 8  # the install of transformers and accelerate, not torch's (3)
    assert bare["evidence"]["unpinned"] == ["transformers", "accelerate"] and bare["evidence"]["lines"] == [8]
    assert "not pinned to an exact version: transformers, accelerate" in bare["message"]


def test_on_a_third_party_base_it_does_not_claim_what_the_base_ships(tmp_path: Path) -> None:
    """A community vLLM image (scitrera/*, vllm/vllm-openai) may ship torch and vLLM; envcheck cannot see what, nor
    what it pins: the message says so, where python/ubuntu/nvidia-cuda bases are known to carry no NGC PyTorch."""
    messages = {}
    for base in ("scitrera/dgx-spark-vllm:0.11.0-t4", "vllm/vllm-openai:v0.20.0-aarch64-cu130-ubuntu2404",
                 "ghcr.io/someone/spark-torch:1.0", "python:3.12-slim", "nvidia/cuda:13.0.1-runtime-ubuntu24.04"):
        path = tmp_path / "Dockerfile"
        path.write_text(f"FROM {base}\nRUN pip install vllm transformers\n", encoding="utf-8")
        done = run_envcheck("-f", "json", "--fail-on", "never", str(path))
        (found,) = [f for f in json.loads(done.stdout)["targets"][0]["findings"]
                    if f["rule"] == "G9-bare-pip-base" and f["status"] == "WARN"]
        messages[base] = found["message"]
    for base in ("scitrera/dgx-spark-vllm:0.11.0-t4", "vllm/vllm-openai:v0.20.0-aarch64-cu130-ubuntu2404", "ghcr.io/someone/spark-torch:1.0"):
        assert "envcheck cannot see whether this base ships torch" in messages[base], messages[base]
        assert "carries no" not in messages[base], messages[base]
    for base in ("python:3.12-slim", "nvidia/cuda:13.0.1-runtime-ubuntu24.04"):
        assert f"on {base}, which carries no NGC PyTorch" in messages[base], messages[base]
