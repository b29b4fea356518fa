"""Output formats: one module per format, listed once in :data:`FORMATS`, each with ``render(report,
verbosity) -> str | Rendered``. :func:`renderer` is the render boundary: every format gets the report after
:func:`envcheck.redaction.clean_report` (secrets masked, control characters escaped), so no format prints a
credential or lets an input start a line (nor a workflow command: only the github format writes those)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, replace

from envcheck.model import Inventory, Report


@dataclass(frozen=True)
class Format:
    """One output format: ``--format NAME`` renders with ``module``'s ``render``."""
    name: str
    module: str  # importable module path (imported only when the format is used)
    what: str  # one phrase for --help
    inventory: bool = True  # False: findings only, given empty inventories (which then need no cleaning)


@dataclass(frozen=True)
class Rendered:
    """What a format writes: ``stdout`` (the report, or the file ``-o`` writes) and ``stderr`` lines."""
    stdout: str
    stderr: tuple[str, ...] = ()


FORMATS: dict[str, Format] = {f.name: f for f in (
    Format("text", "envcheck.formats.text_format", "findings per target, for people", inventory=False),
    Format("json", "envcheck.formats.json_format", "versioned JSON (report.schema.json)"),
    Format("sarif", "envcheck.formats.sarif_format", "SARIF 2.1.0 for code scanning", inventory=False),
    Format("github", "envcheck.formats.github_format", "GitHub Actions annotations", inventory=False),
    Format("preflight", "envcheck.formats.preflight_format", "one line per gotcha, G1..G10 (the original preflight.sh)",
           inventory=False),
    Format("html", "envcheck.formats.html_format", "one self-contained HTML page (-o report.html)"),
    Format("snapshot", "envcheck.formats.snapshot_format", "a snapshot document (envcheck snapshot)"),
)}

Renderer = Callable[[Report, int], Rendered]


def names() -> tuple[str, ...]:
    return tuple(FORMATS)


def renderer(name: str) -> Renderer:
    from envcheck.redaction import clean_report, no_command_lines
    render = importlib.import_module(FORMATS[name].module).render
    inventory = FORMATS[name].inventory
    # No input may start a workflow command line: only the github format writes commands (its own).
    colon, bracket = ("&#58;", "&#91;") if name == "html" else ("\\x3a", "\\x5b")

    def safe_render(report: Report, verbosity: int = 0) -> Rendered:
        out = render(clean_report(report if inventory else without_inventories(report)), verbosity)
        out = out if isinstance(out, Rendered) else Rendered(str(out))
        stdout = out.stdout if name == "github" else no_command_lines(out.stdout, colon, bracket)
        return Rendered(stdout, tuple(no_command_lines(line) for line in out.stderr))

    return safe_render


def without_inventories(report: Report) -> Report:
    """``report`` with each target's inventory empty (its context kept): what a findings-only format sees."""
    targets = [replace(t, inventory=Inventory(context=t.inventory.context)) for t in report.targets]
    return replace(report, targets=targets)
