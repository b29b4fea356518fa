"""G4: sustained power plateau and thermal throttling."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from envcheck import kinds
from envcheck.checks.host_facts import is_live, nvidia_smi
from envcheck.model import Finding, Status
from envcheck.rules import CheckContext, check, rule

if TYPE_CHECKING:
    from envcheck.readings import Gpu

# The throttling signature: temperature rising by at least this much over the sampling window ...
TEMPERATURE_RISE_C = 3.0
# ... while power stays within this spread (W, or share of the mean, whichever is larger) ...
POWER_FLAT_W = 5.0
POWER_FLAT_SHARE = 0.10
# ... well below the rated power (this share of the limit or rating).
POWER_WELL_BELOW = 0.6
THERMAL_REASONS = ("sw_thermal_slowdown", "hw_thermal_slowdown")

THROTTLING = rule(
    "G4-throttling", "G4", "Thermal throttling signature while sampling", Status.WARN,
    """Sustained power on a DGX Spark plateaus at about 100 W against the 240 W adapter rating; long runs
    reach that ceiling, throttle and sometimes reboot. preflight samples temperature and power with
    nvidia-smi over --sample-seconds and warns when temperature rises while power stays flat well below
    the rated limit, or when nvidia-smi reports an active thermal slowdown.""",
    """Improve cooling (airflow, ambient temperature) or cap run length; do not plan throughput on the 240
    W rating. Re-run with a longer --sample-seconds under load to confirm.""",
    inputs=kinds.LIVE_KINDS)
READINGS = rule(
    "G4-power-readings", "G4", "Temperature and power readings", Status.INFO,
    """Temperature and power per GPU over the sampling window, as nvidia-smi reports them.""",
    "",
    inputs=kinds.LIVE_KINDS)


def _span(values: list[float], unit: str) -> str:
    if not values:
        return "n/a"
    low, high = min(values), max(values)
    return f"{low:g} {unit}" if low == high else f"{low:g}-{high:g} {unit}"


@check(THROTTLING, READINGS)
def throttling(ctx: CheckContext) -> Iterator[Finding]:
    if not is_live(ctx):
        return
    smi, reason = nvidia_smi(ctx)
    if smi is None:
        yield THROTTLING.finding(f"{reason}: cannot sample temperature/power", status=Status.SKIP)
        return
    samples = smi.samples or ()
    seconds = samples[-1].t - samples[0].t
    by_gpu: dict[Any, list[Gpu]] = {}
    for sample in samples:
        for gpu in sample.gpus:
            by_gpu.setdefault(gpu.uuid or gpu.index, []).append(gpu)
    judged = False
    for readings in by_gpu.values():
        first = readings[0]
        label = f"GPU{first.index if first.index is not None else 0} {first.name or ''}".strip()
        temps = [r.temperature_c for r in readings if r.temperature_c is not None]
        powers = [r.power_w for r in readings if r.power_w is not None]
        limit = next((r.power_limit_w for r in readings if r.power_limit_w is not None), None)
        rated = limit if limit is not None else ctx.profile.power_rating_w
        limit_text = f"limit {limit:g} W" if limit is not None else f"limit N/A, rated {rated:g} W"
        yield READINGS.info(
            f"{label}: {_span(temps, 'C')}, {_span(powers, 'W')} ({limit_text}) over {len(readings)} sample{'s' if len(readings) != 1 else ''}",
            gpu=label, temperatures=temps, powers=powers, limit=limit)
        thermal = sorted({r for g in readings for r in g.throttle_reasons if r in THERMAL_REASONS})
        if thermal:
            judged = True
            yield THROTTLING.finding(f"{label}: clocks slowed by {', '.join(thermal)}", evidence={"reasons": thermal})
            continue
        if len(temps) < 2 or len(powers) < 2:
            continue
        judged = True
        rise = temps[-1] - temps[0]
        mean = sum(powers) / len(powers)
        flat = (max(powers) - min(powers)) <= max(POWER_FLAT_W, POWER_FLAT_SHARE * mean)
        if rise >= TEMPERATURE_RISE_C and flat and mean < POWER_WELL_BELOW * rated:
            yield THROTTLING.finding(
                f"{label}: temperature rose {temps[0]:g}->{temps[-1]:g} C while power stayed near {mean:.0f} W"
                f" (rated {rated:g} W): throttling signature",
                evidence={"temperatures": temps, "powers": powers, "rated": rated})
        else:
            yield THROTTLING.passed(f"{label}: no throttling signature over {seconds:.1f} s", gpu=label)
    if not judged:
        yield THROTTLING.finding(
            "need two or more temperature/power samples to judge (nvidia-smi gave none, or --sample-seconds 0)",
            status=Status.SKIP)
