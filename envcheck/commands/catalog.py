"""``envcheck catalog REGISTRY/REPOSITORY``: judge a repository's tags as ``envcheck image`` judges one image.

Targets come in tag-name order whatever the registry's order or the shard, so ``envcheck merge`` of the
shards' reports equals one run. ``--jobs`` are threads: the time goes to the network and to zlib (no GIL).
"""

from __future__ import annotations

import argparse
import datetime
import fnmatch
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import replace

from envcheck import engine
from envcheck.commands.image import add_registry_options, image_options
from envcheck.config import Config
from envcheck.errors import UsageError
from envcheck.inspect.image_reference import parse_reference
from envcheck.model import Report, Status, TargetResult
from envcheck.profile import load_profile
from envcheck.shards import engine_variables, shard_from
from envcheck.sources.image import KIND, ImageOptions, read_image

HELP = "judge the tags of a registry repository (each as `envcheck image` does), optionally one shard of them"
DEFAULT_FORMAT = "text"
DEFAULT_JOBS = 4
MAX_JOBS = 64

EPILOG = """\
REPOSITORY is REGISTRY/NAME without a tag (nvcr.io/nvidia/pytorch, 127.0.0.1:5000/lab/vllm; Docker Hub
names work as with `envcheck image`). Tags are listed through the registry's tags API (pages followed
through Link headers) and judged one target each, in tag-name order, with the same credentials, limits
and exit codes as `envcheck image` (3 when the registry cannot be reached).

  envcheck catalog nvcr.io/nvidia/pytorch --tags '25.*-py3' --last 3
  envcheck catalog registry.lab:5000/ml/train --deep --jobs 8 -f json -o all.json
  envcheck catalog registry.lab:5000/ml/train --shard 2/3 -f json -o shard-2.json   # then: envcheck merge

--since and --last use the date in each tag's image config (`created`, a few KB per tag, cached); tags
without one are left out by --since and counted oldest by --last. --shard K/N judges the tags whose name
hashes to shard K (1..N): N runs cover every tag once, whatever the order or the other tags. Without
--shard, ENVCHECK_SHARD, JOB_COMPLETION_INDEX with JOB_COMPLETIONS, or SLURM_ARRAY_TASK_ID with
SLURM_ARRAY_TASK_COUNT name the shard (docs/fleet.md)."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("repository", metavar="REGISTRY/REPOSITORY", help="the repository whose tags to judge (no tag)")
    parser.add_argument("--tags", action="append", default=[], metavar="GLOB",
                        help="judge only tags matching GLOB (fnmatch: * ? [0-9]); repeatable, any match selects")
    parser.add_argument("--since", default=None, metavar="DATE",
                        help="only tags whose image was created at or after DATE (2025-10-01, or ISO 8601 with a time)")
    parser.add_argument("--last", type=int, default=None, metavar="N", help="only the N most recently created tags")
    parser.add_argument("--jobs", "-j", type=int, default=DEFAULT_JOBS, metavar="N",
                        help=f"read N tags at once (default {DEFAULT_JOBS}, at most {MAX_JOBS})")
    parser.add_argument("--shard", default=None, metavar="K/N", help="judge only shard K of N (1 <= K <= N), by a hash of each tag")
    parser.add_argument("--platform", default=None, help="platform to select from multi-platform tags (default: the profile's)")
    parser.add_argument("--deep", action="store_true", help="also stream each tag's layers (each distinct layer once)")
    add_registry_options(parser)
    parser.add_argument("--no-progress", action="store_true", help="no line per tag on stderr (shown on a terminal only anyway)")


def _repository(text: str) -> str:
    """REGISTRY/REPOSITORY as given, refused with a tag or digest (the tags are what catalog chooses)."""
    last = text.strip().rsplit("/", 1)[-1]
    if "@" in text or ":" in last:
        raise UsageError(f"{text!r}: name a repository without a tag or digest (envcheck catalog judges its tags; "
                         "select them with --tags GLOB)")
    parse_reference(text)  # a malformed name is a usage error before any network use
    return text.strip()


def _parse_date(text: object) -> datetime.datetime | None:
    if not isinstance(text, str) or not text.strip():
        return None
    value = text.strip()
    if value[-1:] in ("z", "Z"):
        value = value[:-1] + "+00:00"
    if "." in value:  # Go writes nanoseconds; fromisoformat takes at most microseconds
        head, _, tail = value.partition(".")
        digits = len(tail) - len(tail.lstrip("0123456789"))
        value = f"{head}.{tail[:min(digits, 6)]}{tail[digits:]}" if digits else head + tail
    try:
        when = datetime.datetime.fromisoformat(value)
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=datetime.timezone.utc)


def selected_tags(tags: list[str], globs: list[str]) -> list[str]:
    return sorted(t for t in set(tags) if not globs or any(fnmatch.fnmatchcase(t, g) for g in globs))


def _in_parallel(jobs: int, names: list[str], work: Callable[[str], TargetResult],
                 progress: Callable[[int, TargetResult, float], None]) -> list[TargetResult]:
    """``work`` for each name, ``jobs`` at once; results in the order of ``names`` (progress as they finish)."""

    def timed(name: str) -> tuple[TargetResult, float]:
        start = time.monotonic()
        return work(name), time.monotonic() - start

    with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(names) or 1)), thread_name_prefix="envcheck-tag") as pool:
        futures = {pool.submit(timed, name): name for name in names}
        results: dict[str, TargetResult] = {}
        for done, future in enumerate(as_completed(futures), 1):
            result, seconds = future.result()
            results[futures[future]] = result
            progress(done, result, seconds)
    return [results[name] for name in names]


def report(args: argparse.Namespace, config: Config) -> Report:
    from envcheck.services.registry.auth import credentials_from_docker_config
    from envcheck.services.registry.client import RegistryClient
    from envcheck.services.registry.tags import list_tags
    repository = _repository(args.repository)
    if not 1 <= args.jobs <= MAX_JOBS:
        raise UsageError(f"--jobs {args.jobs}: expected 1 to {MAX_JOBS}")
    if args.last is not None and args.last < 1:
        raise UsageError(f"--last {args.last}: expected 1 or more")
    since = _parse_date(args.since) if args.since is not None else None
    if args.since is not None and since is None:
        raise UsageError(f"--since {args.since[:40]!r}: expected a date (2025-10-01) or an ISO 8601 time "
                         "(2025-10-01T12:00:00Z)")
    shard = shard_from(args.shard, engine_variables())
    options = image_options(args, config, progress=False)
    ref = parse_reference(repository)
    client = RegistryClient(ref, credentials=options.credentials or credentials_from_docker_config(ref.registry),
                            insecure=options.insecure_registries, deadline=options.http_timeout)
    try:
        listed, skipped = list_tags(client)
    finally:
        client.session.close()
    if skipped:
        print(f"envcheck: {ref.registry}/{ref.repository}: {skipped} entries of the tags list are not valid tag names; "
              "left out", file=sys.stderr)
    tags = selected_tags(listed, args.tags)
    if not tags:
        what = f"matching {' or '.join(repr(g) for g in args.tags)}" if args.tags else "at all"
        raise UsageError(f"{ref.registry}/{ref.repository} has no tags {what} ({len(listed)} listed)")
    name_of = {tag: f"{ref.registry}/{ref.repository}:{tag}" for tag in tags}
    profile = load_profile(config.profile)

    def judge(tag: str, read_options: ImageOptions) -> TargetResult:
        target = engine.Target(name=name_of[tag], kind=KIND, read=lambda: read_image(name_of[tag], read_options))
        return engine.judge(target, engine.read_safely(target, args.debug), profile, config, args.debug)

    early: dict[str, TargetResult] = {}
    if since is not None or args.last is not None:
        tags, early = _by_date(tags, since, args.last, args.jobs, lambda tag: judge(tag, replace(options, deep=False)))
    if shard is not None:
        held = [tag for tag in tags if shard.holds(tag)]
        print(f"envcheck: shard {shard} (from {shard.source}): {len(held)} of {len(tags)} selected tags", file=sys.stderr)
        tags = held
    say = not args.no_progress and sys.stderr.isatty()
    results = _in_parallel(args.jobs, tags, lambda tag: early[tag] if tag in early and not options.deep else judge(tag, options),
                           lambda done, result, seconds: _progress(done, len(tags), result, seconds) if say else None)
    out = Report(profile=profile.name, targets=results, sm=profile.sm)
    from envcheck import fixes
    fixes.attach(out, config.options)
    out.exit_code = engine.exit_code(out.findings, config.fail_threshold)
    return out


def _by_date(tags: list[str], since: datetime.datetime | None, last: int | None, jobs: int,
             judge: Callable[[str], TargetResult]) -> tuple[list[str], dict[str, TargetResult]]:
    """The tags created at/after ``since`` and among the ``last`` newest, in tag-name order, with the
    config-level results read to learn the dates (reused when the run is not --deep)."""
    results = dict(zip(tags, _in_parallel(jobs, tags, judge, lambda *_: None), strict=True))
    oldest = datetime.datetime.min.replace(tzinfo=datetime.timezone.utc)
    facts = {tag: result.inventory.host.image for tag, result in results.items()}
    created = {tag: _parse_date(f.to_json().get("created") if f is not None else None)
               for tag, f in facts.items()}
    chosen = [t for t in tags if since is None or ((when := created[t]) is not None and when >= since)]
    if last is not None:
        chosen = sorted(chosen, key=lambda t: (created[t] or oldest, t), reverse=True)[:last]
    # A tag that could not be read has no date either: it stays, so its error is reported, not dropped.
    broken = [t for t in tags if t not in chosen and any(f.status is Status.ERROR for f in results[t].findings)]
    chosen += broken
    undated = sum(1 for t in tags if created[t] is None and t not in broken)
    if undated:
        print(f"envcheck: {undated} of {len(tags)} tags have no creation date in their image config"
              + (" (left out by --since)" if since is not None else " (counted oldest by --last)"), file=sys.stderr)
    return sorted(chosen), results


def _progress(done: int, total: int, result: TargetResult, seconds: float) -> None:
    from envcheck.redaction import clean
    worst = Status.worst((f.status for f in result.findings), Status.PASS)
    loud = sorted({f.gotcha for f in result.findings if f.status is worst and worst in (Status.FAIL, Status.WARN, Status.ERROR)})
    why = f" ({', '.join(loud)})" if loud else ""
    print(f"envcheck: [{done}/{total}] {clean(result.target)} {worst.value}{why} {seconds:.1f} s", file=sys.stderr)
