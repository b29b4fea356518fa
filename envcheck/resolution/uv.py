"""Resolving with uv for the target platform, and reading uv's words when it refuses."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from envcheck.config import env
from envcheck.errors import InputError, ServiceError, missing_extra
from envcheck.inspect.wheel_tags import canonical
from envcheck.model import IndexOption, Inventory, Location, Package, PackageIndex, Role
from envcheck.resolution.context import Chosen, ResolveContext, ResolveSettings
from envcheck.resolution.locks import lock_choices
from envcheck.resolution.platform import uv_platform
from envcheck.services.package_index import redact
from envcheck.sources import referenced

_NETWORK_WORDS = ("error sending request", "Failed to fetch", "dns error", "Connection refused", "connection error",
                  "operation timed out", "tcp connect error", "Could not connect", "failed to lookup address",
                  "Request failed after", "os error 111", "status code 5",
                  # git sources (pkg @ git+https://...): git's own words when the host is unreachable
                  "Could not resolve host", "Failed to connect to")


def find_uv(settings: ResolveSettings) -> str:
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
    raise missing_extra("--resolve", "uv (a resolver that resolves for another platform)", "resolve",
                        ", put uv on PATH, or run without --resolve")


def pip_config_args(settings: ResolveSettings) -> list[str]:
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
    urls = [arg for arg in pip_config_args(settings) if "://" in arg]
    for name in ("UV_INDEX_URL", "UV_DEFAULT_INDEX", "UV_EXTRA_INDEX_URL", "UV_INDEX"):
        urls += [word.split("=", 1)[-1] for word in (env(name) or "").split()]
    return urls


def uv_compile(path: Path, ctx: ResolveContext, no_deps: bool, cwd: Path | None = None,
               shown: Path | None = None) -> tuple[list[Chosen], str]:
    """Resolve ``path`` with uv for the target: the chosen files, and uv's words when it refused. uv runs in
    ``cwd`` (default: the file's folder) to read that project's configuration; ``shown`` is the user's
    file."""
    settings, profile, python = ctx.settings, ctx.profile, ctx.python
    uv = find_uv(settings)
    user_file = shown or path
    with tempfile.TemporaryDirectory(prefix="envcheck-resolve-") as tmp:
        out = Path(tmp) / "pylock.resolve.toml"
        cmd = [uv, "pip", "compile", str(path.resolve()), "--python-platform", uv_platform(profile), "--python-version", python,
               "--format", "pylock.toml", "-o", str(out), "--no-header", "--color", "never", "--no-python-downloads",
               # resolving for the target needs no interpreter of the project's kind here: a project's
               # python-preference = "only-managed" would end in "No interpreter found" on this machine
               "--python-preference", "system",
               *pip_config_args(settings)]
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
            if settings.offline and _offline_miss(words):
                raise ServiceError(f"{user_file}: --offline and uv's cache lacks what this resolution needs: {_last(words)}")
            if "No solution found" in words or "unsatisfiable" in words:
                return _no_matching_wheel(words, user_file), words
            if any(w in words for w in _NETWORK_WORDS):
                raise ServiceError(f"{user_file}: a package index or source host did not answer while uv resolved: "
                                   f"{redact_text(_last(words))}")
            raise InputError(f"{user_file}: uv could not resolve this input: {redact_text(_last(words))}", str(user_file))
        if not out.is_file():
            raise InputError(f"{user_file}: uv wrote no lock file", str(user_file))
        chosen = lock_choices(out, profile, python)
    text = user_file.read_text(encoding="utf-8", errors="replace") if user_file.is_file() else ""
    return [replace(c, location=line_of(user_file, text, c.name), source="resolver") for c in chosen], ""


def _offline_miss(words: str) -> bool:
    """Under --offline uv refuses what its cache lacks with a resolver's words ("X was not found in the cache", or,
    beside --find-links, "there is no version of X"): no claim about the index or the requirements."""
    lower = words.lower()
    return ("offline" in lower or "network" in lower or "not found in the cache" in lower
            or "there is no version of" in lower)


def _no_matching_wheel(words: str, path: Path) -> list[Chosen]:
    """uv's "X==V has no wheels with a matching platform tag" (and no sdist): no file fits the target."""
    text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
    found = [(m, "not found on the configured indexes") for m in re.finditer(
        r"Because ([A-Za-z0-9._-]+)(?:==(\S+?))? was not found in the package registry", words)]
    found += [(m, "the index serves no such version at all: the install always fails")
              for m in re.finditer(r"Because there is no version of ([A-Za-z0-9._-]+)==(\S+?) and", words)]
    for m in re.finditer(r"Because (?:only )?([A-Za-z0-9._-]+)==(\S+?) has no wheels with a matching platform tag", words):
        hint = re.search(rf"Wheels are available for `{re.escape(m.group(1))}` \(v[^)]*\) on the following platforms?: ([^.]*)", words)
        found.append((m, f"wheels only for {hint.group(1).replace('`', '')}" if hint
                      else "no wheel with a matching platform tag"))
    # one unsatisfiable resolution, one finding per package: uv explains every version it backtracked through
    tried: dict[str, list[tuple[re.Match[str], str]]] = {}
    for m, reason in found:
        tried.setdefault(canonical(m.group(1)), []).append((m, reason))
    chosen = []
    for name, [(m, reason), *more] in tried.items():
        others = list(dict.fromkeys(o.group(2) for o, _ in more if o.group(2) and o.group(2) != m.group(2)))
        if others:
            reason += f"; nor for {', '.join(others)}, the other versions the resolver tried"
        where = line_of(path, text, m.group(1))
        chosen.append(Chosen(name, m.group(2), "none", reason=reason[:300],
                             location=where if where.line is not None else conflict_line(path, words)))
    return chosen


