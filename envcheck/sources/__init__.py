"""Sources: one module per input kind (``KIND``, ``read(path, options) -> Inventory``, optionally
``sniff(path, head)``). Each reads, never judges: what it survives goes into ``Inventory.problems``, what it
cannot read at all raises InputError. Imported lazily, so that a pre-commit run on one file stays light."""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from envcheck import kinds
from envcheck.errors import InputError, UsageError
from envcheck.limits import open_input

if TYPE_CHECKING:
    from envcheck.model import Inventory, Location


@dataclass(frozen=True)
class ReadOptions:
    """Options that change what a source reads (not how checks judge)."""

    kind: str | None = None  # forced kind (--kind)
    build_args: Mapping[str, str] = field(default_factory=dict)  # Dockerfile --build-arg
    deep_fatbin: bool = False  # scan every section for fatbin containers
    use_cache: bool = True
    scan_workers: int | None = None  # worker processes of a folder scan (None: ENVCHECK_SCAN_WORKERS, else the cores)
    target: str | None = None  # Dockerfile build target stage (--target)
    max_text_bytes: int | None = None  # largest text input (--max-text-size; None: ENVCHECK_MAX_TEXT_SIZE or built-in)
    max_expansion: float | None = None  # a wheel's binaries may expand this many times (--max-expansion; None: default)
    # A folder scan searches a data section of split_bytes or more in pieces of piece_bytes (None: defaults)
    split_bytes: int | None = None
    piece_bytes: int | None = None
    # A pyproject.toml is read with the uv.lock beside it (uv sync installs the lock's versions); one a build
    # copies is read alone (pip install . resolves afresh, uv sync reads the lock the build copied).
    with_lock: bool = True
    # Files a read includes (-r/-c, workspace members) must lie under this folder: a file a Dockerfile copies
    # names its includes inside the image, so the build context is all of the host envcheck may read for it.
    root: Path | None = None


def move_locations(inventory: Inventory, moved: Callable[[Location | None], Location | None], *facts: str) -> Inventory:
    for name in facts:
        getattr(inventory, name)[:] = [replace(fact, location=moved(fact.location)) for fact in getattr(inventory, name)]
    return inventory


def referenced(folder: Path, name: str | Path) -> Path:
    """The file an input names relative to ``folder`` (``-r ../b/req.txt``, a compose build context), spelled
    without ``.``/``..`` steps so that one file has one name in a report. Lexical, not resolved (a symlink
    the user named stays as named), and only where the tidy spelling reaches the same file: ``a/../b`` is not
    ``b`` when ``a`` is a symlink to another folder."""
    joined = folder / name
    tidy = Path(os.path.normpath(joined))
    if tidy == joined:
        return joined
    try:
        return tidy if os.path.realpath(tidy) == os.path.realpath(joined) else joined
    except (OSError, ValueError):  # a NUL, a name too long: the caller reports it as it was written
        return joined


def interpreter(requested: str) -> str:
    """The program ``--python REQUESTED`` names: a path, a virtual environment's folder, or a name on PATH.
    What it cannot be is said as it is (a folder, a file that is no program), not as "no such file"."""
    import shutil

    path = Path(requested)
    if os.sep not in requested and (found := shutil.which(requested)):
        return found
    usage = "--python takes a Python interpreter (e.g. .venv/bin/python)"
    if path.is_dir():
        for inside in (path / "bin" / "python", path / "bin" / "python3", path / "Scripts" / "python.exe"):
            if os.access(inside, os.X_OK) and inside.is_file():
                return str(inside)  # a virtual environment's folder, as uv's --python takes it
        raise InputError(f"--python {requested}: is a folder with no bin/python; {usage}", requested)
    if path.is_file():
        if os.access(path, os.X_OK):
            return str(path.absolute())  # "./py" is not looked up on PATH
        raise InputError(f"--python {requested}: is a file but not a program; {usage}; to check {requested} "
                         f"itself, name it as a PATH (envcheck {requested})", requested)
    where = "no such file" + ("" if os.sep in requested else f" here and no program {requested} on PATH")
    raise InputError(f"--python {requested}: {where}; {usage}", requested)


