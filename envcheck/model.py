"""The plain facts envcheck passes between its stages.

Sources produce an :class:`Inventory` (facts only, no judgement); checks turn an inventory into
:class:`Finding` objects; formats render a :class:`Report`. Everything here is plain data: frozen
dataclasses where a value never changes after it is read, and ``to_json()`` so the JSON format can
include the inventory verbatim.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


class Status(enum.Enum):
    """A finding's outcome, in the original preflight script's vocabulary plus ERROR."""

    SKIP = "SKIP"
    INFO = "INFO"
    PASS = "PASS"
    WARN = "WARN"
    FAIL = "FAIL"
    ERROR = "ERROR"

    @property
    def rank(self) -> int:
        """Order used to pick the worst status of a gotcha (ERROR is worst)."""
        return _RANK[self]

    @classmethod
    def worst(cls, statuses: Iterable[Status], default: Status | None = None) -> Status:
        """The worst of ``statuses``; ``default`` (SKIP) when there are none."""
        best: Status | None = None
        for status in statuses:
            if best is None or status.rank > best.rank:
                best = status
        if best is None:
            return default or cls.SKIP
        return best


_RANK = {
    Status.SKIP: 0,
    Status.INFO: 1,
    Status.PASS: 2,
    Status.WARN: 3,
    Status.FAIL: 4,
    Status.ERROR: 5,
}

GOTCHAS: tuple[str, ...] = tuple(f"G{n}" for n in range(1, 11))
ARCH = "ARCH"
ALL_GOTCHAS: tuple[str, ...] = (*GOTCHAS, ARCH)


@dataclass(frozen=True)
class Location:
    """Where a fact came from: a file, and inside it a line, a byte offset or an archive member."""

    path: str
    line: int | None = None
    offset: int | None = None
    member: str | None = None  # a member inside a wheel, layer, archive or image
    stage: str | None = None  # Dockerfile build stage

    def __str__(self) -> str:
        text = self.path
        if self.member:
            text += f"!{self.member}"
        if self.line is not None:
            text += f":{self.line}"
        if self.offset is not None:
            text += f"@{self.offset:#x}"
        if self.stage:
            text += f" [stage {self.stage}]"
        return text

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}


@dataclass(frozen=True)
class Package:
    """One Python distribution, either declared (to be installed) or already installed.

    ``version`` is the exact version when it is known (``==`` pin, freeze line, lock entry, installed
    metadata); ``specifier`` keeps the requirement text as written (``>=2.9,<2.10``).
    """

    name: str  # canonical (PEP 503) name
    version: str | None = None
    specifier: str = ""
    extras: tuple[str, ...] = ()
    marker: str | None = None
    url: str | None = None  # direct reference: `name @ url`, a wheel file, git+https://...
    installed: bool = False  # True for freeze output, site-packages, lock files describing an install
    requires: tuple[str, ...] | None = None  # Requires-Dist lines when the input carries metadata
    editable: bool = False
    no_deps: bool = False  # installed with --no-deps (where visible)
    role: str = "requirement"  # requirement | constraint | lock | installed | build
    location: Location | None = None

    def to_json(self) -> dict[str, Any]:
        return _plain(self)


@dataclass(frozen=True)
class PackageIndex:
    """A package index or link source that an install uses."""

    url: str
    option: str  # index-url | extra-index-url | find-links | uv-index | conda-channel
    location: Location | None = None

    def to_json(self) -> dict[str, Any]:
        return _plain(self)


@dataclass(frozen=True)
class InstallCommand:
    """One package-manager invocation (a pip/uv/conda command, or a requirements file as a whole)."""

    tool: str  # pip | uv | conda | mamba | requirements
    packages: tuple[str, ...]  # canonical names installed by this command
    options: tuple[str, ...] = ()  # flags as written: --no-deps, --no-build-isolation, ...
    text: str = ""  # the command line as written
    location: Location | None = None

    @property
    def no_deps(self) -> bool:
        return "--no-deps" in self.options

    def to_json(self) -> dict[str, Any]:
        return _plain(self)


@dataclass(frozen=True)
class Binary:
    """An ELF file and what it says about CPU architecture, CUDA libraries and GPU code.

    Field names are part of the JSON interface (other tools read them).
    """

    path: str
    machine: str  # aarch64 | x86_64 | ...
    elf_type: str = "DYN"
    soname: str | None = None
    needed: tuple[str, ...] = ()
    runpath: tuple[str, ...] = ()
    cuda_major: int | None = None  # CUDA major implied by the sonames it needs (None: says nothing)
    sass: tuple[str, ...] = ()  # distinct labels, e.g. sm_120, sm_121a, sm_120f
    ptx: tuple[str, ...] = ()  # compute_120, compute_121a, ...
    lto: tuple[str, ...] = ()
    ptx_isa: tuple[str, ...] = ()  # distinct PTX ISA versions, e.g. "9.0"
    sm121: str | None = None  # native | compatible | ptx-jit | none (None: no GPU code at all)
    sections: tuple[str, ...] = ()  # sections where fatbin containers were found
    static_cudart: bool = False
    distribution: str | None = None  # owning distribution (from RECORD) where known
    size: int = 0
    bytes_read: int = 0
    location: Location | None = None

    def to_json(self) -> dict[str, Any]:
        return _plain(self)


@dataclass(frozen=True)
class Wheel:
    """A wheel file's name, tags and metadata."""

    filename: str
    name: str
    version: str
    tags: tuple[str, ...]  # e.g. cp311-cp311-manylinux_2_28_aarch64
    requires: tuple[str, ...] = ()
    location: Location | None = None

    def to_json(self) -> dict[str, Any]:
        return _plain(self)


