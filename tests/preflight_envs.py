"""Real Python environments for the preflight tests: venvs made with ``python3 -m venv`` and filled by a
real ``pip install`` from wheels written here (the test suite may not reach PyPI).

The wheels are small stand-ins for the distributions whose *behaviour* preflight reads: a ``torch`` that
imports and reports a CUDA version (13.0 or 12.8) the way torch does (``torch.version.cuda``,
``torch.cuda.is_available()``, ``get_arch_list()``), one whose import segfaults (G1's symptom: a CUDA 12
build on a CUDA 13 machine), one whose import hangs, a ``flash-attn`` whose CUDA extension is missing,
and a library whose Requires-Dist pins torch to another version. The probe, pip and the interpreter are
all real; only these third-party packages are replaced by their observable behaviour.
"""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

TORCH_OK = '''
__version__ = "{version}"
from . import version, cuda
'''
TORCH_VERSION = 'cuda = {cuda!r}\nhip = None\n'
TORCH_CUDA = '''
def is_available():
    return False

def get_arch_list():
    return []

def device_count():
    return 0
'''
TORCH_SEGFAULT = '''
import os, signal
os.kill(os.getpid(), signal.SIGSEGV)
'''
TORCH_HANG = '''
import time
time.sleep(600)
'''
FLASH_ATTN = '''
__version__ = "2.7.4.post1"
'''
FLASH_ATTN_INTERFACE = '''
import flash_attn_2_cuda as flash_attn_gpu  # the compiled extension: absent in this wheel
'''


def write_wheel(folder: Path, name: str, version: str, files: dict[str, str | bytes], requires: tuple[str, ...] = ()) -> Path:
    """A valid py3-none-any wheel (METADATA, WHEEL, RECORD with hashes) that pip installs."""
    dist = name.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(f"Requires-Dist: {r}\n" for r in requires)
    entries: dict[str, str | bytes] = dict(files)
    entries[f"{info}/METADATA"] = metadata
    entries[f"{info}/WHEEL"] = "Wheel-Version: 1.0\nGenerator: envcheck-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record_lines = []
    for path, text in entries.items():
        data = text.encode() if isinstance(text, str) else text
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record_lines.append(f"{path},sha256={digest},{len(data)}")
    record_lines.append(f"{info}/RECORD,,")
    entries[f"{info}/RECORD"] = "\n".join(record_lines) + "\n"
    wheel = folder / f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for path, text in entries.items():
            zf.writestr(path, text)
    return wheel


def torch_wheel(folder: Path, version: str, cuda: str | None, init: str | None = None) -> Path:
    return write_wheel(folder, "torch", version, {
        "torch/__init__.py": init or TORCH_OK.format(version=version),
        "torch/version.py": TORCH_VERSION.format(cuda=cuda),
        "torch/cuda.py": TORCH_CUDA,
    })


def make_env(root: Path, name: str, wheels: list[Path]) -> Path:
    """A venv at root/name with ``wheels`` installed by the real pip (offline). Returns its python."""
    target = root / name
    venv.EnvBuilder(with_pip=False, clear=True).create(target)
    python = target / "bin" / "python"
    if wheels:
        subprocess.run(
            [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-index", "--no-deps", "--quiet",
             "--disable-pip-version-check", *map(str, wheels)],
            check=True, capture_output=True, text=True,
        )
    return python


def build_envs(root: Path) -> dict[str, Path]:
    """Every environment the preflight tests use, built once per session."""
    house = root / "wheels"
    house.mkdir(parents=True, exist_ok=True)
    good = torch_wheel(house, "2.11.0+cu130", "13.0")
    cu12 = torch_wheel(house, "2.8.0+cu128", "12.8")
    crash = torch_wheel(house, "2.9.0+cu129", "12.9", TORCH_SEGFAULT)
    hang = torch_wheel(house, "2.9.1+cu130", "13.0", TORCH_HANG)
    flash = write_wheel(house, "flash-attn", "2.7.4.post1", {
        "flash_attn/__init__.py": FLASH_ATTN, "flash_attn/flash_attn_interface.py": FLASH_ATTN_INTERFACE,
    }, requires=("torch", "einops"))
    pinned = write_wheel(house, "spark-demo-lib", "1.0", {"spark_demo_lib/__init__.py": ""}, requires=("torch==2.10.0",))
    return {
        "good": make_env(root, "good", [good, flash]),
        "cu12": make_env(root, "cu12", [cu12, pinned]),
        "crash": make_env(root, "crash", [crash]),
        "hang": make_env(root, "hang", [hang]),
        "empty": make_env(root, "empty", []),
    }
