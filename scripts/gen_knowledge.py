#!/usr/bin/env python3
"""Rebuild envcheck/knowledge/wheels.toml from the raw index answers recorded in knowledge/raw/pypi.json.

Two steps, kept apart so the table can be rebuilt (and checked by a test) offline:

    python3 scripts/gen_knowledge.py --fetch   # record: bounded look-ups of the NAMED packages below only
    python3 scripts/gen_knowledge.py --fetch-served   # record only the release lists of the SERVED packages
    python3 scripts/gen_knowledge.py --fetch-paired NAME ...  # record the releases, pins and release list of PAIRED ones
    python3 scripts/gen_knowledge.py --fetch-platform NAME ...  # record only these PLATFORM_PACKAGES (a new row's package)
    python3 scripts/gen_knowledge.py           # generate: knowledge/raw/pypi.json -> envcheck/knowledge/wheels.toml

``--fetch`` asks ``https://pypi.org/pypi/NAME/json`` once per package, the PEP 658 ``.metadata`` of one wheel per
recent release of the packages whose torch pairing or CUDA build matters (the PKG-INFO of the source archive, at most
SDIST_BYTES, for a release with no wheel), and the zip directory (RECORD names, by
range requests) of the newest aarch64 and x86_64 wheels. It keeps only what the table needs (file names, upload
dates, Requires-Dist lines naming torch/nvidia/cuda, bundled CUDA library names), never a walk of the index.
Every generated row names the URL its fact came from and the date it was recorded.
"""

from __future__ import annotations

import argparse
import datetime
import io
import json
import re
import sys
import urllib.parse
import zipfile
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

ROOT = Path(__file__).resolve().parent.parent
RAW = ROOT / "knowledge" / "raw" / "pypi.json"
OUT = ROOT / "envcheck" / "knowledge" / "wheels.toml"
API = "https://pypi.org/pypi/{name}/json"
RECENT = 12  # releases per package kept in the raw record
LONGER = {"vllm": 40, "torchvision": 28, "torchaudio": 28, "xformers": 24, "torch": 30,  # back to the CUDA 12 era
          # back to their last release without a linux/aarch64 file (or their first)
          "torchcodec": 30, "open3d": 20, "pytorch3d": 20, "faiss-gpu": 20, "autoawq": 30, "auto-gptq": 20,
          "pynvvideocodec": 20, "mxnet": 40}
SCAN_MEMBERS, SCAN_BYTES, WHOLE_BYTES = 3, 2 << 20, 48 << 20  # the largest shared objects of a wheel, the start of each (its .dynstr)
_NEEDED = re.compile(rb"lib(cudart|cublas|cublasLt|cudnn|nvrtc|cufft|curand|cusparse|cusolver|nccl|nvJitLink)\.so\.(\d+)")

