"""Fuzz ``docker save`` archives (manifest.json, config JSON, layer members), read both ways: by seeking
(config level) and as one forward stream (--deep)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import main, scratch_dir, write_input
from seed_builders import docker_save, tar_of

with atheris.instrument_imports(include=["envcheck"]):
    from envcheck.errors import EnvcheckError
    from envcheck.model import Inventory
    from envcheck.sources.image import ImageOptions, read_image

FOLDER = scratch_dir()
SHALLOW = ImageOptions(use_cache=False)
DEEP = ImageOptions(deep=True, use_cache=False)


def save_archive() -> bytes:
    """A real docker-save style archive built with tarfile."""
    layer = tar_of([("usr/lib/python3/dist-packages/flash_attn-2.8.3.dist-info/METADATA",
                     b"Metadata-Version: 2.1\nName: flash-attn\nVersion: 2.8.3\n")])
    config = json.dumps({"architecture": "amd64", "os": "linux", "config": {"Env": ["CUDA_VERSION=12.4.1"]},
                         "history": [{"created_by": "/bin/sh -c pip install flash-attn"}],
                         "rootfs": {"type": "layers", "diff_ids": ["sha256:" + "2" * 64]}}).encode()
    return docker_save(config, layer)


def target(data: bytes) -> None:
    path = write_input(FOLDER, "image.tar", data)
    for options in (SHALLOW, DEEP):
        try:
            inventory = read_image(f"docker-archive:{path}", options)
        except EnvcheckError:
            continue
        assert isinstance(inventory, Inventory)


if __name__ == "__main__":
    main("docker_archive", target, (), [], [save_archive()], max_len=32 << 10)
