"""G3: unified memory is double-counted (page cache, mmap, allocator); nvidia-smi prints ``[N/A]`` for memory
on a GB10, so the readings come from ``/proc/meminfo``."""

from __future__ import annotations

from collections.abc import Iterator

from envcheck import kinds
from envcheck.checks.host_facts import gib, is_live, unified_memory
from envcheck.inspect.launch import MEMORY_KEYS, ServedModel, parameters_billion, served_model
from envcheck.knowledge import load
from envcheck.model import Finding, Location, Status
from envcheck.rules import CheckContext, check, rule

# Page cache at or above this share of MemTotal is large enough to matter before a model load.
PAGE_CACHE_SHARE = 0.25

PAGE_CACHE = rule(
    "G3-page-cache", "G3", "Large page cache before a model load on unified memory", Status.WARN,
    """On unified memory (DGX Spark) the page cache, mmap'ed safetensors and the CUDA allocator draw from
    one pool and double-count pages; a run can OOM while nvidia-smi shows free memory or [N/A]. QLoRA
    dequantisation adds transient allocations, so it can OOM earlier than bf16. This rule reads
    /proc/meminfo and warns when the page cache (Cached) holds at least a quarter of MemTotal; on GPUs
    with their own memory the page cache does not compete and the rule passes.""",
    """Drop the page cache between runs (not during one): `sync; echo 3 > /proc/sys/vm/drop_caches` (needs
    root). Read `free -g` and /proc/meminfo, not nvidia-smi, for memory headroom.""",
    inputs=kinds.LIVE_KINDS)
READINGS = rule(
    "G3-memory-readings", "G3", "Memory readings from /proc/meminfo", Status.INFO,
    """MemTotal, MemAvailable, Cached, Dirty and SwapTotal as the kernel reports them: the numbers to plan
    a model load with on unified memory, where nvidia-smi reports no memory.""",
    "",
    inputs=kinds.LIVE_KINDS)


@check(PAGE_CACHE, READINGS)
def page_cache(ctx: CheckContext) -> Iterator[Finding]:
    if not is_live(ctx):
        return
    if ctx.kind == "container" and ctx.inventory.host.container_run is not None:
        # a container envcheck started reads the memory of its engine's machine, no fact about the image
        yield PAGE_CACHE.finding("the page cache is the Docker engine's machine's, not the image's: run `envcheck preflight` "
                                 "on the Spark before the job", status=Status.SKIP)
        return
    mem = ctx.inventory.host.meminfo
    if mem is None or mem.status != "ok":
        reason = (mem.error or mem.status) if mem is not None else "not read"
        yield PAGE_CACHE.finding(f"cannot read /proc/meminfo: {reason}", status=Status.SKIP)
        return
    values, where = mem.bytes or {}, Location(mem.path or "/proc/meminfo")
    total = values.get("MemTotal")
    if total is None or total <= 0:
        yield PAGE_CACHE.finding("/proc/meminfo has no MemTotal", where, status=Status.SKIP)
        return
    read = {k: values[k] for k in ("MemTotal", "MemAvailable", "Cached", "Dirty", "SwapTotal") if k in values}
    yield READINGS.info(", ".join(f"{name} {gib(value)}" for name, value in read.items()), where, **read)
    cached = values.get("Cached", 0)
    share = cached / total
    if not unified_memory(ctx):
        yield PAGE_CACHE.passed(f"GPU has its own memory: page cache ({gib(cached)}) does not compete with it", where, cached=cached)
    elif share >= PAGE_CACHE_SHARE:
        yield PAGE_CACHE.finding(
            f"page cache holds {gib(cached)} ({share:.0%} of {gib(total)}); drop it before a model load:"
            " sync; echo 3 > /proc/sys/vm/drop_caches (root)",
            where, {"cached": cached, "total": total, "share": round(share, 3)})
    else:
        yield PAGE_CACHE.passed(f"page cache {gib(cached)} ({share:.0%} of {gib(total)})", where, cached=cached, total=total)


MEMORY_FRACTION = rule(
    "G3-memory-fraction", "G3",
    "A server claims more of unified memory than a Spark can give it", Status.WARN,
    """vLLM's --gpu-memory-utilization and SGLang's --mem-fraction-static are shares of GPU memory. On a
    DGX Spark that memory is the one 128 GB pool the OS, the page cache, the model's mmap'ed safetensors
    and every other process also draw from, so a share near 1 (0.95 is common in recipes written for GPUs
    with their own memory) leaves too little: the load OOMs, or the kernel evicts pages while nvidia-smi
    still shows free memory. The rule reads launch commands in compose services, Kubernetes containers,
    shell scripts and notebooks, and warns above the profile's serve_memory_fraction_max.""",
    """Lower the share to the profile's limit or below (--gpu-memory-utilization 0.85 on a Spark that runs
    nothing else; less next to other GPU work), and drop the page cache before loading a large model.""",
    inputs=kinds.LAUNCH_FILES)


