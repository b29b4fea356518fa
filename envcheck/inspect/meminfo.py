"""Read ``/proc/meminfo`` (the G3 readings: nvidia-smi cannot report memory on a unified-memory GB10)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from envcheck.errors import ReadingError

_LINE = re.compile(r"^([A-Za-z0-9_()]+):\s+(\d+)(?:\s+(kB))?\s*$")

# The fields G3 reports, in the order the preflight line shows them.
G3_FIELDS = ("MemTotal", "MemAvailable", "Cached", "Dirty", "SwapTotal")


class MeminfoFormatError(ReadingError, ValueError):
    line: int

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message, line=line)


@dataclass(frozen=True)
class Meminfo:
    values: dict[str, int]  # bytes (unitless counts such as HugePages_* stay counts)


def parse(text: str) -> Meminfo:
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
