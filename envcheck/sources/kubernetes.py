"""Kubernetes manifests (multi-document YAML, Helm output on stdin as ``-``): the containers a workload runs,
on which images, scheduled where (amd64-only pods give their images ``linux/amd64``), and the GPUs and memory
they request (:class:`readings.PodRequest`)."""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from envcheck.errors import InputError, UsageError
from envcheck.inspect.device_query import device_query
from envcheck.inspect.image_reference import parse_reference
from envcheck.inspect.launch import image_entrypoint
from envcheck.inspect.pip_args import variable_indexes
from envcheck.inspect.yaml_tree import Scalar, YamlError, YList, YMap, line_of, load_all
from envcheck.knowledge.base_images import ml_image
from envcheck.model import BaseImage, EnvVar, Inventory, Location, Origin, ReadProblem
from envcheck.readings import PodRequest, launches_from_json
from envcheck.sources import ReadOptions, shell
from envcheck.sources.requirements import read_text_file, text_limit

KIND = "kubernetes"
# kind -> the path from the document to its pod spec
_TEMPLATE = ("spec", "template", "spec")
WORKLOADS: dict[str, tuple[str, ...]] = {
    "Pod": ("spec",), "Deployment": _TEMPLATE, "StatefulSet": _TEMPLATE, "DaemonSet": _TEMPLATE,
    "ReplicaSet": _TEMPLATE, "Job": _TEMPLATE,
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
    # LeaderWorkerSet (the multi-node vLLM/SGLang recipe): the leader's pod (the workers' is read below)
    "LeaderWorkerSet": ("spec", "leaderWorkerTemplate", "leaderTemplate", "spec"),
    # KubeRay: the head's pod (each of workerGroupSpecs is read below)
    "RayCluster": ("spec", "headGroupSpec", "template", "spec"),
    "RayJob": ("spec", "rayClusterSpec", "headGroupSpec", "template", "spec"),
    "RayService": ("spec", "rayClusterConfig", "headGroupSpec", "template", "spec"),
}
_LWS_WORKERS = ("spec", "leaderWorkerTemplate", "workerTemplate", "spec")
# NVIDIA Dynamo's operator (ai-dynamo/dynamo API reference, multinode-deployment.md): a component runs pods
# from `extraPodSpec` (its `mainContainer`), asks for `resources.{requests,limits}.{gpu,memory}`, and with
# `multinode.nodeCount` one replica spans that many nodes.
COMPONENTS: dict[str, tuple[str, ...]] = {
    "DynamoGraphDeployment": ("spec", "services"),  # a mapping: service name -> component
    "DynamoComponentDeployment": ("spec",),  # the component itself
}
ARCH_LABEL = "kubernetes.io/arch"
_SNIFF = re.compile(r"(?m)^apiVersion\s*:\s*\S+")
_SNIFF_KIND = re.compile(r"(?m)^kind\s*:\s*[\"']?(" + "|".join([*WORKLOADS, *COMPONENTS]) + r"|List)[\"']?\s*$")
_ANY_KIND = re.compile(r"(?m)^kind\s*:\s*[\"']?[A-Za-z][A-Za-z0-9]*[\"']?\s*(#.*)?$")


def sniff(path: Path, head: bytes) -> bool:
    text = "" if b"\x00" in head else head.decode("utf-8", "replace")  # binary junk matches no pattern
    return bool(_SNIFF.search(text)) and bool(_SNIFF_KIND.search(text))


def sniff_named(path: Path, head: bytes) -> bool:
    """A file the user named is a manifest with any ``kind:``; discovery takes only workloads (sniff)."""
    text = "" if b"\x00" in head else head.decode("utf-8", "replace")  # binary junk matches no pattern
    return bool(_SNIFF.search(text)) and bool(_ANY_KIND.search(text))


