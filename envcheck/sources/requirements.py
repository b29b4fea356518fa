"""requirements.txt, constraints files and ``pip freeze`` output, with pip's full file syntax (includes,
options, markers, continuations, URL requirements) and ``# envcheck: ignore=RULE reason`` pragmas."""

from __future__ import annotations

import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

from envcheck.errors import InputError
from envcheck.inspect import shell_words
from envcheck.inspect.pip_args import _INDEX_OPTIONS, _PER_REQUIREMENT_OPTION, parse_requirement_text, shown
from envcheck.inspect.pragma import PRAGMA
from envcheck.limits import MAX_TEXT_BYTES, open_input
from envcheck.model import (
    InstallCommand,
    Inventory,
    Location,
    Package,
    PackageIndex,
    Pragma,
    ReadProblem,
    Role,
)
from envcheck.sources import ReadOptions, referenced

KIND = "requirements"
MAX_BYTES = MAX_TEXT_BYTES  # --max-text-size; docs/limits.md
# Options pip takes in a requirements file (`pip install -r`'s file format), by their long and short names.
_FILE_OPTIONS = frozenset({
    "-r", "--requirement", "-c", "--constraint", "-e", "--editable", "-i", "--index-url", "--extra-index-url",
    "--no-index", "-f", "--find-links", "--no-binary", "--only-binary", "--prefer-binary", "--require-hashes",
    "--pre", "--trusted-host", "--use-feature", "--config-settings", "--global-option", "--hash",
})
_URL_REQUIREMENT = re.compile(r"(?i)^(?:git\+|hg\+|svn\+|bzr\+|https?://|file:)\S+(?:\s+;\s*\S.*)?$")
_INLINE_COMMENT = re.compile(r"(?:^|\s+)#.*$")
# Folders that hold nothing but requirement files (LLaMA-Factory's requirements/metrics.txt, vLLM's requirements/cuda.txt)
_REQUIREMENTS_FOLDER = re.compile(r"(?i)(?:requirements?|reqs?|constraints?)(?:[-_.]d)?")


def sniff(path: Path, head: bytes) -> bool:
    """Every non-comment line is a requirement or a requirements-file option, and one says what only a
    requirements file says (a specifier, extras, a marker, a URL, an option): labels.txt is not one."""
    if b"\x00" in head:
        return False
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return False
    lines = text.replace("\\\r\n", "").replace("\\\n", "").splitlines()
    if len(head) >= 4096 and lines:
        lines.pop()  # cut at 4 KiB: the last line may be a part of one
    telling = False
    checked = 0
    for raw in lines:
        line = _INLINE_COMMENT.sub("", raw).strip()
        if not line:
            continue
        checked += 1
        said = _requirement_line(line)
        if said is None:
            return False
        telling = telling or said
    # in a folder named for requirements, bare names are enough, and so is no requirement at all (an empty
    # requirements/optional.txt, or one of comments: the requirements hook takes such files too)
    folder = path.suffix in (".txt", ".in") and _REQUIREMENTS_FOLDER.fullmatch(path.parent.name) is not None
    return telling or folder


def _requirement_line(line: str) -> bool | None:
    if line.startswith("-"):
        name = re.split(r"[\s=]", line, maxsplit=1)[0] if line.startswith("--") else line[:2]  # -rother.txt is -r
        return True if name in _FILE_OPTIONS else None
    if _URL_REQUIREMENT.match(line):
        return True
    text = _PER_REQUIREMENT_OPTION.split(line)[0].strip()
    try:
        req = Requirement(text)
    except InvalidRequirement:
        return None
    return bool(req.specifier or req.url or req.marker or req.extras)


def text_limit(options: ReadOptions) -> int:
    value = options.max_text_bytes
    return value if value is not None and value > 0 else MAX_BYTES


def read_text_file(path: Path, max_bytes: int = MAX_BYTES) -> tuple[str, list[ReadProblem]]:
    """Binary junk and oversize files raise InputError; bad UTF-8 is a problem, not a stop."""
    try:
        if (size := path.stat().st_size) > max_bytes:
            raise InputError(f"{path} is {size} bytes, over the {max_bytes}-byte limit for a text input (raise it with --max-text-size)", str(path))
        with open_input(path) as fh:  # bounded: a FIFO reports size 0 and may never end; a device is refused
            data = fh.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise InputError(f"{path} is over the {max_bytes}-byte limit for a text input (raise it with --max-text-size)", str(path))
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}", str(path)) from exc
    if (nul := data.find(b"\x00", 0, 65536)) >= 0:
        raise InputError(f"{path} is not a text file (NUL byte at offset {nul})", str(path), offset=nul)
    try:
        return data.decode("utf-8-sig"), []
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        return data.decode("utf-8", errors="replace"), [ReadProblem(
            f"not valid UTF-8 at byte offset {exc.start}; read with replacement characters",
            Location(str(path), line=line, offset=exc.start))]


# One physical line as str.splitlines splits them (pip's way: form feeds and U+2028 too), its break kept.
_PHYSICAL_LINE = re.compile("[^\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]*(?:\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029])?")


