"""Small, valid archives and image layouts built in memory: the seeds of the fuzz harnesses and the inputs
of the property tests (``tests/test_fuzz_*.py``), so that both start from the same real shapes.

Nothing here imports envcheck: a harness imports this before atheris instruments envcheck.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
import zipfile
from collections.abc import Iterable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SITE = "usr/local/lib/python3.12/site-packages"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
ARM64 = {"architecture": "arm64", "os": "linux"}


def digest(data: bytes) -> str:
    """``sha256:<hex>`` of ``data``."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def tar_of(members: Iterable[tuple[str, bytes]], mode: int = 0o644) -> bytes:
    """A plain tar holding ``(name, data)`` regular files."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = mode
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def metadata_layer(name: str = "torch", version: str = "2.9.0+cu130", site: str = SITE) -> bytes:
    """A gzip image layer holding one distribution's ``METADATA`` in site-packages."""
    body = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()
    folder = f"{name.replace('-', '_')}-{version.split('+')[0]}.dist-info"
    return gzip.compress(tar_of([(f"{site}/{folder}/METADATA", body)]), mtime=0)


def oci_manifest(config: bytes, layers: Iterable[bytes]) -> dict[str, object]:
    """An OCI image manifest (as a dict) that names ``config`` and ``layers`` by their digests."""
    return {
        "schemaVersion": 2, "mediaType": OCI_MANIFEST,
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": digest(config), "size": len(config)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": digest(layer), "size": len(layer)}
                   for layer in layers],
    }


def oci_index(manifest: bytes, platform: dict[str, str] | None = None) -> dict[str, object]:
    """An OCI image index (as a dict) with one entry: ``manifest`` for ``platform`` (default linux/arm64)."""
    return {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": [
        {"mediaType": OCI_MANIFEST, "digest": digest(manifest), "size": len(manifest), "platform": platform or ARM64}]}


