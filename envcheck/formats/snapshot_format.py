"""The snapshot document (``envcheck snapshot``): the JSON report plus a ``snapshot`` header, compact.

Same schema as ``--format json`` (``report.schema.json``, ``schema_version`` 1) with the optional top-level
``snapshot`` object: ``snapshot_version``, ``created`` (UTC, ISO 8601) and ``node`` (the machine it was
taken on; informational, twin mode ignores it). To stay small (a full CUDA 13 torch environment is a few
hundred KB), it is written without indentation and an ELF record drops a ``location`` that only repeats
its ``path``.
"""

from __future__ import annotations

import datetime
import json
import platform
from typing import Any

from envcheck.formats.json_format import report_data
from envcheck.model import Report

SNAPSHOT_VERSION = 1


def snapshot_data(report: Report, created: str | None = None, node: str | None = None) -> dict[str, Any]:
    """The snapshot document of ``report`` as JSON-ready data."""
    data = report_data(report)
    for target in data["targets"]:
        for binary in target["inventory"].get("binaries", []):
            if binary.get("location") == {"path": binary["path"]}:
                del binary["location"]
    data["snapshot"] = {
        "snapshot_version": SNAPSHOT_VERSION,
        "created": created or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "node": platform.node() if node is None else node,
    }
    return data


def render(report: Report, verbosity: int = 0) -> str:
    """One line of JSON (a snapshot is read by ``envcheck diff``, not by people)."""
    return json.dumps(snapshot_data(report), separators=(",", ":"), ensure_ascii=False, default=str) + "\n"
