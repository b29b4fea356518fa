"""G10: tensor parallelism across two Sparks."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from envcheck import kinds
from envcheck.checks.host_facts import is_live
from envcheck.inspect.launch import NODE_KEYS, TP_KEYS
from envcheck.model import Finding, Location, Status
from envcheck.rules import CheckContext, check, rule

if TYPE_CHECKING:
    from envcheck.readings import LaunchReading, PodRequest

TP_ACROSS_NODES = rule(
    "G10-tp-across-nodes", "G10", "Tensor parallelism across more than one node", Status.WARN,
    """Two DGX Sparks are linked by ConnectX-7 (200 Gb/s): fast enough for DDP/FSDP gradient and parameter
    sync, too thin for tensor parallelism's fine-grained traffic, so TP across two Sparks hangs, errors or
    runs far slower than one Spark. It is a WARN, not a FAIL: NVIDIA's own two-Spark recipes (vLLM over
    Ray, TensorRT-LLM over MPI) run tp=2 across the pair, and over RoCE it serves, only slower; it breaks
    where NCCL falls back to TCP or the link is misconfigured. The rule reads the launch command
    (--launch: torchrun, accelerate, deepspeed, vLLM, SGLang, Megatron, ms-swift) or launch config
    (--launch-config: JSON/YAML, DeepSpeed hostfile) and warns when more than one node is combined with a
    tensor-parallel degree above 1, or a tensor-parallel degree above 1 with a Ray or MPI cluster (``ray
    start``, ``--distributed-executor-backend ray``, ``mpirun``): a Spark has one GPU, so those ranks run
    on other Sparks. With no node count and no cluster in the input (``docker exec`` into a Ray container
    another script started), a tensor-parallel degree above the profile's gpus_per_node (1 on a Spark)
    warns too: its ranks can only run on other machines, or the launch cannot start. Pipeline and data
    parallelism across Sparks are fine. Launch commands in compose services, Kubernetes containers, shell
    scripts and notebooks are read the same way; a GPU compose service whose image serves from its own
    entrypoint takes the size its environment gives (TENSOR_PARALLEL_SIZE=2). A tensor-parallel size given by a variable or positional
    parameter the input does not set (--tensor-parallel-size "$3") is unknown, not 1: across several
    nodes, or over a Ray cluster the script spans machines with (ray start --head here, ray start
    --address joining it elsewhere), it is a WARN that depends on the value; otherwise an INFO.""",
    """On two Sparks use DDP or FSDP; keep tensor parallelism inside one node (tp=1 across nodes).""",
    inputs=(*kinds.LIVE_KINDS, *kinds.LAUNCH_FILES))


def _where(launch: LaunchReading) -> Location:
    origin = launch.origin or "--launch"
    line = launch.written_line(TP_KEYS) or launch.written_line({str(s.key) for s in launch.settings})
    return Location(origin, line=line, member=launch.member, branch=launch.branch, on_request=bool(launch.optional))


def _unknown_tp(launch: LaunchReading) -> str | None:
    """The tensor-parallel setting as written when its value is unreadable (``"$3"``, ``$TP``), else None."""
    if launch.tp is not None:
        return None
    written = [s.value for s in launch.settings if s.key in TP_KEYS and s.value]
    return written[-1] if written else None


def _unknown_nodes(launch: LaunchReading) -> str | None:
    """The node count as written when its value is unreadable (``--nnodes "$NNODES"``), else None."""
    if launch.nodes is not None:
        return None
    written = [s.value for s in launch.settings if s.key in NODE_KEYS and s.value]
    return written[-1] if written else None


@check(TP_ACROSS_NODES)
def tensor_parallel_across_nodes(ctx: CheckContext) -> Iterator[Finding]:
    launches = ctx.inventory.host.launch
    if launches is None or (not is_live(ctx) and not launches):  # a file without launch commands
        return
    if not launches:
        yield TP_ACROSS_NODES.finding("no --launch or --launch-config given", status=Status.SKIP)
        return
    failed = False
    per_node = ctx.profile.gpus_per_node
    counted = max(item.nodes or 0 for item in launches)  # a hostfile given beside a config: the two add up (below)
    for launch in launches:
        if in_one_pod(launch, ctx.profile.gpus_per_node):
            continue  # G10-pod-gpus-over-node says it: the pod never schedules, its ranks are not across nodes
        nodes, tp, origin = launch.nodes or 1, launch.tp or 1, launch.origin or "--launch"
        cluster = launch.cluster
        where, unknown = _where(launch), _unknown_tp(launch)
        evidence = {"nodes": nodes, "tp": tp, "tool": launch.tool}
        if unknown is not None and (nodes > 1 or launch.multi_node):
            failed = True
            across = f"{nodes} nodes" if nodes > 1 else f"a multi-node {cluster} cluster (a head and a worker that joins it)"
            yield TP_ACROSS_NODES.finding(
                f"{origin}: the tensor-parallel size comes from {unknown}, unknown here, across {across}: it depends on "
                "the value: above 1 its ranks span Sparks (one GPU each); use pipeline parallelism (or DDP/FSDP) across Sparks",
                where, {**evidence, "tp": unknown, "cluster": cluster})
        elif unknown is not None:
            yield TP_ACROSS_NODES.info(f"{origin}: the tensor-parallel size comes from {unknown}, unknown here", where,
                                       **{**evidence, "tp": unknown})
        elif cluster and nodes == 1 and tp > 1:  # a Spark has one GPU: tp=2 over a Ray/MPI cluster is tp over 2 Sparks
            failed = True
            yield TP_ACROSS_NODES.finding(
                f"{origin}: tensor parallelism (tp={tp}) over {'an' if cluster == 'MPI' else 'a'} {cluster} cluster: a Spark has one GPU, so the"
                f" {tp} ranks run on {tp} Sparks; use pipeline parallelism (or DDP/FSDP) across Sparks",
                where, {**evidence, "cluster": cluster})
        elif nodes > 1 and tp > 1:
            failed = True
            yield TP_ACROSS_NODES.finding(f"{origin}: tensor parallelism (tp={tp}) across {nodes} nodes; use pipeline parallelism (or DDP/FSDP) across Sparks", where, evidence)
        elif not counted and 0 < per_node < tp and (written := _unknown_nodes(launch)):  # --nnodes "$NNODES"
            failed = True
            yield TP_ACROSS_NODES.finding(
                f"{origin}: tensor parallelism (tp={tp}) over a node count from {written}, unknown here: a {ctx.profile.name}"
                f" has {per_node} GPU per node, so the {tp} ranks run on {tp} Sparks; use pipeline parallelism (or DDP/FSDP)"
                " across Sparks", where, {**evidence, "nodes": written, "gpus_per_node": per_node})
        elif not counted and 0 < per_node < tp:  # no node count: tp ranks beyond one machine's GPUs span machines
            failed = True
            yield TP_ACROSS_NODES.finding(
                f"{origin}: tensor parallelism (tp={tp}) with no node count: a {ctx.profile.name} has {per_node} GPU per node,"
                f" so the {tp} ranks run on other machines (a cluster started elsewhere), or the launch cannot start;"
                " use pipeline parallelism (or DDP/FSDP) across Sparks", where, {**evidence, "gpus_per_node": per_node})
        elif counted == 1 and 0 < per_node < tp:  # one node said, more ranks than its GPUs: not across nodes, but not a pass either
            yield TP_ACROSS_NODES.info(f"{origin}: tensor parallelism (tp={tp}) on one node: a {ctx.profile.name} has"
                                       f" {per_node} GPU per node", where, **{**evidence, "gpus_per_node": per_node})
        elif nodes > 1:
            yield TP_ACROSS_NODES.passed(f"{origin}: {nodes} nodes without tensor parallelism", where, **evidence)
        else:
            yield TP_ACROSS_NODES.passed(f"{origin}: single node (tp={tp})", where, **evidence)
    # A launch command and a config given separately (deepspeed --hostfile H + ds_config.json) add up.
    most_nodes = max(launches, key=lambda item: item.nodes or 1)
    most_tp = max(launches, key=lambda item: item.tp or 1)
    if not failed and (most_nodes.nodes or 1) > 1 and (most_tp.tp or 1) > 1:
        yield TP_ACROSS_NODES.finding(
            f"{most_tp.origin} sets tp={most_tp.tp} and {most_nodes.origin} runs"
            f" {most_nodes.nodes} nodes: tensor parallelism across nodes; use pipeline parallelism (or DDP/FSDP) across Sparks",
            _where(most_tp), {"nodes": most_nodes.nodes, "tp": most_tp.tp})


POD_GPUS = rule(
    "G10-pod-gpus-over-node", "G10", "A Kubernetes pod asks for more GPUs than a Spark node has", Status.FAIL,
    """A DGX Spark has one GPU. A container that requests (or is limited to) more whole GPUs than one node
    has (`nvidia.com/gpu: 2`, NVIDIA Dynamo's `gpu: "2"`) fits no Spark: the scheduler never places the
    pod, which stays Pending; tensor parallelism inside that pod is what usually asks for them. GPU
    time-slicing that advertises more `nvidia.com/gpu` than the node has gives no second GPU: two ranks on
    one GPU. MIG slices (GB10 has no MIG), renamed shared resources (`nvidia.com/gpu.shared`) and dynamic
    resource allocation claims are not counted.""",
    """Ask for one GPU a pod (`nvidia.com/gpu: 1`) and keep tensor parallelism at 1; serve a model that
    does not fit one Spark with pipeline parallelism across Sparks, and scale out with one replica a
    Spark.""",
    inputs=("kubernetes",))


@check(POD_GPUS)
def pod_gpus(ctx: CheckContext) -> Iterator[Finding]:
    per_node = ctx.profile.gpus_per_node
    requests = [r for r in ctx.inventory.host.pod_requests or () if r.resource == "gpu" and r.amount is not None]
    if per_node <= 0 or not requests:
        return
    by_service: dict[str | None, dict[str | None, PodRequest]] = {}  # grouped once: a pod of 5,000 containers is not 5,000 x 5,000
    for r in requests:
        by_service.setdefault(r.service, {})[r.part] = r
    tensor_parallel: dict[str | None, LaunchReading] = {}
    for item in ctx.inventory.host.launch or ():
        if (item.tp or 1) > 1:
            tensor_parallel.setdefault(item.service, item)
    for service, parts in by_service.items():
        asked = parts.get("limits") or parts["requests"]
        count, where = int(asked.amount or 0), Location(asked.origin or "", line=asked.line)
        launch = tensor_parallel.get(service)
        other = [r.line for r in parts.values() if r is not asked and r.line]
        flag = launch.written_line(TP_KEYS) if launch is not None else None
        evidence = {"service": service, "gpus": count, "per_node": per_node, "tp": launch.tp if launch else None,
                    **({"lines": sorted({*other, *([flag] if flag else [])})} if other or flag else {})}
        said = f"{service}: " if service else ""
        if count > per_node and launch is not None and (launch.nodes or 1) > 1:
            # one cause: a manifest written for multi-GPU nodes; G10-tp-across-nodes reports it at the TP flag
            yield POD_GPUS.info(f"{said}asks for {count} GPUs ({asked.key}: {asked.value}) and a {ctx.profile.name} node has "
                                f"{per_node}: part of its tensor parallelism over {launch.nodes} nodes, reported there",
                                where, **evidence)
        elif count > per_node:
            if launch is not None and in_one_pod(launch, per_node):
                why = f"; its tensor parallelism (tp={launch.tp}) needs them in one pod"
            elif launch is not None:
                why = f" (its launch: tp={launch.tp}" + (f" over {launch.nodes} nodes)" if launch.nodes else ")")
            else:
                why = ""
            yield POD_GPUS.finding(
                f"{said}asks for {count} GPUs ({asked.key}: {asked.value}) and a {ctx.profile.name} node has {per_node}: "
                f"the pod is never scheduled on a Spark{why}", where, evidence)
        else:
            yield POD_GPUS.passed(f"{said}{count} GPU(s), within a node's {per_node}", where, **evidence)


def in_one_pod(launch: LaunchReading, per_node: int) -> bool:
    """A container that asks for the GPUs of all its TP ranks, more than a node has, over no nodes: its pod
    never schedules (G10-pod-gpus-over-node), so its ranks are not across nodes."""
    gpus = launch.gpus or 0
    return 0 < per_node < gpus and (launch.tp or 1) <= gpus and not launch.nodes and not launch.cluster
