"""KIND ``folder``: a whole installed environment (a venv, site-packages, a conda env, an unpacked image).

An unchanged folder is answered from its folder inventory (:class:`envcheck.cache.FolderSnapshot`) by this
module alone; anything else (a changed folder, no snapshot, ``--no-cache``, a file given as a folder) is read
by :mod:`envcheck.sources.binaries`, whose ELF and fatbin readers and worker processes load only then.
"""

from __future__ import annotations

import os
from pathlib import Path

from envcheck.cache import FolderSnapshot, ScanCache
from envcheck.model import Inventory
from envcheck.sources import ReadOptions

KIND = "folder"


def namespace_of(root: Path | str, deep: bool) -> str:
    """The cache namespace of a folder scan of ``root`` (its per-file cache and its folder inventory)."""
    return f"folder:{os.path.abspath(root)}:deep={deep}"


def from_snapshot(root: Path | str, options: ReadOptions) -> Inventory | None:
    """The inventory of ``root`` from its folder inventory when nothing it was built from changed; None
    otherwise (no cache, no snapshot, any change: the folder must be scanned)."""
    if not options.use_cache:
        return None
    namespace = namespace_of(root, options.deep_fatbin)
    found = FolderSnapshot(namespace).load(str(root))
    if found is None:
        return None
    ScanCache.mark_used(namespace)  # still the fallback of the next change: `cache clean --older-than` keeps it
    inv = Inventory(context="installed")
    inv.packages, inv.binaries, inv.problems = found
    return inv


def read(path: Path, options: ReadOptions) -> Inventory:
    """KIND ``folder`` (:func:`envcheck.sources.binaries.scan_folder`, from the snapshot when it answers)."""
    path = Path(path)
    if path.is_dir():
        cached = from_snapshot(path, options)
        if cached is not None:
            return cached
    from envcheck.sources import binaries

    if path.is_dir():
        return binaries.scan_folder(path, options, snapshot_tried=True)
    return binaries.read(path, options)
