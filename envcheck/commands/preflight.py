"""``envcheck preflight``: live checks of this host (G1-G10), one line per gotcha in the original's format."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from envcheck import engine
from envcheck.config import Config
from envcheck.errors import InputError, UsageError
from envcheck.model import Finding, Report
from envcheck.sources.host import HostOptions

if TYPE_CHECKING:
    from envcheck.commands.snapshot import Snapshot

HELP = "live checks of this host and a Python environment right before a long job (G1-G10)"
DEFAULT_FORMAT = "preflight"

EPILOG = """\
Prints ten lines, G1..G10: `G<n> PASS|FAIL|WARN|SKIP <detail>`, or `G<n> INFO: <readings>` where a
gotcha has only raw readings (the original preflight script's format; --format picks another).
The Python environment is probed with its own interpreter (--python, default the python3 on PATH)
in a child process with a timeout, so a torch import that segfaults is a G1 FAIL, not a crash.
nvidia-smi is sampled for --sample-seconds (G4 temperature/power, G6 GPU processes); memory comes
from /proc/meminfo (G3). Without a GPU, nvidia-smi or torch the affected lines say SKIP and why.
--launch-config is named so because --config is envcheck's own config file.
--baseline FILE puts what changed since that snapshot (packages and their CUDA builds, the driver, findings
that got worse; ELF files too with --binaries) into the G9 line; --twin FILE puts what differs from another
node (torch, NCCL, CUDA runtime, driver, flash-attn, nvidia-*) into the G10 line."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--host", metavar="ssh://[USER@]HOST[:PORT]", default=None,
                        help="read that machine over SSH instead of this one (the collector runs there; one nvidia-smi "
                             "reading, no sampling; --python names its interpreter)")
    parser.add_argument("--python", metavar="PATH", default=None,
                        help="interpreter of the environment to check (default: python3 on PATH, not envcheck's own)")
    parser.add_argument("--sample-seconds", type=float, default=3.0, metavar="N",
                        help="sample nvidia-smi temperature/power for N seconds (default 3; 0: one reading)")
    parser.add_argument("--online", action="store_true",
                        help="G8: list the newest open issues of github.com/NVIDIA/dgx-spark-playbooks (public API)")
    parser.add_argument("--launch", action="append", default=[], metavar="CMD",
                        help="G10: a launch command line (torchrun/accelerate/deepspeed/vllm/sglang/swift); repeatable")
    parser.add_argument("--launch-config", action="append", default=[], metavar="FILE",
                        help="G10: a launch config (accelerate/DeepSpeed YAML or JSON, DeepSpeed hostfile); repeatable")
    parser.add_argument("--expect-bandwidth", type=float, default=None, metavar="GBS",
                        help="G5: the memory bandwidth (GB/s) your throughput plan assumes")
    parser.add_argument("--binaries", action="store_true",
                        help="also scan the environment's site-packages ELF files (G1 sonames, G7 GPU code; slower)")
    parser.add_argument("--probe-timeout", type=float, default=20.0, metavar="S",
                        help="seconds allowed for importing torch / flash-attn in the environment (default 20)")
    parser.add_argument("--baseline", metavar="FILE",
                        help="G9: compare with this `envcheck snapshot` of the last environment that worked (-: stdin)")
    parser.add_argument("--twin", metavar="FILE",
                        help="G10: this node must match the node of this snapshot (torch, NCCL, CUDA, driver, nvidia-*)")


def build(args: argparse.Namespace, config: Config) -> list[engine.Target]:
    if args.sample_seconds < 0:
        raise UsageError("--sample-seconds must be 0 or more")
    if args.probe_timeout <= 0:
        raise UsageError("--probe-timeout must be more than 0")
    if args.expect_bandwidth is not None and args.expect_bandwidth <= 0:
        raise UsageError("--expect-bandwidth must be a positive number of GB/s")
    if args.host:
        from envcheck.commands.snapshot import remote_target
        if args.launch or args.launch_config or args.binaries or args.online:
            raise UsageError("--host reads the remote machine's environment and GPU: --launch, --launch-config, --binaries "
                             "and --online read this one, so they do not go with it")
        return [remote_target(args.host, args.python, args.probe_timeout)]
    from envcheck.commands.snapshot import host_target
    return [host_target(HostOptions(python=args.python, sample_seconds=args.sample_seconds, online=args.online,
                                    launch=tuple(args.launch), launch_configs=tuple(args.launch_config),
                                    expect_bandwidth=args.expect_bandwidth, binaries=args.binaries,
                                    probe_timeout=args.probe_timeout))]


def _snapshot_of(option: str, where: str | None) -> Snapshot | None:
    """The snapshot an option names; what is wrong with the file is said with the option's name."""
    from envcheck.commands.snapshot import load_snapshot
    try:
        return load_snapshot(where) if where else None
    except InputError as exc:
        raise InputError(f"{option}: {exc.message}", exc.path) from None


def report(args: argparse.Namespace, config: Config) -> Report:
    from envcheck.checks import drift
    from envcheck.profile import load_profile
    if args.baseline == "-" and args.twin == "-":
        raise UsageError("--baseline and --twin cannot both read stdin")
    # Read the snapshots first: a missing or damaged file is a usage error before the slow live read.
    baseline, twin = (_snapshot_of(option, where) for option, where in (("--baseline", args.baseline), ("--twin", args.twin)))
    result = engine.run(build(args, config), config, debug=args.debug)
    if baseline is None and twin is None:
        return result
    live = drift.side_of("this host", result.targets)
    added: list[Finding] = []
    if baseline is not None:
        before = drift.side_of(baseline.source, baseline.targets)
        taken = f" (taken {baseline.created})" if baseline.created else ""
        chosen = load_profile(config.profile)
        changes = drift.compare(before, live, chosen.cuda_major, chosen.sm)
        found = drift.summary(changes, f"since {baseline.source}{taken}")
        added.append(found or drift.DRIFT_PACKAGE.passed(f"no changes since {baseline.source}{taken}"))
    if twin is not None:
        other = drift.side_of(twin.source, twin.targets)
        if (found := drift.summary(drift.twins([live, other]), f"differs from {twin.source}")) is not None:
            added.append(found)
    target = result.targets[0]
    kept, suppressed = engine.apply_ignores(added, config.ignores)
    target.findings[:0] = kept  # first: the preflight line leads with them at equal status
    target.suppressed.extend(suppressed)
    result.exit_code = engine.exit_code(result.findings, config.fail_threshold)
    return result
