"""``envcheck --resolve``: which files pip or uv would install on the target, and what is inside them.

Steps, for one dependency file:

1. Pick the files. Inputs that pin files already (``pylock.toml``, ``uv.lock``) are read as they are: the
   wheel that fits the target is chosen from the files they list. Requirements, freeze files and
   ``pyproject.toml`` go through a real resolver, uv (``envcheck[resolve]``), run for the target platform
   (``uv pip compile --python-platform aarch64-manylinux_2_39 --python-version 3.12 --format pylock.toml``),
   not for the machine envcheck runs on; freeze files are resolved with ``--no-deps`` (every pin is a file
   lookup). The input's own index options and the user's pip/uv configuration apply. A resolver conflict is
   recorded with uv's words (checks report it as G9).
2. Read facts of each chosen file, as little as possible: Requires-Dist from the index's separate metadata
   file (PEP 658) where offered; the wheel's zip directory, then each ELF member's headers, by HTTP range
   requests (:class:`envcheck.services.package_index.RemoteFile`); deflated members are inflated from their
   start. Facts are cached by the file's sha256 (a hash's facts never change) in envcheck's cache, and the
   shipped facts table (``knowledge/wheel_facts.json``) answers for the largest common wheels.
3. Return an :class:`Inventory`: the chosen files (:class:`ResolvedFile`, with their redacted URL, hash and
   where each fact came from), the resolved packages with their Requires-Dist, wheel tags, and binaries
   located as ``URL!member``. Checks judge them like any other inventory.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

from packaging import tags as ptags

from envcheck.cache import binary_from_json, cache_dir
from envcheck.config import env
from envcheck.errors import InputError, ServiceError
from envcheck.inspect.wheel_tags import canonical, parse_wheel_name
from envcheck.limits import DEFAULT_MAX_EXPANSION
from envcheck.model import (
    IndexOption,
    InstallCommand,
    Inventory,
    Location,
    Package,
    PackageIndex,
    ReadProblem,
    ResolvedFile,
    Role,
    Wheel,
)
from envcheck.profile import Profile
from envcheck.services.package_index import FileProblem, IndexClient, redact
from envcheck.sources.remote_wheel import (
    FACTS_FORMAT,
    SHA256_HEX,
    FileFacts,
    cached_facts,
    facts_key,
    facts_table,
    read_remote_wheel,
    store_facts,
)

__all__ = ["FileFacts", "ResolveSettings", "best_wheel", "facts_table", "read_remote_wheel", "resolve", "resolved_reader"]

_NETWORK_WORDS = ("error sending request", "Failed to fetch", "dns error", "Connection refused", "connection error",
                  "operation timed out", "tcp connect error", "Could not connect", "failed to lookup address",
                  "Request failed after", "os error 111", "status code 5")


@dataclass(frozen=True)
class ResolveSettings:
    """How to resolve: the target, the indexes, and what may be fetched."""

    python_version: str | None = None  # None: the profile's
    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()
    offline: bool = False  # the cache and the facts table only; uv --offline
    use_cache: bool = True
    uv: str | None = None  # the uv executable (default: found on PATH or next to this Python)
    max_expansion: float = DEFAULT_MAX_EXPANSION  # --max-expansion, as for local wheels


@dataclass(frozen=True)
class Chosen:
    """One package of the resolution and the file picked for the target."""

    name: str
    version: str | None
    kind: str  # wheel | sdist | none | conflict
    filename: str | None = None
    url: str | None = None
    sha256: str | None = None
    size: int | None = None
    reason: str = ""
    location: Location | None = None
    source: str = "resolver"
    problem: str = ""  # the input names this file wrongly (a hash that is not a sha256): an input error, nothing read


def _checked_sha256(value: Any) -> tuple[str | None, str]:
    """A lock's claimed sha256, lowercased, or None and what is wrong with it (it becomes part of cache keys)."""
    if value is None or value == "":
        return None, ""
    text = value.lower() if isinstance(value, str) else ""
    if SHA256_HEX.fullmatch(text):
        return text, ""
    shown = "".join(ch if ch.isprintable() else "?" for ch in repr(value)[:80])
    return None, f"the sha256 {shown} is not 64 hexadecimal digits: this entry is not read"


# ------------------------------------------------------------------------------ the target platform

