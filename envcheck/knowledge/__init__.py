"""Dated, sourced domain facts, as TOML data files. Code reads them; nobody edits facts in code.

Each file has a ``[meta]`` table (``updated``, ``sources``) and rows that carry their own ``source``
(and ``inferred = true`` where a row is an inference rather than a quotation). ``load`` checks every file
against its schema (``envcheck/knowledge/schema.py``) the first time it is read.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from envcheck import toml


@cache
def load(name: str) -> dict[str, Any]:
    """The parsed knowledge file ``envcheck/knowledge/<name>.toml``, checked against its schema."""
    data = toml.load_shipped(__name__, name)
    from envcheck.knowledge.schema import validate

    validate(name, data)
    return data


def first_cuda13_ngc_release() -> str:
    """The first NGC release month (``YY.MM``) whose framework containers ship CUDA 13 (``ngc_tags.toml``)."""
    return str(load("ngc_tags")["first_cuda13_pytorch"])


def release_month(release: str) -> tuple[int, int]:
    """``25.08`` (or ``25.11.post1``) -> ``(25, 8)``: NGC release months in order."""
    yy, mm = release.split(".")[:2]
    return int(yy), int(mm)
