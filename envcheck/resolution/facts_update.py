"""Writing a wheel facts table (the shipped one, ``scripts/gen_wheel_facts.py``, and a user's newer one,
``envcheck cache update-facts``): the wheel pip would install for each pin, read as ``--resolve`` reads one
but whole, in rows keyed by sha256 (facts of a file never change) that name their file URL and day."""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Collection, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from envcheck.errors import ServiceError
from envcheck.profile import Profile
from envcheck.resolution.platform import best_wheel
from envcheck.services.package_index import FileProblem, IndexClient, IndexFile
from envcheck.sources.remote_wheel import read_remote_wheel

PYPI = "https://pypi.org/simple"
# What `envcheck cache update-facts` reads by default: the newest release of each family Spark projects resolve to.
FAMILIES = (
    "torch", "torchvision", "torchaudio", "triton", "vllm", "sglang", "sgl-kernel", "flashinfer-python", "flashinfer-cubin",
    "xformers", "flash-attn", "bitsandbytes", "cupy-cuda13x", "cuda-bindings", "jax-cuda13-plugin", "jax-cuda13-pjrt", "jaxlib",
    "tensorrt-cu13-bindings", "onnxruntime", "onnxruntime-gpu", "nvidia-cublas", "nvidia-cuda-cupti", "nvidia-cuda-nvrtc",
    "nvidia-cuda-runtime", "nvidia-cudnn-cu13", "nvidia-cufft", "nvidia-cufile", "nvidia-curand", "nvidia-cusolver",
    "nvidia-cusparse", "nvidia-cusparselt-cu13", "nvidia-nccl-cu13", "nvidia-nvjitlink", "nvidia-nvshmem-cu13", "nvidia-nvtx",
)
TABLE_RUN_DEADLINE = 3600.0  # seconds for all reads of one table run: it reads whole multi-GB wheels on purpose


def pick(client: IndexClient, index_url: str, pin: str, profile: Profile, python: str) -> IndexFile | str:
    from packaging.version import InvalidVersion, Version
    name, _, version = pin.partition("==")
    wheels = [f for f in client.project_files(index_url, name.strip()) if f.filename.endswith(".whl") and not f.yanked]
    if not version:
        versions = set()
        for f in wheels:
            try:
                v = Version(f.filename.split("-")[1])
            except (InvalidVersion, IndexError):
                continue
            if not v.is_prerelease and best_wheel([f.filename], profile, python)[0]:
                versions.add(v)
        if not versions:
            return f"{pin}: no wheel for {profile.machine}"
        version = str(max(versions))
    listed = [f for f in wheels if f"-{version}-" in f.filename]
    chosen, why = best_wheel([f.filename for f in listed], profile, python)
    if chosen is None:
        return f"{pin}: no wheel for {profile.machine} ({why})"
    return next(f for f in listed if f.filename == chosen)


def table_row(client: IndexClient, item: IndexFile) -> dict[str, Any]:
    facts = read_remote_wheel(client, item.url, item.size, item.sha256, item.metadata_sha256, max_expansion=0,
                              max_member_bytes=16 << 30)
    today = datetime.date.today().isoformat()
    return {
        "filename": item.filename, "url": item.url, "size": item.size, "updated": today, "requires": list(facts.requires or []),
        "tags": list(facts.tags), "binaries": facts.binaries, "problems": facts.problems, "notes": facts.notes,
        "source": f"{item.url} scanned by envcheck/resolution/facts_update.py on {today}",
    }


def read_table(path: Path) -> dict[str, dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    files = data.get("files") if isinstance(data, dict) else None
    rows = {k: v for k, v in files.items() if isinstance(v, dict)} if isinstance(files, dict) else {}
    for row in rows.values():  # rows written before rows carried their day: the day their source names
        row.setdefault("updated", str(row.get("source", "")).rsplit(" on ", 1)[-1][:10])
    return rows


def write_table(path: Path, files: dict[str, dict[str, Any]]) -> None:
    meta = {
        "updated": datetime.date.today().isoformat(),
        "sources": ["the wheel files themselves, read by scripts/gen_wheel_facts.py (each row names its file URL and day)"],
        "note": "keyed by sha256: facts of a file never change. Regenerate with scripts/gen_wheel_facts.py NAME==VERSION ...",
    }
    rows = sorted(files.items(), key=lambda kv: (str(kv[1].get("filename")), kv[0]))
    body = ",\n".join(f"{json.dumps(sha)}: {json.dumps(row, separators=(',', ':'))}" for sha, row in rows)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(f'{{"meta": {json.dumps(meta)},\n"files": {{\n{body}\n}}}}\n', encoding="utf-8")
    tmp.replace(path)


def update(path: Path, pins: Iterable[str], profile: Profile, python: str, index_url: str = PYPI, jobs: int = 4,
           say: Callable[[str, bool], None] | None = None, known: Collection[str] = (), unreachable: list[str] | None = None) -> int:
    """Add the rows of ``pins`` missing from the table at ``path`` and from ``known``; the number added
    (``unreachable`` gets the pins an index or file host did not answer for)."""
    files = read_table(path)
    client = IndexClient(deadline=1800.0, run_deadline=TABLE_RUN_DEADLINE)

    def one(pin: str) -> tuple[str, str | None, dict[str, Any] | None]:
        try:
            item = pick(client, index_url, pin, profile, python)
            if isinstance(item, str):
                return item, None, None
            if not item.sha256:
                return f"{pin}: {item.filename}: the index gives no sha256", None, None
            if item.sha256 in files or item.sha256 in known:
                return f"{pin}: {item.filename} already in the table", None, None
            row = table_row(client, item)
        except (FileProblem, ServiceError) as exc:
            if isinstance(exc, ServiceError) and unreachable is not None:
                unreachable.append(pin)
            return f"{pin}: {exc}", None, None
        return f"{pin}: {item.filename}: {len(row['binaries'])} binaries of {item.size} bytes", item.sha256, row

    added = 0
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for line, sha, row in pool.map(one, dict.fromkeys(pins)):
            if say is not None:
                say(line, row is None and "already in the table" not in line)
            if sha and row:
                files[sha] = row
                added += 1
                write_table(path, files)  # a long run keeps what it has read
    if not path.exists():
        write_table(path, files)
    return added
