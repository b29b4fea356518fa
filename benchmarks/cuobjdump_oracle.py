"""The cuobjdump oracle, shared by the oracle tests, the binaries benchmark and the device scan.

envcheck itself never runs cuobjdump: this only compares envcheck's fatbin header walk with the labels
`cuobjdump --list-elf --list-ptx` prints for the same file (its default view, or `-all`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from envcheck.inspect import fatbin
from envcheck.inspect.elf import FileSource
from envcheck.sources.binaries import standard_containers

LABEL = re.compile(r"\.(sm_\d+[af]?)\.(cubin|ptx)$")


def find_cuobjdump() -> str | None:
    """cuobjdump on PATH, in /usr/local/cuda, or from the nvidia-cuda-cuobjdump wheel (nvidia/cu13/bin)."""
    found = shutil.which("cuobjdump")
    if found:
        return found
    if os.path.exists("/usr/local/cuda/bin/cuobjdump"):
        return "/usr/local/cuda/bin/cuobjdump"
    candidates = [Path(sys.prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"]
    try:
        import nvidia  # type: ignore[import-not-found]

        candidates = [Path(p).parent for p in nvidia.__path__] + candidates
    except ImportError:
        pass
    for base in candidates:
        tool = base / "nvidia" / "cu13" / "bin" / "cuobjdump"
        if tool.exists():
            return str(tool)
    return None


def cuobjdump_lists(tool: str, path: str | Path, everything: bool = False, timeout: float = 120) -> tuple[list[str], list[str]] | str:
    """cuobjdump's ordered (ELF, PTX) labels, or a reason string when it failed or timed out."""
    args = [tool, *(["-all"] if everything else []), "--list-elf", "--list-ptx", str(path)]
    try:
        out = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout"
    except OSError as exc:
        return f"cannot run: {exc}"
    # exit 255 with "No PTX file found" / "does not contain device code" is not a failure
    if out.returncode not in (0, 255) or re.search(r"(?i)invalid|error|fatal", out.stderr):
        return f"exit {out.returncode}: {out.stderr.strip()[:200]}"
    elf: list[str] = []
    ptx: list[str] = []
    for line in out.stdout.splitlines():
        m = LABEL.search(line.strip())
        if m:
            (elf if line.lstrip().startswith("ELF") else ptx).append(m.group(1))
    return elf, ptx


def parsed_lists(path: str | Path, everything: bool = False) -> tuple[list[str], list[str]]:
    """The same lists from envcheck's header walk. cuobjdump shows, per ELF file (archive member),
    ``.nv_fatbin`` when it has one and else ``__nv_relfatbin``; with ``-all`` both, ``.nv_fatbin`` first."""
    path = Path(path)
    with path.open("rb") as fh:
        containers = standard_containers(FileSource(fh, path.stat().st_size))
    if path.suffix != ".a":  # archive members are objects: one of the two sections each
        nv = [c for c in containers if c.section == ".nv_fatbin"]
        rel = [c for c in containers if c.section == "__nv_relfatbin"]
        containers = nv + rel if everything else (nv or rel)
    entries = [e for c in containers for e in c.entries]
    return ([e.cuobjdump_label for e in entries if e.kind == fatbin.KIND_ELF],
            [e.cuobjdump_label for e in entries if e.kind == fatbin.KIND_PTX])
