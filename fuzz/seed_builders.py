"""Small, valid archives and image layouts built in memory: the seeds of the fuzz harnesses and the inputs
of the property tests (``tests/test_fuzz_*.py``), so that both start from the same real shapes.

Nothing here imports envcheck: a harness imports this before atheris instruments envcheck.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
import zipfile
from collections.abc import Iterable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SITE = "usr/local/lib/python3.12/site-packages"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
ARM64 = {"architecture": "arm64", "os": "linux"}


def digest(data: bytes) -> str:
    """``sha256:<hex>`` of ``data``."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def tar_of(members: Iterable[tuple[str, bytes]], mode: int = 0o644) -> bytes:
    """A plain tar holding ``(name, data)`` regular files."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = mode
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def metadata_layer(name: str = "torch", version: str = "2.9.0+cu130", site: str = SITE) -> bytes:
    """A gzip image layer holding one distribution's ``METADATA`` in site-packages."""
    body = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()
    folder = f"{name.replace('-', '_')}-{version.split('+')[0]}.dist-info"
    return gzip.compress(tar_of([(f"{site}/{folder}/METADATA", body)]), mtime=0)


def oci_manifest(config: bytes, layers: Iterable[bytes]) -> dict[str, object]:
    """An OCI image manifest (as a dict) that names ``config`` and ``layers`` by their digests."""
    return {
        "schemaVersion": 2, "mediaType": OCI_MANIFEST,
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": digest(config), "size": len(config)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": digest(layer), "size": len(layer)}
                   for layer in layers],
    }


def oci_index(manifest: bytes, platform: dict[str, str] | None = None) -> dict[str, object]:
    """An OCI image index (as a dict) with one entry: ``manifest`` for ``platform`` (default linux/arm64)."""
    return {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": [
        {"mediaType": OCI_MANIFEST, "digest": digest(manifest), "size": len(manifest), "platform": platform or ARM64}]}


def write_oci_layout(folder: Path, index: bytes, blobs: Iterable[bytes]) -> Path:
    """An OCI image layout in ``folder``: ``index.json`` and each blob stored under its real digest."""
    store = folder / "blobs" / "sha256"
    store.mkdir(parents=True, exist_ok=True)
    for blob in blobs:
        (store / hashlib.sha256(blob).hexdigest()).write_bytes(blob)
    (folder / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
    (folder / "index.json").write_bytes(index)
    return folder


def docker_save(config: bytes, layer_tar: bytes, tag: str = "demo:latest") -> bytes:
    """A ``docker save`` archive: ``manifest.json``, the config and one uncompressed layer tar."""
    manifest = json.dumps([{"Config": "config.json", "RepoTags": [tag], "Layers": ["layer/layer.tar"]}]).encode()
    return tar_of([("config.json", config), ("layer/layer.tar", layer_tar), ("manifest.json", manifest)])


def small_wheel(compression: int = zipfile.ZIP_DEFLATED, binary: str | None = None,
                requires: Iterable[str] = ("torch>=2.9",)) -> bytes:
    """A real, valid wheel (zip), with an optional ELF member copied from ``fixtures/binaries``."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as zf:
        zf.writestr("demo_pkg/__init__.py", "")
        zf.writestr("demo_pkg-1.0.dist-info/WHEEL",
                    "Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp311-cp311-manylinux_2_28_aarch64\n")
        zf.writestr("demo_pkg-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: demo-pkg\nVersion: 1.0\n"
                    + "".join(f"Requires-Dist: {r}\n" for r in requires))
        if binary:
            zf.writestr(f"demo_pkg/{binary}", (REPO / "fixtures" / "binaries" / binary).read_bytes())
        zf.writestr("demo_pkg-1.0.dist-info/RECORD", "")
    return buf.getvalue()
