"""G6: one global unified-memory pool shared by every process."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from envcheck import kinds
from envcheck.checks.host_facts import gib, gpus, is_live, nvidia_smi, unified_memory
from envcheck.inspect.launch import MEMORY_KEYS
from envcheck.inspect.source_edits import VLLM_FREE_MEMORY_CHECK_EDIT
from envcheck.model import Finding, Location, Status
from envcheck.rules import CheckContext, check, rule

if TYPE_CHECKING:
    from envcheck.readings import GpuProcess, LaunchReading

# A neighbour capped at or below this share of memory coexists with a small run (GOTCHAS.md G6).
CAPPED_SHARE = 0.5
# An unrecognised process holding at least this share of memory is a heavy neighbour.
HEAVY_SHARE = 0.5

# Known servers: how to recognise them, the option that caps their memory, and its default.
SERVERS: tuple[tuple[str, re.Pattern[str], str | None, float | None], ...] = (
    ("vLLM", re.compile(r"(^|[/\s])vllm(\s|$)|vllm\.entrypoints|VLLM::", re.I), "gpu_memory_utilization", 0.9),
    ("SGLang", re.compile(r"sglang\.launch_server|sglang::|(^|[/\s])sglang(\s|$)", re.I), "mem_fraction_static", 0.88),
    # TensorRT-LLM's KV cache takes this fraction of the memory that is free when it starts
    ("TensorRT-LLM", re.compile(r"trtllm-serve|tensorrt_llm\.serve", re.I), "kv_cache_free_gpu_memory_fraction", 0.9),
    ("llama.cpp server", re.compile(r"llama-server|llama_cpp\.server", re.I), None, None),
    ("Ollama", re.compile(r"(^|[/\s\\])ollama(\s|$|\.exe)|ollama_llama_server", re.I), None, None),
    ("Triton server", re.compile(r"tritonserver", re.I), None, None),
    ("TGI", re.compile(r"text-generation-launcher|text-generation-server", re.I), None, None),
)

NEIGHBOUR = rule(
    "G6-gpu-neighbour", "G6", "An uncapped or heavy process already resident on the GPU", Status.WARN,
    """Unified memory is one global pool: a process that is uncapped or near capacity competes with
    everything else and can silently evict another process's KV cache or weights, with no OOM in that
    process's own log. preflight lists the processes nvidia-smi shows on the GPU, reads their command
    lines from /proc, recognises known servers (vLLM, SGLang, llama.cpp, Ollama, Triton, TGI) and whether
    their memory is capped. Small capped work coexists (a <4 GB LoRA next to vLLM with
    --gpu-memory-utilization <= 0.5).""",
    """Cap the neighbour (vLLM --gpu-memory-utilization <= 0.5, SGLang --mem-fraction-static) or stop
    unrelated servers before an uncapped or near-capacity run: one heavy job at a time.""",
    inputs=kinds.LIVE_KINDS)


def _cap(words: Sequence[str], option: str) -> float | None:
    for i, word in enumerate(words):
        key, eq, value = word.partition("=")
        if key.lstrip("-").replace("-", "_") != option:
            continue
        if not eq and i + 1 < len(words):
            value = words[i + 1]
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _describe(process: GpuProcess) -> tuple[str | None, float | None, bool]:
    """(server name, memory cap, cap given explicitly) for a process and its ancestors."""
    lines = [list(process.cmdline)] if process.cmdline else []
    lines.extend(list(a) for a in process.ancestors or ())
    texts = [process.process_name or "", *(" ".join(words) for words in lines)]
    for label, pattern, option, default in SERVERS:
        if not any(pattern.search(text) for text in texts if text):
            continue
        if option is None:
            return label, None, False
        for words in lines:
            value = _cap(words, option)
            if value is not None:
                return label, value, True
        return label, default, False
    return None, None, False


@check(NEIGHBOUR)
def gpu_neighbours(ctx: CheckContext) -> Iterator[Finding]:
    if not is_live(ctx):
        return
    smi, reason = nvidia_smi(ctx)
    if smi is None:
        yield NEIGHBOUR.finding(f"{reason}: cannot list GPU processes", status=Status.SKIP)
        return
    if smi.apps_error:
        yield NEIGHBOUR.finding(f"cannot list GPU processes: {smi.apps_error}", status=Status.SKIP)
        return
    others = [p for p in smi.processes or () if not p.ours]
    if not others:
        yield NEIGHBOUR.passed("no other process holds GPU memory")
        return
    capacity_by_gpu = {g.uuid: g.memory_total_mib for g in gpus(ctx)}
    meminfo = ctx.inventory.host.meminfo
    mem_total = (meminfo.bytes or {}).get("MemTotal") if meminfo is not None else None
    uma = unified_memory(ctx)
    for process in others:
        pid, used = process.pid, process.used_memory_mib
        label, cap, explicit = _describe(process)
        used_text = f", {gib(used * 2**20)}" if used is not None else ""
        who = f"pid {pid} ({label or process.process_name or '?'}{used_text})"
        evidence: dict[str, Any] = {"pid": pid, "server": label, "cap": cap, "used_mib": used,
                    "cmdline": list(process.cmdline) if process.cmdline is not None else None}
        if label is not None:
            if cap is not None and cap <= CAPPED_SHARE:
                yield NEIGHBOUR.info(f"{who} is capped at {cap:g}", **evidence)
            elif cap is not None:
                how = f"capped at {cap:g}" if explicit else f"uncapped (default {cap:g})"
                yield NEIGHBOUR.finding(f"{who} is {how}: cap it at <= {CAPPED_SHARE:g} or stop it before a heavy run", evidence=evidence)
            else:
                yield NEIGHBOUR.finding(f"{who} has no memory cap: stop it before a heavy run", evidence=evidence)
            continue
        capacity_mib = None if uma else capacity_by_gpu.get(process.gpu_uuid)
        if capacity_mib is None and mem_total is not None:
            capacity_mib = mem_total / 2**20
        if used is not None and capacity_mib is not None and capacity_mib > 0 and used / capacity_mib >= HEAVY_SHARE:
            yield NEIGHBOUR.finding(f"{who} holds {used / capacity_mib:.0%} of memory: stop or cap it before a heavy run", evidence=evidence)
        else:
            yield NEIGHBOUR.info(f"{who} is resident on the GPU", **evidence)


POOL_OVERCOMMIT = rule(
    "G6-pool-overcommit", "G6", "Servers started together claim more than the one memory pool", Status.FAIL,
    """Unified memory is one pool: several GPU servers started together (services of one compose file,
    containers of one Kubernetes manifest, servers one script starts) each claim their share of the same
    memory (vLLM --gpu-memory-utilization, 0.9 when not given; SGLang --mem-fraction-static, 0.88). When
    the shares add up past 1, the server that starts last cannot get its share and stops at start-up, or
    evicts the KV cache and weights of the others. Services that cannot run together are not added up:
    those that share one container_name or, under host networking, one host port (a menu of alternative
    models, one started at a time), and those under a compose profile (started only when asked for). A GPU
    service envcheck cannot read a share from claims its container memory cap (compose mem_limit or
    deploy.resources.limits.memory) when it has one, the whole pool when it has none; beside servers that
    claim 0.5 of the pool or less it fits in the rest (small capped work coexists).""",
    """Give each server a share so that they add up to well under 1 (two vLLM servers at 0.4 each), or run
    only one heavy server at a time (compose profiles).""",
    inputs=kinds.LAUNCH_FILES)


Share = tuple["LaunchReading", float, bool]


def _together(shares: list[Share], uncapped: list[LaunchReading]) -> tuple[list[Share], list[LaunchReading]]:
    """The servers that can run at the same time: of services that hold one ``exclusive`` resource (a
    container_name, a host port: compose's menu of models) only the largest claim counts (uncapped: 1)."""
    def service(launch: LaunchReading) -> str:
        return launch.service or str(id(launch))

    group: dict[str, str] = {}  # service -> a representative service of its group (union-find)

    def find(name: str) -> str:
        while group.get(name, name) != name:
            name = group[name]
        return name

    holder: dict[str, str] = {}
    for launch in [*(item[0] for item in shares), *uncapped]:
        for held in launch.exclusive or ():
            first = holder.setdefault(str(held), service(launch))
            a, b = find(first), find(service(launch))
            if a != b:
                group[b] = a
    claims: dict[str, float] = {}
    for launch, share in [*((item[0], item[1]) for item in shares), *((launch, 1.0) for launch in uncapped)]:
        claims[service(launch)] = claims.get(service(launch), 0.0) + share
    chosen: dict[str, str] = {}
    for name, claim in claims.items():  # in file order: a tie keeps the first service
        root = find(name)
        if root not in chosen or claim > claims[chosen[root]]:
            chosen[root] = name
    keep = set(chosen.values())
    return ([item for item in shares if service(item[0]) in keep], [launch for launch in uncapped if service(launch) in keep])


@check(POOL_OVERCOMMIT)
def pool_overcommit(ctx: CheckContext) -> Iterator[Finding]:
    launches = ctx.inventory.host.launch
    if is_live(ctx) or launches is None:
        return
    shares: list[Share] = []
    uncapped: list[LaunchReading] = []  # GPU services with no share envcheck can read (Ollama, llama.cpp)
    for launch in launches:
        if launch.optional:  # a compose service behind a profile does not start with the others
            continue
        if launch.memory_cap_gb is not None and ctx.profile.memory_gb:  # a GPU service with a container memory cap
            shares.append((launch, launch.memory_cap_gb / ctx.profile.memory_gb, True))
            continue
        if launch.uncapped or any(pattern.search(launch.tool or "") and default is None
                                  for _label, pattern, _option, default in SERVERS):
            uncapped.append(launch)
            continue
        server = next(((label, default) for label, pattern, _option, default in SERVERS
                       if default is not None and pattern.search(launch.tool or "")), None)
        if server is None:
            continue
        shares.append((launch, launch.memory if launch.memory is not None else float(server[1] or 0),
                       launch.memory is not None))
    shares, uncapped = _together(shares, uncapped)
    if shares and uncapped and sum(share for _l, share, _e in shares) > CAPPED_SHARE:
        first = shares[0]
        memory_line = next((s.line for s in first[0].settings if s.key in MEMORY_KEYS), None)
        named = ", ".join(str(u.service or u.tool) for u in uncapped[:4])
        where = Location(first[0].origin or "", line=memory_line or first[0].line, member=first[0].member)
        yield POOL_OVERCOMMIT.finding(
            f"{first[0].service or first[0].tool} claims {first[1]:g} of the one unified memory pool"
            f"{'' if first[2] else ' (its default)'} while {named} start{'s' if len(uncapped) == 1 else ''} beside it with "
            "no memory cap: whichever loads second is starved or evicts the other",
            where, {"shares": [share for _l, share, _e in shares], "uncapped": [str(u.service or u.tool) for u in uncapped]},
            status=Status.WARN)
        return
    if len(shares) < 2:
        return
    total = sum(share for _launch, share, _explicit in shares)
    parts = ", ".join(f"{launch.service or launch.tool} {round(share, 3):g}{'' if explicit else ' (default)'}"
                      for launch, share, explicit in shares)
    last = shares[-1][0]
    where = Location(last.origin or "", line=last.line, member=last.member)
    evidence = {"shares": [share for _l, share, _e in shares], "total": round(total, 3)}
    if total > 1:
        yield POOL_OVERCOMMIT.finding(f"{len(shares)} servers claim {total:.2f} of one unified memory pool ({parts})", where, evidence)
    else:
        yield POOL_OVERCOMMIT.passed(f"{len(shares)} servers claim {total:.2f} of the pool ({parts})", where, **evidence)


FREE_MEMORY_CHECK_OFF = rule(
    "G6-vllm-free-memory-check-off", "G6",
    "A build line switches off vLLM's start-up free-memory check", Status.WARN,
    """vLLM refuses to start when the memory free at start-up is less than the share it is asked to take
    (gpu_memory_utilization x total memory): its GPU worker compares self.init_snapshot.free_memory with
    self.requested_memory and stops with "Free memory on device ... is less than desired GPU memory
    utilization". On unified memory that check is what keeps a new server from claiming memory that other
    processes (another server, a training run, the page cache) already hold. A sed/perl/python edit of
    vLLM's source that removes or relaxes it lets the server start anyway; the KV cache and weights of
    whichever process loses the race are then evicted silently, or the machine swaps.""",
    """Keep the check and lower --gpu-memory-utilization to what is free (on a Spark read free -g, not
    nvidia-smi), or stop the process that holds the memory; drop the page cache before a run (sync; echo 3
    > /proc/sys/vm/drop_caches).""",
    inputs=("dockerfile",))


@check(FREE_MEMORY_CHECK_OFF)
def free_memory_check_off(ctx: CheckContext) -> Iterator[Finding]:
    for install in ctx.inventory.installs:
        if VLLM_FREE_MEMORY_CHECK_EDIT in install.options:
            text = install.text if len(install.text) <= 120 else install.text[:117] + "..."
            yield FREE_MEMORY_CHECK_OFF.finding(
                f"`{text}` edits vLLM's start-up free-memory check (free_memory < requested_memory): "
                "on unified memory the server then starts over memory other processes hold", install.location,
                {"command": install.text})
