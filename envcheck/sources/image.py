"""Container images: a registry reference, an OCI layout, a ``docker save`` archive or a Docker engine image.
The config level reads the manifests and the config (a few KB; history ``RUN`` lines go through the
Dockerfile reader); ``deep`` also streams the platform's layers. Facts: :class:`readings.ImageFacts`."""

from __future__ import annotations

import dataclasses
import json
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

from envcheck.errors import InputError, ServiceError, UsageError
from envcheck.inspect.image_reference import parse_reference
from envcheck.limits import open_input
from envcheck.model import BaseImage, Binary, EnvVar, Inventory, Location, Origin, Package, ReadProblem, Role
from envcheck.readings import ImageFacts
from envcheck.redaction import clean
from envcheck.services.registry.auth import Credentials, credentials_from_docker_config
from envcheck.services.registry.cache import BlobCache
from envcheck.services.registry.client import DEFAULT_DEADLINE, Manifest, RegistryClient, media_type_of
from envcheck.services.registry.layers import (
    DEFAULT_MAX_EXPANSION,
    BinaryReader,
    FinalFiles,
    LayerError,
    LayerScan,
    expansion_limit,
    scan_layer,
)
from envcheck.services.registry.local import (
    DockerArchiveStore,
    DockerDaemonImage,
    OciLayoutStore,
    scan_save_stream,
)
from envcheck.services.registry.platforms import iter_platforms, platform_matches

KIND = "image"
_DIGEST = re.compile(r"(sha256:[a-f0-9]{64}|sha512:[a-f0-9]{128})\Z")
TRANSPORTS = ("docker-daemon:", "oci-layout:", "docker-archive:", "docker://")
MAX_INDEX_DEPTH = 4


@dataclass(frozen=True)
class ImageOptions:
    platform: str = "linux/arm64"
    deep: bool = False
    credentials: Credentials | None = None
    insecure_registries: tuple[str, ...] = ()
    progress: bool = False
    use_cache: bool = True
    deep_fatbin: bool = False
    retries: int = 4
    backoff: float = 0.5
    http_timeout: float = DEFAULT_DEADLINE  # overall seconds per registry request (--http-timeout, ENVCHECK_HTTP_TIMEOUT)
    max_expansion: float = DEFAULT_MAX_EXPANSION  # --max-expansion: uncompressed/compressed bound per layer
    verbose: bool = False  # -v: one line per layer read on stderr (size, compression, time, MB/s)


@dataclass
class LayerRef:
    digest: str
    size: int | None
    media_type: str = ""


@dataclass
class Resolved:  # what the manifests say
    top: Manifest | None
    platforms: list[str] = field(default_factory=list)
    selected: Manifest | None = None
    config_digest: str | None = None
    config: dict[str, Any] | None = None
    layers: list[LayerRef] = field(default_factory=list)


class _RegistryStore:  # manifests and configs cached by digest

    def __init__(self, client: RegistryClient, cache: BlobCache) -> None:
        self.client = client
        self.cache = cache

    def top(self) -> Manifest:
        ref = self.client.ref
        return self.manifest(ref.digest) if ref.digest else self.client.manifest(ref.reference)

    def manifest(self, digest: str) -> Manifest:
        cached = self.cache.get_blob(digest)
        if cached is not None:
            body = json.loads(cached)
            return Manifest(raw=cached, body=body, media_type=media_type_of(body, None), digest=digest)
        found = self.client.manifest(digest)
        self.cache.put_blob(digest, found.raw)
        return found

    def blob(self, digest: str) -> bytes:
        cached = self.cache.get_blob(digest)
        if cached is not None:
            return cached
        data = self.client.blob(digest, what=f"image config {digest[:19]}")
        self.cache.put_blob(digest, data)
        return data


