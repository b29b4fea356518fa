"""G9-floating-base-tag on the images shell scripts start: an image the project builds itself is not drift, and a
moving tag held in a variable is reported where it is written."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from conftest import run_envcheck


def _floating(path: Path) -> list[dict[str, Any]]:
    done = run_envcheck("--format", "json", str(path))
    assert done.returncode in (0, 1), done.stderr
    findings = json.loads(done.stdout)["targets"][0]["findings"]
    return [f for f in findings if f["rule"] == "G9-floating-base-tag" and f["status"] == "WARN"]


def _script(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "launch_train.sh"
    script.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return script


def test_an_image_the_script_builds_is_not_a_floating_base(tmp_path: Path) -> None:
    script = _script(tmp_path / "built", """
        #!/bin/bash
        docker build -f docker/Dockerfile.train -t flux-train .
        docker run --rm --gpus all flux-train python train.py
        docker run --rm --gpus all nvcr.io/nvidia/pytorch:latest python eval.py
    """)
    (finding,) = _floating(script)  # only the image pulled from a registry
    assert finding["location"]["line"] == 4 and "nvcr.io/nvidia/pytorch:latest" in finding["message"]


def test_a_bare_local_name_next_to_a_dockerfile_is_the_projects_build(tmp_path: Path) -> None:
    text = """
        #!/bin/bash
        docker run -it --rm --gpus all --ipc=host flux-train bash -c "accelerate launch train.py"
    """
    beside = _script(tmp_path / "assets", text)
    (beside.parent / "Dockerfile.train").write_text("FROM nvcr.io/nvidia/pytorch:25.11-py3\n", encoding="utf-8")
    assert _floating(beside) == []
    # no Dockerfile in the project's folder: still a name no registry serves (not an official image), so a local
    # build whose tag cannot move between pulls (tests/test_compose_alternatives.py holds that class)
    alone = _script(tmp_path / "alone", text)
    assert _floating(alone) == []


def test_a_moving_tag_in_a_variable_is_reported_where_it_is_written(tmp_path: Path) -> None:
    script = _script(tmp_path / "serve", """
        #!/usr/bin/env bash
        set -euo pipefail
        IMAGE="${IMAGE:-vllm/vllm-openai:nightly}"
        PORT="${PORT:-8001}"
        docker run -d --gpus=all -p "${PORT}:8000" \\
          "$IMAGE" --model /models/llama --gpu-memory-utilization 0.85
    """)
    (finding,) = _floating(script)
    assert finding["location"]["line"] == 3
