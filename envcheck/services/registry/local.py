"""Images already here: an OCI layout folder, a ``docker save`` archive, a Docker engine. Each answers a
registry's questions; an engine's export stream cannot be read out of order, so it is walked once whole."""

from __future__ import annotations

import functools
import itertools
import json
import stat
import tarfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from envcheck.errors import InputError, ServiceError, UsageError
from envcheck.limits import DEFAULT_MAX_EXPANSION, OverLimit, expansion_limit, open_input, read_regular
from envcheck.services.registry.client import (
    OCI_INDEX,
    Manifest,
    VerifiedStream,
    media_type_of,
    sha256_digest,
    verify_digest,
)
from envcheck.services.registry.inflate import ChunkReader
from envcheck.services.registry.layers import BinaryReader, LayerError, LayerScan, scan_layer

MAX_JSON_BYTES = 16 << 20


def _tags(entries: list[dict[str, Any]]) -> str:
    tags = {str((e.get("annotations") or {}).get("org.opencontainers.image.ref.name")) for e in entries}
    return ", ".join(sorted(tags - {"None"})) or "none"


def _json(data: bytes, what: str, path: str) -> Any:
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"{what} is not JSON: {exc}", path=path) from None


class OciLayoutStore:
    """An OCI image layout folder (``oci-layout``, ``index.json``, ``blobs/<alg>/<hex>``)."""

    def __init__(self, folder: Path, tag: str | None) -> None:
        self.folder = folder
        self.tag = tag
        self.name = f"oci-layout:{folder}" + (f":{tag}" if tag else "")
        if not folder.is_dir():
            raise InputError(f"{folder}: no such folder" if not folder.exists() else
                             f"{folder} is a file; oci-layout: names an OCI image layout folder", path=str(folder),
                             fix="Name the folder that holds the layout's oci-layout and index.json (a tar of one: unpack it "
                                 "first; `docker save` output is read as docker-archive:FILE).")
        if not (folder / "index.json").is_file():
            raise InputError(f"{folder} is not an OCI image layout: it has no index.json", path=str(folder),
                             fix="Name the folder that holds the layout's oci-layout and index.json (skopeo copy ... "
                                 "oci:DIR:TAG, docker buildx build --output type=oci,tar=false,dest=DIR write one).")

    def _blob_path(self, digest: str) -> Path:
        algorithm, _, hexpart = digest.partition(":")
        if not algorithm.isalnum() or not hexpart.isalnum():
            raise InputError(f"bad digest {digest!r} in {self.name}", path=str(self.folder))
        return self.folder / "blobs" / algorithm / hexpart

    def top(self) -> Manifest:
        """The manifest the tag names in index.json (or the only one there), else index.json itself."""
        where = str(self.folder / "index.json")
        raw = self._read(self.folder / "index.json", MAX_JSON_BYTES, f"{self.name}: index.json is missing")
        body = _json(raw, "index.json", where)
        if not isinstance(body, dict) or not isinstance(body.get("manifests", []), list):
            raise InputError(f"{where} is not an OCI image index (a JSON object with a manifests list)", path=where)
        entries = [e for e in body.get("manifests") or [] if isinstance(e, dict)]
        for entry in entries:
            if not isinstance(entry.get("digest"), str) or ":" not in entry["digest"]:
                raise InputError(f"{where}: an entry of manifests has no digest", path=where)
        if self.tag:
            named = [e for e in entries if (e.get("annotations") or {}).get("org.opencontainers.image.ref.name") == self.tag]
            if not named:
                raise InputError(f"{self.name}: no manifest is tagged {self.tag!r} (tags: {_tags(entries)})",
                                 path=where)
            return self.manifest(named[0]["digest"])
        if len(entries) == 1 and "platform" not in entries[0]:
            return self.manifest(entries[0]["digest"])  # the one image (or index) the layout holds
        if entries and not any("platform" in e for e in entries):
            raise InputError(f"{self.name} holds {len(entries)} images; name one as oci-layout:DIR:TAG "
                             f"(tags: {_tags(entries)})", path=where)
        return Manifest(raw=raw, body=body, media_type=OCI_INDEX, digest=sha256_digest(raw))

    def manifest(self, digest: str) -> Manifest:
        data = self.blob(digest, MAX_JSON_BYTES)
        body = _json(data, f"manifest {digest}", str(self._blob_path(digest)))
        if not isinstance(body, dict):
            raise InputError(f"manifest {digest} is JSON but not an object", path=str(self._blob_path(digest)))
        return Manifest(raw=data, body=body, media_type=media_type_of(body, None), digest=digest)

    def _regular(self, path: Path) -> None:
        """A link to /dev/zero never ends; a FIFO blocks."""
        if not stat.S_ISREG(path.stat().st_mode):
            raise InputError(f"{self.name}: {path} is not a regular file; blobs are read only from regular files", path=str(path))

    def _read(self, path: Path, limit: int, missing: str) -> bytes:
        try:
            return read_regular(path, limit)[0]
        except FileNotFoundError:
            raise InputError(missing, path=str(path)) from None
        except OverLimit:
            raise InputError(f"{path} is larger than {limit >> 20} MiB", path=str(path)) from None
        except OSError as exc:
            raise InputError(f"{self.name}: cannot read {path}: {exc.strerror or exc}", path=str(path)) from None

    def blob(self, digest: str, limit: int = MAX_JSON_BYTES) -> bytes:
        path = self._blob_path(digest)
        data = self._read(path, limit, f"{self.name}: blob {digest} is missing")
        try:
            verify_digest(data, digest, str(path))
        except ServiceError as exc:
            raise InputError(exc.message, path=str(path)) from None
        return data

    def open_layer(self, digest: str, size: int | None) -> VerifiedStream:
        path = self._blob_path(digest)
        try:
            self._regular(path)
            handle = path.open("rb")
        except FileNotFoundError:
            raise InputError(f"{self.name}: layer {digest} is missing", path=str(path)) from None
        return VerifiedStream(handle, digest, str(path), size=size, on_close=handle.close)