def glibc_of(profile: Profile) -> tuple[int, int]:
    """The newest glibc the profile's wheel platforms name (DGX OS: Ubuntu 24.04, glibc 2.39)."""
    best = (2, 17)
    for platform in profile.wheel_platforms:
        m = re.match(r"manylinux_(\d+)_(\d+)_", platform)
        if m:
            best = max(best, (int(m.group(1)), int(m.group(2))))
    return best


def uv_platform(profile: Profile) -> str:
    """uv's ``--python-platform`` for the profile: ``aarch64-manylinux_2_39`` for the Spark."""
    major, minor = glibc_of(profile)
    return f"{profile.machine}-manylinux_{major}_{minor}"


@cache
def _supported_tags(machine: str, glibc: tuple[int, int], python: str) -> dict[str, int]:
    """Wheel tags that install on the target, best first (as pip orders them), tag -> rank."""
    platforms = [f"manylinux_{glibc[0]}_{m}_{machine}" for m in range(glibc[1], 16, -1)]
    platforms += [f"manylinux2014_{machine}", f"linux_{machine}"]
    version = tuple(int(p) for p in python.split(".")[:2])
    found = [*ptags.cpython_tags(version, platforms=platforms), *ptags.compatible_tags(version, platforms=platforms)]
    return {str(t): i for i, t in enumerate(found)}


def best_wheel(filenames: Iterable[str], profile: Profile, python: str) -> tuple[str | None, str]:
    """The wheel of ``filenames`` pip would pick on the target, or None and why none fits."""
    ranks = _supported_tags(profile.machine, glibc_of(profile), python)
    best: tuple[int, str] | None = None
    seen: list[str] = []
    for filename in filenames:
        parsed = parse_wheel_name(filename)
        if parsed is None:
            continue
        seen.extend(parsed.platforms)
        rank = min((ranks[t] for t in parsed.tags if t in ranks), default=None)
        if rank is not None and (best is None or rank < best[0]):
            best = (rank, filename)
    if best is not None:
        return best[1], ""
    if not seen:
        return None, "no wheel files"
    return None, f"wheels only for {', '.join(sorted(set(seen))[:6])}"


# ------------------------------------------------------------------------------ picking the files

def _lock_choices(path: Path, profile: Profile, python: str) -> list[Chosen]:
    """Files of a ``pylock.toml`` or ``uv.lock``: the wheel that fits the target, else the sdist, else none."""
    from envcheck.sources.pyproject import parse_toml

    data, text = parse_toml(path)
    style = "pylock" if "packages" in data or path.name.startswith("pylock") else "uv"
    entries = data.get("packages" if style == "pylock" else "package", [])
    out: list[Chosen] = []
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            continue
        source = entry.get("source")
        if style == "uv" and isinstance(source, dict) and any(k in source for k in ("virtual", "editable", "directory")):
            continue  # the project itself
        name = canonical(entry["name"])
        version = str(entry["version"]) if entry.get("version") is not None else None
        m = re.search(rf'^name = "{re.escape(entry["name"])}"', text, re.M)
        loc = Location(str(path), line=text.count("\n", 0, m.start()) + 1 if m else None)
        item = _choose(name, version, _files(entry.get("wheels")), _file(entry.get("sdist")), profile, python, loc, "lock file")
        if item.problem:
            item = replace(item, problem=f"{path}: {item.name}: {item.problem}", location=_hash_line(path, text, m.start() if m else 0, loc))
        out.append(item)
    return out


def _hash_line(path: Path, text: str, start: int, fallback: Location) -> Location:
    """The line of the first ``sha256`` key at or after an entry's start that does not hold a proper hash."""
    for m in re.finditer(r"sha256\s*=\s*(\S+)|hash\s*=\s*\"sha256:([^\"]*)\"", text[start:]):
        value = (m.group(1) or m.group(2) or "").strip("\"'")
        if not SHA256_HEX.fullmatch(value.lower()):
            return Location(str(path), line=text.count("\n", 0, start + m.start()) + 1)
    return fallback


def _file(item: Any) -> dict[str, Any] | None:
    if not isinstance(item, dict):
        return None
    url = item.get("url") or item.get("path") or ""
    name = item.get("name") or (str(url).split("#")[0].rsplit("/", 1)[-1] if url else "")
    hashes: dict[str, Any] = item["hashes"] if isinstance(item.get("hashes"), dict) else {}
    claimed = hashes.get("sha256") or (str(item.get("hash", "")).partition("sha256:")[2] or None)
    sha, problem = _checked_sha256(claimed)
    size = item.get("size")
    return {"filename": str(name), "url": str(url) if url else None, "sha256": sha, "size": size if isinstance(size, int) else None,
            "problem": problem}


