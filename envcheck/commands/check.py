"""``envcheck [PATH ...]``: check files and folders (the default command), an interpreter's environment
(``--python``), optionally resolved against package indexes first (``--resolve``)."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from envcheck import kinds
from envcheck.config import env
from envcheck.errors import UsageError

if TYPE_CHECKING:
    from envcheck.config import Config
    from envcheck.engine import Target
    from envcheck.model import Inventory, Location
    from envcheck.readings import LaunchReading, PodRequest
    from envcheck.sources import Discovery, ReadOptions

_Origin = TypeVar("_Origin", "LaunchReading", "PodRequest")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", metavar="PATH", help="files and folders to check (default: the current folder); "
                        "the kind of each is told from its name, else its content")
    parser.add_argument("--kind", help="force the input kind, one of: " + ", ".join(kinds.path_kinds()))
    parser.add_argument("--allow-empty", action="store_true",
                        help="a folder with nothing to check is not an error (default: exit 2, \"nothing to check in DIR\")")
    parser.add_argument("--build-arg", action="append", default=[], metavar="NAME=VALUE", help="Dockerfile build argument (repeatable)")
    parser.add_argument("--target", metavar="STAGE", help="Dockerfile build target stage (as docker build --target)")
    parser.add_argument("--python", metavar="PATH", help="also scan the site-packages of this Python interpreter (or virtual environment folder)")
    parser.add_argument("--shard", metavar="K/N|auto", help="check only the targets of shard K of N, by a hash of each target's "
                        "name (auto: from ENVCHECK_SHARD, a Kubernetes Indexed Job or a SLURM array; docs/fleet.md)")
    parser.add_argument("--deep-fatbin", action="store_true", help="also find fatbins stored outside .nv_fatbin (cuFFT, cuBLASLt, cuDNN)")
    parser.add_argument("--max-text-size", metavar="SIZE",
                        help="largest requirements/pyproject/lock/config file read, includes counted together (default 16MiB; docs/limits.md)")
    parser.add_argument("--max-expansion", type=float, default=None, metavar="RATIO",
                        help="a wheel's binaries may expand to RATIO times their compressed size (at least 16 MiB) before "
                             "they are refused as a decompression bomb (default 100; 0: no limit; docs/limits.md)")
    _resolve_options(parser)


def _resolve_options(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("resolve (reads package indexes; docs/resolve.md)")
    g.add_argument("--resolve", action="store_true", help="resolve dependency files for the target (uv) and judge the files picked, read from the index")
    g.add_argument("--python-version", metavar="X.Y", help="--resolve: the target's Python (default: the profile's)")
    g.add_argument("--index-url", metavar="URL", help="--resolve: the package index (default: the input's, then pip/uv configuration)")
    g.add_argument("--extra-index-url", action="append", default=[], metavar="URL", help="--resolve: another index (repeatable)")
    g.add_argument("--find-links", action="append", default=[], metavar="URL", help="--resolve: a folder or page of files (repeatable)")
    g.add_argument("--offline", action="store_true", help="--resolve: use only envcheck's cache, its facts table and uv's cache")


def build(args: argparse.Namespace, config: Config) -> list[Target]:
    from envcheck import sources
    from envcheck.engine import Target
    from envcheck.errors import InputError
    parts = [item.partition("=") for item in args.build_arg]
    build_args = {name: value if eq else env(name) or "" for name, eq, value in parts}  # NAME: from the env
    options = sources.ReadOptions(
        kind=args.kind, build_args=build_args, deep_fatbin=config.options.deep_fatbin,
        use_cache=config.options.use_cache, target=args.target, max_text_bytes=config.options.max_text_bytes,
        max_expansion=args.max_expansion)
    if args.kind is not None and args.kind not in kinds.path_kinds():
        raise UsageError(f"unknown input kind {args.kind!r} for --kind; known: {', '.join(kinds.path_kinds())}")
    targets: list[Target] = []
    paths = [Path(p) for p in args.paths]  # named as the user gave them; what envcheck finds, relative to the cwd
    if not paths and not args.python:
        found = _discovered(sources.discover_tree(Path(".")), options, args.verbose > 0)  # relative, as `envcheck .` prints them
        if not found and not args.allow_empty:
            raise UsageError("nothing to check in the current folder (no dependency file, Dockerfile, compose file, Kubernetes "
                             "manifest, shell script, notebook or wheel); pass a PATH, or --allow-empty")
        targets.extend(found)
    for raw, path in zip(args.paths, paths, strict=True):
        if re.match(r"(?i)https?://", raw):  # a wheel on a server, read by range requests
            targets.append(_url_target(raw, args.max_expansion))
            continue
        if str(path) == "-":  # a manifest or script on stdin (helm template ... | envcheck --kind kubernetes -)
            if args.kind is None:
                raise UsageError("reading stdin (-) needs --kind: envcheck cannot tell the kind of a stream by its name")
            targets.append(_stdin_target(args.kind, options))
            continue
        if not path.exists() and not path.is_symlink():
            targets.append(Target(str(path), args.kind or "missing", _raiser(InputError(
                f"{path}: no such file or folder", str(path),
                fix="Check the path" + ("." if path.is_absolute() else f" (it is relative to {Path.cwd()})."),
            ))))
            continue
        kind = args.kind or sources.detect(path)
        if kind == "project":
            discovery = sources.discover_tree(_relative_to_cwd(path))
            if not discovery.files:  # no dependency file or recipe: a folder of binaries, or nothing to check
                discovery.unreadable.clear()  # the folder scan reports the folders it cannot list itself
            found = _discovered(discovery, options, args.verbose > 0)
            if not discovery.files:
                found.append(_folder_target(path, options, args.allow_empty))
            targets.extend(found)
            continue
        if kind is None:
            targets.append(Target(str(path), "unknown", _raiser(InputError(
                f"{path}: cannot tell what kind of input this is; pass --kind ({', '.join(kinds.path_kinds())})", str(path),
                fix=f"If {path.name} is one of those kinds, pass --kind KIND (docs/inputs.md says what each holds); "
                    "otherwise leave it out: envcheck does not read it."))))
            continue
        if args.kind is None and kind not in ("folder", "elf") and kinds.by_file_name(path.name) is None and (row := kinds.get(kind)):
            from envcheck.redaction import clean
            print(f"envcheck: {clean(str(path))}: read as a {row.name} file, told from its content (its name "
                  f"says no kind; --kind {row.name} makes it explicit)", file=sys.stderr)
        targets.append(_file_target(path, kind, options, guessed=args.kind is None))
    if args.python:
        targets.append(_python_target(args.python, options))
    if args.resolve:
        targets = _resolved_targets(args, config, targets)
    elif args.offline or args.python_version or args.index_url or args.extra_index_url or args.find_links:
        raise UsageError("--offline, --python-version, --index-url, --extra-index-url and --find-links go with --resolve")
    if args.shard:
        from envcheck.shards import sharded
        targets = sharded(targets, args.shard, lambda target: target.name)
    return targets


def _url_target(url: str, max_expansion: float | None) -> Target:
    from envcheck.engine import Target
    from envcheck.services.package_index import redact
    from envcheck.sources.remote_wheel import read_url

    def read() -> Inventory:
        return read_url(url, max_expansion)

    return Target(redact(url), "wheel", read)


def _relative_to_cwd(path: Path) -> Path:
    """Relative to the working folder when under it: ``envcheck .`` and ``envcheck $PWD`` name files alike."""
    if not path.is_absolute():
        return path
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


def _resolved_targets(args: argparse.Namespace, config: Config, targets: list[Target]) -> list[Target]:
    from dataclasses import replace

    from envcheck import resolution as resolve
    from envcheck.engine import Target
    if args.python_version and not re.fullmatch(r"3\.\d{1,2}", args.python_version):
        raise UsageError(f"--python-version {args.python_version!r}: give the target's CPython as 3.X (e.g. 3.12)")
    settings = resolve.ResolveSettings(
        python_version=args.python_version, index_url=args.index_url, extra_index_urls=tuple(args.extra_index_url),
        find_links=tuple(args.find_links), offline=args.offline, use_cache=config.options.use_cache)
    if args.max_expansion is not None:
        settings = replace(settings, max_expansion=float(args.max_expansion))
    return [Target(t.name, t.kind, resolve.resolved_reader(t.name, t.kind, t.read, settings, config.profile)) for t in targets]


def _discovered(discovery: Discovery, options: ReadOptions, verbose: bool) -> list[Target]:
    from envcheck.engine import Target
    from envcheck.errors import InputError
    from envcheck.redaction import clean, no_command_lines
    for skipped, reason in discovery.skipped:
        # a link named like an input that leads outside the folder is said even without -v: it looks like an input
        if verbose or str(skipped) in discovery.outside:
            print(no_command_lines(f"envcheck: skipped {clean(str(skipped))}: {clean(reason)}"), file=sys.stderr)
    targets = [_file_target(path, kind, options) for path, kind in discovery.files]
    if discovery.outside:
        from envcheck.model import Inventory
        from envcheck.sources.walk import outside_note
        note = outside_note(discovery.root, discovery.outside)
        targets.append(Target(discovery.root, "folder", lambda: Inventory(problems=[note])))
    for path, target in discovery.broken:
        targets.append(Target(str(path), "unreadable", _raiser(InputError(
            f"{path}: a symbolic link to {target}, which leads to no file: not read", str(path),
            fix="Point the link at the file it stands for, or remove it."))))
    for path, why in discovery.unreadable:
        targets.append(Target(str(path), "unreadable", _raiser(InputError(
            f"{path}: cannot read this folder ({why}); nothing in it was checked", str(path)))))
    return targets


def _folder_target(path: Path, options: ReadOptions, allow_empty: bool) -> Target:
    """A folder with no input files: its binaries are scanned; finding none is "nothing to check" (exit 2)."""
    from envcheck import sources
    from envcheck.engine import Target
    return Target(str(path), "folder", lambda: sources.read_bare_folder(path, options, allow_empty))


def _raiser(exc: Exception) -> Callable[[], Inventory]:
    def read() -> Inventory:
        raise exc

    return read


def _file_target(path: Path, kind: str, options: ReadOptions, guessed: bool = True) -> Target:
    from dataclasses import replace

    from envcheck import sources
    from envcheck.engine import Target
    from envcheck.errors import InputError
    module = sources.module_for(kind)
    opts = replace(options, kind=kind)

    def read() -> Inventory:
        try:
            inventory: Inventory = module.read(path, opts)
        except InputError as exc:
            if not exc.fix and path.is_file() and not _opens(path):
                exc.fix = f"Make {path} readable for the user envcheck runs as (its mode or owner), or leave it out."
            elif guessed and not exc.fix and path.is_file():
                # The kind came from the file's name or content: the file may simply be something else.
                exc.fix = f"Fix the {kind} file, or pass --kind if {path} is not one ({', '.join(kinds.path_kinds())})."
            raise
        return inventory

    return Target(str(path), kind, read)


def _opens(path: Path) -> bool:
    try:
        with path.open("rb"):
            return True
    except OSError:
        return False


def _stdin_target(kind: str, options: ReadOptions) -> Target:
    """``-``: read /dev/stdin, named ``-`` in every report and location (as ruff and hadolint name it)."""
    from dataclasses import replace

    from envcheck.engine import Target
    from envcheck.errors import InputError
    from envcheck.sources import move_locations
    stream, inner = "/dev/stdin", _file_target(Path("/dev/stdin"), kind, options, guessed=False)

    def named(loc: Location | None) -> Location | None:
        return replace(loc, path="-") if loc is not None and loc.path == stream else loc

    def read() -> Inventory:
        try:
            inventory = inner.read()
        except InputError as exc:
            exc.message, exc.path = exc.message.replace(stream, "stdin (-)"), "-"
            raise
        move_locations(inventory, named, "packages", "indexes", "installs", "binaries", "wheels", "images", "env",
                       "problems", "pragmas", "resolved")
        inventory.problems[:] = [replace(p, message=p.message.replace(stream, "stdin (-)")) for p in inventory.problems]
        host = inventory.host  # launch commands and pod requests name their file too (G3, G6, G10 findings)
        if host.launch or host.pod_requests:
            inventory.host = replace(
                host, launch=_dash(host.launch, stream), pod_requests=_dash(host.pod_requests, stream))
        return inventory

    return Target("-", kind, read)


def _dash(readings: tuple[_Origin, ...] | None, stream: str) -> tuple[_Origin, ...] | None:
    """Readings of stdin (``stream``) named ``-``, as every other fact of it."""
    from dataclasses import replace
    return None if readings is None else tuple(replace(r, origin="-") if r.origin == stream else r for r in readings)


def _python_target(python: str, options: ReadOptions) -> Target:
    from envcheck.engine import Target

    def read() -> Inventory:
        from envcheck.sources.folder import read_python
        return read_python(python, options)

    return Target(f"python:{python}", "folder", read)