def conflict_line(path: Path, words: str) -> Location:
    text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
    for name in re.findall(r"([A-Za-z0-9][A-Za-z0-9._-]*)(?:==|>=|<=|~=|!=|<|>)", conflict_pair(words)):
        found = line_of(path, text, name)
        if found.line is not None:
            return found
    return Location(str(path))


def line_of(path: Path, text: str, name: str) -> Location:
    """The line that names ``name`` in the user's file: at a line's start (requirements), else quoted (TOML lists)."""
    spelled = "[-_.]".join(map(re.escape, re.split("[-_.]", name)))
    m = (re.search(rf"^\s*{spelled}(?![\w.-])", text, re.I | re.M)
         or re.search(rf"[\"']\s*{spelled}(?![\w.-])", text, re.I))
    return Location(str(path), line=text.count("\n", 0, m.start()) + 1 if m else None)


def _clean(text: str) -> str:
    """uv's error in one line, from its first ``error:`` on."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)
    raw = text.splitlines()
    first = next((i for i, line in enumerate(raw) if line.lstrip().startswith(("error:", "×"))), 0)
    lines = [re.sub(r"^[\s×╰─▶│├╭╮╯:]+", "", line).strip() for line in raw[first:]]
    lines = [re.sub(r"^(error|cause):\s*", "", line) for line in lines]
    return " ".join(line for line in lines if line and not line.startswith("warning:") and "is not available" not in line)


def _last(words: str) -> str:
    return words[-400:] if words else "no message"


def redact_text(text: str) -> str:
    return re.sub(r"[a-z][a-z0-9+.-]*://\S+", lambda m: redact(m.group(0)), text)


def conflict_pair(words: str) -> str:
    """The resolver's reason in one sentence: ``A depends on B and you require C`` where uv says so."""
    m = re.search(r"Because .*", words)
    return (m.group(0) if m else words).split(" hint:", 1)[0][:600]


