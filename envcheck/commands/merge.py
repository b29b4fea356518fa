"""``envcheck merge REPORT.json...``: JSON reports (catalog shards, nightly runs, several Sparks' snapshots)
as one report, in any format. Reports of another envcheck version are refused (other rules judged them).
Targets are ordered by name, so a catalog's shards merge into the order of one run; a target name met twice
with different findings is kept twice, named with its snapshot's node, else its file."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from envcheck import __version__, engine
from envcheck.commands.snapshot import read_bounded
from envcheck.config import Config
from envcheck.errors import InputError, UsageError
from envcheck.model import Report, TargetResult

HELP = "merge JSON reports or snapshots (catalog shards, nightly runs, several Sparks) into one report"
DEFAULT_FORMAT = "text"
MAX_REPORT_BYTES = 256 << 20
MAX_TOTAL_BYTES = 1 << 30  # all inputs together: they are held in memory at once
MAX_REPORTS = 10_000

EPILOG = """\
  envcheck catalog REG/REPO --shard 1/3 -f json -o s1.json    # ... one run per shard, anywhere
  envcheck merge s1.json s2.json s3.json -f html -o fleet.html    # a matrix: tags x G1-G10/ARCH
  envcheck merge spark-a.json spark-b.json -f sarif -o lab.sarif

Inputs are `--format json` reports and `envcheck snapshot` files of this envcheck version (- reads one from
stdin). The exit code is what one run over all the targets would give (--fail-on applies)."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("reports", nargs="+", metavar="REPORT.json", help="JSON reports or snapshots to merge (- for stdin)")


def _read(where: str, left: int) -> bytes:
    name, limit = "stdin" if where == "-" else where, min(MAX_REPORT_BYTES, left)
    raw = read_bounded(where, limit)
    if len(raw) > MAX_REPORT_BYTES:
        raise InputError(f"{name}: larger than {MAX_REPORT_BYTES >> 20} MiB; not an envcheck report", path=name)
    if len(raw) > limit:
        raise InputError(f"{name}: the reports to merge come to more than {MAX_TOTAL_BYTES >> 20} MiB together; merge "
                         "fewer at once (merge the merged reports again)", path=name)
    return raw


def load_report(where: str, left: int = MAX_TOTAL_BYTES) -> tuple[dict[str, Any], list[TargetResult]]:
    """The header fields and the targets of one JSON report or snapshot, refused unless this version wrote
    it; ``left``: the bytes the other inputs left of :data:`MAX_TOTAL_BYTES`."""
    from envcheck.formats.json_format import SCHEMA_VERSION
    name = "stdin" if where == "-" else where
    try:
        raw = _read(where, left)
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise InputError(f"{name}: not JSON ({getattr(exc, 'msg', exc)}); expected an envcheck JSON report "
                         "(--format json) or snapshot", path=name, line=getattr(exc, "lineno", None)) from None
    if not isinstance(data, dict) or not isinstance(data.get("targets"), list) or "schema_version" not in data:
        raise InputError(f"{name}: not an envcheck JSON report or snapshot (no schema_version and targets)", path=name)
    schema, version = data.get("schema_version"), data.get("envcheck_version")
    if schema != SCHEMA_VERSION or version != __version__:
        raise InputError(f"{name}: written by envcheck {str(version)[:40]} (report schema {str(schema)[:20]}); this is envcheck "
                         f"{__version__} (schema {SCHEMA_VERSION}), and reports of different versions are not merged: "
                         "their findings come from different rules. Run the same envcheck version everywhere, or "
                         "produce the report again with this one", path=name)
    try:
        targets = [TargetResult.from_json(t, f"targets[{i}]") for i, t in enumerate(data["targets"])]
    except InputError as exc:
        raise InputError(f"{name}: {exc.message}", path=name) from None
    snapshot = data["snapshot"] if isinstance(data.get("snapshot"), dict) else {}
    header = {"profile": data.get("profile"), "node": snapshot.get("node"), "source": name, "bytes": len(raw)}
    return header, targets


def merged_targets(inputs: list[tuple[dict[str, Any], list[TargetResult]]]) -> list[TargetResult]:
    by_name: dict[str, list[tuple[dict[str, Any], TargetResult]]] = {}
    for header, targets in inputs:
        for target in targets:
            same = by_name.setdefault(target.target, [])
            if not any(_same(target, other) for _, other in same):
                same.append((header, target))
    out: list[TargetResult] = []
    for name in sorted(by_name):
        entries = by_name[name]
        for header, target in entries:
            node = header.get("node")
            label = node if isinstance(node, str) and node else Path(header["source"]).name
            out.append(target if len(entries) == 1 else replace(target, target=f"{name} @ {label}"))
    return out


def _same(one: TargetResult, other: TargetResult) -> bool:
    """The same verdicts on the same target (counters of the reading, like requests made, may differ)."""
    return (one.kind, one.findings, one.suppressed) == (other.kind, other.findings, other.suppressed)


def report(args: argparse.Namespace, config: Config) -> Report:
    if len(args.reports) > MAX_REPORTS:
        raise UsageError(f"{len(args.reports)} reports: at most {MAX_REPORTS} are merged at once")
    if args.reports.count("-") > 1:
        raise UsageError("stdin (-) can be named once")
    inputs: list[tuple[dict[str, Any], list[TargetResult]]] = []
    left = MAX_TOTAL_BYTES
    for where in args.reports:
        inputs.append(load_report(where, left))
        left -= int(inputs[-1][0]["bytes"])
    profiles = sorted({str(header["profile"]) for header, _ in inputs})
    if len(profiles) > 1:
        raise UsageError(f"these reports were judged against different profiles ({', '.join(profiles)}); merge the reports "
                         "of one profile at a time")
    targets = merged_targets(inputs)
    for target in targets:
        target.findings[:], suppressed = engine.apply_ignores(target.findings, config.ignores)
        target.suppressed.extend(suppressed)
    out = Report(profile=profiles[0] if profiles else config.profile, targets=targets)
    out.exit_code = engine.exit_code(out.findings, config.fail_threshold)
    return out
