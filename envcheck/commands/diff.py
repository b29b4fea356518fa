"""``envcheck diff A B`` and ``envcheck diff --twins A B [C...]``: what changed, and do nodes match (G9, G10).
The result is an ordinary report (one target ``A → B``), so every ``--format`` and ``--fail-on`` work."""

from __future__ import annotations

import argparse
from pathlib import Path

from envcheck import engine
from envcheck.checks import drift
from envcheck.commands.snapshot import (
    LiveOptions,
    add_live_options,
    live_options,
    live_targets,
    load_snapshot,
    looks_like_snapshot,
)
from envcheck.config import Config
from envcheck.errors import UsageError
from envcheck.model import Finding, Inventory, Report, Status, TargetResult
from envcheck.profile import load_profile

HELP = "compare two snapshots or live targets (G9 drift), or several nodes (--twins, G10)"
DEFAULT_FORMAT = "text"

EPILOG = """\
A and B are `envcheck snapshot` files (- reads one from stdin) or live targets read now: a file or
folder, an image reference, `host`; --python PY adds the live environment of PY as the last side.

  envcheck diff good.json --python .venv/bin/python
  envcheck diff nvcr.io/nvidia/pytorch:25.10-py3 nvcr.io/nvidia/pytorch:25.11-py3
  ssh spark-b envcheck snapshot --python /opt/venv/bin/python -o - | envcheck diff --twins spark-a.json -

Shown: packages added, removed, upgraded or downgraded (with the CUDA build of each side), ELF files
whose CUDA major or sm_121 verdict changed, changed CUDA variables and driver, and findings that appeared,
went away or changed status (each with its rule). --twins compares only what must be identical on every
node of a distributed run (torch, its CUDA, NCCL, CUDA runtime, driver, flash-attn, nvidia-*).
Exit code 1 when a finding got worse or (--twins) when nodes differ in what must match; -v also lists the
informational changes (other packages, findings that got better)."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("sides", nargs="*", metavar="SIDE", help="snapshot file, -, file, folder, image reference or host")
    parser.add_argument("--twins", action="store_true", help="multi-node mode: nodes must match in torch/NCCL/CUDA/driver/flash-attn/nvidia-*")
    add_live_options(parser)


def report(args: argparse.Namespace, config: Config) -> Report:
    words: list[str] = list(args.sides)
    options = live_options(args, config)
    if options.python is not None:
        words.append("host")
    if words.count("-") > 1:
        raise UsageError("only one side can be read from stdin (-)")
    if len(words) < 2:
        raise UsageError("envcheck diff needs two sides (snapshot files or live targets), e.g. good.json --python .venv/bin/python")
    if len(words) > 2 and not args.twins:
        raise UsageError(f"{len(words)} sides given: compare two, or pass --twins to compare several nodes")
    profile = load_profile(config.profile)
    read = [_side(word, options, config, args.debug) for word in words]
    sides = [side for side, _ in read]
    problems = [finding for _, broken in read for finding in broken]
    name = " = ".join(s.name for s in sides) if args.twins else f"{sides[0].name} → {sides[1].name}"
    if problems:  # a side that could not be read is not an empty side: comparing would list all it holds as removed
        findings: list[Finding] = []
    elif args.twins:
        findings = drift.twins(sides)
    else:
        findings = drift.compare(sides[0], sides[1], profile.cuda_major, profile.sm)
    result = TargetResult(target=name, kind="twins" if args.twins else "diff", inventory=Inventory(context="installed"))
    result.findings, result.suppressed = engine.apply_ignores(problems + findings, config.ignores)
    out = Report(profile=profile.name, targets=[result], sm=profile.sm)
    out.exit_code = engine.exit_code(result.findings, config.fail_threshold)
    return out


def _side(word: str, options: LiveOptions, config: Config, debug: bool) -> tuple[drift.Side, list[Finding]]:
    if word == "-" or (Path(word).is_file() and looks_like_snapshot(Path(word))):
        snapshot = load_snapshot(word)
        name = word if word != "-" else f"stdin ({snapshot.node or 'snapshot'})"
        return drift.side_of(name, snapshot.targets), []
    if word.endswith(".json") and not Path(word).exists():
        raise UsageError(f"{word}: no such snapshot file")
    live = engine.run(live_targets(word, options, config), config, debug=debug)
    broken = [f for t in live.targets for f in t.findings if f.status is Status.ERROR]
    name = word if word != "host" else live.targets[0].target
    return drift.side_of(name, live.targets), broken