def module_for(kind: str) -> ModuleType:
    row = kinds.get(kind)
    if row is None:
        raise UsageError(f"unknown input kind {kind!r}; known: {', '.join(kinds.path_kinds())}")
    return importlib.import_module(row.module)


def detect(path: Path) -> str | None:
    """The input kind of ``path`` by name (the kinds table) or, where that says nothing, by content."""
    if path.is_dir():
        return "folder" if is_environment(path) else "project"
    by_name = kinds.by_file_name(path.name)
    if by_name is not None:
        return by_name.name
    if not path.is_file():
        return None  # a pipe (<(pip freeze)) or device: sniffing would eat what the reader needs; use --kind
    head = _head(path)
    if head is None:
        return None
    for row in kinds.KINDS:
        if row.magic and head.startswith(row.magic):
            return row.name
    sniffed = [row for row in kinds.KINDS if row.sniff]
    # a named file may be recognised more loosely than discovery's (a Kubernetes ConfigMap)
    found = _sniffed(path, head, sniffed, "sniff") or _sniffed(path, head, sniffed, "sniff_named")
    return found.name if found is not None else None


# Folders discovery never enters, and why (-v lists them).
_SKIP_DIRS = {
    ".git": "version control", ".hg": "version control", ".svn": "version control",
    "node_modules": "node_modules", ".venv": "a virtualenv (by its name)", "venv": "a virtualenv (by its name)",
    "__pycache__": "a cache", ".tox": "tox environments", ".nox": "nox environments",
    ".mypy_cache": "a cache", ".ruff_cache": "a cache", ".pytest_cache": "a cache",
}


def environment_reason(folder: Path) -> str | None:
    """Why ``folder`` holds installed software rather than a project (``*.egg-info`` is one), or None."""
    if folder.name in ("site-packages", "dist-packages"):
        return f"a {folder.name} folder"
    try:
        if (folder / "pyvenv.cfg").is_file():
            return "a virtual environment (pyvenv.cfg)"
        if (folder / "conda-meta").is_dir():
            return "a conda environment (conda-meta)"
        with os.scandir(folder) as it:
            entries = sorted(e.name for e in it)
        for name in entries:
            if name.endswith(".dist-info") and (folder / name / "RECORD").is_file():
                return f"installed distributions ({name} with RECORD)"
        lib = folder / "lib"
        if "lib" in entries and lib.is_dir():
            with os.scandir(lib) as it:
                for entry in it:
                    if entry.name.startswith("python") and (lib / entry.name / "site-packages").is_dir():
                        return f"a Python installation (lib/{entry.name}/site-packages)"
        if (folder / "lib64").is_dir() and (folder / "include").is_dir():
            return "a toolkit tree (lib64 and include, as /usr/local/cuda)"
    except OSError:
        return None  # unreadable: discovery reports it when it tries to enter
    return None


def is_environment(folder: Path) -> bool:
    return environment_reason(folder) is not None


@dataclass
class Discovery:

    files: list[tuple[Path, str]] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    unreadable: list[tuple[Path, str]] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)  # symbolic links to files outside the folder (not followed)
    broken: list[tuple[Path, str]] = field(default_factory=list)  # links named like an input that lead nowhere: (path, target)
    root: str = "."  # the folder walked


