"""G9-pin-conflict against the vLLM a base image's tag names (knowledge/ngc_tags.toml [[vllm_image]])."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from conftest import run_envcheck


def _conflicts(tmp_path: Path, text: str) -> list[dict[str, Any]]:
    (tmp_path / "Dockerfile").write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    proc = run_envcheck("-f", "json", "Dockerfile", cwd=tmp_path)
    return [f for t in json.loads(proc.stdout)["targets"] for f in t["findings"]
            if f["rule"] == "G9-pin-conflict" and f["status"] != "PASS"]


def test_a_pin_the_base_images_vllm_excludes_fails_on_its_line(tmp_path: Path) -> None:
    text = """
        FROM scitrera/dgx-spark-vllm:0.15.0-t4
        RUN pip install uv
        RUN uv pip install --system \\
            transformers==4.46.2 \\
            peft
    """
    (conflict,) = _conflicts(tmp_path, text)
    assert (conflict["status"], conflict["location"]["line"]) == ("FAIL", 3)
    assert "vllm 0.15.0 (in the base image) needs transformers" in conflict["message"] and "4.46.2" in conflict["message"]
    assert not _conflicts(tmp_path, text.replace("4.46.2", "4.57.1"))  # within vLLM's range
    # the official image's release tag names its vLLM too
    (official,) = _conflicts(tmp_path, text.replace("scitrera/dgx-spark-vllm:0.15.0-t4", "vllm/vllm-openai:v0.12.0"))
    assert "vllm 0.12.0" in official["message"]
    assert not _conflicts(tmp_path, text.replace("scitrera/dgx-spark-vllm:0.15.0-t4", "vllm/vllm-openai:latest"))