def read(path: Path, options: ReadOptions) -> Inventory:
    text, problems = read_text_file(path, text_limit(options))
    try:
        documents = load_all(text)
    except YamlError as exc:
        raise InputError(f"{path}: {exc.message}", str(path), exc.line) from None
    inventory = Inventory(problems=list(problems))
    launches: list[dict[str, Any]] = []
    requests: list[PodRequest] = []
    others: list[str] = []  # the kinds of the documents that run no pod
    objects = _flattened(documents)
    pods = _Pods(path, options, inventory, launches, requests)
    for document in objects:
        kind = document.get("kind")
        if isinstance(document.get("apiVersion"), str) and kind in COMPONENTS:
            pods.components(document, str(kind))
            continue
        if not isinstance(document.get("apiVersion"), str) or kind not in WORKLOADS:
            others.append(str(kind) if isinstance(kind, str) else "?")
            continue
        spec = _at_path(document, WORKLOADS[str(kind)])
        workers = _at_path(document, _LWS_WORKERS) if kind == "LeaderWorkerSet" else None
        workers = workers if isinstance(workers, YMap) else None
        if not isinstance(spec, YMap) and workers is not None:
            spec, workers = workers, None
        if not isinstance(spec, YMap):  # missing, or text where a pod spec belongs
            inventory.problems.append(ReadProblem(f"{kind} has no pod spec at {'.'.join(WORKLOADS[str(kind)])}",
                                                  Location(str(path), line=line_of(document))))
            continue
        name = _named(document, str(kind))
        first = len(launches)
        pods.pod(name, spec)
        if workers is not None:
            pods.pod(f"{name} workers", workers)
        for group, pod in _ray_worker_groups(document, WORKLOADS[str(kind)]):
            pods.pod(f"{name} workers {group}", pod)
        _spans(launches[first:], _at_path(document, ("spec", "leaderWorkerTemplate", "size")))  # a group spans `size` nodes
    if launches:
        inventory.host = replace(inventory.host, launch=launches_from_json(launches))
    if requests:
        inventory.host = replace(inventory.host, pod_requests=tuple(requests))
    if others and len(others) == len(objects):
        shown = ", ".join(dict.fromkeys(others[:20]))
        inventory.problems.append(ReadProblem(f"no workload with a pod template (Pod, Deployment, Job ...) in this manifest ({shown}): "
                                              "nothing here runs a container, so there is nothing to check", Location(str(path)), note=True))
    return inventory


def _named(document: YMap, kind: str) -> str:
    metadata = document.get("metadata")
    return f"{kind}/{metadata.get('name')}" if isinstance(metadata, YMap) and metadata.get("name") else kind


def _ray_worker_groups(document: YMap, head: tuple[str, ...]) -> list[tuple[str, YMap]]:
    if head[-3:] != ("headGroupSpec", "template", "spec"):
        return []
    cluster = _at_path(document, head[:-3])
    groups = cluster.get("workerGroupSpecs") if isinstance(cluster, YMap) else None
    found: list[tuple[str, YMap]] = []
    for i, group in enumerate(groups if isinstance(groups, YList) else []):
        pod = _at_path(group, ("template", "spec")) if isinstance(group, YMap) else None
        if isinstance(pod, YMap):
            found.append((str(group.get("groupName") or i + 1), pod))
    return found


def _at_path(document: YMap, path: tuple[str, ...]) -> Any:
    value: Any = document
    for step in path:
        value = value.get(step) if isinstance(value, YMap) else None
    return value if isinstance(value, (YMap, str)) else None


def _flattened(documents: list[Any]) -> list[YMap]:
    out: list[YMap] = []
    for document in documents:
        if not isinstance(document, YMap):
            continue
        items = document.get("items")
        if document.get("kind") == "List" and isinstance(items, YList):
            out.extend(item for item in items if isinstance(item, YMap))
        else:
            out.append(document)
    return out


def amd64_only(spec: YMap) -> bool:
    selector = spec.get("nodeSelector")
    if isinstance(selector, YMap) and isinstance(selector.get(ARCH_LABEL), str):
        return str(selector.get(ARCH_LABEL)) in ("amd64", "x86_64")
    affinity: Any = spec
    for step in ("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"):
        affinity = affinity.get(step) if isinstance(affinity, YMap) else None
    if not isinstance(affinity, YList) or not affinity:
        return False
    allowed: set[str] = set()
    for term in affinity:  # terms are ORed; a term without an arch expression allows every architecture
        expressions = term.get("matchExpressions") if isinstance(term, YMap) else None
        arch = [e for e in expressions or [] if isinstance(e, YMap) and e.get("key") == ARCH_LABEL]
        if not arch:
            return False
        for expression in arch:
            values = {str(v) for v in expression.get("values") or []} if isinstance(expression.get("values"), YList) else set()
            if expression.get("operator") == "In":
                allowed |= values
            else:
                return False  # NotIn, Exists: not a restriction to amd64
    return bool(allowed) and allowed <= {"amd64", "x86_64"}