@dataclass
class ArchiveImage:
    """One image inside a ``docker save`` archive: its config and layer members, bottom first."""

    config: dict[str, Any]
    layers: list[str]
    repo_tags: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, entry: dict[str, Any], config: dict[str, Any]) -> ArchiveImage:
        return cls(config, [str(x) for x in entry["Layers"]], list(entry.get("RepoTags") or []))


def _layer_digest(member: str, index: int, diff_ids: list[str]) -> str | None:
    parts = member.split("/")
    if len(parts) == 3 and parts[0] == "blobs":
        return f"{parts[1]}:{parts[2]}"
    return diff_ids[index] if index < len(diff_ids) else None


def _pick(entries: Any, tag: str | None, where: str) -> dict[str, Any]:
    if not isinstance(entries, list) or not entries:
        raise InputError(f"{where}: manifest.json lists no images", path=where)
    chosen: Any = entries[0]
    if tag:
        chosen = next((e for e in entries if isinstance(e, dict) and any(
            isinstance(t, str) and (t == tag or t.endswith("/" + tag) or t.split(":")[-1] == tag) for t in e.get("RepoTags") or [])), None)
        if chosen is None:
            raise InputError(f"{where}: no image tagged {tag!r} in this archive", path=where)
    if not isinstance(chosen, dict) or not isinstance(chosen.get("Config"), str) or not isinstance(chosen.get("Layers"), list):
        raise InputError(f"{where}: manifest.json entry lacks a Config name or a Layers list", path=where)
    return chosen


def _config_object(data: bytes, where: str) -> dict[str, Any]:
    config = _json(data, "image config", where)
    if not isinstance(config, dict):
        raise InputError(f"{where}: the image config is JSON but not an object", path=where)
    return config


