"""The walk of a folder scan: which files it opens, in which order, with which links followed
(docs/inventory.md); shared by the scan in this process and the worker processes that list folders ahead."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Mapping
from operator import itemgetter
from pathlib import Path

from envcheck.cache import ScanCache
from envcheck.errors import InputError
from envcheck.model import Location, ReadProblem


def inside(real: str, root_real: str) -> bool:
    return real == root_real or real.startswith(root_real if root_real.endswith(os.sep) else root_real + os.sep)


# What a folder scan opens: files named like a library, archive, object or cubin, and files with an executable
# bit (an ELF file with neither cannot be loaded or run). 95% of a torch environment is never opened.
BINARY_SUFFIXES = (".so", ".a", ".o", ".cubin")
# Names that are source or text whatever their mode: not even stat'ed (20,000 Python files in a torch env).
TEXT_SUFFIXES = (".py", ".pyc", ".pyi", ".pyx", ".pxd", ".h", ".hpp", ".hxx", ".cuh", ".inc", ".c", ".cc", ".cpp",
                 ".cu", ".txt", ".md", ".rst", ".json", ".toml", ".yaml", ".yml", ".cfg", ".ini", ".pth", ".typed",
                 ".html", ".js", ".css", ".csv", ".pem", ".sh")
WALK_PREFIX = "\0walk:"  # walk-cache keys (folders) next to the per-file entries of the same cache


def may_be_binary(name: str, mode: int | None = None) -> bool:
    if name.endswith(BINARY_SUFFIXES) or ".so." in name:
        return True
    return mode is not None and bool(mode & 0o111)


def list_folder(folder: str, root_real: str, problems: list[ReadProblem]) -> dict[str, list[str]] | None:
    """A folder's entries in name order: ``d`` subfolders, ``f`` files to read (and ``*.dist-info/METADATA``),
    ``l`` such files through links inside the root, ``x`` links out of it. None: unlistable (a problem)."""
    dist_info = folder.endswith(".dist-info")
    d: list[str] = []
    f: list[str] = []
    linked: list[str] = []
    x: list[str] = []
    failed: list[tuple[str, ReadProblem]] = []
    try:
        with os.scandir(folder) as it:
            for entry in it:  # in the folder's order; each list is sorted by name below
                name = entry.name
                try:
                    if name.endswith(TEXT_SUFFIXES) and ".so." not in name and entry.is_file(follow_symlinks=False):
                        continue  # a regular source or text file: never opened (most entries of an environment)
                    if entry.is_symlink():
                        if not inside(os.path.realpath(entry.path), root_real):
                            x.append(name)
                            continue
                        try:
                            est = entry.stat()
                        except OSError:
                            continue  # dangling or looping link: nothing to read
                        if stat.S_ISDIR(est.st_mode):
                            d.append(name)
                        elif stat.S_ISREG(est.st_mode) and may_be_binary(name, est.st_mode):
                            linked.append(name)
                    elif entry.is_dir(follow_symlinks=False):
                        d.append(name)
                    elif entry.is_file(follow_symlinks=False) and (
                        may_be_binary(name)
                        or (dist_info and name == "METADATA")
                        or (not name.endswith(TEXT_SUFFIXES) and entry.stat(follow_symlinks=False).st_mode & 0o111)
                    ):
                        f.append(name)
                except OSError as exc:
                    failed.append((name, ReadProblem(f"{entry.path}: cannot stat: {exc.strerror or exc}", Location(entry.path))))
    except OSError as exc:
        problems.append(ReadProblem(f"{folder}: cannot list folder: {exc.strerror or exc}", Location(folder)))
        return None
    if failed:
        problems.extend(problem for _name, problem in sorted(failed, key=itemgetter(0)))
    for names in (d, f, linked, x):
        names.sort()
    return {"d": d, "f": f, "l": linked, "x": x}


# One folder as the walk needs it, in tuples (workers send 7,800 of them; the cheapest to unpickle): the
# problems, by list_folder's kinds the ``x`` names (None: unlistable), the ``f`` names and their stats (a
# string: why none), the ``l`` names, the ``d`` names and their (st_dev, st_ino) (None: no folder, no stat).
FolderFacts = tuple[
    tuple[ReadProblem, ...], "tuple[str, ...] | None", tuple[str, ...], "tuple[os.stat_result | str, ...]",
    tuple[str, ...], tuple[str, ...], "tuple[tuple[int, int] | None, ...]",
]


def folder_facts(folder: str, root_real: str, listing: dict[str, list[str]] | None = None,
                 dir_stats: dict[str, os.stat_result] | None = None) -> FolderFacts:
    """``listing`` (else a fresh one) with the stats the walk needs; ``dir_stats`` gets the subfolders'."""
    problems: list[ReadProblem] = []
    listing = listing or list_folder(folder, root_real, problems)
    if listing is None:
        return tuple(problems), None, (), (), (), (), ()
    prefix = folder if folder.endswith(os.sep) else folder + os.sep
    files: list[os.stat_result | str] = []
    for name in listing["f"]:
        try:
            files.append(os.stat(prefix + name, follow_symlinks=False))
        except OSError as exc:
            files.append(str(exc.strerror or exc))
    dirs: list[tuple[int, int] | None] = []
    for name in listing["d"]:
        try:
            sst = os.stat(prefix + name)
        except OSError:
            dirs.append(None)
            continue
        dirs.append((sst.st_dev, sst.st_ino) if stat.S_ISDIR(sst.st_mode) else None)
        if dir_stats is not None and stat.S_ISDIR(sst.st_mode):
            dir_stats[prefix + name] = sst
    return (tuple(problems), tuple(listing["x"]), tuple(listing["f"]), tuple(files), tuple(listing["l"]),
            tuple(listing["d"]), tuple(dirs))