@dataclass(frozen=True)
class BaseImage:
    """A container image a build starts from, or the image under inspection."""

    ref: str  # as written after substitution, e.g. nvcr.io/nvidia/pytorch:25.11-py3
    stage: str | None = None
    platform: str | None = None  # --platform value or the image config's os/arch
    final: bool = True  # ends up in the final image
    location: Location | None = None
    stages: tuple[str, ...] = ()  # Dockerfile: this stage and every stage built on it (FROM <stage>), by label

    def to_json(self) -> dict[str, Any]:
        return _plain(self)


@dataclass(frozen=True)
class EnvVar:
    """An environment variable (Dockerfile ENV/ARG, image config, live environment)."""

    name: str
    value: str
    origin: str = "env"  # env | arg | config | live
    location: Location | None = None

    def to_json(self) -> dict[str, Any]:
        return _plain(self)


@dataclass(frozen=True)
class ResolvedFile:
    """A file a resolver picked for the target platform (``envcheck --resolve``), and where its facts came from.

    ``kind``: wheel | sdist (only a source archive fits: pip builds it on the target) | none (no file fits) |
    conflict (the resolver refused the set; ``reason`` holds its words). ``url`` is always redacted.
    """

    name: str
    version: str | None
    kind: str
    filename: str | None = None
    url: str | None = None
    sha256: str | None = None
    size: int | None = None
    sources: tuple[str, ...] = ()  # index metadata | range read | download | facts table | cache | lock file | resolver
    bytes_read: int = 0
    reason: str = ""
    location: Location | None = None

    def to_json(self) -> dict[str, Any]:
        return _plain(self)


@dataclass(frozen=True)
class ReadProblem:
    """Something a source could not read. The engine turns each into an ERROR finding."""

    message: str
    location: Location | None = None
    service: bool = False  # True: a service (registry, engine) was unreachable -> exit code 3

    def to_json(self) -> dict[str, Any]:
        return _plain(self)


@dataclass(frozen=True)
class Pragma:
    """An inline suppression: ``# envcheck: ignore=RULE[,RULE] reason`` on the line before a line."""

    rules: tuple[str, ...]  # rule ids or gotchas (G2)
    reason: str
    location: Location  # the line it applies to

    def to_json(self) -> dict[str, Any]:
        return _plain(self)


