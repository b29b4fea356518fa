"""``envcheck --fix`` / ``--diff``: print the diff of :mod:`envcheck.fixes`'s edits, or write them and check
again."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from envcheck.model import Status

if TYPE_CHECKING:
    from envcheck.config import Config
    from envcheck.engine import Target
    from envcheck.model import Report


def configure(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("fix (docs/fix.md)")
    g.add_argument("--fix", action="store_true", help="rewrite the files in place where a rule has a certain fix, then report what is left")
    g.add_argument("--diff", action="store_true", help="print the changes --fix would make as a unified diff and write nothing (also with --fix, as ruff --fix --diff); exit 1 when there are any")


def after_check(args: argparse.Namespace, config: Config, report: Report, targets: Sequence[Target],
                check_again: Callable[[], Report], say: Callable[[str], None]) -> tuple[Report, int | None]:
    """With --diff: print the diff; the exit code is returned (1 when something would change). With --fix:
    write the files and return the report of a second check (exit code None: the report's)."""
    from envcheck import fixes
    # only files inside what the user gave (a folder, or a file's folder) are written (fixes.within), and only
    # their edits are promised in the report (fixes.confine)
    given = [Path(p) for p in (getattr(args, "paths", None) or ["."])]
    folders = [str(p) if p.is_dir() else str(p.parent) for p in given]
    if not (getattr(args, "diff", False) or getattr(args, "fix", False)):
        return fixes.confine(report, folders), None
    changes, left = fixes.within(fixes.plan(report), folders)
    report = fixes.confine(report, folders)
    for line in left:
        say(line)
    if "-" in (getattr(args, "paths", None) or []):  # a stream has no file to write or to diff against
        say("stdin (-) is not fixed: --fix and --diff change files; save the stream to a file to fix it")
    if not changes and not left:
        count = sum(1 for t in report.targets if t.target != "-" for f in t.findings
                    if f.status in (Status.FAIL, Status.WARN, Status.ERROR))
        if count:  # so a user knows it ran
            say(f"{count} finding{'s' if count != 1 else ''}, none that --fix can change")
    if args.diff:
        sys.stdout.write(fixes.unified_diff(changes))
        return report, report.exit_code if report.exit_code >= 2 else int(bool(changes))
    for line in fixes.write(changes, folders):
        say(line)
    return (fixes.confine(check_again(), folders) if changes else report), None
