"""Fuzz the image reader over an OCI image layout: index.json, the manifest and config JSON, and the layer,
each in turn. Fuzzed blobs are stored under their real digest, so they get past digest checks and reach
the parsers (a registry serves bytes that match their digest just the same)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import main, scratch_dir
from seed_builders import metadata_layer, oci_index, oci_manifest, write_oci_layout

with atheris.instrument_imports(include=["envcheck"]):
    from envcheck.errors import EnvcheckError
    from envcheck.model import Inventory
    from envcheck.sources.image import ImageOptions, read_image

FOLDER = scratch_dir()
OPTIONS = ImageOptions(deep=True, use_cache=False)
PARTS = ("index", "manifest", "config", "layer")


LAYER = metadata_layer()
CONFIG = json.dumps({
    "architecture": "arm64", "os": "linux",
    "config": {"Env": ["PATH=/usr/bin", "CUDA_VERSION=13.0.1", "TORCH_CUDA_ARCH_LIST=12.1"]},
    "history": [{"created_by": "/bin/sh -c #(nop)  ENV CUDA_VERSION=13.0.1"},
                {"created_by": "RUN /bin/sh -c pip install torch==2.9.0 --index-url https://download.pytorch.org/whl/cu130 # buildkit"}],
    "rootfs": {"type": "layers", "diff_ids": ["sha256:" + "1" * 64]},
}).encode()


def _manifest(config: bytes, layer: bytes) -> bytes:
    return json.dumps(oci_manifest(config, [layer])).encode()


def _index(manifest: bytes) -> bytes:
    return json.dumps(oci_index(manifest)).encode()


def layout(part: str, data: bytes) -> Path:
    """An OCI layout whose ``part`` is ``data`` and the rest valid (pointing at ``data`` by digest)."""
    folder = FOLDER / "image"
    shutil.rmtree(folder, ignore_errors=True)
    config = data if part == "config" else CONFIG
    layer = data if part == "layer" else LAYER
    manifest = data if part == "manifest" else _manifest(config, layer)
    index = data if part == "index" else _index(manifest)
    return write_oci_layout(folder, index, (config, layer, manifest))


def target(data: bytes) -> None:
    if not data:
        return
    part = PARTS[data[0] % len(PARTS)]
    folder = layout(part, data[1:])
    inventory = read_image(f"oci-layout:{folder}", OPTIONS)
    assert isinstance(inventory, Inventory)


if __name__ == "__main__":
    manifest = _manifest(CONFIG, LAYER)
    seeds = [b"\x00" + _index(manifest), b"\x01" + manifest, b"\x02" + CONFIG, b"\x03" + LAYER]
    main("image_layout", target, (EnvcheckError,), [], seeds, max_len=16 << 10)
