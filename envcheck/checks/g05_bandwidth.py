"""G5: plan on 180-192 GB/s sustained, not the 273 GB/s spec."""

from __future__ import annotations

from collections.abc import Iterator

from envcheck import kinds
from envcheck.checks.host_facts import is_live
from envcheck.model import Finding, Status
from envcheck.rules import CheckContext, check, rule

BANDWIDTH_PLAN = rule(
    "G5-bandwidth-plan", "G5", "Throughput planned on more memory bandwidth than is sustained", Status.WARN,
    """273 GB/s is the DGX Spark's spec peak, not its sustained memory bandwidth; measured sustained
    bandwidth is 180-192 GB/s, so memory-bound work (decode-heavy RL loops) plateaus well under plans
    built on the spec. The rule compares the bandwidth you plan with (--expect-bandwidth, or
    expect-bandwidth in envcheck's config) against the profile's sustained range.""",
    """Plan throughput on 180-192 GB/s and correct estimates derived from 273 GB/s.""",
    inputs=("any",))
PLANNING_FIGURE = rule(
    "G5-planning-figure", "G5", "The bandwidth to plan with", Status.INFO,
    """The profile's sustained bandwidth range, shown on live checks so that plans start from it.""",
    "",
    inputs=kinds.LIVE_KINDS)


def _expected(ctx: CheckContext) -> float | None:
    for value in (ctx.options.expect_bandwidth, ctx.inventory.host.expected_bandwidth_gbs):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                continue
    return None


@check(BANDWIDTH_PLAN, PLANNING_FIGURE)
def bandwidth_plan(ctx: CheckContext) -> Iterator[Finding]:
    low, high = ctx.profile.bandwidth_gbs
    spec = ctx.profile.bandwidth_spec_gbs
    if is_live(ctx):
        yield PLANNING_FIGURE.info(
            f"plan memory-bound work on {low:g}-{high:g} GB/s sustained, not the {spec:g} GB/s spec",
            low=low, high=high, spec=spec)
    expected = _expected(ctx)
    if expected is None:
        return
    if expected > high:
        yield BANDWIDTH_PLAN.finding(
            f"plan assumes {expected:g} GB/s; sustained is {low:g}-{high:g} GB/s ({spec:g} is the spec peak)",
            evidence={"expected": expected, "sustained": [low, high], "spec": spec})
    else:
        yield BANDWIDTH_PLAN.passed(f"planned {expected:g} GB/s is within the {low:g}-{high:g} GB/s sustained", expected=expected)