class _Pods:
    def __init__(self, path: Path, options: ReadOptions, inventory: Inventory, launches: list[dict[str, Any]],
                 requests: list[PodRequest]) -> None:
        self.path, self.options, self.inventory, self.launches, self.requests = path, options, inventory, launches, requests

    def pod(self, name: str, spec: YMap) -> None:
        platform = "linux/amd64" if amd64_only(spec) else None
        for group in ("initContainers", "containers"):
            containers = spec.get(group)
            for container in containers if isinstance(containers, YList) else []:
                if isinstance(container, YMap):
                    self.container(name, container, platform)

    def components(self, document: YMap, kind: str) -> None:
        at = _at_path(document, COMPONENTS[kind])
        name = _named(document, kind)
        if not isinstance(at, YMap):
            self.inventory.problems.append(ReadProblem(f"{kind} has no components at {'.'.join(COMPONENTS[kind])}",
                                                       Location(str(self.path), line=line_of(document))))
            return
        listed = list(at.items()) if COMPONENTS[kind][-1] == "services" else [("", at)]
        for service, component in listed:
            if not isinstance(component, YMap):
                continue
            label = f"{name} service {service}" if service else name
            pod = component.get("extraPodSpec")
            pod = pod if isinstance(pod, YMap) else YMap(component.line)
            main = pod.get("mainContainer")
            first = len(self.launches)
            # no mainContainer: the operator's default container, still with the component's resources and envs
            main = main if isinstance(main, YMap) else YMap(component.line)
            self.container(label, main, "linux/amd64" if amd64_only(pod) else None, component)
            self.pod(label, pod)
            _spans(self.launches[first:], _at_path(component, ("multinode", "nodeCount")))

    def container(self, name: str, container: YMap, platform: str | None, component: YMap | None = None) -> None:
        """``component``: the Dynamo component whose main container it is (its resources and envs apply)."""
        path, inventory = self.path, self.inventory
        cname = container.get("name") or ("main" if component is not None else "?")
        who = f"{name} container {cname}"
        stage = f"{name}/{cname}"  # a container is reported as a stage named after it
        requests = _requests(container.get("resources"), ("nvidia.com/gpu",), str(path), who)
        if component is not None:
            requests += _requests(component.get("resources"), ("gpu", "nvidia.com/gpu"), str(path), who)
        self.requests.extend(requests)
        gpus = _gpus(requests)
        image = container.get("image")
        words = [str(w) for key in ("command", "args") if isinstance(container.get(key), YList) for w in container[key]]
        entry = image_entrypoint(str(image)) if isinstance(image, str) and "command" not in container else ()
        judged = bool(platform) or bool(gpus) or bool(words and shell.launches(shlex.join(words), "", _at("", 1), entry))
        if isinstance(image, str) and image and (judged or ml_image(str(image))):
            at = Location(str(path), line=container.line_of("image"), stage=stage)
            try:
                parse_reference(image)
            except UsageError as exc:
                inventory.problems.append(ReadProblem(f"{who}: image {image}: {exc.message}", at))
            else:
                runs = device_query(shlex.join(words)) if words and not entry else ""
                inventory.images.append(BaseImage(ref=str(image), platform=platform, location=at, stage=stage,
                                                  stages=(stage,), runs=runs))
                # imported here: discovery sniffs YAML with this module and never needs the Dockerfile reader
                from envcheck.sources.dockerfile import shipped_packages

                inventory.packages.extend(shipped_packages(str(image), at))  # NGC's torch, flash-attn
        for items in (component.get("envs") if component is not None else None, container.get("env")):
            for item in items if isinstance(items, YList) else []:
                if isinstance(item, YMap) and isinstance(item.get("name"), str) and isinstance(item.get("value"), str):
                    loc = Location(str(path), line=line_of(item), stage=stage)
                    key, value = str(item["name"]), str(item["value"])
                    inventory.env.append(EnvVar(key, value, Origin.ENV, loc))
                    inventory.indexes.extend(variable_indexes(key, value, loc))
        if not words:
            return
        text, where = _script(container, words, str(path), stage)
        sub = shell.read_script(text, str(path), path.parent, self.options, where)
        for facts in ("packages", "indexes", "installs", "env", "problems"):
            getattr(inventory, facts).extend(getattr(sub, facts))
        self.launches.extend(shell.launches(text, str(path), where, entry, extra={"service": who, **({"gpus": gpus} if gpus else {})}))


