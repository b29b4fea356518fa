"""The original preflight script's contract: exactly ten lines on stdout, ``G<n> <STATUS> <detail>`` (or
``G<n> INFO: <readings>``) for G1..G10 in order. Findings outside G1..G10 go to stderr, one line each."""

from __future__ import annotations

from envcheck.formats import Rendered
from envcheck.model import GOTCHAS, Finding, Report, Status


def _one_line(text: str) -> str:
    return " ".join(text.split())


def gotcha_line(gotcha: str, findings: list[Finding]) -> str:
    if not findings:
        return f"{gotcha} SKIP not checked by this command"
    worst = Status.worst(f.status for f in findings)
    infos = [f for f in findings if f.status is Status.INFO]
    if worst is Status.INFO:
        return f"{gotcha} INFO: " + "; ".join(_one_line(f.message) for f in infos)
    lead = [f for f in findings if f.status is worst]
    # A live reading (a torch import that segfaults) says more than a package-name rule: show it first.
    lead.sort(key=lambda f: "-live-" not in f.rule)
    detail = _one_line(lead[0].message)
    if len(lead) > 1:
        detail += f" (+{len(lead) - 1} more)"
    if infos and worst in (Status.PASS, Status.WARN):
        detail += " | INFO: " + "; ".join(_one_line(f.message) for f in infos[:3])
    return f"{gotcha} {worst.value} {detail}"


def render(report: Report, verbosity: int = 0) -> Rendered:
    findings = report.findings
    lines = [gotcha_line(g, [f for f in findings if f.gotcha == g]) for g in GOTCHAS]
    return Rendered("\n".join(lines) + "\n", tuple(other_lines(report)))


def other_lines(report: Report) -> list[str]:
    """Findings outside G1..G10 (ARCH, envcheck's own ERRORs), one line each (stderr: nothing is hidden)."""
    out = []
    for f in report.findings:
        if f.gotcha not in GOTCHAS and f.status in (Status.FAIL, Status.WARN, Status.ERROR):
            where = f" ({f.location})" if f.location is not None else ""
            out.append(f"{f.gotcha} {f.status.value} {_one_line(f.message)}{where}")
    return out