def takes(name: str, st: os.stat_result, seen_files: set[tuple[int, int]]) -> bool:
    """A regular file not yielded before, a candidate by name or mode or a METADATA file; marks it seen."""
    key = (st.st_dev, st.st_ino)
    if not stat.S_ISREG(st.st_mode) or key in seen_files or not (name == "METADATA" or may_be_binary(name, st.st_mode)):
        return False
    seen_files.add(key)
    return True


def _list_here(folder: str, fst: os.stat_result, root_real: str, cache: ScanCache | None,
               folders: list[tuple[str, os.stat_result]] | None, dir_stats: dict[str, os.stat_result],
               ) -> FolderFacts:
    """One folder listed in this process: recorded in ``folders``, its listing cached by its stat."""
    if folders is not None:
        folders.append((folder, fst))
    key = (fst.st_mtime_ns, fst.st_ino, fst.st_dev, fst.st_ctime_ns)  # ctime: a chmod (made unreadable) too
    listing = cache.get(WALK_PREFIX + folder, key, walk_listing) if cache is not None else None
    facts = folder_facts(folder, root_real, listing, dir_stats)
    if not listing and cache is not None and facts[1] is not None:
        cache.put(WALK_PREFIX + folder, key, {"d": list(facts[5]), "f": list(facts[2]), "l": list(facts[4]),
                                              "x": list(facts[1])})
    return facts


def walk(root: Path | str, problems: list[ReadProblem], outside: list[str],
          cache: ScanCache | None = None, folders: list[tuple[str, os.stat_result]] | None = None,
          listed: Mapping[str, FolderFacts] | None = None,
          ) -> Iterator[tuple[str, os.stat_result]]:
    """The files a folder scan reads under ``root``, with their stat, each real file once. Links are followed
    only inside ``root`` (the others go to ``outside``); devices, FIFOs and sockets are never opened.
    ``folders`` receives each folder with its stat before listing; ``listed``: the workers' listings (most
    folders hold only Python files and subfolders, so empty parts are skipped first)."""
    root = str(root)
    try:
        st = os.stat(root)
    except OSError as exc:
        raise InputError(f"cannot read folder {root}: {exc.strerror or exc}", path=root) from exc
    root_real = os.path.realpath(root)
    seen_dirs = {(st.st_dev, st.st_ino)}
    seen_files: set[tuple[int, int]] = set()
    linked: list[str] = []
    dir_stats = {root: st}
    stack = [root]
    while stack:
        folder = stack.pop()
        if listed is not None:  # the workers' listing; a folder they lack is read here
            facts = listed.get(folder) or folder_facts(folder, root_real)
        else:
            facts = _list_here(folder, dir_stats.pop(folder), root_real, cache, folders, dir_stats)
        probs, x_names, f_names, f_stats, l_names, d_names, d_keys = facts
        if probs:
            problems.extend(probs)
        if x_names is None:
            continue
        prefix = folder if folder.endswith(os.sep) else folder + os.sep
        if x_names:
            outside.extend(prefix + name for name in x_names)
        if f_names:
            for name, got in zip(f_names, f_stats, strict=True):
                path = prefix + name
                if isinstance(got, str):
                    problems.append(ReadProblem(f"{path}: cannot stat: {got}", Location(path)))
                elif takes(name, got, seen_files):  # the mode again: a cached listing may be stale
                    yield path, got
        if l_names:
            linked.extend(prefix + name for name in l_names)
        if d_names:
            found = []
            for name, dkey in zip(d_names, d_keys, strict=True):
                if dkey is not None and dkey not in seen_dirs:
                    seen_dirs.add(dkey)
                    found.append(prefix + name)
            stack += reversed(found)
    for path in linked:  # after the real files: a file is reported by its own path
        try:
            est = os.stat(path)
        except OSError:
            continue
        fkey = (est.st_dev, est.st_ino)
        if stat.S_ISREG(est.st_mode) and fkey not in seen_files and may_be_binary(os.path.basename(path), est.st_mode):
            seen_files.add(fkey)
            yield path, est


def outside_note(root: Path | str, outside: list[str]) -> ReadProblem:
    """One INFO note for the symbolic links of a folder scan that lead outside it (not followed)."""
    shown = ", ".join(f"{p} -> {os.readlink(p) if os.path.islink(p) else '?'}" for p in outside[:5])
    more = f" and {len(outside) - 5} more" if len(outside) > 5 else ""
    return ReadProblem(
        f"{root}: {len(outside)} symbolic link{'s' if len(outside) != 1 else ''} lead{'' if len(outside) != 1 else 's'} "
        f"outside the folder and {'were' if len(outside) != 1 else 'was'} not followed: {shown}{more}",
        Location(str(root)), note=True,
    )

def walk_listing(value: object) -> dict[str, list[str]]:
    """A cached listing; TypeError for anything else, such as a name with a path separator."""
    if type(value) is not dict or value.keys() != {"d", "f", "l", "x"}:
        raise TypeError("listing")
    for names in value.values():
        if type(names) is not list:
            raise TypeError("listing")
        for name in names:
            if type(name) is not str or name in ("", ".", "..") or os.sep in name or "\0" in name:
                raise TypeError("listing")
    return value