def _resolve(store: Any, top: Manifest, wanted: str, where: str) -> Resolved:
    resolved = Resolved(top=top)
    current = top
    for _ in range(MAX_INDEX_DEPTH):
        if not current.is_index:
            break
        offered = list(iter_platforms(current.body))
        resolved.platforms = [p for p, _ in offered]
        match = next((entry for p, entry in offered if platform_matches(wanted, p)), None)
        if match is None:
            return resolved
        digest = match.get("digest")
        if not isinstance(digest, str) or not _DIGEST.match(digest):
            raise InputError(f"{where}: the index entry for {wanted} has no valid digest ({digest!r})", path=where)
        current = store.manifest(digest)
    else:
        raise InputError(f"{where}: indexes nested more than {MAX_INDEX_DEPTH} deep", path=where)
    if current.is_index:
        raise InputError(f"{where}: the index has no usable child", path=where)
    resolved.selected = current
    config_desc = current.body.get("config")
    if not isinstance(config_desc, dict) or not _DIGEST.match(str(config_desc.get("digest", ""))):
        raise ServiceError(f"{where}: manifest {current.digest} has no config descriptor")
    resolved.config_digest = str(config_desc["digest"])
    raw = store.blob(resolved.config_digest)
    try:
        config = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ServiceError(f"{where}: image config {resolved.config_digest} is not JSON ({exc})") from None
    if not isinstance(config, dict):
        raise ServiceError(f"{where}: image config {resolved.config_digest} is not a JSON object")
    resolved.config = config
    layers = current.body.get("layers") or []
    for layer in layers if isinstance(layers, list) else []:
        if not isinstance(layer, dict) or not _DIGEST.match(str(layer.get("digest", ""))):
            raise InputError(f"{where}: manifest {current.digest} has a layer without a valid digest", path=where)
        size = layer.get("size")
        resolved.layers.append(LayerRef(str(layer["digest"]), size if isinstance(size, int) and size >= 0 else None,
                                        str(layer.get("mediaType", ""))))
    if not resolved.platforms:
        resolved.platforms = [_platform_of(config)]
    return resolved


def _platform_of(config: dict[str, Any]) -> str:
    text = f"{config.get('os') or config.get('Os') or 'unknown'}/{config.get('architecture') or config.get('Architecture') or 'unknown'}"
    variant = config.get("variant") or config.get("Variant")
    return text + (f"/{variant}" if variant else "")


class Progress:  # bytes and layers on stderr, on a terminal only (redrawn at most 10 times a second)
    def __init__(self, enabled: bool, total_layers: int) -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self.total = total_layers
        self.layer = 0
        self.done = 0
        self._last = 0.0

    def start_layer(self) -> Callable[[int], None]:
        self.layer += 1
        base = self.done
        self._last = 0.0  # always show a new layer's first update

        def update(seen: int) -> None:
            self.done = base + seen
            now = time.monotonic()
            if self.enabled and now - self._last > 0.1:
                self._last = now
                of = f"/{self.total}" if self.total else ""
                sys.stderr.write(f"\renvcheck: layer {self.layer}{of}  {self.done / (1 << 20):9.1f} MiB")
                sys.stderr.flush()

        return update

    def finish(self) -> None:
        if self.enabled:
            sys.stderr.write("\r" + " " * 60 + "\r")
            sys.stderr.flush()


def _report_rate(options: ImageOptions, label: str, scan: LayerScan, progress: Progress | None = None) -> None:
    if not options.verbose:
        return
    if progress is not None:
        progress.finish()  # clear the progress line first; its next update draws it again
    rate = scan.bytes / scan.seconds / 1e6 if scan.seconds > 0 else 0.0
    sys.stderr.write(f"envcheck: layer {clean(label[:80])}: {scan.bytes / (1 << 20):,.1f} MiB, "
                     f"{scan.compression or 'cached'}, {scan.members:,} files, {scan.seconds:.2f} s, {rate:,.0f} MB/s\n")


def binary_reader() -> BinaryReader:
    from envcheck.sources.binaries import binary_from_file

    return binary_from_file


