"""TOML parsing in one place: the standard library's ``tomllib``, or ``tomli`` (its backport) on Python 3.10."""

from __future__ import annotations

import sys
from importlib import resources
from typing import Any

if sys.version_info >= (3, 11):
    from tomllib import TOMLDecodeError, loads
else:  # pragma: no cover
    from tomli import TOMLDecodeError, loads

__all__ = ["TOMLDecodeError", "load_shipped", "loads"]


def load_shipped(package: str, name: str) -> dict[str, Any]:
    """The parsed TOML file ``<name>.toml`` shipped in ``package``."""
    data: dict[str, Any] = loads(resources.files(package).joinpath(f"{name}.toml").read_text(encoding="utf-8"))
    return data
