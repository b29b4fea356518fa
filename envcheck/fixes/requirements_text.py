"""Where a distribution's name and version specifier sit in requirement text, for fixes that change only
them."""

from __future__ import annotations

import re

_OPERATOR = r"(?:===|==|~=|!=|<=|>=|<|>)"
_VERSION = r"[^\s;,#\"'\\\]\)]+"
SPECIFIER = rf"\s*{_OPERATOR}\s*{_VERSION}(?:\s*,\s*{_OPERATOR}\s*{_VERSION})*"


def name_pattern(canonical: str) -> re.Pattern[str]:
    """A PEP 503 name as it may be written (any case, ``-``/``_``/``.`` between parts), then its extras and
    version specifier: groups ``name``, ``extras``, ``spec``."""
    parts = r"[-_.]+".join(re.escape(p) for p in re.split(r"[-_.]+", canonical))
    return re.compile(rf"(?<![\w.\-/=])(?P<name>{parts})(?![\w.\-])(?P<extras>\s*\[[^\]\n]*\])?(?P<spec>{SPECIFIER})?",
                      re.IGNORECASE)