# Which ML packages publish a linux/aarch64 wheel, and whether it carries CUDA code.
PLATFORM_PACKAGES = [
    "torch", "torchvision", "torchaudio", "triton", "xformers", "flash-attn", "vllm", "sglang", "sgl-kernel",
    "bitsandbytes", "cupy-cuda12x", "cupy-cuda13x", "ctranslate2", "onnxruntime-gpu", "jax-cuda12-plugin",
    "jax-cuda13-plugin", "tensorrt", "deepspeed", "flashinfer-python", "mamba-ssm", "causal-conv1d", "llama-cpp-python",
    "decord",  # video decoding for VLMs (cosmos-predict2.5): x86_64/macOS/Windows wheels only, no sdist
    # What ML projects on a Spark install whose linux/aarch64 story is a trap: releases without a linux/aarch64
    # file (a pin, or every release, fails), or only a source archive that builds CUDA kernels or x86-only code.
    # (Packages whose releases all ship aarch64 wheels, av, onnxruntime, jaxlib, tensorflow, are left out: no check
    # reads them.) Video decoding,
    "eva-decord", "torchcodec", "pynvvideocodec",
    # 3D/vision and graph CUDA extensions and their wheels,
    "spconv-cu120", "spconv-cu121", "spconv-cu124", "spconv-cu126", "pytorch3d", "open3d", "natten",
    "torch-scatter", "torch-sparse", "torch-cluster", "mmcv", "mmcv-full", "dgl",
    # serving/training kernels and frameworks,
    "vllm-flash-attn", "auto-gptq", "autoawq", "transformer-engine-cu12", "faiss-gpu", "faiss-gpu-cu12",
    "paddlepaddle-gpu", "mxnet",
    # and a CPU library whose build is x86 SIMD only.
    "pillow-simd",
]
# Packages whose releases pin torch (their Requires-Dist is recorded for every recent release): the torch family, and
# applications known to pin torch/torchaudio/torchvision hard (exact or capped) in every release.
PAIRED = ["torchvision", "torchaudio", "xformers", "flash-attn", "vllm", "sglang", "audiocraft", "whisperx", "stable-audio-tools"]
# The requirements a PAIRED release's row records (G9-pin-conflict compares them with the file's own).
PINNED = ("torch", "torchvision", "torchaudio")
SDIST_BYTES = 16 << 20  # a source archive read for its PKG-INFO: larger ones are recorded as an error
# Packages whose whole release list is recorded (`--fetch-served`): a pin of a version the index never served fails.
SERVED = sorted({*PLATFORM_PACKAGES, *PAIRED, "transformers", "accelerate", "peft", "trl", "unsloth", "unsloth-zoo",
                 "diffusers", "sentence-transformers", "datasets", "tokenizers", "safetensors"})
_KEEP = re.compile(r"^(torch|torchvision|torchaudio|triton|xformers|vllm|nvidia-|cuda-)", re.I)
_CUDA_LIB = re.compile(r"(?:^|/)lib(cudart|cublas|cublasLt|cudnn|nvrtc|cufft|curand|cusparse|cusolver|nccl|nvJitLink)[^/]*\.so(?:\.(\d+))?")


def _wheel_machine(filename: str) -> str | None:
    if not filename.endswith(".whl"):
        return None
    tags = filename[:-4].split("-")[-1]
    for machine in ("aarch64", "x86_64"):
        if machine in tags:
            return machine if "linux" in tags else "other"
    return "any" if tags == "any" else "other"


# ----------------------------------------------------------------------------------------------------------- fetch


def _get(session: Any, url: str, headers: dict[str, str] | None = None) -> bytes:
    resp = session.get(url, headers=headers or {}, timeout=60)
    resp.raise_for_status()
    body: bytes = resp.content
    return body


class _RangeFile(io.RawIOBase):
    """A seekable view of a remote file that fetches only the ranges zipfile asks for (its directory)."""

    def __init__(self, session: Any, url: str, size: int) -> None:
        self.session, self.url, self.size, self.pos = session, url, size, 0

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = offset if whence == 0 else self.pos + offset if whence == 1 else self.size + offset
        return self.pos

    def tell(self) -> int:
        return self.pos

    def read(self, n: int = -1) -> bytes:
        end = self.size if n < 0 else min(self.size, self.pos + n)
        if end <= self.pos:
            return b""
        data = _get(self.session, self.url, {"Range": f"bytes={self.pos}-{end - 1}"})[: end - self.pos]
        self.pos += len(data)
        return data

    def readinto(self, b: Any) -> int:
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)


def _elf_facts(data: bytes) -> tuple[set[str], bool]:
    """(CUDA-looking DT_NEEDED names, whether a .nv_fatbin section holds GPU code) of one shared object."""
    sys.path.insert(0, str(ROOT))
    from envcheck.inspect.elf import BytesSource, parse_header, read_dynamic, read_sections

    src = BytesSource(data)
    hdr = parse_header(data[:64])
    sections = read_sections(src, hdr)
    needed = {n for n in read_dynamic(src, hdr, sections).needed if _NEEDED.match(n.encode())}
    return needed, any(s.name == ".nv_fatbin" and s.size > 0 for s in sections)


