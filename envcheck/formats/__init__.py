"""Output formats: one module per format, each with ``render(report, options) -> str``. The engine never prints."""

from __future__ import annotations

import importlib
from typing import Protocol

from envcheck.model import Report

FORMATS = ("text", "json", "sarif", "github", "preflight")


class Renderer(Protocol):
    def __call__(self, report: Report, verbosity: int = 0) -> str: ...


def renderer(name: str) -> Renderer:
    """The ``render`` function of format ``name``."""
    module = importlib.import_module(f"envcheck.formats.{name}_format")
    render: Renderer = module.render
    return render
