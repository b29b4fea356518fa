"""Dated, sourced domain facts, as TOML data files. Code reads them; nobody edits facts in code.

Each file has a ``[meta]`` table (``updated``, ``sources``) and rows that carry their own ``source``
(and ``inferred = true`` where a row is an inference rather than a quotation).
"""

from __future__ import annotations

import sys
from functools import cache
from importlib import resources
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@cache
def load(name: str) -> dict[str, Any]:
    """The parsed knowledge file ``envcheck/knowledge/<name>.toml``."""
    text = resources.files(__name__).joinpath(f"{name}.toml").read_text(encoding="utf-8")
    data: dict[str, Any] = tomllib.loads(text)
    return data