def _files(items: Any) -> list[dict[str, Any]]:
    return [f for f in (_file(i) for i in (items if isinstance(items, list) else [])) if f is not None and f["filename"]]


def _choose(name: str, version: str | None, wheels: list[dict[str, Any]], sdist: dict[str, Any] | None, profile: Profile,
            python: str, loc: Location | None, source: str) -> Chosen:
    filename, why = best_wheel([w["filename"] for w in wheels], profile, python)
    if filename is not None:
        w = next(w for w in wheels if w["filename"] == filename)
        return Chosen(name, version, "wheel", filename, w["url"], w["sha256"], w["size"], location=loc, source=source,
                      problem=w["problem"])
    if sdist is not None:
        return Chosen(name, version, "sdist", sdist["filename"], sdist["url"], sdist["sha256"], sdist["size"],
                      reason=why, location=loc, source=source, problem=sdist["problem"])
    return Chosen(name, version, "none", reason=why or "no files", location=loc, source=source)


def find_uv(settings: ResolveSettings) -> str:
    """The uv executable, or a clear error saying how to get it."""
    if settings.uv:
        return settings.uv
    here = Path(os.path.realpath(sys.executable)).parent
    for candidate in (shutil.which("uv"), str(here / "uv")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    with contextlib.suppress(ImportError, FileNotFoundError):
        import uv  # type: ignore[import-not-found,import-untyped,unused-ignore]

        found: str = uv.find_uv_bin()
        return found
    raise InputError("--resolve needs uv (a resolver that resolves for another platform): pip install 'envcheck[resolve]' or install uv")


def _pip_config_args(settings: ResolveSettings) -> list[str]:
    """Index options: the command line's first, else the user's pip environment (uv reads its own UV_* itself)."""
    args: list[str] = []
    index = settings.index_url or (None if env("UV_INDEX_URL") or env("UV_DEFAULT_INDEX") else env("PIP_INDEX_URL"))
    if index:
        args += ["--index-url", index]
    extras = list(settings.extra_index_urls) or ([] if env("UV_EXTRA_INDEX_URL") or env("UV_INDEX") else
                                                (env("PIP_EXTRA_INDEX_URL") or "").split())
    for url in extras:
        args += ["--extra-index-url", url]
    links = list(settings.find_links) or ([] if env("UV_FIND_LINKS") else (env("PIP_FIND_LINKS") or "").split())
    for link in links:
        args += ["--find-links", link]
    return args


def settings_index_urls(settings: ResolveSettings) -> list[str]:
    """Every index URL this run gives uv (the command line's, else the pip and uv environment's)."""
    urls = [arg for arg in _pip_config_args(settings) if "://" in arg]
    for name in ("UV_INDEX_URL", "UV_DEFAULT_INDEX", "UV_EXTRA_INDEX_URL", "UV_INDEX"):
        urls += [word.split("=", 1)[-1] for word in (env(name) or "").split()]
    return urls


def uv_compile(path: Path, profile: Profile, settings: ResolveSettings, python: str, no_deps: bool,
               cwd: Path | None = None, shown: Path | None = None) -> tuple[list[Chosen], str]:
    """Resolve ``path`` with uv for the target; the chosen files and uv's words when it refused.

    uv runs in ``cwd`` (default: the file's folder), so it reads that project's uv configuration; ``shown`` is the
    user's file (messages and the lines of the picked packages)."""
    uv = find_uv(settings)
    user_file = shown or path
    with tempfile.TemporaryDirectory(prefix="envcheck-resolve-") as tmp:
        out = Path(tmp) / "pylock.resolve.toml"
        cmd = [uv, "pip", "compile", str(path.resolve()), "--python-platform", uv_platform(profile), "--python-version", python,
               "--format", "pylock.toml", "-o", str(out), "--no-header", "--color", "never", "--no-python-downloads",
               *_pip_config_args(settings)]
        if no_deps:
            cmd.append("--no-deps")
        if settings.offline:
            cmd.append("--offline")
        from envcheck.services.uv_process import run_uv

        try:
            proc = run_uv(cmd, str(cwd or path.resolve().parent), str(user_file), NO_COLOR="1", UV_NO_PROGRESS="1")
        except OSError as exc:
            raise InputError(f"{user_file}: cannot run uv ({uv}): {exc.strerror or exc}", str(user_file)) from None
        words = _clean(proc.stderr)
        if proc.returncode != 0:
            if "No solution found" in words or "unsatisfiable" in words:
                missing = _no_matching_wheel(words, user_file)
                return (missing, words) if missing else ([], words)
            if settings.offline and ("offline" in words.lower() or "network" in words.lower()):
                raise ServiceError(f"{user_file}: --offline and uv's cache lacks what this resolution needs: {_last(words)}")
            if any(w in words for w in _NETWORK_WORDS):
                raise ServiceError(f"{user_file}: a package index did not answer while uv resolved: {redact_text(_last(words))}")
            raise InputError(f"{user_file}: uv could not resolve this input: {redact_text(_last(words))}", str(user_file))
        lock = out
        if not lock.is_file():
            raise InputError(f"{user_file}: uv wrote no lock file", str(user_file))
        chosen = _lock_choices(lock, profile, python)
    text = user_file.read_text(encoding="utf-8", errors="replace") if user_file.is_file() else ""
    return [replace(c, location=_line_of(user_file, text, c.name), source="resolver") for c in chosen], ""


def _no_matching_wheel(words: str, path: Path) -> list[Chosen]:
    """uv's "X==V has no wheels with a matching platform tag" (and no sdist): no file fits the target."""
    text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
    out = []
    for m in re.finditer(r"Because ([A-Za-z0-9._-]+)(?:==(\S+?))? was not found in the package registry", words):
        out.append(Chosen(canonical(m.group(1)), m.group(2), "none", reason="not found on the configured indexes",
                          location=_line_of(path, text, m.group(1))))
    for m in re.finditer(r"Because (?:only )?([A-Za-z0-9._-]+)==(\S+?) has no wheels with a matching platform tag", words):
        hint = re.search(rf"Wheels are available for `{re.escape(m.group(1))}` \(v[^)]*\) on the following platforms?: ([^.]*)", words)
        reason = f"wheels only for {hint.group(1).replace('`', '')}" if hint else "no wheel with a matching platform tag"
        out.append(Chosen(canonical(m.group(1)), m.group(2), "none", reason=reason[:300], location=_line_of(path, text, m.group(1))))
    return out


def _conflict_line(path: Path, words: str) -> Location:
    """Where a conflict is shown: the line of the first requirement uv names that the file itself has."""
    text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
    for name in re.findall(r"([A-Za-z0-9][A-Za-z0-9._-]*)(?:==|>=|<=|~=|!=|<|>)", conflict_pair(words)):
        found = _line_of(path, text, name)
        if found.line is not None:
            return found
    return Location(str(path))


def _line_of(path: Path, text: str, name: str) -> Location:
    """The line that names ``name`` in the user's file: at a line's start (requirements), else quoted (TOML lists)."""
    spelled = "[-_.]".join(map(re.escape, re.split("[-_.]", name)))
    m = (re.search(rf"^\s*{spelled}(?![\w.-])", text, re.I | re.M)
         or re.search(rf"[\"']\s*{spelled}(?![\w.-])", text, re.I))
    return Location(str(path), line=text.count("\n", 0, m.start()) + 1 if m else None)


def _clean(text: str) -> str:
    """uv's error in one line: from its first ``error:`` on (warnings before it, with their causes, dropped)."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)
    raw = text.splitlines()
    first = next((i for i, line in enumerate(raw) if line.lstrip().startswith(("error:", "×"))), 0)
    lines = [re.sub(r"^[\s×╰─▶│├╭╮╯:]+", "", line).strip() for line in raw[first:]]
    lines = [re.sub(r"^(error|cause):\s*", "", line) for line in lines]
    return " ".join(line for line in lines if line and not line.startswith("warning:") and "is not available" not in line)


def _last(words: str) -> str:
    return words[-400:] if words else "no message"


def redact_text(text: str) -> str:
    """Every URL in ``text`` redacted, control characters replaced."""
    return re.sub(r"[a-z][a-z0-9+.-]*://\S+", lambda m: redact(m.group(0)), text)


def conflict_pair(words: str) -> str:
    """The resolver's reason in one sentence: ``A depends on B and you require C`` where uv says so."""
    m = re.search(r"Because .*", words)
    text = (m.group(0) if m else words).split(" hint:", 1)[0]
    return text[:600]


def _resolve_pyproject(path: Path, declared: Inventory, profile: Profile, settings: ResolveSettings,
                       python: str) -> tuple[list[Chosen], str]:
    """A pyproject's own dependencies (not its optional extras or groups) with its index options, resolved in the
    project's folder (uv reads its ``[tool.uv]`` configuration there) without building the project itself."""
    lines = _index_lines(declared.indexes)
    for pkg in declared.packages:
        if pkg.role == Role.REQUIREMENT and pkg.scope is None:
            lines.append(_requirement_line(pkg))
    with tempfile.TemporaryDirectory(prefix="envcheck-pyproject-") as tmp:
        req = Path(tmp) / "requirements.txt"
        req.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return uv_compile(req, profile, settings, python, no_deps=False, cwd=path.resolve().parent, shown=path)


def _index_lines(indexes: Iterable[PackageIndex], where: Location | None = None) -> list[str]:
    """Index options as requirements-file lines (uv indexes become extra indexes: uv asks them first)."""
    flags = {IndexOption.INDEX_URL: "--index-url", IndexOption.EXTRA_INDEX_URL: "--extra-index-url",
             IndexOption.FIND_LINKS: "--find-links", IndexOption.UV_INDEX: "--extra-index-url"}
    lines = []
    for index in indexes:
        if where is not None and (index.location is None or (index.location.line, index.location.stage) != (where.line, where.stage)):
            continue
        flag = flags.get(index.option)
        if flag and f"{flag} {index.url}" not in lines:
            lines.append(f"{flag} {index.url}")
    return lines


def _requirement_line(pkg: Package) -> str:
    extras = f"[{','.join(pkg.extras)}]" if pkg.extras else ""
    text = f"{pkg.name}{extras} @ {pkg.url}" if pkg.url else f"{pkg.name}{extras}{pkg.specifier}"
    return text + (f"; {pkg.marker}" if pkg.marker else "")


# ------------------------------------------------------------------------------ Dockerfile installs

def dockerfile_installs(declared: Inventory) -> list[tuple[InstallCommand, list[str]]]:
    """The ``pip``/``uv pip`` installs of a Dockerfile as requirements lines (index options of the same command first)."""
    out = []
    for install in declared.installs:
        loc = install.location
        if install.tool not in ("pip", "uv") or loc is None or not install.packages:
            continue
        lines = _index_lines(declared.indexes, loc)
        for pkg in declared.packages:
            if pkg.location is None or (pkg.location.line, pkg.location.stage) != (loc.line, loc.stage) or pkg.role not in (Role.REQUIREMENT, Role.BUILD):
                continue
            lines.append(_requirement_line(pkg))
        if any(not line.startswith("--") for line in lines):
            out.append((install, lines))
    return out


def _shipped_packages(declared: Inventory, install: InstallCommand) -> dict[str, Package]:
    """What the install's stage already has (an NGC image's torch, triton, flash-attn ...), by name."""
    stage = install.location.stage if install.location else None
    return {p.name: p for p in declared.packages
            if p.installed and p.version and p.location is not None and p.location.stage == stage}


def _keep_shipped(found: list[Chosen], shipped: dict[str, Package], lines: list[str], profile: Profile,
                  client: IndexClient, settings: ResolveSettings) -> list[Chosen]:
    """The resolution of an install on a base that already has ``shipped`` packages, as pip does it: a shipped
    version that satisfies every requirement on it (the command's own and the Requires-Dist of what is installed)
    stays, and what only it would have pulled in is not installed. A resolution from scratch would report PyPI's
    torch and its CUDA wheels where pip keeps NGC's torch."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.version import InvalidVersion, Version

    from envcheck.knowledge.builds import requirement_applies

    by_name = {c.name: c for c in found}

    def requires_of(name: str) -> list[Requirement]:
        item = by_name.get(name)
        if item is None or item.kind != "wheel" or item.problem:
            return []
        try:
            facts = facts_of(item, client, settings)
        except (FileProblem, ServiceError):
            return []
        out = []
        for line in facts.requires or ():
            with contextlib.suppress(InvalidRequirement):
                req = Requirement(line)
                if req.marker is None or ("extra" not in str(req.marker) and requirement_applies(req.marker, profile)):
                    out.append(req)
        return out

    roots = []
    for line in lines:
        if not line.startswith("-"):
            with contextlib.suppress(InvalidRequirement):
                roots.append(Requirement(line))
    replaced: set[str] = set()
    for _round in range(8):
        specs: dict[str, list[Requirement]] = {}
        seen: set[str] = set()
        todo = list(roots)
        while todo:
            req = todo.pop()
            name = canonical(req.name)
            specs.setdefault(name, []).append(req)
            if name in seen or name not in by_name:
                continue
            seen.add(name)
            if name in shipped and name not in replaced:
                continue  # kept from the image (decided below): what it needs is already there
            todo.extend(requires_of(name))
        newly = set()
        for name in seen & set(shipped) - replaced:
            try:
                have = Version(str(shipped[name].version))
            except InvalidVersion:
                continue
            if not all(r.specifier.contains(have, prereleases=True) for r in specs.get(name, [])):
                newly.add(name)
        if not newly:
            return [c for c in found if c.name in seen and (c.name not in shipped or c.name in replaced)]
        replaced |= newly
    return found


def _resolve_lines(lines: list[str], install: InstallCommand, profile: Profile, settings: ResolveSettings,
                   python: str) -> tuple[list[Chosen], str]:
    """Resolve one install command's requirements (cached like a file of the same lines)."""
    with tempfile.TemporaryDirectory(prefix="envcheck-run-") as tmp:
        req = Path(tmp) / "requirements.txt"
        req.write_text("\n".join(lines) + "\n", encoding="utf-8")
        key = _resolution_key(req, Inventory(), profile, settings, python, install.no_deps)
        hit = _cached_resolution(key) if settings.use_cache else None
        if hit is None:
            hit = uv_compile(req, profile, settings, python, no_deps=install.no_deps)
            if settings.use_cache:
                _store_resolution(key, *hit)
    found, conflict = hit
    return [replace(c, location=install.location) for c in found], conflict


# ------------------------------------------------------------------------------ cached resolutions

RESOLUTION_TTL_HOURS = 24.0  # a resolution of unpinned requirements changes when new releases appear


def _resolution_key(path: Path, declared: Inventory, profile: Profile, settings: ResolveSettings, python: str, no_deps: bool) -> str:
    import hashlib

    digest = hashlib.sha256()
    with contextlib.suppress(OSError):
        digest.update(path.read_bytes())
    facts = [[p.name, p.specifier, p.marker, p.url, p.role] for p in declared.packages]
    facts += [[i.url, i.option] for i in declared.indexes]
    digest.update(json.dumps([facts, uv_platform(profile), python, no_deps, _pip_config_args(settings), settings.offline,
                              env("UV_INDEX_URL"), env("UV_EXTRA_INDEX_URL")], default=str).encode())
    return digest.hexdigest()


def _resolution_path(key: str) -> Path:
    return cache_dir() / f"resolutions-v{FACTS_FORMAT}" / f"{key}.json"


def _cached_resolution(key: str) -> tuple[list[Chosen], str] | None:
    path = _resolution_path(key)
    try:
        if time.time() - path.stat().st_mtime > _env_hours("ENVCHECK_RESOLVE_TTL_HOURS", RESOLUTION_TTL_HOURS) * 3600:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
        chosen = [Chosen(**{**c, "location": Location(**c["location"]) if c.get("location") else None}) for c in data["chosen"]]
        return chosen, str(data.get("conflict") or "")
    except (OSError, ValueError, TypeError, KeyError):
        return None


def _store_resolution(key: str, chosen: list[Chosen], conflict: str) -> None:
    import dataclasses

    path = _resolution_path(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".resolution-", suffix=".tmp", dir=path.parent)
        rows = [{**dataclasses.asdict(c), "location": c.location.to_json() if c.location else None} for c in chosen]
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"chosen": rows, "conflict": conflict}, fh)
        os.replace(tmp, path)
    except OSError:
        pass


