"""The plain facts passed between stages: sources produce an :class:`Inventory`, checks turn it into
:class:`Finding` objects, formats render a :class:`Report`. Frozen dataclasses with ``to_json()``."""

from __future__ import annotations

import dataclasses
import enum
import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar, cast

from envcheck.errors import InputError
from envcheck.plain_json import from_plain as from_plain
from envcheck.plain_json import json_list, json_type

_T = TypeVar("_T")

if TYPE_CHECKING:
    from envcheck import readings  # loaded when a reading is read: most runs do not need its start-up


class _Vocabulary(str, enum.Enum):
    """A closed vocabulary stored as text in JSON; compares equal to its text and prints as it."""

    def __str__(self) -> str:
        return str(self.value)


class Role(_Vocabulary):
    """Why a :class:`Package` is in an inventory."""
    REQUIREMENT = "requirement"  # to be installed (requirements line, pyproject dependency, pip install argument)
    CONSTRAINT = "constraint"  # limits versions but installs nothing (-c file, PIP_CONSTRAINT)
    OVERRIDE = "override"  # replaces what others declare on it, installs nothing (uv override-dependencies)
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
    """A finding's outcome, in the original preflight script's vocabulary plus ERROR (in rank order)."""
    SKIP = "SKIP"
    INFO = "INFO"
    PASS = "PASS"
    WARN = "WARN"
    FAIL = "FAIL"
    ERROR = "ERROR"

    @property
    def rank(self) -> int:
        return _RANK[self]

    @classmethod
    def worst(cls, statuses: Iterable[Status], default: Status | None = None) -> Status:
        """The worst of ``statuses``; ``default`` (SKIP) when there are none."""
        return max(statuses, key=_RANK.__getitem__, default=default or cls.SKIP)


_RANK = {status: rank for rank, status in enumerate(Status)}

GOTCHAS: tuple[str, ...] = tuple(f"G{n}" for n in range(1, 11))
ARCH = "ARCH"
ALL_GOTCHAS: tuple[str, ...] = (*GOTCHAS, ARCH)


class _Record:
    """A model record whose JSON form is its non-empty fields (:func:`_plain`)."""

    def to_json(self) -> dict[str, Any]:
        return _plain(self)


@dataclass(frozen=True)
class Location:
    """Where a fact came from: a file, and inside it a line, a byte offset or an archive member."""
    path: str
    line: int | None = None
    offset: int | None = None
    member: str | None = None  # a member inside a wheel, layer, archive or image
    stage: str | None = None  # Dockerfile build stage
    # A command in a shell branch that may not run: the branch in words, and whether it is a fallback
    # that runs only when the main path fails.
    branch: str | None = None
    fallback: bool = False
    # A Dockerfile stage not in the built image (docs/dockerfiles.md), or a compose service under a profile
    # (started only when asked for): the engine lowers findings located there one level.
    outside_image: bool = False
    on_request: bool = False
    tolerated: bool = False  # a command whose failure the script ignores (`|| true`, `|| echo ...`)

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
        fields = _plain_fields(Location)
        return {k: v for k, _, _ in fields if (v := getattr(self, k)) is not None and v is not False}


@dataclass(frozen=True)
class Package(_Record):
    """A Python distribution, declared or installed: ``version`` if known exactly, ``specifier`` as given."""
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
    scope: str | None = None  # the opt-in part that brings it ("extra 'cu128'", "group 'docs'"); None: always
    index: str | None = None  # the index it must come from ([tool.uv.sources]); None: whatever indexes apply
    bound_at: int | None = None  # the line of the [tool.uv.sources] entry that binds ``index``
    version_from: str | None = None  # an exact pin to a variable the input does not set (torch==${TORCH_VERSION})


@dataclass(frozen=True)
class PackageIndex(_Record):
    """A package index or link source that an install uses."""
    url: str
    option: IndexOption
    location: Location | None = None
    name: str | None = None  # uv's [[tool.uv.index]] name
    explicit: bool = False  # uv's `explicit = true`: serves only the packages whose source names it


# The roles of packages that only pin versions (narrow or replace them) and install nothing.
PINS_ONLY = (Role.CONSTRAINT, Role.OVERRIDE)

# Options with which pip replaces what is already installed instead of keeping it.
REPLACING_OPTIONS = ("-U", "--upgrade", "--force-reinstall", "-I", "--ignore-installed")


@dataclass(frozen=True)
class InstallCommand(_Record):
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
        return any(o.split("=", 1)[0] in REPLACING_OPTIONS for o in self.options)


