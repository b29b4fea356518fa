"""The inline pragma ``# envcheck: ignore=RULE[,RULE...] reason``, read alike by every text source."""

from __future__ import annotations

import re

# group 1: the rule ids or gotchas, comma-separated; group 2: the reason (may be empty)
PRAGMA = re.compile(r"#\s*envcheck:\s*ignore=([A-Za-z0-9_,.\-]+)\s*(.*)$")


def pragma_line(line: str) -> re.Match[str] | None:
    """The pragma when it is the whole line (a comment line of its own, leading blanks allowed), else None."""
    return PRAGMA.match(line.lstrip())