def _env_hours(name: str, default: float) -> float:
    try:
        value = float(env(name) or "")
    except ValueError:
        return default
    return value if value >= 0 else default


# ------------------------------------------------------------------------------ facts of one file

_READ_THIS_RUN: dict[str, FileFacts] = {}  # a file read twice in one run (a Dockerfile's installs) is read once


def facts_of(chosen: Chosen, client: IndexClient, settings: ResolveSettings) -> FileFacts:
    """Facts of a chosen wheel: the shipped table, then the cache, then the index (unless offline).

    The table wins over a cache entry for the same file. The cache holds facts under the file's sha256 only when
    the whole file was read and matched it; facts read by ranges are keyed by the URL they came from as well
    (:func:`facts_key`), so a lock claiming one file's hash for another file's URL never changes what a later run
    learns about the first file."""
    sha = chosen.sha256
    url = chosen.url if chosen.url and chosen.url.startswith(("http://", "https://")) else None
    bound = facts_key(sha, url, chosen.size, verified=False)
    if bound and bound in _READ_THIS_RUN:
        return _READ_THIS_RUN[bound]
    if sha and sha in facts_table():
        row = facts_table()[sha]
        return FileFacts(tuple(row["requires"]) if isinstance(row.get("requires"), list) else None, tuple(row.get("tags") or ()),
                         list(row.get("binaries") or []), [], ["facts table"], 0, True)
    if settings.use_cache:
        for key in (sha, bound):
            hit = cached_facts(key) if key else None
            if hit is not None:
                return hit
    if settings.offline:
        return FileFacts(sources=["not read: --offline and not in the cache or the facts table"])
    if url is None:
        return FileFacts(problems=[f"{chosen.filename}: no http(s) URL to read it from"])
    facts = read_remote_wheel(client, url, chosen.size, sha, max_expansion=settings.max_expansion)
    key = facts_key(sha, url, chosen.size, verified=facts.verified)
    if facts.complete and key and settings.use_cache:
        store_facts(key, facts)
    if bound:
        # a second look in this run reads nothing more
        _READ_THIS_RUN[bound] = replace(facts, sources=[*facts.sources], bytes_read=0)
    return facts


