"""Versioned JSON (``schema_version`` 1), described by ``report.schema.json`` in this package."""

from __future__ import annotations

import json
from typing import Any

from envcheck import __version__
from envcheck.model import Report

SCHEMA_VERSION = 1


def report_data(report: Report) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION, "envcheck_version": __version__, "profile": report.profile,
        "targets": [t.to_json() for t in report.targets],
        "summary": {g: s.value for g, s in report.summary().items()}, "exit_code": report.exit_code,
    }


def render(report: Report, verbosity: int = 0) -> str:
    return json.dumps(report_data(report), indent=2, default=str) + "\n"
