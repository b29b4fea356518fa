"""Read ``/proc/meminfo`` (the G3 readings: nvidia-smi cannot report memory on a unified-memory GB10)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from envcheck.errors import ReadingError

_LINE = re.compile(r"^([A-Za-z0-9_()]+):\s+(\d+)(?:\s+(kB))?\s*$")

# The fields G3 reports, in the order the preflight line shows them.
G3_FIELDS = ("MemTotal", "MemAvailable", "Cached", "Dirty", "SwapTotal")


class MeminfoFormatError(ReadingError, ValueError):
    """A line of /proc/meminfo that is not ``Name: value [kB]``; ``line`` is 1-based."""

    line: int

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message, line=line)


@dataclass(frozen=True)
class Meminfo:
    """Values in bytes by field name."""

    values: dict[str, int]

    def gib(self, name: str) -> float | None:
        value = self.values.get(name)
        return None if value is None else value / 2**30


def parse(text: str) -> Meminfo:
    """Parse meminfo text; values in kB become bytes, unitless counts (HugePages_*) stay counts."""
    values: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        match = _LINE.match(line.strip())
        if match is None:
            raise MeminfoFormatError(f"not a 'Name: value kB' line: {line.strip()[:60]!r}", number)
        name, value, unit = match.groups()
        values[name] = int(value) * (1024 if unit else 1)
    if "MemTotal" not in values:
        raise MeminfoFormatError("no MemTotal line", 1)
    return Meminfo(values)