# ------------------------------------------------------------------------------ the whole target

def resolve(path: Path, kind: str, declared: Inventory, profile: Profile, settings: ResolveSettings,
            client: IndexClient | None = None) -> Inventory:
    """The files the target resolves to on ``profile``, and their facts, as an inventory."""
    python = settings.python_version or profile.python_version
    client = client or IndexClient()
    for index in (*settings_index_urls(settings), *(i.url for i in declared.indexes)):
        client.use_credentials_of(index)
    inventory = Inventory(context="declared")
    started = time.monotonic()
    if kind in ("pylock", "uv-lock"):
        chosen = _lock_choices(path, profile, python)
        # What the default install puts on the target: entries whose markers exclude linux/aarch64 (another
        # fork of a uv.lock, a pylock marker) or that only an extra or a group installs are not judged here.
        from envcheck.knowledge.builds import installs_on

        locked = [p for p in declared.packages if p.role == Role.LOCK]
        wanted = {(p.name, p.version) for p in locked if p.scope is None and installs_on(p, profile)}
        known = {(p.name, p.version) for p in locked}
        chosen = [c for c in chosen if (c.name, c.version) in wanted or (c.name, c.version) not in known]
    elif kind in ("requirements", "freeze", "pyproject"):
        freeze = kind == "freeze" or declared.context == "installed"
        key = _resolution_key(path, declared, profile, settings, python, freeze)
        hit = _cached_resolution(key) if settings.use_cache else None
        if hit is not None:
            chosen, conflict = hit
        else:
            if kind == "pyproject":
                chosen, conflict = _resolve_pyproject(path, declared, profile, settings, python)
            else:
                chosen, conflict = uv_compile(path, profile, settings, python, no_deps=freeze)
            if settings.use_cache:
                _store_resolution(key, chosen, conflict)
        if conflict and not chosen:
            inventory.resolved.append(ResolvedFile(path.name, None, "conflict", reason=redact_text(conflict_pair(conflict)),
                                                   sources=("resolver",), location=_conflict_line(path, conflict)))
            return inventory
    elif kind == "dockerfile":
        chosen = []
        for install, requirements in dockerfile_installs(declared):
            where = f"{path}:{install.location.line if install.location else '?'}"
            try:
                found, conflict = _resolve_lines(requirements, install, profile, settings, python)
            except (ServiceError, InputError) as exc:  # one install's failure never hides the others
                message = re.sub(r"^\S*requirements\.txt", where, exc.message)
                inventory.problems.append(ReadProblem(redact_text(message), install.location, service=isinstance(exc, ServiceError)))
                continue
            shipped = _shipped_packages(declared, install)
            if shipped and found:
                found = _keep_shipped(found, shipped, requirements, profile, client, settings)
            if conflict and not found:
                inventory.resolved.append(ResolvedFile(path.name, None, "conflict", reason=redact_text(conflict_pair(conflict)),
                                                       sources=("resolver",), location=install.location))
            chosen += found
    else:
        raise InputError(f"{path}: --resolve reads requirements, freeze, pyproject, uv.lock, pylock files and Dockerfiles, not {kind} inputs", str(path))
    for item in chosen:
        _add(inventory, item, client, settings)
    inventory.host = replace(inventory.host, resolve={"python_version": python, "platform": uv_platform(profile), "files": len(chosen),
                                 "requests": client.traffic.requests, "bytes_read": client.traffic.bytes,
                                 "seconds": round(time.monotonic() - started, 3)})
    return inventory


