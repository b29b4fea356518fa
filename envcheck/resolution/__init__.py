"""``envcheck --resolve``: which files pip or uv would install on the target, and what is inside them.

Steps, for one dependency file:

1. Pick the files. Inputs that pin files already (``pylock.toml``, ``uv.lock``) are read as they are: the
   wheel that fits the target is chosen from the files they list. Requirements, freeze files and
   ``pyproject.toml`` go through a real resolver, uv (``envcheck-spark[resolve]``), run for the target platform
   (``uv pip compile --python-platform aarch64-manylinux_2_39 --python-version 3.12 --format pylock.toml``),
   not for the machine envcheck runs on; freeze files are resolved with ``--no-deps`` (every pin is a file
   lookup). The input's own index options and the user's pip/uv configuration apply. A resolver conflict is
   recorded with uv's words (checks report it as G9).
2. Read facts of each chosen file, as little as possible: the shipped facts table (``knowledge/wheel_facts.json``)
   answers for the largest common wheels, then envcheck's cache (under keys only verified facts can claim), then
   the index: the wheel's zip directory, its METADATA and each ELF member's headers by HTTP range requests
   (:mod:`envcheck.sources.remote_wheel`); deflated members are inflated from their start.
3. Return an :class:`Inventory`: the chosen files (:class:`ResolvedFile`, with their redacted URL, hash and
   where each fact came from), the resolved packages with their Requires-Dist, wheel tags, and binaries
   located as ``URL!member``. Checks judge them like any other inventory.

The modules, in the order a target passes them: :mod:`~envcheck.resolution.stage` (the entry point, one
:class:`ResolveContext` shared by every step), :mod:`~envcheck.resolution.locks` and
:mod:`~envcheck.resolution.uv` (picking the files), :mod:`~envcheck.resolution.dockerfile` (RUN-line installs on
a base that ships packages), :mod:`~envcheck.resolution.facts` (what is known about a file),
:mod:`~envcheck.resolution.cache` (everything ``--resolve`` keeps on disk), :mod:`~envcheck.resolution.platform`
(wheel tags of the target).
"""

from __future__ import annotations

from envcheck.resolution.context import Chosen, ResolveContext, ResolveSettings
from envcheck.resolution.facts import facts_table
from envcheck.resolution.platform import best_wheel, uv_platform
from envcheck.resolution.stage import RESOLVABLE, index_entries, resolve, resolved_reader
from envcheck.sources.remote_wheel import FileFacts, read_remote_wheel

__all__ = ["RESOLVABLE", "Chosen", "FileFacts", "ResolveContext", "ResolveSettings", "best_wheel", "facts_table", "index_entries",
           "read_remote_wheel", "resolve", "resolved_reader", "uv_platform"]
