"""Read ``nvidia-smi --query-gpu`` / ``--query-compute-apps`` CSV output, with or without a header and units.
Placeholders (``[N/A]``, ``[Not Supported]`` ...) become None: a GB10 prints ``[N/A]`` for every memory field,
its memory being the unified system memory (research/spark-facts.md §9).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from envcheck.collect import probe
from envcheck.errors import ReadingError

_UNAVAILABLE = re.compile(r"^\[?(N/A|Not Supported|Not Found|Unknown Error|Insufficient Permissions|GPU is lost|Unknown)\]?$", re.I)
_UNIT = re.compile(r"\s*\[[^\]]*\]\s*$")  # "memory.total [MiB]" -> "memory.total"
_VALUE_UNIT = re.compile(r"^(-?\d+(?:\.\d+)?)\s*(MiB|GiB|KiB|W|%|MHz|C)$")
# Fields whose values may contain commas (nvidia-smi does not quote): extra cells are joined into them.
_FREE_TEXT = ("process_name", "name", "gpu_name")

# The queries envcheck runs, defined in the probe (it runs standalone in other interpreters).
GPU_FIELDS: tuple[str, ...] = probe.GPU_FIELDS
GPU_FIELDS_BASIC: tuple[str, ...] = probe.GPU_FIELDS_BASIC  # drivers that reject compute_cap / the throttle mask
APP_FIELDS: tuple[str, ...] = probe.APP_FIELDS

# clocks_throttle_reasons.active bits (nvml.h: nvmlClocksEventReason*).
THROTTLE_BITS: dict[int, str] = {0x04: "sw_power_cap", 0x08: "hw_slowdown", 0x20: "sw_thermal_slowdown",
                                  0x40: "hw_thermal_slowdown", 0x80: "hw_power_brake_slowdown"}


class NvidiaSmiFormatError(ReadingError, ValueError):
    line: int

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message, line=line)


@dataclass(frozen=True)
class Table:
    fields: tuple[str, ...]
    rows: tuple[dict[str, str | None], ...]  # field name -> value text without its unit, or None


def clean_value(text: str) -> str | None:
    value = text.strip()
    if not value or _UNAVAILABLE.match(value):
        return None
    match = _VALUE_UNIT.match(value)
    return match.group(1) if match else value


def parse_csv(text: str, fields: Sequence[str] | None = None) -> Table:
    """``fields``: what a ``noheader`` query asked for; None when the first line is a header."""
    lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if fields is None:
        if not lines:
            raise NvidiaSmiFormatError("no header line (use --format=csv, or pass the queried fields)", 1)
        header_no, header = lines.pop(0)
        names = tuple(_UNIT.sub("", cell).strip() for cell in header.split(","))
        if not all(names):
            raise NvidiaSmiFormatError("header has an empty field name", header_no)
    else:
        names = tuple(fields)
    rows: list[dict[str, str | None]] = []
    for number, line in lines:
        if line.startswith(("No devices were found", "NVIDIA-SMI has failed", "No running processes found")):
            continue
        cells = [cell.strip() for cell in line.split(",")]
        if len(cells) > len(names):
            free = next((f for f in _FREE_TEXT if f in names), None)
            if free is None:
                raise NvidiaSmiFormatError(f"{len(cells)} values for {len(names)} fields", number)
            at = names.index(free)
            extra = len(cells) - len(names)
            cells[at:at + extra + 1] = [", ".join(cells[at:at + extra + 1])]
        if len(cells) < len(names):
            raise NvidiaSmiFormatError(f"{len(cells)} values for {len(names)} fields", number)
        rows.append({name: clean_value(cell) for name, cell in zip(names, cells, strict=True)})
    return Table(names, tuple(rows))


def number(value: str | None) -> float | None:
    """A numeric cell as float (None for placeholders, text, and inf/nan, which no reading can be)."""
    if value is None:
        return None
    try:
        result = float(value)
    except ValueError:
        return None
    return result if math.isfinite(result) else None


def throttle_reasons(value: str | None) -> list[str]:
    """Names of the active clock-event reasons in a ``clocks_throttle_reasons.active`` bitmask."""
    if value is None:
        return []
    try:
        mask = int(value, 16) if value.lower().startswith("0x") else int(value)
    except ValueError:
        return []
    return [name for bit, name in THROTTLE_BITS.items() if mask & bit]


_GPU_NUMBERS = (("temperature_c", "temperature.gpu"), ("power_w", "power.draw"),
                ("power_limit_w", "power.limit"), ("memory_total_mib", "memory.total"),
                ("memory_used_mib", "memory.used"), ("utilization_pct", "utilization.gpu"))


def gpu_row(row: dict[str, str | None]) -> dict[str, object]:
    """A ``--query-gpu`` row as typed readings (numbers as float, None where not available)."""
    return {
        "index": int(number(row.get("index")) or 0) if row.get("index") is not None else None,
        **{key: row.get(key) for key in ("name", "uuid", "driver_version")},
        **{key: number(row.get(name)) for key, name in _GPU_NUMBERS},
        "clock_sm_mhz": number(row.get("clocks.sm") or row.get("clocks.current.sm")),
        "throttle_reasons": throttle_reasons(row.get("clocks_throttle_reasons.active") or row.get("clocks_event_reasons.active")),
        "compute_cap": row.get("compute_cap"),
    }


def app_row(row: dict[str, str | None]) -> dict[str, object]:
    pid = number(row.get("pid"))
    used = row.get("used_memory", row.get("used_gpu_memory"))
    return {
        "pid": int(pid) if pid is not None else None,
        "process_name": row.get("process_name"),
        "used_memory_mib": number(used),
        "gpu_uuid": row.get("gpu_uuid"),
    }