def _add(inventory: Inventory, item: Chosen, client: IndexClient, settings: ResolveSettings) -> None:
    url = redact(item.url) if item.url else None
    record = ResolvedFile(item.name, item.version, item.kind, item.filename, url, item.sha256, item.size,
                          (item.source,), 0, item.reason, item.location)
    requires: tuple[str, ...] | None = None
    if item.problem:
        inventory.problems.append(ReadProblem(item.problem, item.location))
    elif item.kind == "wheel":
        try:
            facts = facts_of(item, client, settings)
        except FileProblem as exc:
            inventory.problems.append(ReadProblem(exc.message, item.location))
            facts = FileFacts(sources=["index"])
        except ServiceError as exc:
            inventory.problems.append(ReadProblem(exc.message, item.location, service=True))
            facts = FileFacts()
        requires = facts.requires
        record = replace(record, sources=(item.source, *facts.sources), bytes_read=facts.bytes_read)
        for problem in facts.problems:
            inventory.problems.append(ReadProblem(f"{url or item.filename}!{problem}", Location(url or str(item.filename))))
        for note in facts.notes:
            inventory.problems.append(ReadProblem(f"{url or item.filename}: {note}", Location(url or str(item.filename)), note=True))
        where = url or str(item.filename)
        for data in facts.binaries:
            values = {k: v for k, v in data.items() if k != "member"}
            binary = binary_from_json(values)
            inventory.binaries.append(replace(binary, distribution=item.name, location=Location(where, member=data.get("member"))))
        parsed = parse_wheel_name(item.filename or "")
        inventory.wheels.append(Wheel(item.filename or "", item.name, item.version or "", parsed.tags if parsed else facts.tags,
                                      requires or (), Location(where)))
    inventory.resolved.append(record)
    inventory.packages.append(Package(name=item.name, version=item.version, specifier=f"=={item.version}" if item.version else "",
                                      requires=requires, role=Role.RESOLVED, location=item.location))


