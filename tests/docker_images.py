"""Small real container images for the tests, built once per session from this machine's own files.

No network: two interpreter bases are made with ``docker import`` from rootfs trees copied off this
machine (Debian's python3.11 with its shared-library closure; this machine's pyenv CPython 3.8.18 for an
image whose python is too old), and the test images are built from ``dockerfiles/test-images/`` on top of
them with COPY only. Their site-packages trees are generated here: dist-info folders as pip writes them
(METADATA, RECORD, INSTALLER) and ELF libraries built with gcc against real CUDA sonames.

Images are tagged with a digest of everything that goes into them, so a second session on the same
engine reuses them. Loaded as a pytest plugin (``tests/conftest.py``); fixtures: ``docker_client``,
``test_images``.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, require

DOCKERFILES = REPO / "dockerfiles" / "test-images"
HOST_PYTHON = Path("/usr/bin/python3.11")  # Debian's interpreter: its library closure is plain system files
PYENV = Path("/root/.pyenv/versions")
OLD_PYTHON = PYENV / "3.8.18"  # a real CPython older than the collector accepts
MIN_PYTHON = PYENV / "3.10.13"  # a real CPython of the oldest version the collector accepts
CUDART13 = Path("/usr/local/cuda/lib64/libcudart.so.13")
# Repositories this module builds (others may keep their own images under envcheck-test/).
OWN_REPOSITORIES = frozenset(f"envcheck-test/{name}" for name in (
    "py", "py-user", "cuda13", "cuda12", "flash-unsloth", "no-python", "old-python", "py310-cuda13", "root-only"))
STDLIB_SKIP = {"test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "site-packages", "__pycache__"}


@dataclass(frozen=True)
class TestImages:
    """Tags of the session's test images (all present on the engine)."""

    python: str  # Debian python3.11 only, nothing installed
    cuda13: str
    cuda12: str
    flash_unsloth: str
    no_python: str
    old_python: str
    python310: str  # CPython 3.10.13 with the clean CUDA 13 set: the oldest interpreter the collector takes
    root_only: str  # the clean CUDA 13 set, but python3.11 is mode 0700: only root may run it


