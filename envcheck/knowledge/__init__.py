"""Dated, sourced domain facts, as TOML data files checked against ``schema.py`` on first load; nobody edits
facts in code."""

from __future__ import annotations

from functools import cache
from typing import Any

from envcheck import toml


@cache
def load(name: str) -> dict[str, Any]:
    data = toml.load_shipped(__name__, name)
    from envcheck.knowledge.schema import validate
    validate(name, data)
    return data


def first_cuda13_ngc_release() -> str:
    return str(load("ngc_tags")["first_cuda13_pytorch"])


def release_month(release: str) -> tuple[int, int]:
    """``25.08`` (or ``25.11.post1``) -> ``(25, 8)``: NGC release months in order."""
    yy, mm = release.split(".")[:2]
    return int(yy), int(mm)
