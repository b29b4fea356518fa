"""The plain facts envcheck passes between its stages.

Sources produce an :class:`Inventory` (facts only, no judgement); checks turn an inventory into
:class:`Finding` objects; formats render a :class:`Report`. Everything here is plain data: frozen
dataclasses where a value never changes after it is read, and ``to_json()`` so the JSON format can
include the inventory verbatim.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from envcheck.errors import InputError
from envcheck.plain_json import from_plain as from_plain
from envcheck.plain_json import json_list, json_type

if TYPE_CHECKING:
    from envcheck import (
        readings,  # loaded when a reading is read: its records cost a start-up most runs do not need
    )


class _Vocabulary(str, enum.Enum):
    """A closed vocabulary stored as text in JSON; compares equal to its text and prints as it."""

    def __str__(self) -> str:
        return str(self.value)


class Role(_Vocabulary):
    """Why a :class:`Package` is in an inventory."""

    REQUIREMENT = "requirement"  # to be installed (requirements line, pyproject dependency, pip install argument)
    CONSTRAINT = "constraint"  # limits versions but installs nothing (-c file, PIP_CONSTRAINT)
    # replaces every requirement other packages declare on it, installs nothing (uv's override-dependencies,
    # a uv.lock's [manifest] overrides)
    OVERRIDE = "override"
    LOCK = "lock"  # an entry of a lock file (uv.lock, pylock.toml)
    INSTALLED = "installed"  # present in an environment (site-packages, freeze output, image, probe)
    BUILD = "build"  # needed only to build (build-system.requires, a Dockerfile build stage)
    CONDA = "conda"  # a conda/mamba package spec (conda names, conda versions)
    RESOLVED = "resolved"  # the version a resolver picked for the target (envcheck --resolve)


class IndexOption(_Vocabulary):
    """How a :class:`PackageIndex` was given."""

    INDEX_URL = "index-url"  # --index-url, PIP_INDEX_URL, UV_DEFAULT_INDEX, uv --torch-backend
    EXTRA_INDEX_URL = "extra-index-url"  # --extra-index-url, PIP_EXTRA_INDEX_URL, UV_INDEX
    FIND_LINKS = "find-links"  # --find-links, PIP_FIND_LINKS
    UV_INDEX = "uv-index"  # [[tool.uv.index]] in pyproject.toml
    LOCK_INDEX = "lock-index"  # the index a lock file says a package came from
    CONDA_CHANNEL = "conda-channel"  # conda -c CHANNEL


class Origin(_Vocabulary):
    """Where an :class:`EnvVar` was set."""

    ENV = "env"  # Dockerfile ENV
    ARG = "arg"  # Dockerfile ARG (build time only)
    RUN = "run"  # a variable set on a RUN command line (VAR=value cmd)
    RUN_ONLY = "run-only"  # exported in a RUN that builds nothing with it: it ends with that RUN's shell
    CONFIG = "config"  # an image config's Env
    LIVE = "live"  # the environment of a running interpreter (preflight, container)


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
    # A command in a shell branch that may not run: the branch in words (``in a conditional branch (if
    # `[ -n "$X" ]`)``), and whether it is a fallback that runs only when the main path fails.
    branch: str | None = None
    fallback: bool = False
    # A Dockerfile stage that is not part of the built image: neither the target nor a stage the target builds
    # on, copies from or mounts (docs/dockerfiles.md). The engine lowers findings located there one level.
    outside_image: bool = False
    # A compose service under a profile: it starts only when asked for (``--profile``), so the engine lowers
    # findings located there one level.
    on_request: bool = False

    def __str__(self) -> str:
        text = self.path
        cell = self.member is not None and self.member.startswith("cell ")  # a notebook: file line, then the cell's
        if self.member and not cell:
            text += f"!{self.member}"
        if self.line is not None:
            text += f":{self.line}"
        if cell:
            text += f" ({self.member})"
        if self.offset is not None:
            text += f"@{self.offset:#x}"
        if self.stage:
            text += f" [stage {self.stage}]"
        return text

    def to_json(self) -> dict[str, Any]:
        # the fields are plain values (text, numbers, a flag): no asdict copy needed
        return {k: v for k in _field_names(Location) if (v := getattr(self, k)) is not None and v is not False}


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
    role: Role = Role.REQUIREMENT
    location: Location | None = None
    # The opt-in part of a project that brings it: "extra 'cu128'", "group 'docs'"; None: the default install.
    scope: str | None = None
    # The index it must come from (uv's [tool.uv.sources] naming an index); None: whatever indexes apply.
    index: str | None = None

    def to_json(self) -> dict[str, Any]:
        return _plain(self)


@dataclass(frozen=True)
class PackageIndex:
    """A package index or link source that an install uses."""

    url: str
    option: IndexOption
    location: Location | None = None
    name: str | None = None  # uv's [[tool.uv.index]] name
    # uv's `explicit = true`: it serves only the packages whose source names it (Package.index), nothing else.
    explicit: bool = False

    def to_json(self) -> dict[str, Any]:
        return _plain(self)


# The roles of packages that only pin versions (narrow or replace them) and install nothing.
PINS_ONLY = (Role.CONSTRAINT, Role.OVERRIDE)

# Options with which pip replaces what is already installed instead of keeping it.
REPLACING_OPTIONS = ("-U", "--upgrade", "--force-reinstall", "-I", "--ignore-installed")


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

    @property
    def replaces(self) -> bool:
        """Installed with an option that makes pip replace what is already there (--upgrade, --force-reinstall)."""
        return any(o.split("=", 1)[0] in REPLACING_OPTIONS for o in self.options)

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
    sm121: str | None = None  # on the GB10 (sm_121): native | compatible | ptx-jit | none (None: no GPU code at all)
    # Each distinct fatbin module's SASS and PTX images ("sm_120 compute_120"): G7 judges them against the profile's SM.
    modules: tuple[str, ...] = ()
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
    scope: str | None = None  # as Package.scope: a lock's wheels of a package only an extra installs

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
    copied_at: int | None = None  # Dockerfile, a stage outside the final image: the line of a COPY --from that takes its output in
    runs: str = ""  # compose/Kubernetes: the container's command when all it runs is a device query (nvidia-smi)
    # Dockerfile: the programs the RUN lines of the stages on it run (None: not a Dockerfile stage), and the files
    # they install from (-r, pyproject.toml) that envcheck could not read
    programs: tuple[str, ...] | None = None
    unread: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        data = _plain(self)
        if not self.final:
            data["final"] = False  # its default is True: a stage outside the final image must say so to read back
        return data


@dataclass(frozen=True)
class EnvVar:
    """An environment variable (Dockerfile ENV/ARG, image config, live environment)."""

    name: str
    value: str
    origin: Origin = Origin.ENV
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
    """Something a source could not read. The engine turns each into an ERROR finding (an INFO one for a note)."""

    message: str
    location: Location | None = None
    service: bool = False  # True: a service (registry, engine) was unreachable -> exit code 3
    note: bool = False  # True: not an error but something skipped on purpose (an INFO finding, rule input-skipped)
    fix: str = ""  # what to do, where it differs from the rule's general fix (a missing file: check the path)

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


@dataclass(frozen=True)
class HostReadings:
    """Live readings of a running machine or container, and the image facts of an image target.

    One field per reading, each a typed record of :mod:`envcheck.readings` (``launch``: a tuple of them),
    None when the source did not take it. Sources build a new value with :func:`dataclasses.replace`; checks
    read the fields' attributes.
    """

    python: readings.PythonReading | None = None  # the probed interpreter (status ok) or status absent
    torch: readings.TorchReading | None = None  # importing torch in a child process
    flash_attn: readings.FlashAttnReading | None = None  # importing flash-attn and its CUDA extension
    unsloth: readings.UnslothReading | None = None  # present / version (never imported)
    ldconfig: readings.LdconfigReading | None = None  # CUDA sonames ldconfig knows
    container: readings.ContainerReading | None = None  # container kind and the evidence for it
    probe: readings.ProbeReading | None = None  # the collector document: origin, duration_s, pid
    meminfo: readings.MeminfoReading | None = None  # /proc/meminfo in bytes
    nvidia_smi: readings.NvidiaSmiReading | None = None  # samples, GPU processes
    launch: tuple[readings.LaunchReading, ...] | None = None  # launch commands and configs (G3, G6, G10)
    pod_requests: tuple[readings.PodRequest, ...] | None = None  # Kubernetes containers' GPU and memory requests (G3, G10)
    expected_bandwidth_gbs: float | None = None  # --expect-bandwidth (G5)
    playbooks: readings.PlaybooksReading | None = None  # open dgx-spark-playbooks issues (G8)
    binaries: readings.BinariesReading | None = None  # preflight --binaries: what was scanned
    sample_seconds: float | None = None  # the nvidia-smi sampling window asked for
    read_seconds: float | None = None  # wall time of the whole read
    image: readings.ImageFacts | None = None  # envcheck image: registry, manifest and config facts
    container_run: readings.ContainerRun | None = None  # envcheck container: how the collector ran
    resolve: readings.ResolveReading | None = None  # envcheck --resolve: target, files, requests and bytes read

    def __bool__(self) -> bool:
        return any(getattr(self, f.name) is not None for f in dataclasses.fields(self))

    def merged(self, other: HostReadings) -> HostReadings:
        """These readings with every reading ``other`` has replacing ours."""
        changes = {f.name: getattr(other, f.name) for f in dataclasses.fields(other) if getattr(other, f.name) is not None}
        return dataclasses.replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, tuple):
                out[f.name] = [item.to_json() for item in value]
            elif value is not None:
                out[f.name] = value.to_json() if hasattr(value, "to_json") else value
        return out

    @classmethod
    def from_json(cls, data: Any, where: str = "host") -> HostReadings:
        """Readings from :meth:`to_json` output; unknown keys and wrongly typed readings are refused."""
        from envcheck.readings import host_values

        return cls(**host_values(cls, data, where))


@dataclass(frozen=True)
class Alternatives:
    """Opt-in scopes a project declares as alternatives of one another: a uv ``conflicts`` set (never installed
    together), or extras whose ``[tool.uv.sources]`` take the same package from different indexes (a ``cpu``
    build and a ``gpu`` one). ``where``: the line that binds each scope (its source entry), in the same order."""

    scopes: tuple[str, ...]
    where: tuple[Location | None, ...] = ()


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
    # GPU processes, launch configs; image facts. Documented in docs/inventory.md.
    host: HostReadings = field(default_factory=HostReadings)
    # What produced the inventory: "declared" inputs describe what will be installed, "installed"
    # ones describe what is there (freeze, site-packages, image).
    context: str = "declared"
    problems: list[ReadProblem] = field(default_factory=list)
    pragmas: list[Pragma] = field(default_factory=list)
    resolved: list[ResolvedFile] = field(default_factory=list)  # --resolve: the files chosen for the target
    # a project's extras declared as alternatives (envcheck.scopes); like problems, not part of to_json
    alternatives: list[Alternatives] = field(default_factory=list)

    def extend(self, other: Inventory) -> None:
        """Merge ``other`` into this inventory (host readings: ``other`` wins)."""
        self.packages.extend(other.packages)
        self.indexes.extend(other.indexes)
        self.installs.extend(other.installs)
        self.binaries.extend(other.binaries)
        self.wheels.extend(other.wheels)
        self.images.extend(other.images)
        self.env.extend(other.env)
        self.host = self.host.merged(other.host)
        self.problems.extend(other.problems)
        self.pragmas.extend(other.pragmas)
        self.resolved.extend(other.resolved)
        self.alternatives.extend(other.alternatives)

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
            out["host"] = self.host.to_json()
        return out

    @classmethod
    def from_json(cls, data: Any, where: str = "inventory") -> Inventory:
        """The inventory :meth:`to_json` wrote (problems and pragmas are not part of it)."""
        if not isinstance(data, Mapping):
            raise InputError(f"{where}: expected an object, found {json_type(data)}")
        context = data.get("context", "declared")
        if context not in ("declared", "installed"):
            raise InputError(f"{where}.context: expected declared or installed, found {context!r}")
        inventory = cls(context=context)
        for key, item_cls in _INVENTORY_ITEMS.items():
            items = data.get(key, [])
            if not isinstance(items, list):
                raise InputError(f"{where}.{key}: expected a list, found {json_type(items)}")
            getattr(inventory, key).extend(from_plain(item_cls, item, f"{where}.{key}[{i}]") for i, item in enumerate(items))
        unknown = set(data) - set(_INVENTORY_ITEMS) - {"context", "host"}
        if unknown:
            raise InputError(f"{where}: unknown keys {', '.join(repr(k) for k in sorted(unknown))}")
        if "host" in data:
            inventory.host = HostReadings.from_json(data["host"], f"{where}.host")
        return inventory


@dataclass(frozen=True)
class Edit:
    """One change ``envcheck --fix`` makes: replace ``length`` bytes at byte ``offset`` of ``path`` by ``replacement``.

    ``line``/``column`` (1-based, column in characters) and ``end_line``/``end_column`` (exclusive) name the same
    span for readers that count lines, as SARIF's ``deletedRegion`` does."""

    path: str
    offset: int
    length: int
    replacement: str
    line: int
    column: int
    end_line: int
    end_column: int

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Finding:
    """One verdict: which gotcha, which rule, what status, where, and what to do.

    ``edits``: the exact change ``envcheck --fix`` makes for it (empty when the rule has no certain fix here);
    ``fix_refused``: why a rule that has a fix leaves this finding alone (a line with --hash, a lock file);
    ``policy``: policy advice (an unpinned package, bare pip, a moving tag), not a fault of the Spark."""

    rule: str
    gotcha: str
    status: Status
    message: str
    location: Location | None = None
    evidence: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)
    fix: str = ""
    edits: tuple[Edit, ...] = field(default=(), hash=False, compare=False)
    fix_refused: str = field(default="", hash=False, compare=False)
    policy: bool = False  # its rule gives policy advice, not a Spark fault (envcheck.rules.Rule.policy)

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
        if self.edits:
            out["edits"] = [e.to_json() for e in self.edits]
        if self.fix_refused:
            out["fix_refused"] = self.fix_refused
        if self.policy:
            out["policy"] = True
        return out

    @classmethod
    def from_json(cls, data: Any, where: str = "finding") -> Finding:
        """The finding :meth:`to_json` wrote (a ``reason`` key, as in ``suppressed``, is ignored)."""
        if not isinstance(data, Mapping):
            raise InputError(f"{where}: expected an object, found {json_type(data)}")
        for key in ("rule", "gotcha", "status", "message"):
            if not isinstance(data.get(key), str):
                raise InputError(f"{where}.{key}: expected text, found {json_type(data.get(key))}")
        try:
            status = Status(data["status"])
        except ValueError:
            raise InputError(f"{where}.status: {data['status']!r} is not one of {', '.join(s.value for s in Status)}") from None
        evidence = data.get("evidence", {})
        if not isinstance(evidence, Mapping):
            raise InputError(f"{where}.evidence: expected an object, found {json_type(evidence)}")
        location = data.get("location")
        if not isinstance(data.get("policy", False), bool):
            raise InputError(f"{where}.policy: expected true or false, found {json_type(data.get('policy'))}")
        return cls(
            rule=data["rule"], gotcha=data["gotcha"], status=status, message=data["message"],
            location=None if location is None else from_plain(Location, location, f"{where}.location"),
            evidence=dict(evidence), fix=str(data.get("fix", "")),
            edits=tuple(from_plain(Edit, e, f"{where}.edits[{i}]") for i, e in enumerate(json_list(data.get("edits", []), f"{where}.edits"))),
            fix_refused=str(data.get("fix_refused", "")),
            policy=data.get("policy") is True,
        )


