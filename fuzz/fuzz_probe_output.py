"""Fuzz what comes back from inside a container or another interpreter: the collector's JSON document
(read by the host and container sources) and image history ``created_by`` lines (read by the Dockerfile
reader). Both come from code or images envcheck does not control."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import REPO, main

with atheris.instrument_imports(include=["envcheck"]):
    from envcheck.model import Inventory
    from envcheck.sources.dockerfile import inventory_from_history
    from envcheck.sources.host import inventory_from_probe

HISTORY = [
    b"/bin/sh -c #(nop)  ENV CUDA_VERSION=12.4.1 TORCH_CUDA_ARCH_LIST=8.0 9.0",
    b"|2 TAG=v1 PIP=pip /bin/sh -c $PIP install flash-attn==2.8.3 --no-build-isolation",
    b"RUN /bin/sh -c pip install --no-deps unsloth # buildkit",
    b"ARG BASE=nvcr.io/nvidia/pytorch:25.09-py3",
]


def target(data: bytes) -> None:
    # The first byte picks the reader: even, the collector document; odd, history lines.
    if not data:
        return
    text = data[1:].decode("utf-8", errors="replace")
    if data[0] & 1:
        history = inventory_from_history(text.split("\n")[:64], "image:fuzz")
        assert isinstance(history, Inventory)
        return
    try:
        document = json.loads(text)
    except (ValueError, RecursionError):
        document = None
    if document is not None:
        inventory = inventory_from_probe(document, "container:fuzz")
        assert isinstance(inventory, Inventory)
        for problem in inventory.problems:
            assert problem.location is not None and problem.location.path == "container:fuzz", problem


def probe_document() -> bytes:
    """The real collector run on this machine (no GPU, no torch): a genuine document to mutate."""
    done = subprocess.run([sys.executable, str(REPO / "envcheck" / "collect" / "probe.py"), "--timeout", "20",
                           "--no-nvidia-smi"], capture_output=True, timeout=120, check=False)
    if done.returncode != 0:
        return b"{}"
    return json.dumps(_trimmed(json.loads(done.stdout))).encode()


def _trimmed(value: object) -> object:
    """The document with long lists cut to 8 items: every shape stays, inputs stay small and fast."""
    if isinstance(value, dict):
        return {k: _trimmed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_trimmed(v) for v in value[:8]]
    return value


if __name__ == "__main__":
    main("probe_output", target, (), [], [b"\x00" + probe_document(), b"\x01" + b"\n".join(HISTORY)], max_len=16 << 10)
