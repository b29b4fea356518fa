"""G3: unified memory is double-counted (page cache, mmap, allocator).

On a GB10 the GPU allocates from the same memory as the page cache, and nvidia-smi prints ``[N/A]``
for memory, so the readings come from ``/proc/meminfo``. A large page cache before a model load is
the situation in which a run OOMs while memory looks free.
"""

from __future__ import annotations

from collections.abc import Iterator

from envcheck.checks.host_facts import gib, is_live, unified_memory
from envcheck.model import Finding, Location, Status
from envcheck.rules import CheckContext, check, rule

# Page cache at or above this share of MemTotal is large enough to matter before a model load.
PAGE_CACHE_SHARE = 0.25

PAGE_CACHE = rule(
    "G3-page-cache",
    "G3",
    "Large page cache before a model load on unified memory",
    Status.WARN,
    """On unified memory (DGX Spark) the page cache, mmap'ed safetensors and the CUDA allocator draw
    from one pool and double-count pages; a run can OOM while nvidia-smi shows free memory or
    [N/A]. QLoRA dequantisation adds transient allocations, so it can OOM earlier than bf16. This
    rule reads /proc/meminfo and warns when the page cache (Cached) holds at least a quarter of
    MemTotal; on GPUs with their own memory the page cache does not compete and the rule passes.""",
    """Drop the page cache between runs (not during one): `sync; echo 3 > /proc/sys/vm/drop_caches`
    (needs root). Read `free -g` and /proc/meminfo, not nvidia-smi, for memory headroom.""",
    inputs=("host", "container"),
)
READINGS = rule(
    "G3-memory-readings",
    "G3",
    "Memory readings from /proc/meminfo",
    Status.INFO,
    """MemTotal, MemAvailable, Cached, Dirty and SwapTotal as the kernel reports them: the numbers
    to plan a model load with on unified memory, where nvidia-smi reports no memory.""",
    "",
    inputs=("host", "container"),
)


@check(PAGE_CACHE, READINGS)
def page_cache(ctx: CheckContext) -> Iterator[Finding]:
    """WARN when the page cache is large on unified memory; INFO readings; SKIP without /proc/meminfo."""
    if not is_live(ctx):
        return
    if ctx.kind == "container" and isinstance(ctx.inventory.host.container_run, dict):
        # a container envcheck started from an image reads the memory of the machine its engine runs on:
        # that is no fact about the image (issue 26 item 15)
        yield PAGE_CACHE.finding("the page cache is the Docker engine's machine's, not the image's: run `envcheck preflight` "
                                 "on the Spark before the job", status=Status.SKIP)
        return
    mem = ctx.inventory.host.meminfo
    if not isinstance(mem, dict) or mem.get("status") != "ok":
        reason = mem.get("error", mem.get("status")) if isinstance(mem, dict) else "not read"
        yield PAGE_CACHE.finding(f"cannot read /proc/meminfo: {reason}", status=Status.SKIP)
        return
    values = mem.get("bytes", {})
    where = Location(str(mem.get("path", "/proc/meminfo")))
    total = values.get("MemTotal")
    if not isinstance(total, int) or total <= 0:
        yield PAGE_CACHE.finding("/proc/meminfo has no MemTotal", where, status=Status.SKIP)
        return
    shown = ", ".join(f"{name} {gib(values[name])}" for name in ("MemTotal", "MemAvailable", "Cached", "Dirty", "SwapTotal") if name in values)
    yield READINGS.info(shown, where, **{k: values[k] for k in ("MemTotal", "MemAvailable", "Cached", "Dirty", "SwapTotal") if k in values})
    cached = int(values.get("Cached", 0))
    share = cached / total
    if not unified_memory(ctx):
        yield PAGE_CACHE.passed(f"GPU has its own memory: page cache ({gib(cached)}) does not compete with it", where, cached=cached)
    elif share >= PAGE_CACHE_SHARE:
        yield PAGE_CACHE.finding(
            f"page cache holds {gib(cached)} ({share:.0%} of {gib(total)}); drop it before a model load:"
            " sync; echo 3 > /proc/sys/vm/drop_caches (root)",
            where, {"cached": cached, "total": total, "share": round(share, 3)},
        )
    else:
        yield PAGE_CACHE.passed(f"page cache {gib(cached)} ({share:.0%} of {gib(total)})", where, cached=cached, total=total)