class DockerArchiveStore:
    """A ``docker save`` tar file on disk, read by seeking (members are read lazily, never extracted)."""

    def __init__(self, path: Path, tag: str | None) -> None:
        self.path = path
        self.name = f"docker-archive:{path}"
        try:
            self.handle = open_input(path, streams=False)  # read by seeking: a FIFO or a device is refused, never waited on
        except OSError as exc:
            raise InputError(f"cannot read {path}: {exc.strerror or exc}; a docker save archive is read from a regular file",
                             path=str(path)) from None
        try:
            self.tar = tarfile.open(fileobj=self.handle, mode="r:")  # noqa: SIM115  (closed by close())
        except (OSError, tarfile.TarError) as exc:
            self.handle.close()
            raise InputError(f"{path} is not a tar archive (docker save output): {exc}", path=str(path)) from None
        self.tag = tag

    def close(self) -> None:
        self.tar.close()
        self.handle.close()

    def _member(self, member: str) -> tarfile.TarInfo:
        """The named member (getmember reads every header: a damaged archive fails here)."""
        try:
            return self.tar.getmember(member)
        except KeyError:
            raise InputError(f"{self.name}: member {member} is missing", path=str(self.path)) from None
        except (tarfile.TarError, EOFError, OSError, ValueError) as exc:
            raise InputError(f"{self.name} is damaged or truncated: {exc}", path=str(self.path)) from None

    def _read(self, member: str, limit: int = MAX_JSON_BYTES) -> bytes:
        info = self._member(member)
        if info.size > limit:
            raise InputError(f"{self.name}: member {member} is larger than {limit >> 20} MiB", path=str(self.path))
        handle = self.tar.extractfile(info)
        if handle is None:
            raise InputError(f"{self.name}: member {member} is not a file", path=str(self.path))
        try:
            return handle.read()
        except (tarfile.TarError, EOFError, OSError, ValueError) as exc:
            raise InputError(f"{self.name}: member {member} cannot be read: {exc}", path=str(self.path)) from None

    def image(self) -> ArchiveImage:
        entries = _json(self._read("manifest.json"), "manifest.json", f"{self.path}!manifest.json")
        entry = _pick(entries, self.tag, str(self.path))
        config_raw = self._read(str(entry["Config"]))
        parts = str(entry["Config"]).split("/")
        expected = f"{parts[1]}:{parts[2]}" if len(parts) == 3 and parts[0] == "blobs" else "sha256:" + parts[-1].removesuffix(".json")
        if len(expected) == 71:
            try:
                verify_digest(config_raw, expected, f"{self.name}!{entry['Config']}")
            except ServiceError as exc:
                raise InputError(exc.message, path=str(self.path)) from None
        config = _config_object(config_raw, f"{self.path}!{entry['Config']}")
        return ArchiveImage.of(entry, config)

    def open_layer(self, image: ArchiveImage, index: int) -> VerifiedStream:
        member = image.layers[index]
        diff_ids = list((image.config.get("rootfs") or {}).get("diff_ids") or [])
        info = self._member(member)
        handle = self.tar.extractfile(info)
        if handle is None:
            raise InputError(f"{self.name}: layer member {member} is not a file", path=str(self.path))
        return VerifiedStream(handle, _layer_digest(member, index, diff_ids), f"{self.name}!{member}", size=info.size)


