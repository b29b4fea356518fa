"""Typed live readings, the records of ``Inventory.host``: one JSON form each, read back with every field's
type checked (a snapshot or a collector document is input). ``docs/inventory.md`` says where each is from."""

from __future__ import annotations

import dataclasses
import functools
import sys
import types
import typing
from collections.abc import Mapping, Set
from dataclasses import dataclass
from typing import Any, TypeVar

from envcheck.errors import InputError
from envcheck.plain_json import json_type

_R = TypeVar("_R", bound="Reading")


class Reading:
    """Base of the reading records: the JSON form shared by the JSON report, snapshots and every cache."""
    __slots__ = ()

    def to_json(self) -> dict[str, Any]:
        return {name: _plain(value) for name in _names(typing.cast(type, type(self))) if (value := getattr(self, name)) is not None}

    @classmethod
    def from_json(cls: type[_R], data: Any, where: str = "reading", *, lenient: bool = False) -> _R:
        """The record :meth:`to_json` wrote; ``lenient``: unknown keys are skipped (another collector)."""
        return cls(**_values(typing.cast(type, cls), data, where, lenient))


def _values(cls: type, data: Any, where: str, lenient: bool = False, noun: str = "field") -> dict[str, Any]:
    """The fields of a record ``cls`` from its JSON form; wrong types and unknown keys raise InputError."""
    if not isinstance(data, Mapping):
        raise InputError(f"{where}: expected an object, found {json_type(data)}")
    hints = _hints(cls)
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key in hints:
            values[key] = _read(hints[key], value, f"{where}.{key}")
        elif not lenient:
            raise InputError(f"{where}: {key!r} is not a {noun} this envcheck knows ({', '.join(hints)})")
    return values


@functools.cache
def _names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    hints = typing.get_type_hints(cls, localns={"readings": sys.modules[__name__]})  # for HostReadings
    return {name: hints[name] for name in _names(cls)}


def _plain(value: Any) -> Any:
    if isinstance(value, Reading):
        return value.to_json()
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


# The scalar field types: the JSON values each accepts (never a boolean for a number), and its name in errors.
_SCALARS: dict[Any, tuple[Any, str]] = {float: ((int, float), "a number"), int: (int, "a whole number"),
                                         bool: (bool, "a boolean"), str: (str, "text")}


