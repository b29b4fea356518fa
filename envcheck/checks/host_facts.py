"""Accessors for the live readings in ``Inventory.host`` that several checks share (G3, G4, G6, G7); a missing
reading comes with its reason, so a check can say SKIP with it instead of guessing."""

from __future__ import annotations

from typing import TYPE_CHECKING

from envcheck import kinds
from envcheck.rules import CheckContext

if TYPE_CHECKING:
    from envcheck.readings import Gpu, NvidiaSmiReading


def is_live(ctx: CheckContext) -> bool:
    """A running machine: preflight, container, or any collector document (``probe``); not image metadata."""
    return ctx.kind in kinds.LIVE_KINDS or ctx.inventory.host.probe is not None


def nvidia_smi(ctx: CheckContext) -> tuple[NvidiaSmiReading | None, str]:
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
    smi, _ = nvidia_smi(ctx)
    return () if smi is None else smi.gpus


def unified_memory(ctx: CheckContext) -> bool:
    """Does the GPU share system memory? GB10 reports memory.total as [N/A]; no GPU: judge by the profile."""
    found = gpus(ctx)  # none: the profile's platform (DGX Spark) is unified-memory
    return not found or any(g.memory_total_mib is None for g in found)


def gib(value_bytes: float) -> str:
    return f"{value_bytes / 2**30:.1f} GiB"