@dataclass
class TargetResult:
    """One checked target: what it was, what was seen, what was found."""

    target: str
    kind: str
    inventory: Inventory
    findings: list[Finding] = field(default_factory=list)
    suppressed: list[tuple[Finding, str]] = field(default_factory=list)  # (finding, reason)

    def to_json(self) -> dict[str, Any]:
        """One entry of a JSON report's ``targets``."""
        return {
            "target": self.target,
            "kind": self.kind,
            "inventory": self.inventory.to_json(),
            "findings": [f.to_json() for f in self.findings],
            "suppressed": [dict(f.to_json(), reason=reason) for f, reason in self.suppressed],
        }

    @classmethod
    def from_json(cls, data: Any, where: str = "target") -> TargetResult:
        """One entry of a JSON report's ``targets`` (``--format json``, ``envcheck snapshot``)."""
        if not isinstance(data, Mapping):
            raise InputError(f"{where}: expected an object, found {json_type(data)}")
        for key in ("target", "kind"):
            if not isinstance(data.get(key), str):
                raise InputError(f"{where}.{key}: expected text, found {json_type(data.get(key))}")
        findings = data.get("findings", [])
        suppressed = data.get("suppressed", [])
        if not isinstance(findings, list) or not isinstance(suppressed, list):
            raise InputError(f"{where}: findings and suppressed must be lists")
        return cls(
            target=data["target"], kind=data["kind"],
            inventory=Inventory.from_json(data.get("inventory"), f"{where}.inventory"),
            findings=[Finding.from_json(f, f"{where}.findings[{i}]") for i, f in enumerate(findings)],
            suppressed=[(Finding.from_json(f, f"{where}.suppressed[{i}]"), str(f.get("reason", "")))
                        for i, f in enumerate(suppressed)],
        )


