"""Fuzz ``docker save`` archives (manifest.json, config JSON, layer members), read both ways: by seeking
(config level) and as one forward stream (--deep)."""

from __future__ import annotations

import io
import json
import sys
import tarfile
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import main, scratch_dir, write_input

with atheris.instrument_imports(include=["envcheck"]):
    from envcheck.errors import EnvcheckError
    from envcheck.model import Inventory
    from envcheck.sources.image import ImageOptions, read_image

FOLDER = scratch_dir()
SHALLOW = ImageOptions(use_cache=False)
DEEP = ImageOptions(deep=True, use_cache=False)


def save_archive() -> bytes:
    """A real docker-save style archive built with tarfile."""
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w") as tar:
        data = b"Metadata-Version: 2.1\nName: flash-attn\nVersion: 2.8.3\n"
        info = tarfile.TarInfo("usr/lib/python3/dist-packages/flash_attn-2.8.3.dist-info/METADATA")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    config = json.dumps({"architecture": "amd64", "os": "linux", "config": {"Env": ["CUDA_VERSION=12.4.1"]},
                         "history": [{"created_by": "/bin/sh -c pip install flash-attn"}],
                         "rootfs": {"type": "layers", "diff_ids": ["sha256:" + "2" * 64]}}).encode()
    manifest = json.dumps([{"Config": "config.json", "RepoTags": ["demo:latest"], "Layers": ["layer/layer.tar"]}]).encode()
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, data in (("config.json", config), ("layer/layer.tar", layer.getvalue()), ("manifest.json", manifest)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


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
