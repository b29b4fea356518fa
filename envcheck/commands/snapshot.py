"""``envcheck snapshot [TARGET] -o FILE``: a target's make-up and findings, for ``diff`` and ``preflight``.

Also turns a TARGET word into engine targets (:func:`live_targets`), for ``diff`` as well.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envcheck import engine
from envcheck.config import Config
from envcheck.errors import InputError, ServiceError, UsageError
from envcheck.limits import open_input
from envcheck.model import Report, TargetResult

if TYPE_CHECKING:
    from envcheck import sources
    from envcheck.sources.host import HostOptions

HELP = "save what a target is made of (packages, CUDA builds, ELF facts, live readings) and its findings as a JSON snapshot"
DEFAULT_FORMAT = "snapshot"

EPILOG = """\
TARGET is what `envcheck` checks (a requirements/lock/Dockerfile/wheel/ELF file, a project folder, a
site-packages folder), an image reference (nvcr.io/nvidia/pytorch:25.11-py3, docker-daemon:NAME,
oci-layout:DIR; --deep also reads its layers), `host` (the live machine as `envcheck preflight` reads it,
with python3 on PATH), ssh://[USER@]HOST[:PORT] (a machine over SSH, --python naming its interpreter; its
host key must be in ~/.ssh/known_hosts), or nothing with --python PY (the live machine and that
interpreter's environment).
Live snapshots include the ELF facts of site-packages (CUDA majors, sm_121 verdicts; --no-binaries skips
them) and one nvidia-smi reading.

  envcheck snapshot --python .venv/bin/python -o good.json          # after a run that worked
  envcheck diff good.json --python .venv/bin/python                 # later: what changed?
  ssh spark-b envcheck snapshot --python /opt/venv/bin/python -o - > spark-b.json

-o - writes the snapshot to stdout (nothing else is printed there); -o FILE writes it there and one summary
line to stderr (-q drops it; `envcheck TARGET` prints the findings). Exit code 0 when the snapshot was taken (whatever it found), 2 when a target could not be read,
3 when a registry or engine could not be reached."""


@dataclass(frozen=True)
class LiveOptions:
    python: str | None = None
    kind: str | None = None
    deep: bool = False
    container: bool = False
    binaries: bool = True
    use_cache: bool = True
    platform: str | None = None
    probe_timeout: float = 20.0


def configure(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("target", nargs="?", metavar="TARGET", help="file, folder, image reference or `host` (default with --python: host)")
    add_live_options(parser)


def add_live_options(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("reading live targets")
    g.add_argument("--python", metavar="PATH", help="the live machine and this interpreter's environment (as `envcheck preflight --python`)")
    g.add_argument("--kind", help="force the input kind of a file TARGET (requirements, freeze, dockerfile, ...)")
    g.add_argument("--deep", action="store_true", help="image TARGET: also read its layers (installed packages, ELF files)")
    g.add_argument("--container", action="store_true", help="image TARGET: run it and read it from inside (as `envcheck container`)")
    g.add_argument("--no-binaries", action="store_true", help="live TARGET: do not scan site-packages ELF files")
    g.add_argument("--platform", default=None, help="image TARGET: platform to select (default: the profile's, linux/arm64)")
    g.add_argument("--probe-timeout", type=float, default=20.0, metavar="S", help="live TARGET: seconds allowed for importing torch (default 20)")


def live_options(args: argparse.Namespace, config: Config) -> LiveOptions:
    if args.probe_timeout <= 0:
        raise UsageError("--probe-timeout must be more than 0")
    return LiveOptions(python=args.python, kind=args.kind, deep=bool(args.deep), container=bool(args.container),
                       binaries=not args.no_binaries, use_cache=config.options.use_cache, platform=args.platform,
                       probe_timeout=float(args.probe_timeout))


def build(args: argparse.Namespace, config: Config) -> list[engine.Target]:
    options = live_options(args, config)
    if args.target is None and options.python is None:
        raise UsageError("name a TARGET (a file, folder, image reference or `host`), or --python PATH")
    return live_targets(args.target or "host", options, config)


def live_targets(word: str, options: LiveOptions, config: Config) -> list[engine.Target]:
    if word == "host":
        from envcheck.sources.host import HostOptions
        return [host_target(HostOptions(python=options.python, sample_seconds=0.0, binaries=options.binaries,
                                        probe_timeout=options.probe_timeout))]
    if word.startswith("ssh://"):
        return [remote_target(word, options.python, options.probe_timeout)]
    path = Path(word)
    if path.exists() or path.is_symlink():
        return _path_targets(path, options)
    if path.suffix.lower() in _FILE_SUFFIXES or path.name.lower().startswith(("dockerfile", "containerfile", "requirements")):
        raise UsageError(f"{word}: no such file")  # a file name, not an image to look up on Docker Hub
    return [_image_target(word, options, config)]


_FILE_SUFFIXES = {".json", ".txt", ".in", ".toml", ".lock", ".whl", ".so", ".yml", ".yaml", ".gz"}


def host_target(options: HostOptions) -> engine.Target:
    from envcheck.sources.host import KIND, read_host
    return engine.Target(name=f"host (python: {options.python or 'python3 on PATH'})", kind=KIND, read=lambda: read_host(options))


def remote_target(word: str, python: str | None, probe_timeout: float) -> engine.Target:
    from envcheck.services.ssh import parse_ssh
    from envcheck.sources.remote_host import KIND, read_remote_host, target_name
    host = parse_ssh(word)
    return engine.Target(name=target_name(host, python), kind=KIND, read=lambda: read_remote_host(host, python, probe_timeout))


def _path_targets(path: Path, options: LiveOptions) -> list[engine.Target]:
    from envcheck import sources
    read_options = sources.ReadOptions(kind=options.kind, use_cache=options.use_cache)
    kind = options.kind or sources.detect(path)
    if kind == "project":
        found = sources.discover(path)
        if not found:  # no input file: a folder of binaries, or nothing to check (an ERROR, exit 2)
            return [engine.Target(str(path), "folder", lambda: sources.read_bare_folder(path, read_options))]
        return [_file_target(p, k, read_options) for p, k in found]
    if kind is None:
        raise UsageError(f"{path}: cannot tell what kind of input this is; pass --kind")
    return [_file_target(path, kind, read_options)]


def _file_target(path: Path, kind: str, options: sources.ReadOptions) -> engine.Target:
    from envcheck import sources
    module = sources.module_for("requirements" if kind == "freeze" else kind)
    opts = replace(options, kind=kind)
    return engine.Target(str(path), kind, lambda: module.read(path, opts))


def _image_target(ref: str, options: LiveOptions, config: Config) -> engine.Target:
    from envcheck.inspect.image_reference import parse_reference
    from envcheck.profile import load_profile
    from envcheck.sources.image import KIND, ImageOptions, looks_like_image, read_image
    if options.container:
        from envcheck.commands.container import container_target
        return container_target(ref)
    if not looks_like_image(ref):
        try:
            parse_reference(ref)
        except UsageError:
            raise UsageError(f"{ref}: no such file or folder, and not an image reference") from None
    platform = options.platform or load_profile(config.profile).docker_platform
    image_options = ImageOptions(platform=platform, deep=options.deep, progress=False, use_cache=options.use_cache)
    if looks_like_image(ref) or "/" in ref:
        return engine.Target(name=ref, kind=KIND, read=lambda: read_image(ref, image_options))

    def read_short_name() -> Any:
        """A bare word that is no file here is a Docker Hub image (``ubuntu``); a registry's refusal says which,
        since a mistyped file or folder name lands here too."""
        try:
            return read_image(ref, image_options)
        except ServiceError as exc:
            raise ServiceError(f"{ref} is no file or folder in {Path.cwd()}, so it was read as the image "
                               f"{parse_reference(ref)}: {exc.message}") from exc
    return engine.Target(name=ref, kind=KIND, read=read_short_name)


def report(args: argparse.Namespace, config: Config) -> Report:
    """Findings are data here, so they do not make the exit code 1."""
    result = engine.run(build(args, config), config, debug=args.debug)
    if result.exit_code == 1:
        result.exit_code = 0
    return result


@dataclass(frozen=True)
class Snapshot:
    source: str  # the file name, or "-" for stdin
    targets: tuple[TargetResult, ...]
    created: str | None = None
    node: str | None = None
    profile: str | None = None


MAX_SNAPSHOT_BYTES = 256 * 1024 * 1024  # a snapshot of a full CUDA 13 torch environment is well under 1 MB
# Bounds on what the JSON parser may build, counted on the raw bytes (a brace or comma inside a string counts
# too): 10 million empty objects in 30 MB took 780 MB to parse; these keep any document under about 400 MB,
# while a 300,000-package snapshot holds 600,000 containers and 2.4 million values.
MAX_SNAPSHOT_CONTAINERS = 2_000_000
MAX_SNAPSHOT_VALUES = 6_000_000


def load_snapshot(where: str) -> Snapshot:
    name = "stdin" if where == "-" else where
    raw = read_bounded(where, MAX_SNAPSHOT_BYTES)
    if len(raw) > MAX_SNAPSHOT_BYTES:
        raise InputError(f"{name}: larger than {MAX_SNAPSHOT_BYTES >> 20} MiB; not a snapshot", path=name)
    return parse_snapshot(raw, name)


def read_bounded(where: str, limit: int) -> bytes:
    """At most ``limit`` + 1 bytes of the file ``where`` (stdin for ``-``): more than ``limit`` is too big."""
    try:
        if where == "-":
            return sys.stdin.buffer.read(limit + 1)
        with open_input(where) as handle:
            return handle.read(limit + 1)
    except OSError as exc:
        name = "stdin" if where == "-" else where
        why = ("is a folder, not a file" if isinstance(exc, IsADirectoryError) else "no such file"
               if isinstance(exc, FileNotFoundError) else exc.strerror or str(exc))
        raise InputError(f"cannot read {name}: {why}", path=name) from None


def parse_snapshot(raw: bytes, name: str) -> Snapshot:
    containers = raw.count(b"{") + raw.count(b"[")
    values = containers + raw.count(b",")
    if containers > MAX_SNAPSHOT_CONTAINERS or values > MAX_SNAPSHOT_VALUES:
        raise InputError(f"{name}: up to {containers:,} objects and lists and {values:,} values, more than a snapshot "
                         f"holds (at most {MAX_SNAPSHOT_CONTAINERS:,} and {MAX_SNAPSHOT_VALUES:,}); not read", path=name)
    try:
        data = json.loads(raw, object_hook=_shared_texts)
    except (ValueError, RecursionError) as exc:
        line = getattr(exc, "lineno", None)
        message = "nested too deeply" if isinstance(exc, RecursionError) else getattr(exc, "msg", exc)
        raise InputError(f"{name}: not JSON ({message}); expected an `envcheck snapshot` file", path=name, line=line) from None
    if not isinstance(data, dict) or "targets" not in data or "schema_version" not in data:
        raise InputError(f"{name}: not an envcheck snapshot or JSON report (no schema_version/targets)", path=name)
    if data["schema_version"] != 1:
        raise InputError(f"{name}: schema_version {data['schema_version']!r}; this envcheck reads 1 (take the snapshot again)", path=name)
    header = data["snapshot"] if isinstance(data.get("snapshot"), dict) else {}
    targets = data["targets"]
    if not isinstance(targets, list) or not targets:
        raise InputError(f"{name}: the snapshot has no targets", path=name)
    try:
        results = tuple(TargetResult.from_json(t, f"targets[{i}]") for i, t in enumerate(targets))
    except InputError as exc:
        raise InputError(f"{name}: {exc.message}", path=name) from None
    texts = (header.get("created"), header.get("node"), data.get("profile"))
    return Snapshot(name, results, *(text if isinstance(text, str) else None for text in texts))


def _shared_texts(obj: dict[str, Any]) -> dict[str, Any]:
    """Short texts interned: a snapshot repeats paths, roles and versions hundreds of thousands of times."""
    for key, value in obj.items():
        if type(value) is str and len(value) < 128:
            obj[key] = sys.intern(value)
    return obj


def looks_like_snapshot(path: Path) -> bool:
    """A file whose first non-blank byte opens a JSON object: read it as a snapshot, not as an input."""
    try:
        with open_input(path, streams=False) as handle:
            head = handle.read(64)
    except OSError:
        return False
    return path.is_file() and head.lstrip()[:1] == b"{"
