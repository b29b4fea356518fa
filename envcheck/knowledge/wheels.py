"""What the index serves for the common ML packages (``wheels.toml``, from ``scripts/gen_knowledge.py``):
per release, the aarch64 wheel kind (wheel/any/sdist/none), its wheels' CUDA major, and its torch pins."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, lru_cache

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from envcheck import knowledge
from envcheck.inspect.wheel_tags import canonical


@dataclass(frozen=True, slots=True)
class Release:
    package: str
    version: str
    aarch64: str
    x86_64: bool
    aarch64_cuda: str | None
    x86_64_cuda: str | None
    torch: str | None
    source: str
    checked: str
    inferred: bool
    # (name, specifier) of each torch/torchvision/torchaudio requirement of the release ("any": named bare)
    pins: tuple[tuple[str, str], ...] = ()

    @property
    def where(self) -> str:
        return f"{self.source.split(' ', 1)[0]}, recorded {self.checked}"


@cache
def _table() -> dict[str, list[Release]]:
    rows: dict[str, list[Release]] = {}
    for row in knowledge.load("wheels").get("wheel", []):
        rel = Release(canonical(row["package"]), row["version"], row["aarch64"], row["x86_64"], row.get("aarch64_cuda"),
                      row.get("x86_64_cuda"), row.get("torch"), row["source"], row["checked"], bool(row.get("inferred")),
                      tuple((name, row[name]) for name in _PINNED if name in row))
        rows.setdefault(rel.package, []).append(rel)
    return {name: sorted(rels, key=lambda r: _version(r.version)) for name, rels in rows.items()}


_PINNED = ("torch", "torchvision", "torchaudio")


@lru_cache(maxsize=1 << 14)  # the table's versions, parsed for every package judged
def parse_version(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None


def _version(text: str) -> Version:
    parsed = parse_version(text)
    return Version("0") if parsed is None else parsed


def releases(package: str) -> list[Release]:
    return list(_table().get(canonical(package), []))


def known(package: str) -> bool:
    return canonical(package) in _table()


def release(package: str, version: str | None = None) -> Release | None:
    rels = _table().get(canonical(package), [])
    if version is None:
        finals = [r for r in rels if not _version(r.version).is_prerelease and not _version(r.version).is_devrelease]
        pool = finals or rels
        return pool[-1] if pool else None
    want = _version(version.split("+", 1)[0])
    return next((r for r in rels if _version(r.version) == want), None)


def aarch64_cuda(package: str, version: str) -> str | None:
    """The CUDA major ("12", "13"), "cuda" (GPU code, major not told) or "none" of the aarch64 wheel, where recorded."""
    rel = release(package, version)
    return rel.aarch64_cuda if rel else None


def cpu_only(rel: Release | None) -> Release | None:
    """``rel`` when its aarch64 wheel carries no CUDA code while its x86_64 wheel does (ctranslate2)."""
    if rel and rel.aarch64 == "wheel" and rel.aarch64_cuda == "none" and rel.x86_64_cuda not in (None, "none"):
        return rel
    return None


def cpu_only_on_aarch64(package: str, version: str | None = None) -> Release | None:
    return cpu_only(release(package, version))


def window(package: str) -> tuple[Release, Release] | None:
    rels = _table().get(canonical(package), [])
    return (rels[0], rels[-1]) if rels else None


def _shared(values: list[str | None]) -> str | None:
    """The value every row holds, or only the newest (the generator reads its wheels); else None."""
    told = {v for v in values if v is not None}
    newest_only = values[-1] is not None and values.count(None) == len(values) - 1
    return told.pop() if len(told) == 1 and (None not in values or newest_only) else None


def _listed_allowed(package: str, specifier: str) -> tuple[Served, SpecifierSet] | None:
    """The served release list of ``package`` and ``specifier`` parsed; None when either is not there."""
    listed = served(package)
    try:
        return (listed, SpecifierSet(specifier)) if listed is not None else None
    except InvalidSpecifier:
        return None


def every_release_allowed(package: str, specifier: str) -> list[Release] | None:
    """The rows of every final, unyanked served release ``specifier`` allows (pip skips yanked ones for a
    range); None when not known offline: no release list, none allowed, or one older than the table."""
    if (found := _listed_allowed(package, specifier)) is None:
        return None
    listed, allowed = found
    rows = [release(package, v) for v in listed.versions if (parsed := parse_version(v)) is not None
            and not parsed.is_prerelease and allowed.contains(parsed) and v not in listed.yanked]
    if not rows or any(r is None for r in rows):
        return None
    return [r for r in rows if r is not None]


def linux_aarch64_pick(package: str, specifier: str) -> tuple[Release | None, list[Release]] | None:
    """What pip on linux/aarch64 picks for ``specifier`` ("" for a bare name): walking the unyanked served releases
    it allows from the newest, it skips those with no linux/aarch64 file and takes the first with a wheel or an sdist.
    Pre-releases count where the specifier names one, or, as pip does, only when no final release has a file.
    (that release or None when none has a file, the releases skipped, newest first); a release older than the
    recorded ones counts as what they all share (``older_than_window``, inferred). None when not known offline: no
    release list, nothing allowed, or a release it reaches before a pick is not known."""
    if (found := _listed_allowed(package, specifier)) is None:
        return None
    listed, allowed = found
    skipped: list[Release] = []
    finals_only = not allowed.prereleases
    for pre in (False, True) if finals_only else (True,):
        for v in reversed(listed.versions):
            parsed = parse_version(v)
            if (parsed is None or v in listed.yanked or (finals_only and parsed.is_prerelease != pre)
                    or not allowed.contains(parsed, prereleases=True)):
                continue
            if (rel := release(package, v) or older_than_window(package, v)) is None:
                return None
            if rel.aarch64 != "none":
                return rel, skipped
            skipped.append(rel)
    return (None, skipped) if skipped else None


def meets_both(package: str, first: str, second: str) -> bool | None:
    """Whether a served release meets both specifiers (pre-releases count); None when not known offline: no
    release list, or none meets ``first`` (a version newer than the list, a local build)."""
    listed = served(package)
    try:
        one, two = SpecifierSet(first), SpecifierSet(second)
    except InvalidSpecifier:
        return None
    fits = [v for v in listed.versions if one.contains(_version(v), prereleases=True)] if listed else []
    if not fits:
        return None
    return any(two.contains(_version(v), prereleases=True) for v in fits)


def older_than_window(package: str, version: str) -> Release | None:
    """For ``version`` older than every recorded release: an ``inferred`` row of what they all share."""
    ends = window(package)
    if ends is None or _version(version.split("+", 1)[0]) >= _version(ends[0].version) or _version(version) == Version("0"):
        return None
    rels = _table()[canonical(package)]
    kinds = {r.aarch64 for r in rels}
    x86 = {r.x86_64 for r in rels}
    a_cuda, x_cuda = _shared([r.aarch64_cuda for r in rels]), _shared([r.x86_64_cuda for r in rels])
    if a_cuda is None:  # the aarch64 build changed across the window (torchvision: CPU-only, then CUDA 13): so may x86_64's
        x_cuda = None
    if len(kinds) != 1 or len(x86) != 1:
        return None
    first, last = ends
    source = (f"{first.source.split(' ', 1)[0]} (inferred: every recorded release {first.version}..{last.version} shares it; "
              f"{version} is older than the recorded range)")
    return Release(first.package, version, kinds.pop(), x86.pop(), a_cuda, x_cuda, None, source, first.checked, True)


def newer_than_window(package: str, version: str) -> Release | None:
    """The newest recorded release when ``version`` is newer than it (what is served now is unknown)."""
    ends = window(package)
    if ends is None or _version(version.split("+", 1)[0]) <= _version(ends[1].version):
        return None
    return ends[1]


@dataclass(frozen=True, slots=True)
class Served:
    package: str
    versions: tuple[str, ...]
    source: str
    checked: str
    yanked: tuple[str, ...] = ()  # every file yanked: pip picks them only for an exact pin (PEP 592)

    def has(self, version: str) -> bool:
        want = _version(version)
        return any(_version(v) == want for v in self.versions)

    @property
    def newest(self) -> str:
        return self.versions[-1]


@cache
def _served() -> dict[str, Served]:
    return {canonical(row["package"]): Served(canonical(row["package"]), tuple(row["versions"]), row["source"], row["checked"],
                                              tuple(row.get("yanked", ())))
            for row in knowledge.load("wheels").get("served", []) if row["versions"]}


def served(package: str) -> Served | None:
    return _served().get(canonical(package))