@check(MEMORY_FRACTION)
def memory_fraction(ctx: CheckContext) -> Iterator[Finding]:
    limit = ctx.profile.serve_memory_fraction_max
    launches = ctx.inventory.host.launch
    if is_live(ctx) or launches is None or limit <= 0:
        return
    for launch in launches:
        share = launch.memory
        if share is None:
            continue
        key = next((s.key for s in launch.settings if s.key in ("gpu_memory_utilization", "mem_fraction_static")), "")
        option = "--" + str(key).replace("_", "-")
        where = Location(launch.origin or "", line=launch.written_line(MEMORY_KEYS) or launch.line,
                         member=launch.member, branch=launch.branch, on_request=bool(launch.optional))
        who = f"{launch.service}: " if launch.service else ""
        evidence = {"tool": launch.tool, "share": share, "limit": limit, "service": launch.service}
        if share > limit:
            yield MEMORY_FRACTION.finding(
                f"{who}{launch.tool or 'the server'} asks {option} {share:g} of {ctx.profile.name}'s one unified memory pool; "
                f"above {limit:g} leaves too little for the OS, the page cache and other processes", where, evidence)
        else:
            yield MEMORY_FRACTION.passed(f"{who}{option} {share:g} is within {limit:g}", where, **evidence)


# Shares that cap everything a server allocates, weights included (TensorRT-LLM's KV-cache fractions are shares
# of what is free after the weights: not these).
SHARE_OF_ALL = frozenset({"gpu_memory_utilization", "mem_fraction_static"})
# Fail only when even this part of the estimate is above the share: a name rounds its parameter count.
WEIGHTS_MARGIN = 0.85

SHARE_BELOW_WEIGHTS = rule(
    "G3-share-below-weights", "G3", "A server's memory share is smaller than its model's weights", Status.FAIL,
    """vLLM's --gpu-memory-utilization and SGLang's --mem-fraction-static cap everything the server allocates on
    its GPU: weights, activations and KV cache. On a Spark, servers that share the one unified pool are capped
    low (G6), and a cap below the weights themselves stops the server at start-up (vLLM: 'No available memory
    for the cache blocks'). The rule estimates the weights from the served model's name, its parameter count
    (8B, 1.5B; the total of a 35B-A3B mixture of experts) times the bytes of its weight format (FP8, NVFP4,
    AWQ ... from the name, --quantization or --load-format; BF16 for a Hugging Face id that names none:
    envcheck/knowledge/weight_formats.toml), and fails when even 85% of that estimate is above the share of the
    profile's memory. It says nothing where the size is unknown (no count in the name, 8x7B, a local folder or
    a --quantization that names no width) or the weights are not all on one GPU's share (tensor or pipeline
    parallel, several nodes, --cpu-offload-gb).""",
    """Raise the share to cover the weights and a KV cache (weights / 128 GB, plus headroom), or serve a smaller
    or quantised checkpoint of the model; lower the other servers' shares to make room.""",
    inputs=kinds.LAUNCH_FILES)


def weight_bytes(served: ServedModel) -> tuple[float, str] | None:
    """(bytes a parameter, what it was read from), or None where the width is unknown: the smallest width a
    format row names in the model's name or its --quantization/--load-format, else a natively quantised
    family, else BF16 for a Hugging Face id (weight_formats.toml)."""
    data = load("weight_formats")
    name = served.name.lower()
    said = " ".join(w.lower() for w in (name, served.quantization or "", served.load_format or ""))
    if "$" in said:
        return None  # --quantization "$Q": not written out
    widths = [(float(row["bytes_per_parameter"]), marker) for row in data["format"]
              for marker in row["markers"] if marker in said]
    known = [(width, marker) for width, marker in widths if width > 0]
    if known:
        width, marker = min(known, key=lambda known_width: (known_width[0], -len(known_width[1])))
        return width, f"format {marker}"
    if widths or served.quantization:
        return None  # GGUF, EXL2, 'quantized', or a --quantization (compressed-tensors, modelopt) of no width
    family = next(((float(row["bytes_per_parameter"]), m) for row in data["family"]
                   for m in row["markers"] if m in name), None)
    if family is not None:
        return family[0], f"family {family[1]}"
    return None if served.local else (2.0, "BF16 (no format in the name)")


