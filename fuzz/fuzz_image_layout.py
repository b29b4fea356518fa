"""Fuzz the image reader over an OCI image layout: index.json, the manifest and config JSON, and the layer,
each in turn. Fuzzed blobs are stored under their real digest, so they get past digest checks and reach
the parsers (a registry serves bytes that match their digest just the same)."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import shutil
import sys
import tarfile
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import main, scratch_dir

with atheris.instrument_imports(include=["envcheck"]):
    from envcheck.errors import EnvcheckError
    from envcheck.model import Inventory
    from envcheck.sources.image import ImageOptions, read_image

FOLDER = scratch_dir()
OPTIONS = ImageOptions(deep=True, use_cache=False)
PARTS = ("index", "manifest", "config", "layer")


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _layer() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        data = b"Metadata-Version: 2.1\nName: torch\nVersion: 2.9.0+cu130\n"
        info = tarfile.TarInfo("usr/local/lib/python3.12/site-packages/torch-2.9.0.dist-info/METADATA")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return gzip.compress(buf.getvalue(), mtime=0)


LAYER = _layer()
CONFIG = json.dumps({
    "architecture": "arm64", "os": "linux",
    "config": {"Env": ["PATH=/usr/bin", "CUDA_VERSION=13.0.1", "TORCH_CUDA_ARCH_LIST=12.1"]},
    "history": [{"created_by": "/bin/sh -c #(nop)  ENV CUDA_VERSION=13.0.1"},
                {"created_by": "RUN /bin/sh -c pip install torch==2.9.0 --index-url https://download.pytorch.org/whl/cu130 # buildkit"}],
    "rootfs": {"type": "layers", "diff_ids": ["sha256:" + "1" * 64]},
}).encode()


def _manifest(config: bytes, layer: bytes) -> bytes:
    return json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": _digest(config), "size": len(config)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": _digest(layer), "size": len(layer)}],
    }).encode()


def _index(manifest: bytes) -> bytes:
    return json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": [
        {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": _digest(manifest), "size": len(manifest),
         "platform": {"architecture": "arm64", "os": "linux"}}]}).encode()


def layout(part: str, data: bytes) -> Path:
    """An OCI layout whose ``part`` is ``data`` and the rest valid (pointing at ``data`` by digest)."""
    folder = FOLDER / "image"
    shutil.rmtree(folder, ignore_errors=True)
    blobs = folder / "blobs" / "sha256"
    blobs.mkdir(parents=True)
    config = data if part == "config" else CONFIG
    layer = data if part == "layer" else LAYER
    manifest = data if part == "manifest" else _manifest(config, layer)
    index = data if part == "index" else _index(manifest)
    for blob in (config, layer, manifest):
        (blobs / hashlib.sha256(blob).hexdigest()).write_bytes(blob)
    (folder / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
    (folder / "index.json").write_bytes(index)
    return folder


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