def logical_lines(text: str) -> Iterator[tuple[int, str, str | None]]:
    """(first line number, joined text without comment, pragma comment) for each logical line, one at a time: a
    reader that stops early (too many requirements) never holds a million lines."""
    buf: list[str] = []
    start = 0
    # Lines split the way pip splits them (form feeds and U+2028 too), numbered the way editors count them.
    physical = 1
    for found in _PHYSICAL_LINE.finditer(text):
        raw_line = found.group()
        if not raw_line:
            break  # the empty match at the end of the text
        raw = raw_line.rstrip("\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
        number = physical
        physical += 1 if raw_line.endswith(("\n", "\r")) else 0
        if not buf:
            start = number
        stripped = raw.rstrip()
        if stripped.endswith("\\") and not stripped.lstrip().startswith("#"):
            buf.append(stripped[:-1])
            continue
        buf.append(raw)
        joined = " ".join(part.strip() for part in buf)
        buf = []
        pragma = joined if PRAGMA.search(joined) and joined.lstrip().startswith("#") else None
        yield start, _without_comment(joined).strip(), pragma
    if buf:
        yield start, _without_comment(" ".join(p.strip() for p in buf)).strip(), None


def _without_comment(line: str) -> str:
    """``line`` up to a ``#`` at the start or after whitespace, as pip strips it (a regex is quadratic)."""
    at = line.find("#")
    while at > 0 and not line[at - 1].isspace():
        at = line.find("#", at + 1)
    return line if at < 0 else line[:at]


# Requirements (or lock entries) one target may hold: real ones have a few thousand at most; this bounds the
# time a target takes, not only its size (16 MiB of short lines are 200 000 requirements).
MAX_PACKAGES = 20_000


# Lines of one target that cannot be read, each an ERROR: past this the file is no requirements file (a binary, a
# text of another kind) and the rest is not read (a million bad lines made a million findings).
MAX_PROBLEMS = 1_000


def too_many_problems() -> str:
    return f"more than {MAX_PROBLEMS} lines of this target could not be read: the rest was not read (is it a requirements file?)"


def too_many_packages() -> str:
    return f"more than {MAX_PACKAGES} requirements in this target: the rest was not read (no real project has this many)"


# Files one target may include (-r/-c, all levels together): past this, the rest is a read problem.
MAX_INCLUDES = 256
MAX_DEPTH = 20


@dataclass
class _Includes:
    """What one target's include graph has cost so far: each file read once, files and bytes bounded."""

    max_bytes: int
    read: set[tuple[Path, str]] = field(default_factory=set)
    bytes: int = 0


def read(path: Path, options: ReadOptions) -> Inventory:
    inventory = Inventory()
    _read_into(path, options, inventory, role=Role.REQUIREMENT, seen=set(), depth=0, includes=_Includes(text_limit(options)))
    if options.kind == "freeze" or "freeze" in path.name.lower() or _looks_like_freeze(inventory):
        inventory.context = "installed"
        inventory.packages = [_installed(p) for p in inventory.packages]
    names = tuple(p.name for p in inventory.packages if p.role == "requirement")  # the file is one install
    inventory.installs.insert(0, InstallCommand(tool="requirements", packages=names, options=(),
                                                text=f"pip install -r {path.name}",
                                                location=Location(str(path))))
    return inventory


def _installed(pkg: Package) -> Package:
    return replace(pkg, installed=True, role=Role.INSTALLED) if pkg.role == "requirement" else pkg


def _looks_like_freeze(inventory: Inventory) -> bool:
    pkgs = [p for p in inventory.packages if p.role == "requirement"]
    if len(pkgs) < 3 or inventory.indexes:
        return False
    exact = all(p.version is not None or (p.url or "").startswith("file:") for p in pkgs)
    return exact and any((p.url or "").startswith("file:") for p in pkgs)


def _read_into(path: Path, options: ReadOptions, inventory: Inventory, role: Role, seen: set[Path], depth: int,
               includes: _Includes, included_from: Location | None = None) -> None:
    try:
        resolved = path.resolve()
    except (RuntimeError, OSError) as exc:  # a symlink loop: RuntimeError up to 3.12, OSError(ELOOP) after
        if included_from is None:
            raise InputError(f"cannot read {path}: {exc}", str(path)) from None
        inventory.problems.append(ReadProblem(f"cannot read {path}: {exc}", included_from))
        return
    if resolved in seen:
        inventory.problems.append(ReadProblem(f"include cycle: {path} is already being read", included_from))
        return
    if depth > MAX_DEPTH:
        inventory.problems.append(ReadProblem(f"includes nested more than {MAX_DEPTH} deep at {path}", included_from))
        return
    if included_from is not None and options.root is not None and not _inside(resolved, options.root):
        inventory.problems.append(ReadProblem(
            f"{path} was not read: it is outside the build context {options.root} (in the image that path is "
            "another file, which envcheck cannot see)", included_from, note=True))
        return
    if (resolved, role) in includes.read:
        return  # included again through another file: its lines are already read
    if included_from is not None and len(includes.read) >= MAX_INCLUDES:
        inventory.problems.append(ReadProblem(f"{path} was not read: this target already includes {MAX_INCLUDES} files (-r/-c)", included_from))
        return
    seen = seen | {resolved}
    includes.read.add((resolved, role))
    if included_from is not None:
        left = includes.max_bytes - includes.bytes
        try:
            size = _regular_file(path)
            if size > left and includes.bytes > 0:
                raise InputError(f"{path} was not read: with it, this target's files would pass the {includes.max_bytes}-byte "
                                 "limit for text inputs (every included file counts; raise it with --max-text-size)", str(path))
            text, problems = read_text_file(path, left)
        except InputError as exc:
            inventory.problems.append(ReadProblem(exc.message, included_from))
            return
    else:
        text, problems = read_text_file(path, includes.max_bytes)
    includes.bytes += len(text)
    inventory.problems.extend(problems)
    pending_pragma: tuple[tuple[str, ...], str] | None = None
    for number, line, pragma in logical_lines(text):
        loc = Location(str(path), line=number)
        if pragma is not None:
            if m := PRAGMA.search(pragma):
                pending_pragma = (tuple(r.strip() for r in m.group(1).split(",") if r.strip()), m.group(2).strip())
            continue
        if not line:
            continue
        if pending_pragma is not None:
            inventory.pragmas.append(Pragma(pending_pragma[0], pending_pragma[1], loc))
            pending_pragma = None
        if line.startswith("-"):
            _option_line(line, loc, path, options, inventory, role, seen, depth, includes)
            continue
        if len(inventory.packages) >= MAX_PACKAGES:
            inventory.problems.append(ReadProblem(too_many_packages(), loc))
            return
        pkg = parse_requirement_text(line, loc, role=role)
        if isinstance(pkg, ReadProblem):
            if len(inventory.problems) >= MAX_PROBLEMS:
                inventory.problems.append(ReadProblem(too_many_problems(), loc))
                return
            inventory.problems.append(pkg)
        elif pkg is not None:
            inventory.packages.append(pkg)


def _regular_file(path: Path) -> int:
    """Includes must be regular files: ``-r /dev/stdin`` or a FIFO blocks forever, /dev/zero never ends."""
    try:
        info = path.stat()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}", str(path)) from exc
    mode = info.st_mode
    if not stat.S_ISREG(mode):
        what = "a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "a device or socket"
        raise InputError(f"{path} is {what}, not a regular file: envcheck reads included files only when they are regular files", str(path))
    return info.st_size


