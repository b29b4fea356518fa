"""The real CUDA 13 torch artifacts the slow tests read: a venv with torch 2.14.1 and its nvidia-* wheels,
the torch wheel itself and a CUDA 12 runtime wheel, and three wheels of other platforms, all under ``.work/`` and reused across sessions.

``.ci/setup`` starts ``python3 tests/torch_env.py`` in the background so that the downloads and the
5 GB install overlap the first tests; the fixtures call the same functions, which wait on a file lock
for a preparation under way and do the work themselves when none ran.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

WORK = Path(__file__).resolve().parent.parent / ".work"
TORCH = "torch==2.14.1"


class NotPrepared(RuntimeError):
    """pip could not make an artifact (no index, no disk): the tests that need it are skipped or fail."""


@contextmanager
def _locked(name: str) -> Iterator[None]:
    WORK.mkdir(exist_ok=True)
    with open(WORK / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _pip(*args: str, python: str = sys.executable, timeout: float = 1800) -> None:
    proc = subprocess.run([python, "-m", "pip", *args], capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise NotPrepared(f"pip {' '.join(args[:3])} failed: {proc.stderr[-500:]}")


def torch_site() -> Path:
    """The venv's site-packages, installing it first where an earlier run did not finish."""
    venv = WORK / "torch-venv"
    with _locked("torch-venv"):
        if not list(venv.glob("lib/python*/site-packages/torch/lib/libtorch_cuda.so")):
            shutil.rmtree(venv, ignore_errors=True)
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
            _pip("install", "-q", TORCH, python=str(venv / "bin" / "python"))
    [site] = list(venv.glob("lib/python*/site-packages"))
    return site


# wheels of other platforms whose ELF members the tests read as installed files
REAL_WHEELS = {
    "nvidia-cudnn-cu13==9.24.0.43": ("--platform", "manylinux_2_27_x86_64", "--python-version", "3.12"),
    "nvidia-cusparselt-cu13==0.8.1": ("--platform", "manylinux2014_x86_64", "--python-version", "3.12"),
    "triton==3.8.0": ("--platform", "manylinux_2_28_aarch64", "--python-version", "3.12", "--implementation", "cp", "--abi", "cp312"),
}

NVSHMEM = "nvidia-nvshmem-cu13==3.4.5"  # a real CUDA 13 wheel for this machine (tests/test_image_inflate.py)


def _downloaded(folder: str, pattern: str, *spec: str) -> Path:
    with _locked(folder.replace("/", "-")):
        found = sorted((WORK / folder).glob(pattern))
        if not found:
            _pip("download", "-q", "--no-deps", *spec, "-d", str(WORK / folder), timeout=900)
            found = sorted((WORK / folder).glob(pattern))
    return found[0]


def torch_wheel() -> Path:
    return _downloaded("torch-wheel", "torch-2.14.1-*.whl", TORCH)


def cuda12_runtime_wheel() -> Path:
    return _downloaded("cu12", "nvidia_cuda_runtime_cu12-*.whl", "nvidia-cuda-runtime-cu12")


def real_wheel(spec: str) -> Path:
    """The wheel ``spec`` names (for the platform REAL_WHEELS gives it, else this machine's)."""
    stem = spec.split("==")[0].replace("-", "_")
    return _downloaded(f"real-wheels/{spec.replace('==', '-')}", f"{stem}-*.whl", "--only-binary=:all:",
                       *REAL_WHEELS.get(spec, ()), spec)


def installed_members(spec: str) -> tuple[Path, Path]:
    """(the wheel, a folder holding its ELF and ar members at their install paths, with the modes pip keeps)."""
    whl = real_wheel(spec)
    installed = whl.parent / "installed"
    with _locked(f"real-wheels-{spec.replace('==', '-')}-installed"):
        if not (installed / ".complete-modes").exists():
            shutil.rmtree(installed, ignore_errors=True)
            with zipfile.ZipFile(whl) as zf:
                for info in zf.infolist():
                    if info.is_dir():
                        continue
                    with zf.open(info) as member:
                        if not member.read(8).startswith((b"\x7fELF", b"!<arch>\n")):
                            continue
                    target = zf.extract(info, installed)
                    mode = (info.external_attr >> 16) & 0o777
                    if mode & 0o111:  # pip keeps the executable bits (ptxas, cuobjdump in triton's wheel)
                        os.chmod(target, mode | 0o644)
            (installed / ".complete-modes").write_text("")
    return whl, installed


if __name__ == "__main__":
    torch_site()
    torch_wheel()
    cuda12_runtime_wheel()
    for spec in REAL_WHEELS:
        installed_members(spec)
    real_wheel(NVSHMEM)
