"""TOML data files shipped in the package (knowledge files, profiles), read through their parsed copies.

Each package folder with such files has a ``parsed.json`` (written by ``scripts/gen_docs.sh``, through
:func:`parsed_file`) holding every TOML file's text and what the TOML parser makes of it. A file whose text
is the one recorded there is answered from that record; any other (edited since, or never recorded) is
parsed. The TOML files stay the only source of the facts: the record is a derived copy, checked against
the text it was made from on every read, and ``tests/test_knowledge.py`` keeps it fresh. A folder scan
reads six such files: loading the TOML parser and parsing them cost it 7-9 ms of start-up (issue 18).
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

PARSED = "parsed.json"


@cache
def _records(package: str) -> dict[str, Any]:
    """``parsed.json`` of ``package`` (empty when missing or unreadable: every file is then parsed)."""
    try:
        data = json.loads(resources.files(package).joinpath(PARSED).read_bytes())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def load(package: str, name: str) -> dict[str, Any]:
    """The parsed TOML file ``<name>.toml`` of ``package`` (OSError: no such file; ``envcheck.toml.TOMLDecodeError``:
    not TOML). The same data may be returned to every caller: do not change it."""
    text = resources.files(package).joinpath(f"{name}.toml").read_text(encoding="utf-8")
    record = _records(package).get(name)
    if isinstance(record, dict) and record.get("text") == text and isinstance(record.get("data"), dict):
        data: dict[str, Any] = record["data"]
        return data
    from envcheck import toml

    parsed: dict[str, Any] = toml.loads(text)
    return parsed


def parsed_file(package: str) -> str:
    """The text of ``parsed.json`` for the TOML files of ``package`` as they are now."""
    from envcheck import toml

    records: dict[str, Any] = {}
    for entry in sorted(resources.files(package).iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".toml"):
            text = entry.read_text(encoding="utf-8")
            records[entry.name[: -len(".toml")]] = {"text": text, "data": toml.loads(text)}
    return json.dumps(records, indent=1, ensure_ascii=False) + "\n"