def _spans(launches: list[dict[str, Any]], nodes: Any) -> None:
    if isinstance(nodes, str) and nodes.isdigit() and 1 < int(nodes) < 100_000:
        for launch in launches:
            launch["nodes"] = max(int(launch.get("nodes") or 1), int(nodes))


def _at(path: str, line: int, stage: str | None = None) -> Callable[[int], Location]:
    return lambda _line: Location(path, line=line, stage=stage)


_SHELLS = frozenset({"sh", "bash", "dash", "zsh"})


def _script(container: YMap, words: list[str], path: str, stage: str) -> tuple[str, Callable[[int], Location]]:
    """The shell text a container runs and where each line is (``bash -c SCRIPT``: the script's lines)."""
    key = "command" if "command" in container else "args"
    last = next((container[k][-1] for k in ("args", "command") if isinstance(container.get(k), YList) and container[k]), None)
    if (len(words) >= 3 and words[0].rsplit("/", 1)[-1] in _SHELLS and words[1] == "-c" and isinstance(last, Scalar)
            and str(last) == words[2] and len(words) == 3):
        first = last.line + (1 if last.style_block else 0)
        return words[2], lambda line: Location(path, line=first + line - 1, stage=stage)
    items = [w for k in ("command", "args") if isinstance(container.get(k), YList) for w in container[k]]
    if len(items) == len(words) and not any("\n" in w for w in words):
        # one word a line: a flag's setting sits on its own list item; the first line stays at the key
        lines = [container.line_of(key), *(line_of(w, container.line_of(key)) for w in items[1:])]
        return " \\\n".join(shlex.quote(w) for w in words), lambda line: Location(path, line=lines[min(line, len(lines)) - 1], stage=stage)
    return shlex.join(words), _at(path, container.line_of(key), stage)


# Whole GPUs only: a MIG slice (nvidia.com/mig-1g.10gb), a renamed time-sliced or MPS share
# (nvidia.com/gpu.shared) and a DRA claim (resources.claims, counted in its ResourceClaim) are not read.
_MEMORY_UNITS = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
                 "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18, "m": 1e-3, "": 1.0}
_QUANTITY = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(?:[eE]([+-]?\d{1,2}))?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E|m)?")


def quantity_bytes(text: str) -> float | None:
    """A Kubernetes memory quantity (``200Gi``, ``128G``, ``1.5e9``) in bytes, or None."""
    found = _QUANTITY.fullmatch(text.strip()) if len(text) <= 40 else None
    if found is None:
        return None
    number, exponent, unit = found.groups()
    amount = float(number) * 10.0 ** int(exponent or 0) * _MEMORY_UNITS[unit or ""]
    return amount if math.isfinite(amount) else None


def _requests(resources: Any, gpu_keys: tuple[str, ...], path: str, who: str) -> list[PodRequest]:
    found: list[PodRequest] = []
    for part in ("requests", "limits"):
        table = resources.get(part) if isinstance(resources, YMap) else None
        if not isinstance(table, YMap):
            continue
        for key, value in table.items():
            if not isinstance(value, str):
                continue
            if key in gpu_keys and value.strip().isdigit() and len(value.strip()) <= 6:
                resource, amount = "gpu", float(int(value))
            elif key == "memory" and (size := quantity_bytes(value)) is not None:
                resource, amount = "memory", size
            else:
                continue
            found.append(PodRequest(origin=path, service=who, resource=resource, key=key, part=part, value=str(value),
                                    amount=amount, line=table.line_of(key)))
    return found


def _gpus(requests: list[PodRequest]) -> int | None:
    """Its limit, else its request: Kubernetes holds them equal."""
    counts = {r.part: int(r.amount or 0) for r in requests if r.resource == "gpu"}
    return counts.get("limits", counts.get("requests")) or None
