"""Command line: parse options, build targets, run the engine, render, map to an exit code. Nothing else.

    envcheck [OPTIONS] [PATH ...]          check files and folders (default: the current folder)
    envcheck rules [ID|GOTCHA]             explain rules
    envcheck image REF                     judge a registry image before pulling it
    envcheck container IMAGE               run the checks inside a container
    envcheck preflight                     live checks of this host, one line per gotcha
    envcheck snapshot [TARGET] -o FILE     save a target's inventory and findings (JSON)
    envcheck diff A B                      what changed between snapshots or live targets (--twins: nodes)
    envcheck cache [info|clean]            show or empty envcheck's cache
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from envcheck import __version__, kinds
from envcheck.errors import EnvcheckError, UsageError

if TYPE_CHECKING:
    from envcheck.config import Config
    from envcheck.engine import Target
    from envcheck.model import Inventory, Report
    from envcheck.sources import Discovery, ReadOptions

COMMANDS = {
    "image": "envcheck.commands.image",
    "container": "envcheck.commands.container",
    "preflight": "envcheck.commands.preflight",
    "snapshot": "envcheck.commands.snapshot",
    "diff": "envcheck.commands.diff",
}
BUILTIN = ("rules", "cache")
# Common options that take a value: needed to find the subcommand word among the arguments.
_VALUE_OPTS = {"--format", "-f", "--output", "-o", "--fail-on", "--ignore", "--config", "--profile", "--kind", "--build-arg", "--python", "--target",
               "--python-version", "--index-url", "--extra-index-url", "--find-links"}


def _common(parser: argparse.ArgumentParser, default_format: str | None = None) -> None:
    g = parser.add_argument_group("output and policy")
    from envcheck import formats

    g.add_argument("-f", "--format", choices=formats.names(), default=default_format,
                   help="output format (default: text; preflight for `envcheck preflight`): "
                        + "; ".join(f"{f.name}: {f.what}" for f in formats.FORMATS.values()))
    g.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE instead of stdout (-: stdout)")
    g.add_argument("--fail-on", choices=("fail", "warn", "never"), help="lowest status that makes the exit code 1 (default: fail)")
    g.add_argument("--ignore", action="append", default=[], metavar="RULE", help="ignore a rule id or a whole gotcha (G2); repeatable")
    g.add_argument("--config", metavar="FILE", help="config file (default: .envcheck.toml or [tool.envcheck] in pyproject.toml)")
    g.add_argument("--profile", help="target profile name or TOML file (default: dgx-spark)")
    g.add_argument("--nvfp4", action="store_true", help="WARN when no sm_121a kernels exist (you plan to run NVFP4)")
    g.add_argument("--no-cache", action="store_true", help="do not read or write envcheck's cache")
    g.add_argument("-q", "--quiet", action="count", default=0, help="show only failures")
    g.add_argument("-v", "--verbose", action="count", default=0, help="also show passing and informational findings")
    g.add_argument("--debug", action="store_true", help="show tracebacks for internal errors")


def _check_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="envcheck",
        description="Will this Python environment or container work on an NVIDIA DGX Spark (GB10, aarch64, CUDA 13, sm_121)?",
        epilog="Subcommands: envcheck rules [ID], envcheck image REF, envcheck container IMAGE, envcheck preflight, "
        "envcheck snapshot [TARGET] -o FILE, envcheck diff A B, envcheck cache [info|clean]. "
        "Exit codes: 0 clean, 1 findings at/above --fail-on, 2 usage error or unreadable target, 3 a service was unreachable.",
    )
    parser.add_argument("--version", action="version", version=f"envcheck {__version__}")
    parser.add_argument("paths", nargs="*", metavar="PATH", help="files and folders to check (default: the current folder); "
                        "the kind of each is told from its name, else its content")
    parser.add_argument("--kind", help="force the input kind, one of: " + ", ".join(kinds.path_kinds()))
    parser.add_argument("--allow-empty", action="store_true",
                        help="a folder with nothing to check is not an error (default: exit 2, \"nothing to check in DIR\")")
    parser.add_argument("--build-arg", action="append", default=[], metavar="NAME=VALUE", help="Dockerfile build argument (repeatable)")
    parser.add_argument("--target", metavar="STAGE", help="Dockerfile build target stage (as docker build --target)")
    parser.add_argument("--python", metavar="PATH", help="also scan the site-packages of this Python interpreter")
    parser.add_argument("--deep-fatbin", action="store_true", help="also find fatbins stored outside .nv_fatbin (cuFFT, cuBLASLt, cuDNN)")
    parser.add_argument("--max-text-size", metavar="SIZE",
                        help="largest requirements/pyproject/lock/config file read, includes counted together (default 16MiB; docs/limits.md)")
    parser.add_argument("--max-expansion", type=float, default=None, metavar="RATIO",
                        help="a wheel's binaries may expand to RATIO times their compressed size (at least 16 MiB) before "
                             "they are refused as a decompression bomb (default 100; 0: no limit; docs/limits.md)")
    _resolve_options(parser)
    g = parser.add_argument_group("fix (docs/fix.md)")
    g.add_argument("--fix", action="store_true", help="rewrite the files in place where a rule has a certain fix, then report what is left")
    g.add_argument("--diff", action="store_true", help="print the changes --fix would make as a unified diff; exit 1 when there are any")
    _common(parser)
    return parser


def _resolve_options(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("resolve (reads package indexes; docs/resolve.md)")
    g.add_argument("--resolve", action="store_true", help="resolve dependency files for the target (uv) and judge the files picked, read from the index")
    g.add_argument("--python-version", metavar="X.Y", help="--resolve: the target's Python (default: the profile's)")
    g.add_argument("--index-url", metavar="URL", help="--resolve: the package index (default: the input's, then pip/uv configuration)")
    g.add_argument("--extra-index-url", action="append", default=[], metavar="URL", help="--resolve: another index (repeatable)")
    g.add_argument("--find-links", action="append", default=[], metavar="URL", help="--resolve: a folder or page of files (repeatable)")
    g.add_argument("--offline", action="store_true", help="--resolve: use only envcheck's cache, its facts table and uv's cache")


def _split_command(argv: list[str]) -> tuple[str | None, list[str]]:
    """The subcommand word (if any) and the arguments without it; common options may precede it."""
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            return None, argv
        if word.startswith("-"):
            if word in _VALUE_OPTS:
                i += 1
            i += 1
            continue
        if word in COMMANDS or word in BUILTIN:
            return word, argv[:i] + argv[i + 1:]
        return None, argv
    return None, argv


def _command_module(name: str) -> ModuleType:
    try:
        return importlib.import_module(COMMANDS[name])
    except ImportError as exc:
        raise UsageError(f"`envcheck {name}` is not available in this build: {exc}") from exc


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `envcheck` console script; returns the exit code."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    command, rest = _split_command(args_list)
    debug = "--debug" in args_list
    try:
        if command == "rules":
            return _rules(rest)
        if command == "cache":
            return _cache(rest)
        return _run(command, rest)
    except EnvcheckError as exc:
        print(f"envcheck: error: {_clean(exc.message)}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("envcheck: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug in envcheck: say so briefly, traceback only with --debug
        if debug:
            raise
        print(f"envcheck: internal error: {type(exc).__name__}: {_clean(str(exc))} (run with --debug for a traceback)", file=sys.stderr)
        return 2


def _clean(text: str) -> str:
    """A message for stderr: secrets masked, control characters escaped (envcheck.redaction)."""
    from envcheck.redaction import clean

    return clean(text)


def _run(command: str | None, argv: list[str]) -> int:
    from envcheck import engine
    from envcheck.config import load_config

    if command is None:
        parser = _check_parser()
        module = None
    else:
        module = _command_module(command)
        parser = argparse.ArgumentParser(prog=f"envcheck {command}", description=getattr(module, "HELP", None))
        module.configure(parser)
        _common(parser, getattr(module, "DEFAULT_FORMAT", None))
    args = parser.parse_args(argv)
    from envcheck.config import parse_size

    max_text = parse_size(args.max_text_size, "--max-text-size") if getattr(args, "max_text_size", None) else None
    config = _layered_config(args, load_config(args.config, Path.cwd(), max_text))
    if module is not None and hasattr(module, "report"):  # a command that compares or post-processes (diff, snapshot)
        report: Report = module.report(args, config)
    else:
        targets: list[Target] = _path_targets(args, config) if module is None else module.build(args, config)
        report = engine.run(targets, config, debug=args.debug)
        if getattr(args, "diff", False) or getattr(args, "fix", False):
            from envcheck import fixes

            changes = fixes.plan(report)
            if args.diff:
                sys.stdout.write(fixes.unified_diff(changes))
                return report.exit_code if report.exit_code >= 2 else int(bool(changes))
            for line in fixes.write(changes, [t.name if Path(t.name).is_dir() else str(Path(t.name).parent) for t in targets]):
                print(f"envcheck: {_clean(line)}", file=sys.stderr)
            report = engine.run(_path_targets(args, config), config, debug=args.debug)  # what is left after the fixes
    from envcheck.formats import renderer

    fmt = args.format or "text"
    verbosity = args.verbose - args.quiet
    out = renderer(fmt)(report, verbosity)
    if args.output and args.output != "-":
        try:
            Path(args.output).write_text(out.stdout, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write {args.output}: {exc.strerror or exc}") from exc
        if fmt != "text" and args.quiet <= 0:
            print(renderer("text")(report, verbosity).stdout, end="")
    else:
        sys.stdout.write(out.stdout)
    for line in out.stderr:
        print(line, file=sys.stderr)
    return report.exit_code


def _layered_config(args: argparse.Namespace, config: Config) -> Config:
    """Command-line options are the top layer over file and environment config."""
    from dataclasses import replace

    changes: dict[str, object] = {}
    if args.profile:
        changes["profile"] = args.profile
    if args.fail_on:
        changes["fail_on"] = args.fail_on
    if args.ignore:
        changes["ignores"] = {**config.ignores, **{r: "ignored on the command line" for r in args.ignore}}
    options = dict(config.options)
    if args.nvfp4:
        options["nvfp4"] = True
    if getattr(args, "deep_fatbin", False):
        options["deep_fatbin"] = True
    if args.no_cache:
        options["no_cache"] = True
    if getattr(args, "max_text_size", None):
        from envcheck.config import parse_size

        options["max_text_bytes"] = parse_size(args.max_text_size, "--max-text-size")
    changes["options"] = options
    return replace(config, **changes)  # type: ignore[arg-type]


def _path_targets(args: argparse.Namespace, config: Config) -> list[Target]:
    from envcheck import sources
    from envcheck.engine import Target
    from envcheck.errors import InputError

    build_args = {}
    for item in args.build_arg:
        name, eq, value = item.partition("=")
        if not eq:
            value = os.environ.get(name) or ""
        build_args[name] = value
    options = sources.ReadOptions(
        kind=args.kind,
        build_args=build_args,
        deep_fatbin=bool(args.deep_fatbin),
        use_cache=not args.no_cache,
        extra={**({"target": args.target} if args.target else {}),
               **({"max_text_bytes": config.options["max_text_bytes"]} if config.options.get("max_text_bytes") else {}),
               **({"max_expansion": args.max_expansion} if args.max_expansion is not None else {})},
    )
    _no_mistyped_command(args.paths)
    if args.kind is not None and args.kind not in kinds.path_kinds():
        raise UsageError(f"unknown input kind {args.kind!r} for --kind; known: {', '.join(kinds.path_kinds())}")
    targets: list[Target] = []
    paths = [Path(p) for p in args.paths]  # named as the user gave them; what envcheck finds, relative to the cwd
    if not paths and not args.python:
        found = _discovered(sources.discover_tree(Path(".")), options, args.verbose > 0)  # relative, as `envcheck .` prints them
        if not found and not args.allow_empty:
            raise UsageError("nothing to check in the current folder (no requirements*.txt, pyproject.toml, uv.lock, pylock.toml, "
                             "environment.yml, Dockerfile or wheel); pass a PATH")
        targets.extend(found)
    for path in paths:
        if not path.exists() and not path.is_symlink():
            targets.append(Target(str(path), args.kind or "missing", _raiser(InputError(
                f"{path}: no such file or folder", str(path),
                fix=f"Check the path (relative paths start at {Path.cwd()}).",
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
                f"{path}: cannot tell what kind of input this is; pass --kind ({', '.join(kinds.path_kinds())})", str(path)))))
            continue
        targets.append(_file_target(path, kind, options, guessed=args.kind is None))
    if args.python:
        targets.append(_python_target(args.python, options))
    if args.resolve:
        targets = _resolved_targets(args, config, targets)
    return targets


def _no_mistyped_command(paths: list[str]) -> None:
    """``envcheck imgae foo``: a first PATH that does not exist and is spelled like a command is a typo (as git says)."""
    if not paths or "/" in paths[0] or Path(paths[0]).exists():
        return
    import difflib

    close = difflib.get_close_matches(paths[0], [*COMMANDS, *BUILTIN], n=1, cutoff=0.6)
    if close:
        raise UsageError(f"{paths[0]!r} is neither a file nor an envcheck command; the most similar command is "
                         f"`envcheck {close[0]}` (`envcheck --help` lists them)")


def _relative_to_cwd(path: Path) -> Path:
    """``path`` relative to the working folder when it lies under it, else as given: the files found in a folder
    are named the same way by ``envcheck``, ``envcheck .`` and ``envcheck $PWD``."""
    if not path.is_absolute():
        return path
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


def _resolved_targets(args: argparse.Namespace, config: Config, targets: list[Target]) -> list[Target]:
    from envcheck import resolve
    from envcheck.engine import Target

    settings = resolve.ResolveSettings(
        python_version=args.python_version, index_url=args.index_url, extra_index_urls=tuple(args.extra_index_url),
        find_links=tuple(args.find_links), offline=args.offline, use_cache=not args.no_cache,
    )
    return [Target(t.name, t.kind, resolve.resolved_reader(t.name, t.kind, t.read, settings, config.profile)) for t in targets]


def _discovered(discovery: Discovery, options: ReadOptions, verbose: bool) -> list[Target]:
    """Targets for what discovery found, an ERROR target per folder it could not read; -v lists what it skipped."""
    from envcheck.engine import Target
    from envcheck.errors import InputError
    from envcheck.redaction import escape_controls

    if verbose:
        for skipped, reason in discovery.skipped:
            print(f"envcheck: skipped {escape_controls(str(skipped))}: {reason}", file=sys.stderr)
    targets = [_file_target(path, kind, options) for path, kind in discovery.files]
    for path, why in discovery.unreadable:
        targets.append(Target(str(path), "unreadable", _raiser(InputError(
            f"{path}: cannot read this folder ({why}); nothing in it was checked", str(path)))))
    return targets


def _folder_target(path: Path, options: ReadOptions, allow_empty: bool) -> Target:
    """A folder with no input files: its binaries are scanned; finding none is "nothing to check" (exit 2)."""
    from envcheck import sources
    from envcheck.engine import Target
    from envcheck.errors import InputError

    def read() -> Inventory:
        inventory: Inventory = sources.module_for("folder").read(path, options)
        if not (inventory.binaries or inventory.packages or inventory.problems or allow_empty):
            raise InputError(f"nothing to check in {path}: no requirements*.txt, pyproject.toml, uv.lock, pylock.toml, "
                             "environment.yml, Dockerfile, wheel or ELF file (--allow-empty accepts that)", str(path))
        return inventory

    return Target(str(path), "folder", read)


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
            if guessed and not exc.fix and path.is_file():
                # The kind came from the file's name or content: the file may simply be something else.
                exc.fix = f"Fix the {kind} file, or pass --kind if {path} is not one ({', '.join(kinds.path_kinds())})."
            raise
        return inventory

    return Target(str(path), kind, read)


def _python_target(python: str, options: ReadOptions) -> Target:
    from envcheck import sources
    from envcheck.engine import Target
    from envcheck.model import Inventory

    def read() -> Inventory:
        module = sources.module_for("folder")
        inventory = Inventory(context="installed")
        for site in module.site_packages_of(python):
            inventory.extend(module.scan_folder(site, options))
        inventory.context = "installed"
        return inventory

    return Target(f"python:{python}", "folder", read)


def _rules(argv: list[str]) -> int:
    from envcheck import rules

    parser = argparse.ArgumentParser(prog="envcheck rules", description="List every rule, or explain one rule or gotcha.")
    parser.add_argument("selector", nargs="?", help="a rule id (G1-cuda12-index) or a gotcha (G2, ARCH)")
    parser.add_argument("-f", "--format", choices=("text", "json", "markdown"), default="text")
    args = parser.parse_args(argv)
    selected = list(rules.iter_rules(args.selector))
    if not selected:
        raise UsageError(f"no rule or gotcha named {args.selector!r}; `envcheck rules` lists them")
    if args.format == "json":
        import json

        data = [{"id": r.id, "gotcha": r.gotcha, "title": r.title, "severity": r.severity.value, "explanation": r.explanation, "fix": r.fix} for r in selected]
        print(json.dumps(data, indent=2))
        return 0
    if args.format == "markdown":
        from envcheck.formats.rules_doc import markdown

        print(markdown(selected), end="")
        return 0
    detailed = args.selector is not None
    for r in selected:
        print(f"{r.id:34} {r.gotcha:8} {r.severity.value:5} {r.title}")
        if detailed:
            print(f"    {r.explanation}")
            print(f"    Fix: {r.fix}\n")
    return 0


def _cache(argv: list[str]) -> int:
    from envcheck import cache

    parser = argparse.ArgumentParser(
        prog="envcheck cache",
        description="Show what envcheck's cache holds (binary scans, registry manifests and configs, image layer "
        "scans), or remove it. The folder is $ENVCHECK_CACHE_DIR, else $XDG_CACHE_HOME/envcheck or ~/.cache/envcheck; "
        "only envcheck's own entries in it are touched.")
    parser.add_argument("action", nargs="?", choices=("info", "clean"), default="info")
    parser.add_argument("--older-than", type=float, metavar="DAYS",
                        help="clean: remove only entries not used for DAYS days (default: everything)")
    parser.add_argument("-f", "--format", choices=("text", "json"), default="text")
    args = parser.parse_args(argv)
    if args.older_than is not None and (args.action != "clean" or args.older_than < 0):
        raise UsageError("--older-than DAYS goes with `envcheck cache clean` and is zero or more")
    root = cache.cache_dir()
    if args.action == "clean":
        removed, freed = cache.clean(args.older_than, root)
        if args.format == "json":
            import json

            print(json.dumps({"cache_dir": str(root), "removed_files": removed, "freed_bytes": freed}))
        else:
            age = f" not used for {args.older_than:g} days" if args.older_than is not None else ""
            print(f"{_clean(str(root))}: removed {removed} cache files{age} ({_size(freed)})")
        return 0
    parts = cache.usage(root)
    if args.format == "json":
        import json

        print(json.dumps({"cache_dir": str(root), "entries": {k: {"files": n, "bytes": b} for k, (n, b) in parts.items()}}))
        return 0
    total_files = sum(n for n, _ in parts.values())
    total_bytes = sum(b for _, b in parts.values())
    print(f"{_clean(str(root))}: {total_files} files, {_size(total_bytes)}")
    for kind, (files, size) in parts.items():
        print(f"  {kind:32} {files:6} files  {_size(size):>10}")
    return 0


def _size(count: int) -> str:
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"  # pragma: no cover
