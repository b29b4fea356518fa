"""Output formats: one module per format, each with ``render(report, verbosity) -> str``. The engine never prints.

:func:`renderer` is the render boundary: every format receives the report after
:func:`envcheck.redaction.clean_report` (secrets masked, control characters escaped), so no format can
print a credential or let an input start a line of its own.
"""

from __future__ import annotations

import importlib
from typing import Protocol

from envcheck.model import Report

FORMATS = ("text", "json", "sarif", "github", "preflight", "snapshot")


class Renderer(Protocol):
    def __call__(self, report: Report, verbosity: int = 0) -> str: ...


def renderer(name: str) -> Renderer:
    """The ``render`` function of format ``name``."""
    from envcheck.redaction import clean_report

    module = importlib.import_module(f"envcheck.formats.{name}_format")
    render: Renderer = module.render

    def safe_render(report: Report, verbosity: int = 0) -> str:
        return render(clean_report(report), verbosity)

    return safe_render
