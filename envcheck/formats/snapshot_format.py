"""The snapshot document (``envcheck snapshot``): the JSON report (``report.schema.json``) plus a ``snapshot``
header. Compact, as a CUDA 13 torch environment is a few hundred KB: no indentation, and an ELF record drops a
``location`` that only repeats its ``path``."""

from __future__ import annotations

import datetime
import json
import platform
from typing import Any

from envcheck.formats.json_format import report_data
from envcheck.model import Report

SNAPSHOT_VERSION = 1


def snapshot_data(report: Report, created: str | None = None, node: str | None = None) -> dict[str, Any]:
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