@dataclass
class Inventory:
    """Everything a source saw in one target. Plain facts; checks judge them."""

    packages: list[Package] = field(default_factory=list)
    indexes: list[PackageIndex] = field(default_factory=list)
    installs: list[InstallCommand] = field(default_factory=list)
    binaries: list[Binary] = field(default_factory=list)
    wheels: list[Wheel] = field(default_factory=list)
    images: list[BaseImage] = field(default_factory=list)
    env: list[EnvVar] = field(default_factory=list)
    # Live readings (host or container): meminfo, nvidia-smi samples, torch probe, container kind,
    # GPU processes, launch configs. Keys are documented in docs/inventory.md.
    host: dict[str, Any] = field(default_factory=dict)
    # What produced the inventory: "declared" inputs describe what will be installed, "installed"
    # ones describe what is there (freeze, site-packages, image).
    context: str = "declared"
    problems: list[ReadProblem] = field(default_factory=list)
    pragmas: list[Pragma] = field(default_factory=list)
    resolved: list[ResolvedFile] = field(default_factory=list)  # --resolve: the files chosen for the target

    def extend(self, other: Inventory) -> None:
        """Merge ``other`` into this inventory (host readings: ``other`` wins)."""
        self.packages.extend(other.packages)
        self.indexes.extend(other.indexes)
        self.installs.extend(other.installs)
        self.binaries.extend(other.binaries)
        self.wheels.extend(other.wheels)
        self.images.extend(other.images)
        self.env.extend(other.env)
        self.host.update(other.host)
        self.problems.extend(other.problems)
        self.pragmas.extend(other.pragmas)
        self.resolved.extend(other.resolved)

    def package(self, name: str) -> Package | None:
        """The first package of that canonical name, preferring installed ones."""
        found = [p for p in self.packages if p.name == name]
        installed = [p for p in found if p.installed]
        chosen = installed or found
        return chosen[0] if chosen else None

    def env_value(self, name: str) -> str | None:
        """Last value set for ``name`` (later definitions win, as in a Dockerfile)."""
        value = None
        for var in self.env:
            if var.name == name:
                value = var.value
        return value

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"context": self.context}
        for key in ("packages", "indexes", "installs", "binaries", "wheels", "images", "env", "resolved"):
            items = getattr(self, key)
            if items:
                out[key] = [item.to_json() for item in items]
        if self.host:
            out["host"] = self.host
        return out


@dataclass(frozen=True)
class Finding:
    """One verdict: which gotcha, which rule, what status, where, and what to do."""

    rule: str
    gotcha: str
    status: Status
    message: str
    location: Location | None = None
    evidence: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)
    fix: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "rule": self.rule,
            "gotcha": self.gotcha,
            "status": self.status.value,
            "message": self.message,
        }
        if self.location is not None:
            out["location"] = self.location.to_json()
        out["evidence"] = dict(self.evidence)
        out["fix"] = self.fix
        return out


@dataclass
class TargetResult:
    """One checked target: what it was, what was seen, what was found."""

    target: str
    kind: str
    inventory: Inventory
    findings: list[Finding] = field(default_factory=list)
    suppressed: list[tuple[Finding, str]] = field(default_factory=list)  # (finding, reason)


@dataclass
class Report:
    """The result of one envcheck run, ready for a format."""

    profile: str
    targets: list[TargetResult] = field(default_factory=list)
    exit_code: int = 0

    @property
    def findings(self) -> list[Finding]:
        return [f for t in self.targets for f in t.findings]

    def summary(self) -> dict[str, Status]:
        """Worst status per gotcha over all targets (SKIP where nothing was checked)."""
        return {
            g: Status.worst(f.status for f in self.findings if f.gotcha == g) for g in ALL_GOTCHAS
        }


def _plain(obj: Any) -> dict[str, Any]:
    """A dataclass as JSON-ready data, dropping empty values to keep output readable."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if value is None or value == () or value == "" or value is False:
            continue
        if isinstance(value, Location):
            value = value.to_json()
        elif isinstance(value, tuple):
            value = list(value)
        out[f.name] = value
    return out
