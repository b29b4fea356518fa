"""``envcheck cache [info|clean]``: show what envcheck's cache holds, or remove it."""

from __future__ import annotations

import argparse
import json
import sys

from envcheck import cache
from envcheck.errors import ServiceError, UsageError
from envcheck.redaction import clean

HELP = ("Show what envcheck's cache holds (binary scans, registry manifests and configs, image layer "
        "scans), or remove it. The folder is $ENVCHECK_CACHE_DIR, else $XDG_CACHE_HOME/envcheck or ~/.cache/envcheck; "
        "only envcheck's own entries in it are touched. `update-facts [NAME[==VERSION] ...]` adds the newest "
        "linux/aarch64 wheels of the packages Spark projects use (or those named) to your own wheel facts table, "
        "which --resolve reads after the shipped one (it downloads those wheels: several GB by default); `info` "
        "lists that table too, and `clean` keeps it.")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", nargs="?", choices=("info", "clean", "update-facts"), default="info")
    parser.add_argument("names", nargs="*", metavar="NAME[==VERSION]", help="update-facts: the packages to read (default: the "
                        "families Spark projects resolve to, newest releases)")
    parser.add_argument("--index-url", default=None, help="update-facts: the index to read them from (default: PyPI)")
    parser.add_argument("--older-than", type=float, metavar="DAYS",
                        help="clean: remove only entries not used for DAYS days (default: everything)")
    parser.add_argument("-f", "--format", choices=("text", "json"), default="text")


def run(args: argparse.Namespace) -> str:
    if args.older_than is not None and (args.action != "clean" or args.older_than < 0):
        raise UsageError("--older-than DAYS goes with `envcheck cache clean` and is zero or more")
    if (args.names or args.index_url) and args.action != "update-facts":
        raise UsageError("package names and --index-url go with `envcheck cache update-facts`")
    if args.action == "update-facts":
        return _update_facts(args)
    root = cache.cache_dir()
    if args.action == "clean":
        removed, freed = cache.clean(args.older_than, root)
        if args.format == "json":
            return json.dumps({"cache_dir": str(root), "removed_files": removed, "freed_bytes": freed}) + "\n"
        age = f" not used for {args.older_than:g} days" if args.older_than is not None else ""
        return f"{clean(str(root))}: removed {removed} cache files{age} ({_size(freed)})\n"
    parts = cache.usage(root)
    table, rows, size = _facts_table()
    if args.format == "json":
        return json.dumps({"cache_dir": str(root), "entries": {k: {"files": n, "bytes": b} for k, (n, b) in parts.items()},
                           "facts_table": {"path": table, "exists": rows is not None, "rows": rows or 0, "bytes": size}}) + "\n"
    total_files, total_bytes = sum(n for n, _ in parts.values()), sum(b for _, b in parts.values())
    lines = [f"{clean(str(root))}: {total_files} files, {_size(total_bytes)}"]
    lines += [f"  {kind:32} {files:6} files  {_size(size):>10}" for kind, (files, size) in parts.items()]
    lines.append(f"your wheel facts table (--resolve reads it; clean keeps it): {clean(table)}: "
                 + (f"{rows} rows, {_size(size)}" if rows is not None else "none yet (update-facts writes it)"))
    return "\n".join(lines) + "\n"


def _facts_table() -> tuple[str, int | None, int]:
    """The user's own wheel facts table (``cache update-facts``): where, its rows (None: not written yet), bytes."""
    from envcheck.resolution.facts import user_table
    from envcheck.resolution.facts_update import read_table
    path = user_table()
    if not path.is_file():
        return str(path), None, 0
    return str(path), len(read_table(path)), path.stat().st_size


def _update_facts(args: argparse.Namespace) -> str:
    from envcheck.profile import load_profile
    from envcheck.resolution.facts import shipped_table, user_table
    from envcheck.resolution.facts_update import FAMILIES, PYPI, update
    path, profile = user_table(), load_profile("dgx-spark")
    lines: list[str] = []

    def say(line: str, problem: bool) -> None:
        lines.append(clean(f"{line} (not added)" if problem else line))

    unreachable: list[str] = []
    added = update(path, args.names or FAMILIES, profile, profile.python_version, args.index_url or PYPI, say=say,
                   known=shipped_table().keys(), unreachable=unreachable)
    lines.append(f"{clean(str(path))}: {added} rows added")
    text = json.dumps({"table": str(path), "added": added}) + "\n" if args.format == "json" else "\n".join(lines) + "\n"
    if unreachable:  # exit code 3, as for every unreachable service; what was read is kept and said first
        sys.stdout.write(text)
        raise ServiceError(f"update-facts: the index or a file host did not answer for {len(unreachable)} packages "
                           f"({', '.join(unreachable[:5])}{', ...' if len(unreachable) > 5 else ''})")
    return text


def _size(count: int) -> str:
    value = float(count)
    for unit in ("B", "KiB", "MiB"):
        if value < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"