def _read(hint: Any, value: Any, where: str) -> Any:
    """``value`` checked against the field type ``hint`` (str, int, float, bool, a Reading, tuple[T, ...],
    dict[str, T], an optional one of those, or Any for raw JSON)."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = [o for o in typing.get_args(hint) if o is not type(None)]
        if value is None:
            return None
        hint = options[0]
        origin = typing.get_origin(hint)
    if hint is Any:
        return value
    if value is None:
        raise InputError(f"{where}: may not be null")
    if origin is tuple:
        item = typing.get_args(hint)[0]
        if not isinstance(value, list):
            raise InputError(f"{where}: expected a list, found {json_type(value)}")
        return tuple(_read(item, v, f"{where}[{i}]") for i, v in enumerate(value))
    if origin is dict:
        item = typing.get_args(hint)[1]
        if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
            raise InputError(f"{where}: expected an object, found {json_type(value)}")
        return {k: _read(item, v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(hint, type) and issubclass(hint, Reading):
        return hint.from_json(value, where)
    if hint in _SCALARS:
        accepted, words = _SCALARS[hint]
        if isinstance(value, accepted) and (hint is bool or not isinstance(value, bool)):
            return float(value) if hint is float else value
        raise InputError(f"{where}: expected {words}, found {json_type(value)}")
    raise TypeError(f"{where}: no reader for {hint!r}")  # pragma: no cover - a field type this reader does not know yet


@dataclass(frozen=True, slots=True)
class PythonReading(Reading):
    """The probed interpreter (``status`` ok), or ``absent`` with the interpreter that was asked for."""
    status: str | None = None  # ok | absent
    executable: str | None = None
    version: str | None = None  # platform.python_version()
    implementation: str | None = None
    prefix: str | None = None
    base_prefix: str | None = None
    in_venv: bool | None = None
    machine: str | None = None  # platform.machine(): aarch64, x86_64, ...
    platform: str | None = None  # sys.platform
    requested: str | None = None  # absent: the --python asked for


@dataclass(frozen=True, slots=True)
class ChildReading(Reading):
    """An import run in a child process of the probed interpreter, and how it ended."""
    status: str | None = None  # ok | absent | import-error | error | crashed | timeout | not-run
    stage: str | None = None  # the last stage reached: import, cuda-init (torch), extension (flash-attn)
    pid: int | None = None
    returncode: int | None = None
    signal: str | None = None  # crashed: SIGSEGV, ...
    driver_start: str | None = None  # "unfinished": the early cuInit had not returned when the child crashed
    error: str | None = None  # the last exception line of stderr
    timeout_s: float | None = None
    version: str | None = None
    file: str | None = None


@dataclass(frozen=True, slots=True)
class TorchDevice(Reading):
    """One CUDA device as torch sees it."""
    index: int | None = None
    name: str | None = None
    capability: tuple[int, ...] | None = None  # (major, minor)


@dataclass(frozen=True, slots=True)
class TorchReading(ChildReading):
    """``import torch`` and CUDA initialisation in the probed interpreter."""
    cuda: str | None = None  # torch.version.cuda (None: a CPU build)
    hip: str | None = None
    cuda_available: bool | None = None
    arch_list: tuple[str, ...] | None = None  # torch.cuda.get_arch_list()
    device_count: int | None = None
    devices: tuple[TorchDevice, ...] | None = None
    capability: tuple[int, ...] | None = None  # device 0's (major, minor)


@dataclass(frozen=True, slots=True)
class FlashAttnReading(ChildReading):
    """``import flash_attn`` and loading its CUDA extension in the probed interpreter."""
    extension: str | None = None  # ok | error
    extension_file: str | None = None
    extension_error: str | None = None


@dataclass(frozen=True, slots=True)
class UnslothReading(Reading):
    """Whether unsloth is installed (never imported)."""
    present: bool = False
    version: str | None = None


@dataclass(frozen=True, slots=True)
class LdconfigReading(Reading):
    """The CUDA sonames the dynamic loader's cache knows (``ldconfig -p``)."""
    status: str | None = None  # ok | absent | error
    error: str | None = None
    cuda_sonames: dict[str, tuple[str, ...]] | None = None  # soname -> paths


@dataclass(frozen=True, slots=True)
class ContainerReading(Reading):
    """The container kind and the evidence for it."""
    kind: str | None = None  # docker | podman | kubernetes | containerd | the `container` variable | None
    evidence: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ProbeReading(Reading):
    """The collector run an inventory was read from."""
    origin: str | None = None
    duration_s: float | None = None
    pid: int | None = None


@dataclass(frozen=True, slots=True)
class MeminfoReading(Reading):
    """``/proc/meminfo``: the kept fields in bytes (HugePages_Total is a count)."""
    status: str | None = None  # ok | absent | error
    path: str | None = None
    error: str | None = None
    line: int | None = None  # error: the line that could not be read
    bytes: dict[str, int] | None = None


@dataclass(frozen=True, slots=True)
class Gpu(Reading):
    """One GPU in one nvidia-smi sample; None wherever nvidia-smi printed [N/A] (a GB10 does for memory)."""
    index: int | None = None
    name: str | None = None
    uuid: str | None = None
    driver_version: str | None = None
    temperature_c: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    memory_total_mib: float | None = None
    memory_used_mib: float | None = None
    utilization_pct: float | None = None
    clock_sm_mhz: float | None = None
    throttle_reasons: tuple[str, ...] = ()  # names of the active clocks_event_reasons bits
    compute_cap: str | None = None  # "12.1"