def _config_inventory(name: str, config: dict[str, Any], facts: dict[str, Any]) -> Inventory:
    inventory = Inventory(context="installed")
    section = config.get("config") or config.get("Config") or {}
    where = Location(name, member="config")
    if not isinstance(section, dict):
        inventory.problems.append(ReadProblem("the image config's `config` section is not a JSON object", where))
        section = {}
    env = section.get("Env") or []
    if not isinstance(env, list):
        inventory.problems.append(ReadProblem("the image config's Env is not a list", where))
        env = []
    for item in env:
        key, sep, value = str(item).partition("=")
        if sep:
            inventory.env.append(EnvVar(key, value, origin=Origin.CONFIG, location=where))
    labels = section.get("Labels") or {}
    platform = _platform_of(config)
    facts.update({
        "os": _text(config.get("os") or config.get("Os")),
        "architecture": _text(config.get("architecture") or config.get("Architecture")),
        "variant": _text(config.get("variant") or config.get("Variant")),
        "labels": {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {},
        "created": _text(config.get("created") or config.get("Created")),
    })
    inventory.images.append(BaseImage(ref=name, platform=platform, location=where))
    history = config.get("history") or []
    history = history if isinstance(history, list) else []
    created_by = (h.get("created_by") or h.get("CreatedBy") for h in history if isinstance(h, dict))
    facts["history"] = [str(text) for text in created_by if text]
    from envcheck.sources.dockerfile import inventory_from_history

    from_history = inventory_from_history(list(facts["history"]), name)
    # The history describes how the image was built; its packages are already installed there.
    from_history.images.clear()
    # The config's Env is the final word on the environment; keep only variables set for one RUN step.
    from_history.env[:] = [var for var in from_history.env if var.origin == "run"]
    from_history.context = "installed"
    inventory.extend(from_history)
    _ngc_shipped(inventory, name)
    return inventory


_NGC_FACTS = "config: NGC base facts"


def _ngc_shipped(inventory: Inventory, name: str) -> None:
    """What an NGC PyTorch base ships (by NVIDIA_PYTORCH_VERSION): G2 and G9 judge it without --deep."""
    release = inventory.env_value("NVIDIA_PYTORCH_VERSION")
    if not release or not release.replace(".", "").isdigit():
        return
    from envcheck.sources.dockerfile import shipped_packages

    inventory.packages.extend(shipped_packages(f"nvcr.io/nvidia/pytorch:{release}-py3", Location(name, member=_NGC_FACTS)))


def _add_final_files(inventory: Inventory, name: str, final: FinalFiles) -> None:
    if final.packages:  # the layers' own METADATA is the truth: drop what the NGC tag table assumed
        inventory.packages[:] = [p for p in inventory.packages if not (p.location and p.location.member == _NGC_FACTS)]
    for path, data in sorted(final.packages.items()):
        inventory.packages.append(Package(
            name=canonicalize_name(data["name"]), version=data.get("version") or None, installed=True,
            role=Role.INSTALLED, requires=tuple(data.get("requires") or ()), location=Location(name, member="/" + path),
        ))
    names = {f.name for f in dataclasses.fields(Binary)}
    # who installed each shared library: the RECORD of its distribution (as `envcheck container` attributes it)
    owners = {file: canonicalize_name(data["name"]) for data in final.packages.values() for file in data.get("files") or ()}
    for path, data in sorted(final.binaries.items()):
        values: dict[str, Any] = {k: (tuple(v) if isinstance(v, list) else v) for k, v in data.items() if k in names and k != "location"}
        values["path"] = "/" + path
        if not values.get("distribution") and path in owners:
            values["distribution"] = owners[path]
        try:
            inventory.binaries.append(Binary(**values, location=Location(name, member="/" + path)))
        except TypeError:
            continue
    for problem in final.problems:
        where = Location(name, member="/" + str(problem["path"]), offset=problem.get("offset"))
        inventory.problems.append(ReadProblem(problem["message"], where))


def _scan_layers(name: str, layers: list[LayerRef], opener: Callable[[LayerRef], Any], cache: BlobCache,
                 options: ImageOptions, facts: dict[str, Any]) -> FinalFiles:
    read_binary = binary_reader()
    progress = Progress(options.progress, len(layers))
    scans: list[tuple[str, LayerScan]] = []
    stats = {"layers_scanned": 0, "layers_cached": 0, "bytes": 0, "files": 0, "binary_scanner": read_binary is not None}
    try:
        caching = options.use_cache and read_binary is not None and not options.deep_fatbin
        for layer in layers:
            limit = expansion_limit(layer.size, options.max_expansion)
            cached = _cached_scan(cache, layer, limit, options)
            if cached is None and caching:
                # Tags that share this layer (other threads, other shards on this cache) wait, then find it cached.
                with cache.layer_lock(layer.digest):
                    cached = _cached_scan(cache, layer, limit, options)
                    if cached is None:
                        scan = _scan_one(name, layer, opener, read_binary, options, progress, limit)
                        stats["layers_scanned"] += 1
                        cache.put_deep(layer.digest, scan.to_json())
            elif cached is None:
                scan = _scan_one(name, layer, opener, read_binary, options, progress, limit)
                stats["layers_scanned"] += 1
            if cached is not None:
                scan = LayerScan.from_json(cached)
                stats["layers_cached"] += 1
            stats["bytes"] += scan.bytes
            stats["files"] += scan.members
            scans.append((layer.digest, scan))
            if scan.seconds:  # read now, not taken from the cache
                _report_rate(options, layer.digest, scan, progress)
    finally:
        progress.finish()
    facts["deep"] = stats
    final = FinalFiles()
    for label, scan in scans:
        final.apply(scan, label)
    return final


def _text(value: Any) -> str | None:
    """A config value as text (a config is input: a number where text belongs is kept as its text)."""
    return None if value is None else str(value)


def _typed(facts: dict[str, Any]) -> ImageFacts:
    try:
        return ImageFacts.from_json(facts, "image")
    except InputError as exc:
        raise InputError(f"{facts.get('ref')}: {exc.message}", path=str(facts.get("ref"))) from None


def _cached_scan(cache: BlobCache, layer: LayerRef, limit: int | None, options: ImageOptions) -> dict[str, Any] | None:
    cached = cache.get_deep(layer.digest) if options.use_cache and not options.deep_fatbin else None
    if cached is not None and limit is not None and int(cached.get("bytes") or 0) > limit:
        return None  # scanned under a higher --max-expansion: this run's limit decides, so read it again
    return cached


def _scan_one(name: str, layer: LayerRef, opener: Callable[[LayerRef], Any], read_binary: BinaryReader | None,
              options: ImageOptions, progress: Progress, limit: int | None) -> LayerScan:
    with opener(layer) as stream:
        try:
            scan = scan_layer(stream, read_binary, deep_fatbin=options.deep_fatbin, progress=progress.start_layer(),
                              max_bytes=limit)
        except LayerError as exc:
            # A damaged download looks like a broken tar: let the digest say which it was.
            stream.drain()
            raise InputError(f"{name}: layer {layer.digest}: {exc.message}", path=name) from None
        stream.drain()  # hash the tar padding too, then the digest is checked
    return scan


def _split_local(spec: str, prefix: str) -> tuple[Path, str | None]:
    """``prefix PATH[:TAG]``: the path as given when it exists, else with a trailing ``:TAG`` split off."""
    rest = spec[len(prefix):]
    if Path(rest).exists() or ":" not in rest:
        return Path(rest), None
    path, _, tag = rest.rpartition(":")
    return Path(path), tag or None


def read_image(spec: str, options: ImageOptions) -> Inventory:
    cache = BlobCache(enabled=options.use_cache)
    if spec.startswith("docker-daemon:"):
        return _read_daemon(spec, options, cache)
    if spec.startswith("docker-archive:"):
        return _read_archive(spec, options, cache)
    if spec.startswith("oci-layout:"):
        folder, tag = _split_local(spec, "oci-layout:")
        store: Any = OciLayoutStore(folder, tag)
        return _read_store(spec, store, store.top(), options, cache, {"source": "oci-layout"},
                           lambda layer: store.open_layer(layer.digest, layer.size))
    ref = parse_reference(spec)
    creds = options.credentials or credentials_from_docker_config(ref.registry)
    client = RegistryClient(ref, credentials=creds, insecure=options.insecure_registries, retries=options.retries,
                            backoff=options.backoff, deadline=options.http_timeout)
    registry_store = _RegistryStore(client, cache)
    facts: dict[str, Any] = {"source": "registry", "registry": ref.registry, "repository": ref.repository, "tag": ref.tag}
    try:
        top = registry_store.top()
        return _read_store(str(ref), registry_store, top, options, cache, facts,
                           lambda layer: client.open_blob(layer.digest, what=f"layer {layer.digest[:19]}", size=layer.size), client)
    finally:
        client.session.close()


def _read_store(name: str, store: Any, top: Manifest, options: ImageOptions, cache: BlobCache, facts: dict[str, Any],
                opener: Callable[[LayerRef], Any], client: RegistryClient | None = None) -> Inventory:
    resolved = _resolve(store, top, options.platform, name)
    facts.update({"ref": name, "digest": top.digest, "media_type": top.media_type, "platform": options.platform,
                  "platforms": resolved.platforms, "platform_found": resolved.config is not None})
    if resolved.config is None:
        inventory = Inventory(context="installed")
        inventory.images.append(BaseImage(ref=name, platform=None, location=Location(name)))
    else:
        inventory = _config_inventory(name, resolved.config, facts)
        assert resolved.selected is not None
        facts.update({"manifest_digest": resolved.selected.digest, "config_digest": resolved.config_digest,
                      "layers": len(resolved.layers), "size": sum(int(layer.size or 0) for layer in resolved.layers)})
        if options.deep:
            final = _scan_layers(name, resolved.layers, opener, cache, options, facts)
            _add_final_files(inventory, name, final)
    if client is not None:
        facts["requests"] = client.requests_made
    facts["cache_hits"] = cache.hits
    inventory.host = replace(inventory.host, image=_typed(facts))
    return inventory


def _read_archive(spec: str, options: ImageOptions, cache: BlobCache) -> Inventory:
    path, tag = _split_local(spec, "docker-archive:")
    if options.deep:
        try:
            handle = open_input(path)  # read as a stream (`docker save x | envcheck image --deep docker-archive:/dev/stdin`)
        except OSError as exc:
            raise InputError(f"cannot open {path}: {exc.strerror or exc}", path=str(path)) from None
        with handle:
            return _from_save_stream(spec, handle, tag, options, {"source": "docker-archive"})
    store = DockerArchiveStore(path, tag)
    try:
        image = store.image()
    finally:
        store.close()
    facts: dict[str, Any] = {"source": "docker-archive", "ref": spec, "platform": options.platform,
                             "platforms": [_platform_of(image.config)], "platform_found": True,
                             "repo_tags": image.repo_tags, "layers": len(image.layers)}
    inventory = _config_inventory(spec, image.config, facts)
    inventory.host = replace(inventory.host, image=_typed(facts))
    return inventory


def _from_save_stream(spec: str, stream: Any, tag: str | None, options: ImageOptions, facts: dict[str, Any]) -> Inventory:
    progress = Progress(options.progress, 0)
    try:
        image, ordered = scan_save_stream(stream, spec, tag, binary_reader(), deep_fatbin=options.deep_fatbin,
                                          progress=progress.start_layer(), max_expansion=options.max_expansion)
    finally:
        progress.finish()
    facts.update({"ref": spec, "platform": options.platform, "platforms": [_platform_of(image.config)],
                  "platform_found": True, "repo_tags": image.repo_tags, "layers": len(image.layers),
                  "deep": {"layers_scanned": len(ordered), "layers_cached": 0,
                           "bytes": sum(s.bytes for _, _, s in ordered), "files": sum(s.members for _, _, s in ordered)}})
    inventory = _config_inventory(spec, image.config, facts)
    final = FinalFiles()
    for member, digest, scan in ordered:
        _report_rate(options, member, scan)
        final.apply(scan, digest)
    _add_final_files(inventory, spec, final)
    inventory.host = replace(inventory.host, image=_typed(facts))
    return inventory


def _read_daemon(spec: str, options: ImageOptions, cache: BlobCache) -> Inventory:
    name = spec[len("docker-daemon:"):]
    if not name:
        raise UsageError("docker-daemon: needs an image name, e.g. docker-daemon:myimage:latest")
    engine = DockerDaemonImage(name)
    attrs, history = engine.inspect()
    if options.deep:
        return _from_save_stream(spec, engine.export_stream(), None, options, {"source": "docker-daemon", "digest": attrs.get("Id")})
    # Engine inspect carries the same facts as the config, under the engine's capitalised keys.
    config = {"os": attrs.get("Os"), "architecture": attrs.get("Architecture"), "variant": attrs.get("Variant"),
              "created": attrs.get("Created"), "config": attrs.get("Config") or {},
              "history": [{"created_by": h.get("CreatedBy", "")} for h in reversed(history)]}
    facts: dict[str, Any] = {"source": "docker-daemon", "ref": spec, "digest": attrs.get("Id"), "platform": options.platform,
                             "platforms": [_platform_of(config)], "platform_found": True,
                             "layers": len((attrs.get("RootFS") or {}).get("Layers") or [])}
    inventory = _config_inventory(spec, config, facts)
    inventory.host = replace(inventory.host, image=_typed(facts))
    return inventory


def looks_like_image(text: str) -> bool:
    return text.startswith(TRANSPORTS)