# ----------------------------------------------------------------------------------- site-packages


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def write_distribution(site: Path, name: str, version: str, requires: tuple[str, ...] = (),
                       files: Mapping[str, bytes] | None = None, summary: str = "") -> None:
    """A distribution as pip installs it: its files plus ``NAME-VERSION.dist-info`` with a full RECORD."""
    files = dict(files or {})
    folder = f"{name.replace('-', '_')}-{version}.dist-info"
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    if summary:
        lines.append(f"Summary: {summary}")
    lines += [f"Requires-Dist: {r}" for r in requires]
    files[f"{folder}/METADATA"] = ("\n".join(lines) + "\n\n").encode()
    files[f"{folder}/INSTALLER"] = b"pip\n"
    files[f"{folder}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: envcheck-tests\nRoot-Is-Purelib: false\nTag: cp311-cp311-linux_x86_64\n"
    record = [f"{path},{_record_hash(data)},{len(data)}" for path, data in sorted(files.items())]
    record.append(f"{folder}/RECORD,,")
    files[f"{folder}/RECORD"] = ("\n".join(record) + "\n").encode()
    for path, data in files.items():
        target = site / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        if path.endswith(".so") or ".so." in path:
            target.chmod(0o755)


def _gcc(args: list[str], cwd: Path) -> None:
    subprocess.run(["gcc", *args], cwd=cwd, check=True, capture_output=True, text=True)


def build_libraries(work: Path) -> dict[str, bytes]:
    """Real ELF files built with gcc: a CUDA 12 runtime stand-in and torch-like libraries for 12 and 13."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "cudart.c").write_text("int cudaRuntimeGetVersion(int *v) { *v = 12080; return 0; }\n")
    (work / "c10.c").write_text(
        "extern int cudaRuntimeGetVersion(int *);\n"
        "int c10_cuda_runtime_version(void) { int v = 0; cudaRuntimeGetVersion(&v); return v; }\n"
    )
    (work / "cu12").mkdir(exist_ok=True)
    _gcc(["-shared", "-fPIC", "-O1", "-Wl,-soname,libcudart.so.12", "-o", "cu12/libcudart.so.12", "cudart.c"], work)
    _gcc(["-shared", "-fPIC", "-O1", "-Wl,--no-as-needed", "-Wl,-soname,libc10_cuda.so", "-o", "libc10_cuda.cu12.so",
          "c10.c", "-Lcu12", "-l:libcudart.so.12", "-Wl,-rpath,$ORIGIN/../../nvidia/cuda_runtime/lib"], work)
    _gcc(["-shared", "-fPIC", "-O1", "-Wl,--no-as-needed", "-Wl,-soname,libc10_cuda.so", "-o", "libc10_cuda.cu13.so",
          "c10.c", f"-L{CUDART13.parent}", "-l:libcudart.so.13", "-Wl,-rpath,$ORIGIN/../../nvidia/cu13/lib"], work)
    return {
        "cudart12": (work / "cu12" / "libcudart.so.12").read_bytes(),
        "cudart13": CUDART13.read_bytes(),
        "c10_cu12": (work / "libc10_cuda.cu12.so").read_bytes(),
        "c10_cu13": (work / "libc10_cuda.cu13.so").read_bytes(),
    }


# A stand-in torch package: the version module real torch has, and a CUDA module that finds no GPU
# (as torch does on a machine or container without one). Only the dist-info and ELF files are judged.
TORCH_INIT = b'"""Stand-in torch of the test images."""\nfrom torch import cuda, version\nfrom torch.version import __version__\n'
TORCH_CUDA = (b"def is_available():\n    return False\n\n\ndef device_count():\n    return 0\n\n\n"
              b"def get_arch_list():\n    return []\n")


def cuda13_site(site: Path, libs: Mapping[str, bytes]) -> None:
    """torch 2.14.1 from PyPI with its CUDA 13 distributions (names and versions as pip resolves them)."""
    write_distribution(site, "torch", "2.14.1", (
        'cuda-toolkit[cublas,cudart,cufft,cufile,cupti,curand,cusolver,cusparse,nvjitlink,nvrtc,nvtx]==13.0.3; platform_system == "Linux"',
        'nvidia-cudnn-cu13==9.24.0.43; platform_system == "Linux"',
        'nvidia-nccl-cu13==2.30.7; platform_system == "Linux"',
        'triton==3.8.0; platform_system == "Linux"',
        "filelock", "typing-extensions>=4.10.0", "sympy>=1.13.3", "networkx>=2.5.1", "jinja2", "fsspec>=0.8.5",
    ), {
        "torch/__init__.py": TORCH_INIT,
        "torch/cuda/__init__.py": TORCH_CUDA,
        "torch/version.py": b"__version__ = '2.14.1'\ncuda = '13.0'\ngit_version = 'test'\n",
        "torch/lib/libc10_cuda.so": libs["c10_cu13"],
    }, summary="Tensors and Dynamic neural networks in Python with strong GPU acceleration")
    write_distribution(site, "triton", "3.8.0", (), {"triton/__init__.py": b"__version__ = '3.8.0'\n"})
    write_distribution(site, "cuda-toolkit", "13.0.3", ('nvidia-cuda-runtime==13.0.96; extra == "cudart"',))
    write_distribution(site, "nvidia-cuda-runtime", "13.0.96", (), {"nvidia/cu13/lib/libcudart.so.13": libs["cudart13"]})
    write_distribution(site, "nvidia-cublas", "13.1.1.3")
    write_distribution(site, "nvidia-cudnn-cu13", "9.24.0.43")
    write_distribution(site, "nvidia-nccl-cu13", "2.30.7")
    write_distribution(site, "nvidia-nvjitlink", "13.4.92")


def cuda12_site(site: Path, libs: Mapping[str, bytes]) -> None:
    """torch 2.8.0+cu128 with its CUDA 12 distributions: gotcha G1 on a CUDA 13 machine."""
    write_distribution(site, "torch", "2.8.0+cu128", (
        'nvidia-cuda-runtime-cu12==12.8.90; platform_system == "Linux" and platform_machine == "x86_64"',
        'nvidia-cublas-cu12==12.8.4.1; platform_system == "Linux" and platform_machine == "x86_64"',
        'triton==3.4.0; platform_system == "Linux" and platform_machine == "x86_64"',
        "filelock", "typing-extensions>=4.10.0",
    ), {
        "torch/__init__.py": TORCH_INIT,
        "torch/cuda/__init__.py": TORCH_CUDA,
        "torch/version.py": b"__version__ = '2.8.0+cu128'\ncuda = '12.8'\ngit_version = 'test'\n",
        "torch/lib/libc10_cuda.so": libs["c10_cu12"],
    })
    write_distribution(site, "triton", "3.4.0", (), {"triton/__init__.py": b"__version__ = '3.4.0'\n"})
    write_distribution(site, "nvidia-cuda-runtime-cu12", "12.8.90", (),
                       {"nvidia/cuda_runtime/lib/libcudart.so.12": libs["cudart12"]})
    write_distribution(site, "nvidia-cublas-cu12", "12.8.4.1")


def flash_unsloth_site(site: Path, libs: Mapping[str, bytes]) -> None:
    """The CUDA 13 set plus flash-attn (its extension cannot load here) and unsloth."""
    cuda13_site(site, libs)
    write_distribution(site, "flash-attn", "2.8.3", ("torch", "einops"), {
        "flash_attn/__init__.py": b"__version__ = '2.8.3'\n",
        "flash_attn/flash_attn_interface.py": b"import flash_attn_2_cuda as flash_attn_gpu\n",
    })
    write_distribution(site, "unsloth", "2025.11.1", ("unsloth-zoo>=2025.11.1", "torch>=2.4.0", "xformers>=0.0.27.post2"),
                       {"unsloth/__init__.py": b"__version__ = '2025.11.1'\n"})
    write_distribution(site, "unsloth-zoo", "2025.11.1", ("torch",), {"unsloth_zoo/__init__.py": b""})


# ---------------------------------------------------------------------------------------- rootfs


def _library_closure(files: list[Path]) -> set[Path]:
    found: set[Path] = set()
    for file in files:
        done = subprocess.run(["ldd", str(file)], capture_output=True, text=True)
        for line in done.stdout.splitlines():
            for word in line.split():
                if word.startswith("/") and ".so" in word:
                    found.add(Path(word))
    return found


def _copy_into(root: Path, path: Path) -> None:
    target = root / str(path).lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(path.resolve(), target)


def _copy_stdlib(source: Path, target: Path) -> None:
    shutil.copytree(source, target, symlinks=True, ignore=lambda d, names: [
        n for n in names if n in STDLIB_SKIP or n.startswith("config-") or n.startswith("_test")
        or (Path(d) == source and n == "dist-packages")
    ])


def _etc(root: Path) -> None:
    (root / "etc").mkdir(parents=True, exist_ok=True)
    (root / "etc/passwd").write_text("root:x:0:0::/root:/bin/sh\nnobody:x:65534:65534::/nonexistent:/bin/sh\n")
    (root / "etc/group").write_text("root:x:0:\nnogroup:x:65534:\n")
    (root / "tmp").mkdir(exist_ok=True)
    (root / "tmp").chmod(0o1777)
    (root / "root").mkdir(mode=0o700, exist_ok=True)


def python311_rootfs(root: Path) -> None:
    """Debian's python3.11, its precompiled stdlib and shared-library closure (docker-ci.md, way ii)."""
    (root / "usr/bin").mkdir(parents=True)
    shutil.copy2(HOST_PYTHON, root / "usr/bin/python3.11")
    (root / "usr/bin/python3").symlink_to("python3.11")
    _copy_stdlib(Path("/usr/lib/python3.11"), root / "usr/lib/python3.11")
    (root / "usr/local/lib/python3.11/dist-packages").mkdir(parents=True)
    dynload = sorted((root / "usr/lib/python3.11/lib-dynload").glob("*.so"))
    for lib in _library_closure([HOST_PYTHON, *dynload]):
        _copy_into(root, lib)
    _etc(root)
    subprocess.run([str(HOST_PYTHON), "-m", "compileall", "-q", "-j0", "-s", str(root), "-p", "/",
                    str(root / "usr/lib/python3.11")], check=True, capture_output=True)


def pyenv_rootfs(root: Path, version: str) -> None:
    """This machine's pyenv CPython ``version`` (e.g. 3.8.18) under /usr/local, with libpython in /usr/lib."""
    source = PYENV / version
    short = ".".join(version.split(".")[:2])
    (root / "usr/local/bin").mkdir(parents=True)
    (root / "usr/lib").mkdir(parents=True)
    shutil.copy2(source / f"bin/python{short}", root / f"usr/local/bin/python{short}")
    (root / "usr/local/bin/python3").symlink_to(f"python{short}")
    shutil.copy2(source / f"lib/libpython{short}.so.1.0", root / f"usr/lib/libpython{short}.so.1.0")
    _copy_stdlib(source / f"lib/python{short}", root / f"usr/local/lib/python{short}")
    (root / f"usr/local/lib/python{short}/site-packages").mkdir(parents=True)
    dynload = sorted((root / f"usr/local/lib/python{short}/lib-dynload").glob("*.so"))
    for lib in _library_closure([source / f"bin/python{short}", *dynload]):
        if "pyenv" not in str(lib):
            _copy_into(root, lib)
    _etc(root)


# ---------------------------------------------------------------------------------------- building


def inputs_digest() -> str:
    """Changes whenever anything that goes into the images changes."""
    digest = hashlib.sha256(Path(__file__).read_bytes())
    for dockerfile in sorted(DOCKERFILES.glob("*.Dockerfile")):
        digest.update(dockerfile.read_bytes())
    for path in (HOST_PYTHON, OLD_PYTHON / "bin/python3.8", MIN_PYTHON / "bin/python3.10", CUDART13):
        digest.update(f"{path}:{path.stat().st_size}:{path.stat().st_mtime_ns}".encode())
    return digest.hexdigest()[:12]


def _has(client: Any, tag: str) -> bool:
    from docker.errors import ImageNotFound

    try:
        client.images.get(tag)
        return True
    except ImageNotFound:
        return False


def _prune_other_digests(client: Any, digest: str) -> None:
    """Drop test images of earlier inputs so the engine does not fill up while this file changes."""
    from docker.errors import APIError

    old = [t for image in client.images.list(name="envcheck-test/*") for t in image.tags
           if t.rsplit(":", 1)[0] in OWN_REPOSITORIES and digest not in t]
    for tag in sorted(old, key=lambda t: t.startswith("envcheck-test/py:")):  # images built on a base first
        with contextlib.suppress(APIError):  # still used by a container of a running session
            client.images.remove(tag)


def _import_rootfs(client: Any, root: Path, tag: str, work: Path) -> None:
    archive = work / (tag.replace("/", "_").replace(":", "_") + ".tar")
    with tarfile.open(archive, "w") as tar:
        for entry in sorted(root.iterdir()):
            tar.add(str(entry), arcname=entry.name)
    repository, _, version = tag.partition(":")
    client.api.import_image_from_file(str(archive), repository=repository, tag=version)
    archive.unlink()


def _build(client: Any, dockerfile: str, tag: str, site_writer: Any, libs: Mapping[str, bytes], work: Path,
           base: str | None) -> None:
    context = work / f"ctx-{tag.replace('/', '_').replace(':', '_')}"
    site = context / "site-packages"
    site.mkdir(parents=True)
    site_writer(site, libs)
    shutil.copy2(DOCKERFILES / dockerfile, context / "Dockerfile")
    client.images.build(path=str(context), tag=tag, rm=True, forcerm=True, network_mode="none",
                        buildargs={"BASE": base} if base else None)


def build_test_images(client: Any) -> TestImages:
    """Every test image, built only when the engine does not have this digest's tags yet."""
    digest = inputs_digest()
    tags = TestImages(
        python=f"envcheck-test/py:3.11-{digest}",
        cuda13=f"envcheck-test/cuda13:{digest}",
        cuda12=f"envcheck-test/cuda12:{digest}",
        flash_unsloth=f"envcheck-test/flash-unsloth:{digest}",
        no_python=f"envcheck-test/no-python:{digest}",
        old_python=f"envcheck-test/old-python:{digest}",
        python310=f"envcheck-test/py310-cuda13:{digest}",
        root_only=f"envcheck-test/root-only:{digest}",
    )
    if all(_has(client, t) for t in tags.__dict__.values()):
        return tags
    _prune_other_digests(client, digest)
    old_base = f"envcheck-test/py:3.8-{digest}"
    min_base = f"envcheck-test/py:3.10-{digest}"
    with tempfile.TemporaryDirectory(prefix="envcheck-test-images-") as scratch:
        work = Path(scratch)
        libs = build_libraries(work / "libs")
        root_only_base = f"envcheck-test/py:3.11-root-only-{digest}"
        if not _has(client, tags.python) or not _has(client, root_only_base):
            python311_rootfs(work / "py311")
            _import_rootfs(client, work / "py311", tags.python, work)
            (work / "py311/usr/bin/python3.11").chmod(0o700)
            _import_rootfs(client, work / "py311", root_only_base, work)
        for base, version in ((old_base, "3.8.18"), (min_base, "3.10.13")):
            if not _has(client, base):
                pyenv_rootfs(work / version, version)
                _import_rootfs(client, work / version, base, work)
        builds = (
            ("cuda13.Dockerfile", tags.cuda13, cuda13_site, tags.python),
            ("cuda12.Dockerfile", tags.cuda12, cuda12_site, tags.python),
            ("flash-unsloth.Dockerfile", tags.flash_unsloth, flash_unsloth_site, tags.python),
            ("no-python.Dockerfile", tags.no_python, cuda12_site, None),
            ("old-python.Dockerfile", tags.old_python, cuda12_site, old_base),
            ("cuda13.Dockerfile", tags.root_only, cuda13_site, root_only_base),
            ("py310.Dockerfile", tags.python310, cuda13_site, min_base),
        )
        for dockerfile, tag, writer, base in builds:
            if not _has(client, tag):
                _build(client, dockerfile, tag, writer, libs, work, base)
    return tags


def containers(client: Any, filters: Mapping[str, Any], all: bool = True) -> list[dict[str, Any]]:
    """The containers matching ``filters``, in ONE engine call (``Id``, ``Names``, ``State``, ``Labels``).

    ``client.containers.list()`` lists, then inspects each container: a probe container that the engine
    removes on exit (AutoRemove) between the two calls raises ``NotFound``. Tests that wait for containers
    to go away use this instead (the flaky ``test_engine_that_goes_away_mid_run``)."""
    found: list[dict[str, Any]] = client.api.containers(all=all, filters=dict(filters))
    return found


def container_names(client: Any, filters: Mapping[str, Any], all: bool = True) -> list[str]:
    """Names of the containers matching ``filters`` (one engine call, see :func:`containers`)."""
    return [str(c["Names"][0]).lstrip("/") for c in containers(client, filters, all) if c.get("Names")]


def stderr_of(client: Any, container: Mapping[str, Any]) -> bytes:
    """A container's stderr so far; empty once the engine removed it (it may go at any moment)."""
    from docker.errors import NotFound

    try:
        data: bytes = client.api.logs(container["Id"], stdout=False, stderr=True)
    except NotFound:
        return b""
    return data


# ---------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def docker_client() -> Iterator[Any]:
    """The engine the environment names; skips outside CI (fails under CI=true) when none answers."""
    from envcheck.errors import ServiceError
    from envcheck.sources.container import engine_client

    try:
        client = engine_client(timeout=120)
    except ServiceError as exc:
        require(False, f"no Docker engine: {exc.message}")
        return
    yield client
    client.close()


@pytest.fixture(scope="session")
def test_images(docker_client: Any) -> TestImages:
    """The session's test images (built once; reused across sessions with the same inputs)."""
    missing = [str(p) for p in (HOST_PYTHON, OLD_PYTHON / "bin/python3.8", MIN_PYTHON / "bin/python3.10", CUDART13)
               if not p.exists()]
    require(not missing and shutil.which("gcc") is not None and shutil.which("ldd") is not None,
            f"test images need gcc, ldd and {', '.join(missing) or 'the host interpreters'}")
    return build_test_images(docker_client)


if __name__ == "__main__":  # build (or reuse) the images by hand: python3 tests/docker_images.py
    sys.path.insert(0, str(REPO))
    from envcheck.sources.container import engine_client as _client

    print(build_test_images(_client()))
    os._exit(0)
