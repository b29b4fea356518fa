"""The inline pragma ``# envcheck: ignore=RULE[,RULE...] reason``, read alike by every text source."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

from envcheck.model import Location, Pragma

# group 1: the rules, comma-separated; group 2: the reason (may be empty)
PRAGMA = re.compile(r"#\s*envcheck:\s*ignore=([A-Za-z0-9_,.\-]+)\s*(.*)$")


def pragma_line(line: str) -> re.Match[str] | None:
    """The pragma when it is the whole line (a comment line of its own, leading blanks allowed), else None."""
    return PRAGMA.match(line.lstrip())


def pragma_targets(lines: list[str]) -> Iterator[tuple[tuple[str, ...], str, int]]:
    """Each pragma of ``lines``: its rules, its reason, and the index of the line it applies to, the next one
    that is neither blank nor a pragma (``len(lines)``: none)."""
    for i, raw in enumerate(lines):
        m = pragma_line(raw)
        if not m:
            continue
        target = i + 1
        while target < len(lines) and (not lines[target].strip() or pragma_line(lines[target])):
            target += 1
        yield tuple(r.strip() for r in m.group(1).split(",") if r.strip()), m.group(2).strip(), target


def instruction_pragmas(text: str, spans: Mapping[int, int], path: str) -> list[Pragma]:
    """``# envcheck: ignore=RULE reason`` in ``text``: it applies to the next line, or to every line of the
    instruction that starts there (``spans``: an instruction's first line -> its last, a continued RUN)."""
    return [Pragma(rules, reason, Location(path, line=line)) for rules, reason, target in pragma_targets(text.splitlines())
            for line in range(target + 1, spans.get(target + 1, target + 1) + 1)]
