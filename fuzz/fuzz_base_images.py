"""Fuzz what a FROM line's image reference says about the base (NGC release, CUDA image tag, arm64)."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import main

with atheris.instrument_imports(include=["envcheck"]):
    from envcheck.errors import EnvcheckError
    from envcheck.knowledge.base_images import BaseFacts, describe, is_arm64, safe_describe

SEEDS = ["dockerfiles/**/Dockerfile"]
EXTRA = [b"nvcr.io/nvidia/pytorch:25.09-py3", b"nvidia/cuda:12.4.1-cudnn-devel-ubuntu22.04", b"nvcr.io/nvidia/vllm:25.11.post1-py3",
         b"python:3.12-slim@sha256:" + b"b" * 64, b"linux/arm64/v8"]


def target(data: bytes) -> None:
    text = data.decode("utf-8", errors="replace")
    facts = safe_describe(text)
    assert facts is None or isinstance(facts, BaseFacts)
    for line in text.splitlines()[:20]:
        words = line.split()
        if len(words) >= 2 and words[0].upper() == "FROM":
            with contextlib.suppress(EnvcheckError):
                assert isinstance(describe(words[-1] if words[-2].upper() != "AS" else words[1]), BaseFacts)
    is_arm64(text)


if __name__ == "__main__":
    main("base_images", target, (), SEEDS, EXTRA, max_len=1024)