def write_oci_layout(folder: Path, index: bytes, blobs: Iterable[bytes]) -> Path:
    """An OCI image layout in ``folder``: ``index.json`` and each blob stored under its real digest."""
    store = folder / "blobs" / "sha256"
    store.mkdir(parents=True, exist_ok=True)
    for blob in blobs:
        (store / hashlib.sha256(blob).hexdigest()).write_bytes(blob)
    (folder / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
    (folder / "index.json").write_bytes(index)
    return folder


def docker_save(config: bytes, layer_tar: bytes, tag: str = "demo:latest") -> bytes:
    """A ``docker save`` archive: ``manifest.json``, the config and one uncompressed layer tar."""
    manifest = json.dumps([{"Config": "config.json", "RepoTags": [tag], "Layers": ["layer/layer.tar"]}]).encode()
    return tar_of([("config.json", config), ("layer/layer.tar", layer_tar), ("manifest.json", manifest)])


def small_wheel(compression: int = zipfile.ZIP_DEFLATED, binary: str | None = None,
                requires: Iterable[str] = ("torch>=2.9",)) -> bytes:
    """A real, valid wheel (zip), with an optional ELF member copied from ``fixtures/binaries``."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as zf:
        zf.writestr("demo_pkg/__init__.py", "")
        zf.writestr("demo_pkg-1.0.dist-info/WHEEL",
                    "Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp311-cp311-manylinux_2_28_aarch64\n")
        zf.writestr("demo_pkg-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: demo-pkg\nVersion: 1.0\n"
                    + "".join(f"Requires-Dist: {r}\n" for r in requires))
        if binary:
            zf.writestr(f"demo_pkg/{binary}", (REPO / "fixtures" / "binaries" / binary).read_bytes())
        zf.writestr("demo_pkg-1.0.dist-info/RECORD", "")
    return buf.getvalue()


# ---- hostile binaries and wheels (issue 13): generators for the bounded tests and the fuzz seeds -----------

_SECTION = "<IIQQQQIIQQ"  # ELF64 section header
SHT_PROGBITS, SHT_STRTAB = 1, 3


def write_elf(path: Path, section: str = ".nv_fatbin", size: int = 0, head: bytes = b"", pattern: bytes = b"",
              *, shnum: int | None = None, shentsize: int | None = None, file_size: int | None = None) -> Path:
    """A minimal x86_64 shared object with one data section ``section`` of ``size`` bytes at offset 4096.

    The section starts with ``head`` and is filled with ``pattern`` repeated (zeros, written sparse, when
    ``pattern`` is empty). ``shnum``/``shentsize`` override what the header claims about its section table
    (the real table has 3 entries); ``file_size`` extends the file (sparse) past its real end.
    """
    import struct

    names = b"\0.shstrtab\0" + section.encode() + b"\0"
    data_at = 4096
    strtab_at = data_at + size
    table_at = (strtab_at + len(names) + 7) // 8 * 8
    header = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    header += struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, table_at, 0, 64, 56, 0,
                          64 if shentsize is None else shentsize, 3 if shnum is None else shnum, 1)
    table = bytes(64)
    table += struct.pack(_SECTION, 1, SHT_STRTAB, 0, 0, strtab_at, len(names), 0, 0, 1, 0)
    table += struct.pack(_SECTION, 11, SHT_PROGBITS, 2, data_at, data_at, size, 0, 0, 8, 0)
    with path.open("wb") as fh:
        fh.write(header)
        fh.seek(data_at)
        fh.write(head)
        if pattern:
            left = size - len(head)
            block = pattern * max(1, (1 << 20) // len(pattern))
            while left > 0:
                piece = block[:left]
                fh.write(piece)
                left -= len(piece)
        fh.seek(strtab_at)
        fh.write(names)
        fh.seek(table_at)
        fh.write(table)
        fh.truncate(max(fh.tell(), file_size or 0))
    return path


def empty_fatbin_entries(count: int) -> tuple[bytes, bytes]:
    """(container header, one entry) for a ``.nv_fatbin`` of ``count`` empty SASS entries (64 bytes each)."""
    import struct

    entry = struct.pack("<HHIQ", 2, 0x101, 64, 0) + bytes(48)
    return b"\x50\xed\x55\xba\x01\x00\x10\x00" + struct.pack("<Q", 64 * count), entry


def write_wheel(path: Path, members: Iterable[tuple[str, Path]], name: str = "demo_pkg") -> Path:
    """A valid wheel holding the files ``(member name, file)`` deflated, streamed (members may be GiBs)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        zf.writestr(f"{name}-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: py3-none-manylinux_2_28_aarch64\n")
        zf.writestr(f"{name}-1.0.dist-info/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
        for member, source in members:
            info = zipfile.ZipInfo(member)
            info.compress_type = zipfile.ZIP_DEFLATED
            with source.open("rb") as src, zf.open(info, "w", force_zip64=True) as dst:
                while chunk := src.read(4 << 20):
                    dst.write(chunk)
        zf.writestr(f"{name}-1.0.dist-info/RECORD", "")
    return path


def hostile_elf_seeds() -> list[bytes]:
    """Small members of the hostile classes above (fuzz seeds): a huge section-table claim, a .nv_fatbin of
    empty entries, a .nv_fatbin of zeros."""
    import tempfile

    out = []
    head, entry = empty_fatbin_entries(500)
    with tempfile.TemporaryDirectory() as tmp:
        for name, kwargs in (("table", {"shnum": 4096, "shentsize": 0xFFFF}),
                             ("entries", {"size": len(head) + 64 * 500, "head": head, "pattern": entry}),
                             ("zeros", {"size": 16 << 10})):
            out.append(write_elf(Path(tmp) / name, **kwargs).read_bytes())  # type: ignore[arg-type]
    return out


# ---- hostile Dockerfiles (issue 13): generators for the bounded tests and the fuzz seeds -----------------


def hostile_dockerfiles(scale: float = 1) -> dict[str, str]:
    """Dockerfiles of each hostile class, by name; ``scale=1`` is the issue's size, smaller fractions make
    seeds. Each stays a few MiB at most on disk; what makes it hostile is what reading it costs."""

    def n(count: int) -> int:
        return max(2, int(count * scale))

    deep = "${A:-" * n(10_000) + "x" + "}" * n(10_000)
    return {
        # a quoted 100 KB argument (was quadratic in the shell reader)
        "quoted-argument": 'FROM ubuntu:24.04\nRUN pip install "' + "a" * n(100_000) + '"\n',
        # 80k ENV lines (each copied the whole environment)
        "many-env": "FROM ubuntu:24.04\n" + "".join(f"ENV A{i}={i}\n" for i in range(n(80_000))) + "RUN pip install torch\n",
        # a 503-byte file whose ENV values double forty times (5.3 GB)
        "doubling-env": "FROM ubuntu:24.04\nENV A=x\n" + "ENV A=$A$A\n" * n(40) + "RUN pip install torch\n",
        # 8000 exports then 8000 commands in one RUN (each command copied every export)
        "exports-then-commands": "FROM ubuntu:24.04\nRUN " + " && ".join(f"export V{i}=x{i}" for i in range(n(8_000)))
        + " && " + " && ".join(f"echo {i}" for i in range(n(8_000))) + "\n",
        # a 10 MB RUN line
        "huge-run": "FROM ubuntu:24.04\nRUN " + "pip install torch && " * n(500_000) + "true\n",
        # ${A:-${B:-...}} nested 10k deep, in ENV, WORKDIR and COPY
        "nested-env": f"FROM ubuntu:24.04\nENV B={deep}\nRUN pip install torch\n",
        "nested-workdir": f"FROM ubuntu:24.04\nWORKDIR /{deep}\nRUN pip install torch\n",
        "nested-copy": f"FROM ubuntu:24.04\nCOPY {deep} /x\nRUN pip install torch\n",
        "nested-arg": f"ARG B={deep}\nFROM ubuntu:24.04\n",
        # thousands of RUN lines, each with its own index, CUDA 12 torch, COPY + -r, or uv backend (each was
        # judged against every other: indexes x packages, COPYs x RUNs)
        "many-index-lines": "FROM ubuntu:24.04\n" + "RUN pip install --index-url https://download.pytorch.org/whl/cu121 "
        "torch==2.5.1+cu121\n" * n(5_000),
        "many-torch-lines": "FROM ubuntu:24.04\n" + "".join(f"RUN <<E{i}\npip install torch==2.5.1+cu121\nE{i}\n" for i in range(n(5_000))),
        "many-copy-installs": "FROM ubuntu:24.04\n" + "".join(f"COPY r{i}.txt /r{i}.txt\nRUN pip install -r /r{i}.txt\n"
                                                            for i in range(n(5_000))),
        "many-uv-backends": "FROM ubuntu:24.04\n" + "RUN uv pip install --torch-backend cu121 torch\n" * n(5_000),
        # just under 1 MiB of RUN text holding 340k tiny commands (past the 10,000 commands read per RUN)
        "many-commands": "FROM ubuntu:24.04\nRUN " + "a&&" * n(340_000) + "true\n",
        # just under 1 MiB of RUN text made of redirections (each one sliced the rest of the script: quadratic)
        "many-redirections": "FROM ubuntu:24.04\nRUN pip install torch " + ">a " * n(330_000) + "\n",
        # if/subshell nesting past the shell reader's depth
        "nested-shell": "FROM ubuntu:24.04\nRUN " + "(" * n(5_000) + "pip install torch" + ")" * n(5_000) + "\n",
        # 5000 stages, each on the one before (the stage relations were read pairwise: quadratic)
        "many-stages": "FROM ubuntu:24.04 AS s0\nRUN pip install torch\n"
        + "".join(f"FROM s{i - 1} AS s{i}\nRUN pip install torch\n" for i in range(1, n(5_000))),
    }


def hostile_dockerfile_seeds() -> list[bytes]:
    """Small members of each hostile Dockerfile class (fuzz seeds)."""
    return [text.encode() for text in hostile_dockerfiles(scale=0.002).values()]


# --- hostile dependency files and config (issue 13): the generators of tests/test_deps_bounds.py ----------


def include_fanout(folder: Path, levels: int = 20) -> Path:
    """``levels`` requirements files, each including the next twice (-r and -r): 2**levels reads if each
    include were read again. Returns the top file."""
    for level in range(levels):
        nxt = f"-r level{level + 1}.txt\n" * 2 if level + 1 < levels else "torch==2.5.1+cu121\n"
        (folder / f"level{level}.txt").write_text(f"numpy=={level}.0\n{nxt}", encoding="utf-8")
    top = folder / "requirements.txt"
    top.write_text("-r level0.txt\n-r level0.txt\n", encoding="utf-8")
    return top


def spaces_requirements(size: int = 100_000) -> str:
    """Requirement lines padded with ``size`` spaces where regexes backtrack: before ``==``, before a comment,
    before ``--hash``, a bare run of spaces, a git URL of many segments."""
    pad = " " * size
    return "".join([
        f"torch{pad}==2.9.0\n", f"numpy==2.0{pad}x\n", f"{pad}--hash=sha256:00\n", f"six==1.16.0{pad}#c\n",
        f"a==1{pad}--hash=sha256:00\n", "git+https://x/" + "a/" * (size // 2) + "\n", f"foo ;{pad}\n",
    ])


def long_version_requirement(digits: int = 4301) -> str:
    """A requirement whose version has more digits than Python converts to an int."""
    return f"torch==1{'1' * (digits - 1)}\nnumpy==2.0\n"


def big_uv_lock(packages: int = 11_000) -> str:
    """A uv.lock of ``packages`` entries (about 1 MB), each depending on the next under a marker."""
    out = ['version = 1', 'revision = 3', 'requires-python = ">=3.11"', '',
           '[[package]]', 'name = "proj"', 'version = "0.1.0"', 'source = { virtual = "." }', 'dependencies = [',
           *[f'    {{ name = "p{i}" }},' for i in range(0, packages, 100)], ']', '']
    for i in range(packages):
        out += ['[[package]]', f'name = "p{i}"', 'version = "1.0"', 'source = { registry = "https://pypi.org/simple" }']
        if i + 1 < packages:
            out += [f'dependencies = [{{ name = "p{i + 1}", marker = "sys_platform == \'linux\'" }}]']
        out.append('')
    return "\n".join(out)


def scoped_uv_lock(packages: int = 11_000, extras: int = 16) -> str:
    """:func:`big_uv_lock` whose project also has ``extras`` extras, each bringing one more package: every
    opt-in scope is judged on its own, so the cost of scopes must stay bounded on a large lock too."""
    text = big_uv_lock(packages)
    table = "\n[package.optional-dependencies]\n" + "".join(f'e{i} = [{{ name = "x{i}" }}]\n' for i in range(extras))
    text = text.replace("]\n\n[[package]]\nname = \"p0\"", "]\n" + table + "\n[[package]]\nname = \"p0\"", 1)
    return text + "\n" + "".join(f'[[package]]\nname = "x{i}"\nversion = "1.0+cu121"\n'
                                  'source = { registry = "https://pypi.org/simple" }\n\n' for i in range(extras))


def deep_toml(depth: int = 100_000, key: str = "tool.envcheck.severity") -> str:
    """A TOML document whose value at ``key`` nests arrays ``depth`` deep."""
    return f"{key} = {'[' * depth}{']' * depth}\n"


def hostile_line_inputs() -> dict[str, tuple[str, bytes]]:
    """(kind, content) of text inputs whose cost is in their number of lines, not their size: millions of short
    lines, a hundred thousand lines that cannot be read, 20,000 copies of one requirement, scripts whose every
    command sees thousands of variables."""
    bad = b"torch==2.10.0\n\xff\xfe\xc0\x80 x y\n" * 100_000
    return {
        "requirements-many-lines": ("requirements", b"x\n" * 5_000_000),
        "freeze-many-lines": ("freeze", b"x\n" * 5_000_000),
        "requirements-bad-lines": ("requirements", bad),
        "freeze-bad-lines": ("freeze", bad),
        "requirements-same-torch": ("requirements", b"torch==2.10.0\n" * 20_000),
        "shell-many-lines": ("shell", b"x\n" * 5_000_000),
        "shell-lines-under-the-limit": ("shell", b"x\n" * 500_000),
        "shell-variables-then-commands": ("shell", b"".join(b"A%d=1\n" % i for i in range(5_000)) + b"x\n" * 5_000),
        "shell-exports-then-commands": ("shell", b"".join(b"export A%d=1\n" % i for i in range(5_000))
                                        + b"python train.py\n" * 5_000),
        "compose-many-services": ("compose", b"services:\n" + b"".join(
            b"  s%d:\n    image: vllm/vllm-openai:v0.11.0\n    command: vllm serve org/M-%dB --gpu-memory-utilization 0.%d\n"
            % (i, i % 90 + 1, i % 9 + 1) for i in range(20_000))),
    }