@dataclass(frozen=True)
class Binary(_Record):
    """An ELF file: CPU architecture, CUDA libraries, GPU code. Field names are part of the JSON interface."""
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
    modules: tuple[str, ...] = ()  # each fatbin module's images ("sm_120 compute_120"): G7 judges them
    sections: tuple[str, ...] = ()  # sections where fatbin containers were found
    static_cudart: bool = False
    distribution: str | None = None  # owning distribution (from RECORD) where known
    size: int = 0
    bytes_read: int = 0
    location: Location | None = None


@dataclass(frozen=True)
class Wheel(_Record):
    """A wheel file's name, tags and metadata."""
    filename: str
    name: str
    version: str
    tags: tuple[str, ...]  # e.g. cp311-cp311-manylinux_2_28_aarch64
    requires: tuple[str, ...] = ()
    location: Location | None = None
    scope: str | None = None  # as Package.scope: a lock's wheels of a package only an extra installs


@dataclass(frozen=True)
class BaseImage(_Record):
    """A container image a build starts from, or the image under inspection."""
    ref: str  # as written after substitution, e.g. nvcr.io/nvidia/pytorch:25.11-py3
    stage: str | None = None
    platform: str | None = None  # --platform value or the image config's os/arch
    final: bool = True  # ends up in the final image
    location: Location | None = None
    stages: tuple[str, ...] = ()  # Dockerfile: this stage and every stage built on it (FROM <stage>), by label
    copied_at: int | None = None  # a stage outside the final image: the line of a COPY --from taking from it
    runs: str = ""  # compose/Kubernetes: the container's command when all it runs is a device query (nvidia-smi)
    # Dockerfile: the programs the RUN lines of the stages on it run (None: not a Dockerfile stage), and the
    # files they install from (-r, pyproject.toml) that envcheck could not read
    programs: tuple[str, ...] | None = None
    unread: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        data = _plain(self)
        if not self.final:
            data["final"] = False  # its default is True: a stage outside the final image must say so to read back
        return data


@dataclass(frozen=True)
class EnvVar(_Record):
    """An environment variable (Dockerfile ENV/ARG, image config, live environment)."""
    name: str
    value: str
    origin: Origin = Origin.ENV
    location: Location | None = None


@dataclass(frozen=True)
class ResolvedFile(_Record):
    """A file a resolver picked for the target platform (``--resolve``). ``kind``: wheel | sdist | none |
    conflict (the resolver refused the set; ``reason`` says why). ``url`` is always redacted."""
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


@dataclass(frozen=True)
class ReadProblem(_Record):
    """Something a source could not read. The engine turns each into an ERROR finding (an INFO one for a note)."""
    message: str
    location: Location | None = None
    service: bool = False  # True: a service (registry, engine) was unreachable -> exit code 3
    note: bool = False  # True: not an error but something skipped on purpose (an INFO finding, rule input-skipped)
    fix: str = ""  # what to do, where it differs from the rule's general fix (a missing file: check the path)


@dataclass(frozen=True)
class Pragma(_Record):
    """An inline suppression: ``# envcheck: ignore=RULE[,RULE] reason`` on the line before a line."""
    rules: tuple[str, ...]  # rule ids or gotchas (G2)
    reason: str
    location: Location  # the line it applies to


@dataclass(frozen=True)
class HostReadings:
    """Live readings of a running machine or container, and an image target's facts: one typed record of
    :mod:`envcheck.readings` per field (``launch``, ``pod_requests``: tuples of them), None if not taken."""
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
    pod_requests: tuple[readings.PodRequest, ...] | None = None  # Kubernetes GPU, memory requests (G3, G10)
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
        from envcheck.readings import host_values
        return cls(**host_values(cls, data, where))


@dataclass(frozen=True)
class Alternatives:
    """Opt-in scopes declared as alternatives: a uv ``conflicts`` set, or extras taking one package from
    different indexes (``cpu``/``gpu``). ``where``: the line binding each scope, in the same order."""
    scopes: tuple[str, ...]
    where: tuple[Location | None, ...] = ()


