"""The inline pragma ``# envcheck: ignore=RULE[,RULE...] reason``, read alike by every text source."""

from __future__ import annotations

import re
from collections.abc import Mapping

from envcheck.model import Location, Pragma

# group 1: the rule ids or gotchas, comma-separated; group 2: the reason (may be empty)
PRAGMA = re.compile(r"#\s*envcheck:\s*ignore=([A-Za-z0-9_,.\-]+)\s*(.*)$")


def pragma_line(line: str) -> re.Match[str] | None:
    """The pragma when it is the whole line (a comment line of its own, leading blanks allowed), else None."""
    return PRAGMA.match(line.lstrip())


def instruction_pragmas(text: str, spans: Mapping[int, int], path: str) -> list[Pragma]:
    """``# envcheck: ignore=RULE reason`` in ``text``: it applies to the next line, or to every line of the
    instruction that starts there (``spans``: an instruction's first line -> its last, a continued RUN)."""
    lines = text.splitlines()
    found: list[Pragma] = []
    for number, raw in enumerate(lines, 1):
        m = pragma_line(raw)
        if not m:
            continue
        rules = tuple(r.strip() for r in m.group(1).split(",") if r.strip())
        target = number + 1
        while target <= len(lines) and (not lines[target - 1].strip() or pragma_line(lines[target - 1])):
            target += 1
        end = spans.get(target, target)
        for line in range(target, end + 1):
            found.append(Pragma(rules, m.group(2).strip(), Location(path, line=line)))
    return found