def discover_tree(folder: Path) -> Discovery:
    """Input files (by the kinds table's names) in ``folder`` and below; not entered: VCS, cache and installed
    environments' folders, links to folders, what ``.gitignore`` excludes."""
    from envcheck.sources.gitignore import IgnoreRules

    found = Discovery(root=str(folder))
    root_real = os.path.realpath(folder)
    linked: list[tuple[Path, str, str]] = []  # symbolic links to input files inside the folder: (path, kind, target)
    pending: list[tuple[Path, IgnoreRules]] = [(folder, IgnoreRules().add_file(folder / ".gitignore", folder))]
    while pending:
        here, ignores = pending.pop()
        try:
            with os.scandir(here) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            found.unreadable.append((here, exc.strerror or str(exc)))
            continue
        below: list[tuple[Path, IgnoreRules]] = []
        for entry in entries:
            path = here / entry.name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                is_link = entry.is_symlink()
                if not is_dir and is_link and path.is_dir():
                    found.skipped.append((path, "a symbolic link to a folder (not followed)"))
                    continue
                is_file = not is_dir and entry.is_file()
            except OSError as exc:
                found.unreadable.append((path, exc.strerror or str(exc)))
                continue
            if is_dir:
                reason = _SKIP_DIRS.get(entry.name)
                if reason is None:
                    pattern = ignores.excluded(path, is_dir=True)
                    reason = f"excluded by .gitignore ({pattern})" if pattern else environment_reason(path)
                if reason is not None:
                    found.skipped.append((path, reason))
                    continue
                below.append((path, ignores.add_file(path / ".gitignore", path)))
                continue
            row = kinds.by_file_name(entry.name, discovering=True) if is_file or is_link else None
            if row is None and is_file and not is_link:
                candidates = kinds.content_kinds(entry.name, here.name)
                head = _head(path) if candidates else None
                row = _sniffed(path, head, candidates, "sniff") if head is not None else None
            if row is None:
                continue
            if is_link and not is_file:  # named like an input, but the link leads nowhere (or to no file)
                try:
                    found.broken.append((path, os.readlink(path)))
                except OSError as exc:
                    found.unreadable.append((path, exc.strerror or str(exc)))
                continue
            pattern = ignores.excluded(path, is_dir=False)
            if pattern:
                found.skipped.append((path, f"excluded by .gitignore ({pattern})"))
                continue
            if is_link:  # a link never takes envcheck outside the folder, nor reads a file twice
                real = os.path.realpath(path)
                if real != root_real and not real.startswith(root_real.rstrip(os.sep) + os.sep):
                    found.outside.append(str(path))
                    found.skipped.append((path, f"a symbolic link to {real}, outside the folder (not followed)"))
                else:
                    linked.append((path, row.name, real))
                continue
            found.files.append((path, row.name))
        pending.extend(reversed(below))
    checked = {os.path.realpath(path) for path, _kind in found.files}
    for path, kind, real in linked:
        if real in checked:
            found.skipped.append((path, f"a symbolic link to {real}, checked once"))
            continue
        checked.add(real)
        found.files.append((path, kind))
    found.files.sort(key=lambda item: item[0].parts)
    return found


def _head(path: Path) -> bytes | None:
    try:
        with open_input(path, streams=False) as fh:  # a stream's head, read here, would be lost to its reader
            return fh.read(4096)
    except OSError:
        return None


def _sniffed(path: Path, head: bytes, candidates: list[kinds.InputKind], sniffer: str) -> kinds.InputKind | None:
    for row in candidates:
        sniff = getattr(module_for(row.name), sniffer, None)
        if sniff is not None and sniff(path, head):
            return row
    return None


def read_bare_folder(folder: Path, options: ReadOptions, allow_empty: bool = False) -> Any:
    """A folder with no input file that is no environment: its binaries, scanned; none is an InputError."""
    from envcheck.errors import InputError

    inventory = module_for("folder").read(folder, options)
    # a note (links not followed) is not something checked: a folder of such links alone checked nothing
    notes = [p.message for p in inventory.problems if p.note]
    if not (inventory.binaries or inventory.packages or len(notes) < len(inventory.problems) or allow_empty):
        raise InputError(f"nothing to check in {folder}: no dependency file, Dockerfile, compose file, Kubernetes manifest, "
                         "shell script, notebook, wheel or ELF file (`envcheck --allow-empty` accepts that)"
                         + "".join(f"; {note}" for note in notes), str(folder),
                         fix="Pass the project folder or environment you meant (the path may point one level too high "
                             "or low), or a file with --kind; add --allow-empty where an empty folder is expected.")
    return inventory


def discover(folder: Path) -> list[tuple[Path, str]]:
    return discover_tree(folder).files