@dataclass
class Report:
    """The result of one envcheck run, ready for a format."""

    profile: str
    targets: list[TargetResult] = field(default_factory=list)
    exit_code: int = 0
    sm: int = 121  # the profile's GPU (Profile.sm); a merged report keeps the GB10's

    @property
    def findings(self) -> list[Finding]:
        return [f for t in self.targets for f in t.findings]

    def summary(self) -> dict[str, Status]:
        """Worst status per gotcha over all targets (SKIP where nothing was checked)."""
        return {
            g: Status.worst(f.status for f in self.findings if f.gotcha == g) for g in ALL_GOTCHAS
        }


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


@functools.cache
def _plain_fields(cls: type) -> tuple[tuple[str, bool], ...]:
    """(name, whether its default is None) of each field (dataclasses.fields is slow: once per class)."""
    return tuple((f.name, f.default is None) for f in dataclasses.fields(cls))


def _plain(obj: Any) -> dict[str, Any]:
    """A dataclass as JSON-ready data, dropping empty values to keep output readable."""
    out: dict[str, Any] = {}
    for name, none_default in _plain_fields(obj.__class__):
        value = getattr(obj, name)
        kind = type(value)
        # the common kinds first, each as the general rule below treats it
        if kind is str:
            if value:
                out[name] = value
            continue
        if value is None or value is False:
            continue
        if kind is tuple:
            if value or none_default:  # an empty tuple that is a reading (no Requires-Dist at all) is kept
                out[name] = list(value)
            continue
        if kind is int or value is True:
            out[name] = value
            continue
        if value == () and none_default:
            pass
        elif value == () or value == "":
            continue
        if isinstance(value, Location):
            value = value.to_json()
        elif isinstance(value, enum.Enum):
            value = value.value
        elif isinstance(value, tuple):
            value = list(value)
        out[name] = value
    return out


_INVENTORY_ITEMS: dict[str, type] = {
    "packages": Package, "indexes": PackageIndex, "installs": InstallCommand, "binaries": Binary,
    "wheels": Wheel, "images": BaseImage, "env": EnvVar, "resolved": ResolvedFile,
}
