"""Human-readable text: one block per target, failures first, each with the rule's fix."""

from __future__ import annotations

from envcheck.model import Report, Status

_SHOWN = {
    -1: (Status.ERROR, Status.FAIL), 0: (Status.ERROR, Status.FAIL, Status.WARN),
    1: (Status.ERROR, Status.FAIL, Status.WARN, Status.INFO, Status.SKIP, Status.PASS),
}


def render(report: Report, verbosity: int = 0) -> str:
    shown = _SHOWN[max(-1, min(1, verbosity))]
    lines: list[str] = []
    for target in report.targets:
        findings = sorted(target.findings, key=lambda f: (-f.status.rank, f.location.line if f.location and f.location.line else 0))
        visible = [f for f in findings if f.status in shown]
        worst = Status.worst((f.status for f in target.findings), Status.PASS)
        lines.append(f"{target.target} ({target.kind}): {worst.value}")
        for f in visible:
            where = f"{f.location}: " if f.location is not None else ""
            lines.append(f"  {where}{f.status.value} {f.gotcha} {f.rule}: {f.message}")
            if f.fix and f.status in (Status.FAIL, Status.WARN, Status.ERROR):
                lines.append(f"      fix: {f.fix}")
            if f.edits:
                lines.append("      envcheck --fix makes this change (--diff shows it)")
            elif f.fix_refused:
                lines.append(f"      envcheck --fix: {f.fix_refused}")
        if verbosity > 0:
            lines += [f"  suppressed {f.rule} at {f.location}: {reason}" for f, reason in target.suppressed]
        if verbosity <= 0:
            lines.extend(_hidden_line([f.status for f in findings if f.status not in shown], verbosity < 0))
    summary = report.summary()
    counted = [f"{g} {s.value}" for g, s in summary.items() if s is not Status.SKIP]
    lines.append("summary: " + (", ".join(counted) if counted else _nothing(report)) + _suppressed_clause(report, verbosity))
    return "\n".join(lines) + "\n"


def _nothing(report: Report) -> str:
    """The summary of a report without findings: `envcheck diff` of two sides that match changed nothing."""
    if not report.targets or any(t.kind != "diff" for t in report.targets):
        return "nothing checked"
    if any(f.status is Status.ERROR for t in report.targets for f in t.findings):
        return "not compared: a side could not be read"
    return "no change reported" if any(t.suppressed for t in report.targets) else "nothing changed: the two sides match"


def _suppressed_clause(report: Report, verbosity: int) -> str:
    """``; 1 FAIL, 2 WARN suppressed`` when --ignore, the config or a pragma left problems out (else nothing)."""
    hidden = [f.status for t in report.targets for f, _reason in t.suppressed if f.status in (Status.FAIL, Status.WARN)]
    if not hidden:
        return ""
    named = ", ".join(f"{hidden.count(s)} {s.value}" for s in sorted(set(hidden), key=lambda s: -s.rank))
    return f"; {named} suppressed" + ("" if verbosity > 0 else " (drop -q and add -v)" if verbosity < 0 else " (-v lists them)")


def _hidden_line(hidden: list[Status], quiet: bool) -> list[str]:
    if not hidden:
        return []
    named = ", ".join(f"{hidden.count(s)} {s.value}" for s in sorted(set(hidden), key=lambda s: -s.rank))
    return [f"  ({named} hidden; {'drop -q and add -v' if quiet else '-v shows them'})"]