@dataclass(frozen=True, slots=True)
class GpuSample(Reading):
    """The GPUs at ``t`` seconds into the sampling window."""
    t: float = 0.0
    gpus: tuple[Gpu, ...] = ()


@dataclass(frozen=True, slots=True)
class GpuProcess(Reading):
    """A compute process nvidia-smi lists."""
    pid: int | None = None
    process_name: str | None = None
    used_memory_mib: float | None = None
    gpu_uuid: str | None = None
    cmdline: tuple[str, ...] | None = None  # from /proc/PID/cmdline
    ancestors: tuple[tuple[str, ...], ...] | None = None  # up to four parents' command lines
    ours: bool | None = None  # envcheck, the collector or its children


@dataclass(frozen=True, slots=True)
class NvidiaSmiReading(Reading):
    """nvidia-smi samples and the GPU processes."""
    status: str | None = None  # ok | absent | error | not-run
    path: str | None = None
    error: str | None = None
    fields: tuple[str, ...] | None = None  # the GPU query used
    samples: tuple[GpuSample, ...] | None = None
    processes: tuple[GpuProcess, ...] | None = None
    apps_error: str | None = None
    sample_error: str | None = None

    @property
    def gpus(self) -> tuple[Gpu, ...]:
        """The GPUs of the last sample of a reading that worked (empty otherwise)."""
        if self.status != "ok" or not self.samples:
            return ()
        return self.samples[-1].gpus


@dataclass(frozen=True, slots=True)
class PlaybookIssue(Reading):
    """One open dgx-spark-playbooks issue."""
    number: int | None = None
    title: str | None = None
    created_at: str | None = None
    url: str | None = None


@dataclass(frozen=True, slots=True)
class PlaybooksReading(Reading):
    """The open dgx-spark-playbooks issues (G8)."""
    status: str | None = None  # offline | ok | error
    url: str | None = None  # the issues page
    api: str | None = None  # what was asked
    error: str | None = None
    issues: tuple[PlaybookIssue, ...] | None = None


@dataclass(frozen=True, slots=True)
class BinariesReading(Reading):
    """preflight --binaries: what was scanned (the Binary records are in ``Inventory.binaries``)."""
    status: str | None = None  # ok | unavailable
    folders: tuple[str, ...] | None = None
    count: int | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class ResolveReading(Reading):
    """envcheck --resolve: the target and the traffic (the files are in ``Inventory.resolved``)."""
    python_version: str | None = None
    platform: str | None = None
    files: int | None = None
    requests: int | None = None
    bytes_read: int | None = None
    seconds: float | None = None


@dataclass(frozen=True, slots=True)
class ImageDeep(Reading):
    """envcheck image --deep: what the layer walk did."""
    layers_scanned: int | None = None
    layers_cached: int | None = None
    bytes: int | None = None  # uncompressed bytes walked
    files: int | None = None
    binary_scanner: bool | None = None


@dataclass(frozen=True, slots=True)
class ImageFacts(Reading):
    """envcheck image: registry, manifest and config facts."""
    source: str | None = None  # registry | oci-layout | docker-archive | docker-daemon
    ref: str | None = None
    registry: str | None = None
    repository: str | None = None
    tag: str | None = None
    digest: str | None = None  # of what the reference names (an index or a manifest)
    media_type: str | None = None
    platform: str | None = None  # the platform asked for
    platforms: tuple[str, ...] | None = None  # what the index offers
    platform_found: bool | None = None  # False: no child for ``platform``, so no config was read
    manifest_digest: str | None = None
    config_digest: str | None = None
    layers: int | None = None
    size: int | None = None
    os: str | None = None
    architecture: str | None = None
    variant: str | None = None
    labels: dict[str, str] | None = None
    created: str | None = None
    history: tuple[str, ...] | None = None  # the config history's created_by lines
    repo_tags: tuple[str, ...] | None = None
    requests: int | None = None
    cache_hits: int | None = None
    deep: ImageDeep | None = None