def index_entries(settings: ResolveSettings) -> list[PackageIndex]:
    """The index options given on the command line, as inventory facts (redacted)."""
    out = []
    if settings.index_url:
        out.append(PackageIndex(redact(settings.index_url), IndexOption.INDEX_URL))
    out += [PackageIndex(redact(u), IndexOption.EXTRA_INDEX_URL) for u in settings.extra_index_urls]
    out += [PackageIndex(redact(u), IndexOption.FIND_LINKS) for u in settings.find_links]
    return out


RESOLVABLE = ("requirements", "freeze", "pyproject", "uv-lock", "pylock", "dockerfile")


def resolved_reader(name: str, kind: str, read_declared: Any, settings: ResolveSettings, profile_name: str) -> Any:
    """A target reader that reads the file as usual, then adds what it resolves to on the profile.

    The resolved facts come first in the inventory (the exact versions and Requires-Dist of what would be
    installed win over the file's own words). An unreachable index is a service problem next to whatever
    was read (exit code 3 with partial results), never a lost target.
    """
    from envcheck.profile import load_profile

    def read() -> Inventory:
        declared: Inventory = read_declared()
        if kind not in RESOLVABLE:
            return declared
        profile = load_profile(profile_name)
        try:
            inventory = resolve(Path(name), kind, declared, profile, settings)
        except ServiceError as exc:
            inventory = Inventory(problems=[ReadProblem(redact_text(exc.message), Location(name), service=True)])
        except InputError as exc:
            inventory = Inventory(problems=[ReadProblem(redact_text(exc.message), Location(exc.path or name, line=exc.line))])
        inventory.extend(declared)
        inventory.indexes.extend(index_entries(settings))
        inventory.context = declared.context
        return inventory

    return read