def _remote_zip(session: Any, url: str) -> zipfile.ZipFile:
    head = session.head(url, timeout=60, allow_redirects=True)
    size = int(head.headers.get("Content-Length", "0"))
    if not size:
        raise OSError(f"HEAD answered {head.status_code} without a size")
    return zipfile.ZipFile(io.BufferedReader(_RangeFile(session, url, size), 1 << 20))  # type: ignore[arg-type]


def fetch(today: str, only: list[str] | None = None) -> dict[str, Any]:
    """Record the raw answers for the named packages (bounded: a fixed list, RECENT releases each); ``only``: just
    those of the list (and not the torch releases the PAIRED ones pin)."""
    import requests

    session = requests.Session()
    projects: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    records: dict[str, Any] = {}

    def project(name: str) -> dict[str, Any]:
        if name not in projects:
            url = API.format(name=name)
            page = json.loads(_get(session, url))
            versions: dict[str, Any] = {}
            for v, files in page.get("releases", {}).items():
                live = [f for f in files if not f.get("yanked")]
                if live and _version(v) is not None:
                    versions[v] = {"uploaded": min(f["upload_time"] for f in live)[:10],
                                   "files": sorted({f["filename"]: urllib.parse.urljoin(url, f["url"]) for f in live}.items())}
            kept = sorted(versions, key=lambda v: _version(v) or Version("0"))[-LONGER.get(name, RECENT):]
            projects[name] = {"url": url, "latest": page["info"]["version"], "versions": {v: versions[v] for v in kept}}
            print(f"{name}: {len(versions)} releases, kept {len(kept)}", file=sys.stderr)
        return projects[name]  # type: ignore[no-any-return]

    def meta_of(filename: str, url: str) -> None:
        if filename not in metadata:
            metadata[filename] = _wheel_requires(session, url)

    def record_of(filename: str, url: str) -> None:
        try:
            with _remote_zip(session, url) as zf:
                infos = zf.infolist()
                libs = sorted({i.filename for i in infos if _CUDA_LIB.search(i.filename)})
                shared = sorted((i for i in infos if re.search(r"\.so(\.\d+)*$", i.filename) and i.filename not in libs),
                                key=lambda i: -i.file_size)[:SCAN_MEMBERS]
                needed: set[str] = set()
                fatbin: list[str] = []
                for info in shared:
                    with zf.open(info) as member:
                        if info.compress_size > WHOLE_BYTES:  # too large to read whole: the strings at its start
                            needed |= {m.group(0).decode() for m in _NEEDED.finditer(member.read(SCAN_BYTES))}
                            continue
                        found, has_fatbin = _elf_facts(member.read())
                        needed |= found
                        fatbin += [info.filename] if has_fatbin else []
        except Exception as exc:
            records[filename] = {"url": url, "error": str(exc)[:120]}
            return
        records[filename] = {"url": url, "cuda_libraries": libs[:20], "scanned": [i.filename for i in shared],
                             "cuda_sonames_named": sorted(needed), "cuda_code_in": fatbin}

    for name in sorted(only or set(PLATFORM_PACKAGES) | set(PAIRED)):
        proj = project(name)
        for version, rel in proj["versions"].items():
            wheels = [(f, u) for f, u in rel["files"] if f.endswith(".whl")]
            pick = _pick(wheels, "aarch64") or _pick(wheels, "x86_64") or _pick(wheels, "any")
            if name in PAIRED and pick:
                meta_of(*pick)
            if name in PAIRED and not pick:  # sdist only: its PKG-INFO (or egg-info/requires.txt) carries its Requires-Dist
                metadata[f"{name}-{version} (release)"] = _sdist_requires(session, rel["files"])
        newest = max(proj["versions"], key=lambda v: _version(v) or Version("0"))
        for machine in ("aarch64", "x86_64"):
            pick = _pick([(f, u) for f, u in proj["versions"][newest]["files"]], machine)
            if pick:
                meta_of(*pick)
                if name not in ("torch",):  # torch's CUDA is in its Requires-Dist; its wheel is 0.5-1 GB
                    record_of(*pick)
    # torch builds for every torch version a paired release pins exactly (its CUDA is in its Requires-Dist).
    pinned = [] if only else sorted({_exact(r, "torch") for m in metadata.values() for r in m.get("requires", [])} - {None})  # type: ignore[type-var]
    torch = project("torch") if pinned else {}
    page = json.loads(_get(session, API.format(name="torch"))) if pinned else {}
    for version in pinned:
        files = page.get("releases", {}).get(version) or []
        if files and version not in torch["versions"]:
            torch["versions"][version] = {"uploaded": min(f["upload_time"] for f in files)[:10],
                                          "files": sorted({f["filename"]: urllib.parse.urljoin(torch["url"], f["url"]) for f in files}.items())}
        for machine in ("aarch64", "x86_64"):
            pick = _pick(torch["versions"].get(version, {}).get("files", []), machine)
            if pick:
                meta_of(*pick)
    return {"fetched": today, "note": "raw answers of pypi.org, trimmed by scripts/gen_knowledge.py --fetch",
            "projects": projects, "metadata": dict(sorted(metadata.items())), "records": dict(sorted(records.items()))}