def resolve_pyproject(path: Path, declared: Inventory, ctx: ResolveContext) -> tuple[list[Chosen], str]:
    """A pyproject's own dependencies (not its extras or groups), resolved in its folder (for its
    ``[tool.uv]``) without building the project itself."""
    lines = index_lines(declared.indexes)
    lines += [requirement_line(p) for p in declared.packages
              if p.role == Role.REQUIREMENT and p.scope is None]
    with tempfile.TemporaryDirectory(prefix="envcheck-pyproject-") as tmp:
        req = Path(tmp) / "requirements.txt"
        req.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return uv_compile(req, ctx, no_deps=False, cwd=path.resolve().parent, shown=path)


def index_lines(indexes: Iterable[PackageIndex], where: Location | None = None) -> list[str]:
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


def requirement_line(pkg: Package) -> str:
    extras = f"[{','.join(pkg.extras)}]" if pkg.extras else ""
    text = f"{pkg.name}{extras} @ {pkg.url}" if pkg.url else f"{pkg.name}{extras}{pkg.specifier}"
    return text + (f"; {pkg.marker}" if pkg.marker else "")


# A requirements line that names a local folder or file: `-e .`, `--editable=./pkg`, `./pkg[gpu]`, `file:../x`.
_LOCAL_LINE = re.compile(r"\s*(?:(?:-e|--editable)(?:\s+|\s*=\s*))?(?:file:(?://)?)?(?P<path>\.{1,2}(?:/[^\s;#\[]*)?|/[^\s;#\[]*)")
_PATH_OPTION = re.compile(r"(?P<flag>\s*(?:-[rcef]|--requirement|--constraint|--editable|--find-links)(?:\s+|\s*=\s*))(?P<path>[^\s:]+)(?=\s|$)")


def without_absent_projects(path: Path, tmp: Path) -> tuple[Path, list[tuple[Path, int, str, Path]]]:
    """``path`` as uv should read it, and the local projects left out as (file, line, text, folder): ``-e .`` in a
    requirements file (or in one it includes with ``-r``/``-c``) checked without its project names no pyproject.toml
    or setup.py (uv and pip stop there); the rest still resolves. As pip and uv read them, ``-r``/``-c`` paths are
    relative to the file that names them and local projects to the working folder, where uv runs: ``path``'s folder.
    A file that leaves something out is copied to ``tmp`` with its relative paths made absolute."""
    absent: list[tuple[Path, int, str, Path]] = []
    copy = _without_absent(path, path.resolve().parent, tmp, absent, set())
    return (copy or path), absent


def _without_absent(path: Path, cwd: Path, tmp: Path, absent: list[tuple[Path, int, str, Path]], seen: set[Path]) -> Path | None:
    """The copy of ``path`` that leaves out absent local projects (its own and its includes'), or None: none."""
    from envcheck.sources.requirements import MAX_INCLUDES
    real = path.resolve()
    if real in seen or len(seen) >= MAX_INCLUDES:
        return None
    seen.add(real)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    folder, out, changed = real.parent, list[str](), False
    for number, line in enumerate(lines, 1):
        local = _LOCAL_LINE.match(line)
        if local is not None and not line.lstrip().startswith("#"):
            where = referenced(cwd, local["path"])
            if not where.is_file() and not any((where / name).is_file() for name in ("pyproject.toml", "setup.py", "setup.cfg")):
                absent.append((path, number, line.strip(), where))
                changed = True
                continue
            line = line[:local.start("path")] + str(where.resolve()) + line[local.end("path"):]
        elif (option := _PATH_OPTION.match(line)) is not None and not os.path.isabs(option["path"]):
            named = folder / option["path"]
            included = (_without_absent(path.parent / option["path"], cwd, tmp, absent, seen)
                        if option["flag"].strip().rstrip("=").strip() in ("-r", "-c", "--requirement", "--constraint") else None)
            changed = changed or included is not None
            line = option["flag"] + str(included or named) + line[option.end("path"):]
        out.append(line)
    if not changed:
        return None
    copy = tmp / f"{len(list(tmp.iterdir()))}-{path.name}"
    copy.write_text("\n".join(out) + "\n", encoding="utf-8")
    return copy