def scan_save_stream(stream: IO[bytes], where: str, tag: str | None, read_binary: BinaryReader | None, *,
                     deep_fatbin: bool = False, progress: Callable[[int], None] | None = None,
                     max_expansion: float = DEFAULT_MAX_EXPANSION) -> tuple[ArchiveImage, list[tuple[str, str, LayerScan]]]:
    """Walk a ``docker save`` stream once, scanning every layer as it passes; the image and
    ``(member, digest, scan)`` bottom to top."""
    small: dict[str, bytes] = {}
    scanned: dict[str, tuple[str, LayerScan]] = {}
    try:
        with tarfile.open(fileobj=stream, mode="r|") as tar:
            while True:
                member = tar.next()
                if member is None:
                    break
                tar.members.clear()  # type: ignore[attr-defined]  # keep memory flat over long streams
                if not member.isfile():
                    continue
                handle = tar.extractfile(member)
                if handle is None:
                    continue
                head = handle.read(1)
                if member.size <= MAX_JSON_BYTES and (head == b"{" or head == b"[" or member.name in ("repositories", "oci-layout")):
                    small[member.name] = head + handle.read()
                    continue
                if not (member.name.endswith("layer.tar") or member.name.startswith("blobs/")):
                    continue
                rest = iter(functools.partial(handle.read, 1 << 20), b"")
                reader = VerifiedStream(ChunkReader(itertools.chain((head,), rest)), None, f"{where}!{member.name}", size=member.size)
                try:
                    scan = scan_layer(reader, read_binary, deep_fatbin=deep_fatbin, progress=progress,
                                      max_bytes=expansion_limit(member.size, max_expansion))
                except LayerError as exc:
                    scan = LayerScan(problems=[{"path": member.name, "message": f"layer {member.name}: {exc.message}"}])
                reader.drain()
                scanned[member.name] = (reader.digest(), scan)
    except (tarfile.TarError, EOFError, ValueError, TypeError, OSError) as exc:
        raise InputError(f"{where} is not a complete docker save stream: {exc or type(exc).__name__}", path=where) from None
    if "manifest.json" not in small:
        raise InputError(f"{where}: no manifest.json (is this docker save output?)", path=where)
    entry = _pick(_json(small["manifest.json"], "manifest.json", where), tag, where)
    config_raw = small.get(str(entry["Config"]))
    if config_raw is None:
        raise InputError(f"{where}: config {entry['Config']} is missing", path=where)
    config = _config_object(config_raw, f"{where}!{entry['Config']}")
    image = ArchiveImage.of(entry, config)
    diff_ids = list((config.get("rootfs") or {}).get("diff_ids") or [])
    ordered: list[tuple[str, str, LayerScan]] = []
    for index, name in enumerate(image.layers):
        if name not in scanned:
            raise InputError(f"{where}: layer {name} named in manifest.json is missing", path=where)
        digest, scan = scanned[name]
        expected = _layer_digest(name, index, diff_ids)
        if expected and expected != digest:
            raise InputError(f"{where}!{name}: content does not match its digest {expected}", path=where)
        ordered.append((name, digest, scan))
    return image, ordered


class DockerDaemonImage:
    """An image in a Docker engine, through the Docker SDK (config from inspect; layers from the export stream)."""

    def __init__(self, name: str) -> None:
        self.name = name
        try:
            import docker
            import docker.errors
        except ImportError:
            raise UsageError("docker-daemon: images need the docker package (pip install docker)") from None
        from envcheck.services.docker_engine import engine_client

        self._errors = docker.errors
        self.client = engine_client()  # DOCKER_HOST, contexts, TLS and ssh:// as for `envcheck container`

    def inspect(self) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        try:
            attrs = self.client.api.inspect_image(self.name)
            history = self.client.api.history(self.name)
        except self._errors.ImageNotFound:
            raise InputError(f"the Docker engine has no image {self.name!r} (docker images lists what it has)", path=f"docker-daemon:{self.name}") from None
        except self._errors.APIError as exc:
            raise ServiceError(f"the Docker engine refused to inspect {self.name}: {exc}") from None
        return attrs, list(history or [])

    def export_stream(self) -> IO[bytes]:
        try:
            chunks = self.client.api.get_image(self.name, chunk_size=1 << 20)
        except self._errors.APIError as exc:
            raise ServiceError(f"the Docker engine refused to export {self.name}: {exc}") from None
        return ChunkReader(chunks)  # type: ignore[return-value]