def _wheel_requires(session: Any, url: str) -> dict[str, Any]:
    """{"url", "requires"} from a wheel's PEP 658 .metadata, else its METADATA read by range requests; or {"url", "error"}."""
    source = url + ".metadata"
    try:
        text = _get(session, source).decode("utf-8", "replace")
    except Exception:
        try:
            with _remote_zip(session, url) as zf:
                member = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
                text = zf.read(member).decode("utf-8", "replace")
            source = f"{url} ({member})"
        except Exception as exc:
            return {"url": source, "error": str(exc)[:120]}
    lines = [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Requires-Dist:")]
    return {"url": source, "requires": [r for r in lines if _KEEP.match(r)]}


def _sdist_requires(session: Any, files: list[Any]) -> dict[str, Any]:
    """{"url", "requires"} read from the PKG-INFO of a release's source archive (at most SDIST_BYTES are read), or
    {"url", "error"}. PKG-INFO's Requires-Dist where it has any, else the egg-info's requires.txt (its unconditional
    lines, before the first [extra] section)."""
    import tarfile

    sdist = next(((f, u) for f, u in files if f.endswith(".tar.gz")), None)
    if sdist is None:
        return {"url": files[0][1] if files else "", "error": "no source archive (.tar.gz)"}
    url = sdist[1]
    try:
        with session.get(url, stream=True, timeout=60) as resp:
            resp.raise_for_status()
            body = bytearray()
            for chunk in resp.iter_content(1 << 16):
                body += chunk
                if len(body) > SDIST_BYTES:
                    raise OSError(f"larger than {SDIST_BYTES} bytes")
        with tarfile.open(fileobj=io.BytesIO(bytes(body)), mode="r:gz") as tar:
            members = {m.name: m for m in tar.getmembers() if m.isfile()}
            top = sorted(n for n in members if n.count("/") == 1 and n.endswith("/PKG-INFO"))
            egg = sorted(n for n in members if n.count("/") == 2 and n.endswith(".egg-info/requires.txt"))

            def text(name: str) -> str:
                handle = tar.extractfile(members[name])
                return handle.read(1 << 20).decode("utf-8", "replace") if handle else ""

            lines = [line.split(":", 1)[1].strip() for line in text(top[0]).splitlines()
                     if line.startswith("Requires-Dist:")] if top else []
            source = f"{url} ({top[0]})" if top else url
            if not lines and egg:
                head = text(egg[0]).split("\n[", 1)[0]
                lines = [line.strip() for line in head.splitlines() if line.strip() and not line.startswith("[")]
                source = f"{url} ({egg[0]})"
    except Exception as exc:
        return {"url": url, "error": str(exc)[:120]}
    return {"url": source, "requires": [r for r in lines if _KEEP.match(r)]}


def fetch_paired(today: str, raw: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """Record (into ``raw``) the releases, the per-release Requires-Dist and the whole release list of the NAMED PAIRED
    packages only: a narrow refresh that leaves every other recorded answer as it was."""
    import requests

    unknown = sorted(set(names) - set(PAIRED))
    if unknown:
        raise SystemExit(f"not in PAIRED: {', '.join(unknown)} (add them to PAIRED first)")
    session = requests.Session()
    for name in names:
        url = API.format(name=name)
        page = json.loads(_get(session, url))
        versions: dict[str, Any] = {}
        for v, files in page.get("releases", {}).items():
            live = [f for f in files if not f.get("yanked")]
            if live and _version(v) is not None:
                versions[v] = {"uploaded": min(f["upload_time"] for f in live)[:10],
                               "files": sorted({f["filename"]: urllib.parse.urljoin(url, f["url"]) for f in live}.items())}
        kept = sorted(versions, key=lambda v: _version(v) or Version("0"))[-LONGER.get(name, RECENT):]
        raw["projects"][name] = {"url": url, "latest": page["info"]["version"], "versions": {v: versions[v] for v in kept}}
        for version in kept:
            files = versions[version]["files"]
            wheels = [(f, u) for f, u in files if f.endswith(".whl")]
            pick = _pick(wheels, "aarch64") or _pick(wheels, "x86_64") or _pick(wheels, "any")
            if pick:
                raw["metadata"][pick[0]] = _wheel_requires(session, pick[1])
            else:
                raw["metadata"][f"{name}-{version} (release)"] = _sdist_requires(session, files)
        raw.setdefault("served", {})[name] = _served_entry(url, today, page)
        print(f"{name}: {len(versions)} releases, kept {len(kept)}", file=sys.stderr)
    raw["metadata"] = dict(sorted(raw["metadata"].items()))
    return raw


def fetch_served(today: str, only: list[str] | None = None) -> dict[str, Any]:
    """Every version of each SERVED package (``only``: of those) that has at least one file (yanked ones too: an exact
    pin still installs them), one https://pypi.org/pypi/NAME/json answer per package: bounded, named look-ups only."""
    import requests

    session = requests.Session()
    served: dict[str, Any] = {}
    for name in only or SERVED:
        url = API.format(name=name)
        page = json.loads(_get(session, url))
        served[name] = _served_entry(url, today, page)
        print(f"{name}: {len(served[name]['versions'])} served releases", file=sys.stderr)
    return served


def _served_entry(url: str, today: str, page: dict[str, Any]) -> dict[str, Any]:
    """Every version with a file, and those whose every file is yanked (pip skips them unless pinned exactly)."""
    releases = {v: files for v, files in page.get("releases", {}).items() if files and _version(v) is not None}
    order = sorted(releases, key=lambda v: _version(v) or Version("0"))
    return {"url": url, "fetched": today, "versions": order,
            "yanked": [v for v in order if all(f.get("yanked") for f in releases[v])]}


def _pick(files: list[Any], machine: str) -> tuple[str, str] | None:
    """One wheel of ``machine``, preferring CPython 3.12 (the profile's) and then abi3."""
    fits = [(f, u) for f, u in files if _wheel_machine(f) == machine]
    fits.sort(key=lambda fu: (0 if "cp312" in fu[0] else 1 if "abi3" in fu[0] or "py3" in fu[0] else 2, fu[0]))
    return (fits[0][0], fits[0][1]) if fits else None


def _version(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None


def _exact(requirement: str, name: str) -> str | None:
    try:
        req = Requirement(requirement)
    except InvalidRequirement:
        return None
    if req.name.lower() != name or (req.marker is not None and "extra" in str(req.marker)):
        return None
    specs = list(req.specifier)
    return specs[0].version if len(specs) == 1 and specs[0].operator == "==" else None


# -------------------------------------------------------------------------------------------------------- generate


def _pin_spec(requires: list[str], name: str = "torch") -> str | None:
    """The specifier a release's Requires-Dist puts on ``name`` ("any" when it names it bare), outside extras."""
    for line in requires:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if req.name.lower() == name and (req.marker is None or "extra" not in str(req.marker)):
            return str(req.specifier) or "any"
    return None


def _cuda_of_requires(requires: list[str], machine: str) -> str | None:
    """The CUDA major a wheel's Requires-Dist pulls on ``machine`` (nvidia-*-cu12 / cuda-toolkit==13 / -cu13)."""
    env = {"platform_machine": machine, "platform_system": "Linux", "sys_platform": "linux", "os_name": "posix",
           "python_version": "3.12", "python_full_version": "3.12.3", "implementation_name": "cpython", "extra": ""}
    majors = set()
    for line in requires:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if req.marker is not None and not req.marker.evaluate(env):
            continue  # torch < 2.11 gates its nvidia-* requirements on platform_machine == 'x86_64'
        if (m := re.fullmatch(r"nvidia-[a-z0-9-]+-cu(1[123])", req.name, re.I)) or (req.name.lower() == "cuda-toolkit" and (m := re.search(r"==\s*(1[123])\.", str(req.specifier)))):
            majors.add(m.group(1))
    return max(majors) if majors else None


def _soname_majors() -> dict[str, int]:
    """soname -> the one CUDA major that ships it (envcheck/knowledge/cuda_sonames.toml; ambiguous ones left out)."""
    import tomllib

    data = tomllib.loads((ROOT / "envcheck" / "knowledge" / "cuda_sonames.toml").read_text(encoding="utf-8"))
    return {row["soname"]: row["cuda"][0] for row in data["library"] if len(row["cuda"]) == 1}


def _cuda_of_record(record: dict[str, Any]) -> str | None:
    """The CUDA major of the libraries a wheel bundles or links ("cuda" when it has GPU code of no told major)."""
    known = _soname_majors()
    names = [re.sub(r"\.[0-9a-f]{8}(?=\.so)", "", n.rsplit("/", 1)[-1]) for n in record.get("cuda_libraries", [])]
    names += record.get("cuda_sonames_named", [])
    majors = {known[n] for n in names if n in known}
    if majors:
        return str(max(majors))
    return "cuda" if record.get("cuda_code_in") else None


def _q(text: str) -> str:
    return json.dumps(text, ensure_ascii=True)


def generate(raw: dict[str, Any]) -> str:
    """The text of envcheck/knowledge/wheels.toml, made from the raw record alone (deterministic)."""
    day = raw["fetched"]
    projects, metadata, records = raw["projects"], raw["metadata"], raw["records"]
    out = [
        "# GENERATED by scripts/gen_knowledge.py from knowledge/raw/pypi.json: do not edit; re-run the script.",
        "# Which ML packages publish a linux/aarch64 wheel, what CUDA their newest wheels carry, and which torch",
        "# (and torchvision/torchaudio) each release of the PAIRED packages requires (see PAIRED in the script).",
        "[meta]",
        f"updated = {_q(day)}",
        f"sources = [{_q('https://pypi.org/pypi/NAME/json and PEP 658 .metadata of the named wheels, recorded in knowledge/raw/pypi.json')}]",
        "",
    ]
    torch_cuda: dict[tuple[str, str], str] = {}
    for version, rel in projects.get("torch", {}).get("versions", {}).items():
        for machine in ("aarch64", "x86_64"):
            pick = _pick(rel["files"], machine)
            meta = metadata.get(pick[0]) if pick else None
            if meta and "requires" in meta:
                torch_cuda[(version, machine)] = _cuda_of_requires(meta["requires"], machine) or "none"
    for name in sorted(projects):
        proj = projects[name]
        versions = sorted(proj["versions"], key=lambda v: _version(v) or Version("0"))
        for version in versions:
            rel = proj["versions"][version]
            machines = {_wheel_machine(f) for f, _ in rel["files"]}
            sdist = any(f.endswith((".tar.gz", ".zip")) for f, _ in rel["files"])
            aarch64 = "wheel" if "aarch64" in machines else "any" if "any" in machines else "sdist" if sdist else "none"
            rows = [f"package = {_q(name)}", f"version = {_q(version)}", f"uploaded = {_q(rel['uploaded'])}",
                    f"aarch64 = {_q(aarch64)}", f"x86_64 = {str('x86_64' in machines).lower()}"]
            source = f"{proj['url']} (releases.{version})"
            a_pick, x_pick = _pick(rel["files"], "aarch64"), _pick(rel["files"], "x86_64")
            a_cuda = _cuda_for(name, "aarch64", a_pick, metadata, records, torch_cuda)
            x_cuda = _cuda_for(name, "x86_64", x_pick, metadata, records, torch_cuda)
            if a_cuda and a_cuda[0] == "none" and name != "torch" and "inferred:" not in a_cuda[1] and not (x_cuda and x_cuda[0] != "none"):
                a_cuda = None  # "no CUDA on aarch64" is a claim only beside an x86_64 wheel that has it (cupy dlopens)
            if x_cuda and x_cuda[0] == "none" and name != "torch":
                x_cuda = None
            if a_cuda:
                rows.append(f"aarch64_cuda = {_q(a_cuda[0])}")
                source += f"; aarch64 CUDA: {a_cuda[1]}"
            if x_cuda:
                rows.append(f"x86_64_cuda = {_q(x_cuda[0])}")
                source += f"; x86_64 CUDA: {x_cuda[1]}"
            if name in PAIRED:
                any_pick = a_pick or x_pick or _pick(rel["files"], "any")
                meta = metadata.get(any_pick[0]) if any_pick else metadata.get(f"{name}-{version} (release)")
                specs = {p: _pin_spec(meta["requires"], p) for p in PINNED if p != name} if meta and "requires" in meta else {}
                rows += [f"{p} = {_q(spec)}" for p, spec in specs.items() if spec]
                if specs.get("torch"):
                    source += f"; torch pin: {meta['url']}"  # type: ignore[index]
                elif any(specs.values()):
                    source += f"; pins: {meta['url']}"  # type: ignore[index]
            if "inferred:" in source:
                rows.append("inferred = true")
            out += ["[[wheel]]", *rows, f"source = {_q(source)}", f"checked = {_q(proj.get('fetched', day))}", ""]
    out += ["# Every release of these packages the index served on the day recorded (a file to install, yanked or not)."]
    for name, entry in sorted(raw.get("served", {}).items()):
        versions = ", ".join(_q(v) for v in entry["versions"])
        yanked = [f"yanked = [{', '.join(_q(v) for v in entry['yanked'])}]"] if entry.get("yanked") else []
        out += ["[[served]]", f"package = {_q(name)}", f"versions = [{versions}]", *yanked,
                f"source = {_q(entry['url'] + ' (every release with a file)')}", f"checked = {_q(entry['fetched'])}", ""]
    return "\n".join(out).rstrip() + "\n"


def _cuda_for(name: str, machine: str, pick: tuple[str, str] | None, metadata: dict[str, Any], records: dict[str, Any],
              torch_cuda: dict[tuple[str, str], str]) -> tuple[str, str] | None:
    """(CUDA major, "cuda" (GPU code, major not told) or "none"; how it is known), where the record tells."""
    if pick is None:
        return None
    filename, url = pick
    meta, record = metadata.get(filename), records.get(filename)
    if meta and "requires" in meta and (major := _cuda_of_requires(meta["requires"], machine)):
        return major, f"Requires-Dist of {meta['url']}"
    if record and "error" not in record and (found := _cuda_of_record(record)):
        return found, f"CUDA libraries bundled in or named by the largest shared objects of {url}"
    if name == "torch" and meta and "requires" in meta:
        return "none", f"no CUDA requirement for {machine} in Requires-Dist of {meta['url']}"
    if name in ("vllm", "torchvision", "torchaudio") and meta and "requires" in meta:
        pin = next((p for r in meta["requires"] if (p := _exact(r, "torch"))), None)
        # vLLM's PyPI wheels are built against the default (x86_64) CUDA build of the torch they pin;
        # torchvision/torchaudio follow the build of their exact torch on the same machine.
        like = "x86_64" if name == "vllm" else machine
        built = torch_cuda.get((pin, like)) if pin else None
        if built:
            return built, f"inferred: built against PyPI torch=={pin} ({like}: CUDA {built}), pinned in {meta['url']}"
    if record and "error" not in record:
        return "none", f"no CUDA library bundled in or named by the largest shared objects of {url}"
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fetch", action="store_true", help="record fresh raw answers from pypi.org first")
    parser.add_argument("--fetch-served", action="store_true", help="record the release lists of the SERVED packages only")
    parser.add_argument("--fetch-paired", nargs="+", metavar="NAME", help="record only these PAIRED packages (releases, pins, release list)")
    parser.add_argument("--fetch-platform", nargs="+", metavar="NAME",
                        help="record only these PLATFORM_PACKAGES (releases, their newest wheels, release list)")
    parser.add_argument("--check", action="store_true", help="exit 1 when the shipped table differs from the generated one")
    args = parser.parse_args()
    if args.fetch_platform:
        unknown = sorted(set(args.fetch_platform) - set(PLATFORM_PACKAGES) - set(PAIRED))
        if unknown:
            raise SystemExit(f"not in PLATFORM_PACKAGES: {', '.join(unknown)} (add them to PLATFORM_PACKAGES first)")
        today = datetime.date.today().isoformat()
        raw, new = json.loads(RAW.read_text(encoding="utf-8")), fetch(today, args.fetch_platform)
        for entry in new["projects"].values():
            entry["fetched"] = today  # its rows' day, not the whole record's
        for key in ("projects", "metadata", "records"):
            raw[key] = dict(sorted({**raw[key], **new[key]}.items()))
        raw.setdefault("served", {}).update(fetch_served(today, [n for n in args.fetch_platform if n in SERVED]))
        RAW.write_text(json.dumps(raw, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    elif args.fetch_paired:
        raw = fetch_paired(datetime.date.today().isoformat(), json.loads(RAW.read_text(encoding="utf-8")), args.fetch_paired)
        RAW.write_text(json.dumps(raw, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    elif args.fetch or args.fetch_served:
        today = datetime.date.today().isoformat()
        old = json.loads(RAW.read_text(encoding="utf-8")) if RAW.exists() else {}
        raw = fetch(today) if args.fetch else old
        raw["served"] = fetch_served(today) if args.fetch or args.fetch_served else old.get("served", {})
        RAW.parent.mkdir(parents=True, exist_ok=True)
        RAW.write_text(json.dumps(raw, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    text = generate(json.loads(RAW.read_text(encoding="utf-8")))
    if args.check:
        same = OUT.exists() and OUT.read_text(encoding="utf-8") == text
        print("wheels.toml is up to date" if same else "wheels.toml differs from the generator's output", file=sys.stderr)
        return 0 if same else 1
    OUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
