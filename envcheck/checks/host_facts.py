"""Accessors for the live readings in ``Inventory.host`` that several gotcha checks share (G3, G4, G6, G7).

Pure functions over the inventory: no I/O. A check that needs a reading which is not there gets the
reason as text, so it can say SKIP with that reason instead of guessing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from envcheck import kinds
from envcheck.rules import CheckContext

if TYPE_CHECKING:
    from envcheck.readings import Gpu, NvidiaSmiReading


def is_live(ctx: CheckContext) -> bool:
    """True for targets that describe a running machine: ``envcheck preflight`` (kind host), ``envcheck
    container`` (kind container), or any inventory read from a collector document (``probe`` is set by
    ``inventory_from_probe``). Image metadata (``envcheck image``) is not live."""
    return ctx.kind in kinds.LIVE_KINDS or ctx.inventory.host.probe is not None


def nvidia_smi(ctx: CheckContext) -> tuple[NvidiaSmiReading | None, str]:
    """The nvidia-smi readings, or None and the reason they are missing."""
    smi = ctx.inventory.host.nvidia_smi
    if smi is None:
        return None, "nvidia-smi was not run"
    if smi.status == "absent":
        return None, "nvidia-smi not found (no NVIDIA driver here)"
    if smi.status != "ok":
        return None, f"nvidia-smi failed: {smi.error or smi.status}"
    if not smi.samples or not smi.samples[0].gpus:
        return None, "nvidia-smi lists no GPU"
    return smi, ""


def gpus(ctx: CheckContext) -> tuple[Gpu, ...]:
    """The GPUs of the last nvidia-smi sample (empty when there is none)."""
    smi, _ = nvidia_smi(ctx)
    return () if smi is None else smi.gpus


def unified_memory(ctx: CheckContext) -> bool:
    """Does the GPU share system memory? GB10 reports memory.total as [N/A]; no GPU: judge by the profile."""
    found = gpus(ctx)
    if not found:
        return True  # the profile's platform (DGX Spark) is unified-memory
    return any(g.memory_total_mib is None for g in found)


def gib(value_bytes: float) -> str:
    """Bytes as 'N.N GiB'."""
    return f"{value_bytes / 2**30:.1f} GiB"