@dataclass(frozen=True, slots=True)
class Hardening(Reading):
    """How envcheck container confined the collector's container."""
    network: str | None = None
    read_only_rootfs: bool | None = None
    cap_drop: str | None = None
    no_new_privileges: bool | None = None
    memory: str | None = None
    pids: int | None = None


@dataclass(frozen=True, slots=True)
class ContainerRun(Reading):
    """envcheck container: how the collector ran in a container started from the image."""
    image: str | None = None
    user: str | None = None
    gpus: str | None = None
    python: str | None = None
    python_path: str | None = None
    exit_code: int | None = None
    seconds: float | None = None
    hardened: Hardening | None = None


@dataclass(frozen=True, slots=True)
class LaunchSetting(Reading):
    """One parallelism or memory setting of a launch, as written."""
    key: str | None = None  # normalised: tensor_parallel_size, num_machines, gpu_memory_utilization, ...
    value: str | None = None
    line: int | None = None  # the line it is on (config files, scripts)


@dataclass(frozen=True, slots=True)
class LaunchReading(Reading):
    """One launch: a --launch command or --launch-config file, or a launch command found in a file."""
    origin: str | None = None  # "--launch" or the file
    tool: str | None = None  # torchrun, accelerate, deepspeed, vllm, sglang, ...
    nodes: int | None = None  # None where the launch does not say
    tp: int | None = None
    settings: tuple[LaunchSetting, ...] = ()
    line: int | None = None
    member: str | None = None  # a notebook's cell
    memory: float | None = None  # the memory share asked for
    command: str | None = None  # the command line, secret option values masked
    service: str | None = None  # compose service or `Kind/name container c`
    optional: bool | None = None  # a compose service behind a profile: not started by default
    branch: str | None = None
    uncapped: bool | None = None  # a GPU service with no memory cap envcheck can read
    memory_cap_gb: float | None = None  # a GPU service's container memory cap (compose mem_limit), in GB
    gpus: int | None = None  # GPUs a Kubernetes container asks for
    cluster: str | None = None  # tp over a Ray or MPI cluster (one GPU a Spark: across Sparks)
    multi_node: bool | None = None  # a script that starts a cluster head and a worker that joins it from elsewhere
    port: str | None = None  # the server's --port (compose services under host networking)
    exclusive: tuple[str, ...] | None = None  # what one container at a time can hold (container_name, host port)

    def written_line(self, keys: Set[str]) -> int | None:
        """The file line where this launch writes one of the settings ``keys`` (the last one written): a finding
        about a flag inside a continued or folded command sits on the flag's own line."""
        lines = [s.line for s in self.settings if s.line and s.key in keys]
        return lines[-1] if lines else None


@dataclass(frozen=True, slots=True)
class PodRequest(Reading):
    """What a Kubernetes container asks the scheduler for: its GPUs or memory, a request or a limit, as written
    and read (``nvidia.com/gpu: 2``; NVIDIA Dynamo's ``gpu: "2"``; ``memory: 200Gi``)."""
    origin: str | None = None  # the manifest
    service: str | None = None  # `Kind/name container c`, as on the container's launch
    resource: str | None = None  # "gpu" or "memory"
    key: str | None = None  # the resource name as written: nvidia.com/gpu, gpu, memory
    part: str | None = None  # "requests" or "limits"
    value: str | None = None  # as written: "2", "200Gi"
    amount: float | None = None  # GPUs, or bytes
    line: int | None = None


def launches_from_json(items: Any, where: str = "launch") -> tuple[LaunchReading, ...]:
    """Launch readings from their JSON form (a list of objects)."""
    if not isinstance(items, list):
        raise InputError(f"{where}: expected a list of objects, found {json_type(items)}")
    return tuple(LaunchReading.from_json(item, f"{where}[{i}]") for i, item in enumerate(items))


def host_values(cls: type, data: Any, where: str) -> dict[str, Any]:
    """The fields of a HostReadings (``cls``) from its JSON form (``model`` keeps no reader of its own)."""
    return _values(cls, data, where, noun="reading")
