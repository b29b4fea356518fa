"""TOML parsing in one place: the standard library's ``tomllib``, or ``tomli`` (its backport) on Python 3.10."""

from __future__ import annotations

import sys

if sys.version_info >= (3, 11):
    from tomllib import TOMLDecodeError, loads
else:  # pragma: no cover
    from tomli import TOMLDecodeError, loads

__all__ = ["TOMLDecodeError", "loads"]