# The inventory's lists of records, in JSON order, and their record classes.
_INVENTORY_ITEMS: dict[str, type] = {
    "packages": Package, "indexes": PackageIndex, "installs": InstallCommand, "binaries": Binary,
    "wheels": Wheel, "images": BaseImage, "env": EnvVar, "resolved": ResolvedFile,
}


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
    host: HostReadings = field(default_factory=HostReadings)  # live readings, image facts (docs/inventory.md)
    # "declared": inputs say what will be installed; "installed": what is there (freeze, site-packages, image)
    context: str = "declared"
    problems: list[ReadProblem] = field(default_factory=list)
    pragmas: list[Pragma] = field(default_factory=list)
    resolved: list[ResolvedFile] = field(default_factory=list)  # --resolve: the files chosen for the target
    # a project's extras declared as alternatives (envcheck.scopes); like problems, not part of to_json
    alternatives: list[Alternatives] = field(default_factory=list)

    def extend(self, other: Inventory) -> None:
        """Merge ``other`` into this inventory (host readings: ``other`` wins)."""
        for key in (*_INVENTORY_ITEMS, "problems", "pragmas", "alternatives"):
            getattr(self, key).extend(getattr(other, key))
        self.host = self.host.merged(other.host)

    def package(self, name: str) -> Package | None:
        """The first package of that canonical name, preferring installed ones."""
        found = [p for p in self.packages if p.name == name]
        return next((p for p in found if p.installed), found[0] if found else None)

    def env_value(self, name: str) -> str | None:
        """Last value set for ``name`` (later definitions win, as in a Dockerfile)."""
        return next((var.value for var in reversed(self.env) if var.name == name), None)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"context": self.context}
        for key in _INVENTORY_ITEMS:
            if items := getattr(self, key):
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
    """One change ``envcheck --fix`` makes: ``length`` bytes at ``offset`` of ``path`` become ``replacement``;
    ``line``/``column`` (1-based) to ``end_line``/``end_column`` (exclusive): the same span, for SARIF."""
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
    """One verdict. ``edits``: what ``--fix`` changes for it; ``fix_refused``: why a rule with a fix leaves it
    alone (a line with --hash); ``policy``: policy advice (an unpinned package), not a fault of the Spark."""
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
    # findings of the same cause folded into this one (never written out): `--fix` makes their edits too
    folded: tuple[Finding, ...] = field(default=(), hash=False, compare=False, repr=False)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rule": self.rule, "gotcha": self.gotcha, "status": self.status.value,
                               "message": self.message}
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
        edits = json_list(data.get("edits", []), f"{where}.edits")
        return cls(
            rule=data["rule"], gotcha=data["gotcha"], status=status, message=data["message"],
            location=None if location is None else from_plain(Location, location, f"{where}.location"),
            evidence=dict(evidence), fix=str(data.get("fix", "")),
            edits=tuple(from_plain(Edit, e, f"{where}.edits[{i}]") for i, e in enumerate(edits)),
            fix_refused=str(data.get("fix_refused", "")), policy=data.get("policy") is True)


@dataclass
class TargetResult:
    """One checked target: what it was, what was seen, what was found."""
    target: str
    kind: str
    inventory: Inventory
    findings: list[Finding] = field(default_factory=list)
    suppressed: list[tuple[Finding, str]] = field(default_factory=list)  # (finding, reason)

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "kind": self.kind, "inventory": self.inventory.to_json(),
                "findings": [f.to_json() for f in self.findings],
                "suppressed": [dict(f.to_json(), reason=reason) for f, reason in self.suppressed]}

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
                        for i, f in enumerate(suppressed)])


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
        return {g: Status.worst(f.status for f in self.findings if f.gotcha == g) for g in ALL_GOTCHAS}


def per_inventory(answer: Callable[[Inventory], _T]) -> Callable[[Inventory], _T]:
    """``answer`` computed once for the inventory it was last asked about: checks and fixes ask about each
    package or finding, and a pass over the whole inventory each time is packages x packages. The inventory
    is held, so its id is not reused while the answer is kept."""
    last: list[Any] = [None, None]

    def once(inventory: Inventory) -> _T:
        if last[0] is not inventory:
            last[:] = [inventory, answer(inventory)]
        return cast("_T", last[1])
    return once


@functools.cache
def _plain_fields(cls: type) -> tuple[tuple[str, bool, bool], ...]:
    """(name, whether its default is None, whether it has none) of each field (dataclasses.fields is slow:
    once per class)."""
    return tuple((f.name, f.default is None, f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
                 for f in dataclasses.fields(cls))


def _plain(obj: Any) -> dict[str, Any]:
    """A dataclass as JSON-ready data, dropping empty values (an empty tuple stays where None is the default:
    no Requires-Dist at all is a reading; an empty text stays where the field has no default, as the reader
    requires it: `ARG NAME=""` is a variable whose value is empty)."""
    out: dict[str, Any] = {}
    for name, none_default, required in _plain_fields(obj.__class__):
        value = getattr(obj, name)
        kind = type(value)
        if kind is str:
            if value or required:
                out[name] = value
        elif kind is tuple:
            if value or none_default:
                out[name] = list(value)
        elif value is None or value is False:
            continue
        elif isinstance(value, Location):
            out[name] = value.to_json()
        elif isinstance(value, enum.Enum):
            out[name] = value.value
        else:
            out[name] = value
    return out