def _inside(resolved: Path, root: Path) -> bool:
    try:
        return resolved.is_relative_to(root.resolve())
    except (OSError, RuntimeError):
        return False


def _option_line(line: str, loc: Location, path: Path, options: ReadOptions, inventory: Inventory, role: Role,
                 seen: set[Path], depth: int, includes: _Includes | None = None) -> None:
    """One option line (``-r``, ``--index-url``, ``-e``, ...) of a requirements file (or a conda file's pip list)."""
    if includes is None:
        includes = _Includes(text_limit(options))
    try:
        words = shell_words.split(line)
    except ValueError as exc:
        inventory.problems.append(ReadProblem(f"cannot split option line: {exc}", loc))
        return
    opt, eq, value = words[0].partition("=")
    if not eq and len(words) > 1:
        value = words[1]
    elif not eq and len(opt) > 2 and opt[:2] in ("-r", "-c", "-e", "-i", "-f"):
        opt, value = opt[:2], opt[2:]
    if opt in ("-r", "--requirement", "-c", "--constraint"):
        if not value:
            inventory.problems.append(ReadProblem(f"{opt} needs a file name", loc))
            return
        if "://" in value:
            inventory.problems.append(ReadProblem(f"remote include {value} was not fetched (envcheck reads local files only)", loc))
            return
        child_role = Role.CONSTRAINT if opt in ("-c", "--constraint") else role
        _read_into(referenced(path.parent, value), options, inventory, child_role, seen, depth + 1, includes, included_from=loc)
    elif opt in _INDEX_OPTIONS:
        if value:
            inventory.indexes.append(PackageIndex(value, _INDEX_OPTIONS[opt], loc))
    elif opt in ("-e", "--editable"):
        pkg = parse_requirement_text(value, loc, role=role)
        if isinstance(pkg, ReadProblem):
            inventory.problems.append(pkg)
        elif pkg is not None:
            inventory.packages.append(replace(pkg, editable=True))
    elif opt in ("--no-index", "--pre", "--prefer-binary", "--require-hashes", "--no-binary", "--only-binary",
                 "--trusted-host", "--use-feature", "--config-settings", "--global-option", "--hash"):
        inventory.installs.append(InstallCommand(tool="requirements", packages=(), options=(line,), text=line, location=loc))
    else:
        inventory.problems.append(ReadProblem(f"unknown option line {shown(line)} (pip would reject it)", loc))