@check(SHARE_BELOW_WEIGHTS)
def share_below_weights(ctx: CheckContext) -> Iterator[Finding]:
    pool_gb = ctx.profile.memory_gb
    launches = ctx.inventory.host.launch
    if is_live(ctx) or launches is None or pool_gb <= 0:
        return
    for launch in launches:
        key = next((s.key for s in launch.settings if s.key in SHARE_OF_ALL), None)
        if launch.memory is None or key is None or (launch.tp or 1) > 1 or (launch.nodes or 1) > 1 \
                or (launch.gpus or 1) > 1 or launch.cluster or launch.multi_node:
            continue  # weights split over several GPUs (or Sparks): one GPU's share holds only its part
        served = served_model(launch.command or "")
        billions = parameters_billion(served.name) if served else None
        read = weight_bytes(served) if served and billions else None
        if served is None or billions is None or read is None:
            continue
        per_parameter, read_as = read
        weights_gb, share_gb = billions * per_parameter, launch.memory * pool_gb
        where = Location(launch.origin or "", line=launch.written_line(SHARE_OF_ALL) or launch.line,
                         member=launch.member, branch=launch.branch, on_request=bool(launch.optional))
        who = f"{launch.service}: " if launch.service else ""
        option = "--" + key.replace("_", "-")
        evidence = {"model": served.name, "parameters_billion": billions, "bytes_per_parameter": per_parameter,
                    "read_as": read_as, "weights_gb": round(weights_gb, 1), "share": launch.memory,
                    "share_gb": round(share_gb, 1), "service": launch.service}
        if weights_gb * WEIGHTS_MARGIN > share_gb:
            yield SHARE_BELOW_WEIGHTS.finding(
                f"{who}{served.name} has about {weights_gb:.0f} GB of weights ({billions:g}B parameters, {read_as}), "
                f"more than {option} {launch.memory:g} gives it ({share_gb:.0f} GB of {ctx.profile.name}'s {pool_gb:g} GB): "
                "the server stops at start-up", where, evidence)
        else:
            yield SHARE_BELOW_WEIGHTS.passed(
                f"{who}{served.name}: about {weights_gb:.0f} GB of weights ({read_as}) within {option} {launch.memory:g} "
                f"({share_gb:.0f} GB)", where, **evidence)


POD_MEMORY = rule(
    "G3-pod-memory-over-pool", "G3",
    "A Kubernetes container asks for more memory than a Spark has", Status.FAIL,
    """A DGX Spark has one 128 GB pool of unified memory that the OS, the page cache, the CPU side and the
    GPU side of every process share. A container whose memory request (or its limit, when no request is
    given: Kubernetes then requests the limit) is above that pool fits no Spark node: the scheduler never
    places the pod, which stays Pending. A limit above the pool with a request inside it schedules, but is
    never enforced: the container can grow until the whole pool, GPU allocations included, runs out. The
    rule reads `resources.requests`/`limits` `memory` of Kubernetes containers (and of NVIDIA Dynamo
    components) and compares them with the profile's memory_gb, read as the larger GiB.""",
    """Ask for what the workload needs on one Spark (well under 128 GB: the model's weights and KV cache
    share the same pool), or move the part that needs more to a machine that has it.""",
    inputs=("kubernetes",))


@check(POD_MEMORY)
def pod_memory(ctx: CheckContext) -> Iterator[Finding]:
    pool_gb = ctx.profile.memory_gb
    requests = [r for r in ctx.inventory.host.pod_requests or () if r.resource == "memory" and r.amount is not None]
    if pool_gb <= 0 or not requests:
        return
    pool = pool_gb * 2**30  # "128 GB" read as GiB: the largest reading, so no request within the pool is refused
    for service in dict.fromkeys(r.service for r in requests):
        parts = {r.part: r for r in requests if r.service == service}
        limit = parts.get("limits")
        request = parts.get("requests") or limit
        if request is None:
            continue
        where = Location(request.origin or "", line=request.line)
        evidence = {"service": service, "request": request.value, "limit": limit.value if limit else None, "pool_gb": pool_gb,
                    **({"lines": [limit.line]} if limit is not None and limit is not request and limit.line else {})}
        said = f"{service}: " if service else ""
        if (request.amount or 0) > pool:
            asked = "memory request" if request.part == "requests" else "memory limit (its request)"
            yield POD_MEMORY.finding(
                f"{said}{asked} {request.value} is more than {ctx.profile.name}'s {pool_gb:g} GB of unified memory: "
                "no Spark node can hold it, so the pod is never scheduled", where, evidence)
        elif limit is not None and (limit.amount or 0) > pool:
            yield POD_MEMORY.finding(
                f"{said}memory limit {limit.value} is more than {ctx.profile.name}'s {pool_gb:g} GB of unified memory: "
                "it is never enforced, and the container can take the pool the GPU side also uses",
                Location(limit.origin or "", line=limit.line), {**evidence, "lines": [request.line]}, status=Status.WARN)
        else:
            yield POD_MEMORY.passed(f"{said}memory {request.value} is within {pool_gb:g} GB", where, **evidence)
