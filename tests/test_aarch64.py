"""envcheck on its own target, linux/aarch64: the wheel installed into an emulated aarch64 Python (user-mode
QEMU, `.ci/aarch64-setup`), run on every source kind, the folder scan with its workers, the cache, snapshot
and diff, preflight without a driver and every output format, and compared byte for byte with the same
command on this machine's x86_64 Python. The subset is listed in docs/aarch64.md."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO, require, run_envcheck

pytestmark = pytest.mark.aarch64

ROOT = REPO / ".work" / "arm64root"
SITE = REPO / ".work" / "arm64-site"
QEMU = shutil.which("qemu-aarch64-static")
EMULATED_TIMEOUT = 300  # emulation is about 20x slower than native

Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def arm64() -> Run:
    """``arm64(*args, env=..., cwd=...)``: ``python -m envcheck ARGS`` in the emulated aarch64 Python, with the
    installed wheel (never this checkout's source: ``-P`` keeps the working folder off the path)."""
    require(QEMU is not None and (ROOT / "usr/bin/python3.11").is_file() and (SITE / "envcheck").is_dir(),
            "an emulated linux/aarch64 Python with envcheck installed (bash .ci/aarch64-setup; Debian's qemu-user-static and debootstrap)")

    def run(*args: str, env: dict[str, str] | None = None, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
        full_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        full_env.update({"PYTHONPATH": str(SITE), "ENVCHECK_CACHE_DIR": str(REPO / ".work" / "arm64-cache")})
        full_env.update(env or {})
        return subprocess.run([str(QEMU), "-L", str(ROOT), str(ROOT / "usr/bin/python3.11"), "-P", "-m", "envcheck", *args],
                              cwd=cwd, capture_output=True, text=True, timeout=EMULATED_TIMEOUT, env=full_env)

    return run


def test_the_emulated_python_is_aarch64_and_runs_the_wheel(arm64: Run) -> None:
    done = subprocess.run([str(QEMU), "-L", str(ROOT), str(ROOT / "usr/bin/python3.11"), "-P", "-c",
                           "import platform, sys, envcheck; print(platform.machine(), sys.byteorder, envcheck.__file__)"],
                          cwd=REPO, capture_output=True, text=True, timeout=EMULATED_TIMEOUT,
                          env={**os.environ, "PYTHONPATH": str(SITE)})
    assert done.returncode == 0, done.stderr
    machine, order, where = done.stdout.split()
    assert (machine, order) == ("aarch64", "little") and Path(where).is_relative_to(SITE)
    assert arm64("--version").stdout == run_envcheck("--version").stdout


# The README's first command over every format, then one file of each static kind (requirements, freeze,
# pyproject, uv.lock, pylock, Dockerfile, wheel-free ELF files) in one run.
KINDS = ["examples/requirements-cuda12.txt", "examples/freeze-ngc-unsloth.txt", "examples/project-uv-cu128/pyproject.toml",
         "examples/project-uv-lock/uv.lock", "examples/project-pylock/pylock.toml", "dockerfiles/cuda12-devel/Dockerfile",
         "fixtures/binaries/gpu_sm120_121a.so", "fixtures/binaries/libext_cuda12.so", "fixtures/binaries/gpu_static_sm121f.a",
         "fixtures/binaries/aarch64_libtorch_global_deps.so"]


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github", "html"])
def test_the_examples_give_the_same_bytes_on_both_machines(arm64: Run, fmt: str) -> None:
    arm = arm64("-f", fmt, "examples", "dockerfiles")
    x86 = run_envcheck("-f", fmt, "examples", "dockerfiles")
    assert arm.returncode == x86.returncode == 1, arm.stderr
    assert arm.stdout == x86.stdout


def test_every_static_kind_gives_the_same_report(arm64: Run) -> None:
    arm = arm64("-f", "json", "-v", *KINDS)
    x86 = run_envcheck("-f", "json", "-v", *KINDS)
    assert arm.returncode == x86.returncode, arm.stderr
    assert json.loads(arm.stdout) == json.loads(x86.stdout)
    kinds = {t["kind"] for t in json.loads(arm.stdout)["targets"]}
    assert {"requirements", "freeze", "pyproject", "uv-lock", "pylock", "dockerfile", "elf"} <= kinds


def _site(tmp_path: Path) -> Path:
    """An environment of real aarch64 ELF files: the emulated stage's own site-packages (zstandard,
    charset_normalizer extensions) with the fixtures' binaries in a distribution of their own."""
    site = tmp_path / "site-packages"
    shutil.copytree(SITE, site, symlinks=True)
    gpu = site / "gpu_demo"
    gpu.mkdir()
    for name in ("gpu_sm121.so", "libext_cuda13.so"):
        shutil.copy(FIXTURES / "binaries" / name, gpu / name)
    return site


def test_a_folder_scan_with_workers_and_its_cache(arm64: Run, tmp_path: Path) -> None:
    """Forked workers (forced on these 2 cores), the cold answer equal to x86_64's, then the answer from the
    cache (the folder snapshot) equal to the cold one."""
    site = _site(tmp_path)
    time.sleep(2.2)  # older than the folder snapshot's racy window (cache.RACY_NS, 2 s): else no snapshot is kept
    env = {"ENVCHECK_SCAN_WORKERS": "4", "ENVCHECK_CACHE_DIR": str(tmp_path / "arm-cache")}
    cold = arm64("-f", "json", str(site), env=env)
    assert cold.returncode in (0, 1), cold.stderr
    x86 = run_envcheck("-f", "json", str(site), env={"ENVCHECK_SCAN_WORKERS": "4", "ENVCHECK_CACHE_DIR": str(tmp_path / "x86-cache")})
    assert json.loads(cold.stdout) == json.loads(x86.stdout)
    binaries = json.loads(cold.stdout)["targets"][0]["inventory"]["binaries"]
    assert {"aarch64"} <= {b["machine"] for b in binaries} and any(b.get("sass") for b in binaries)
    assert list((tmp_path / "arm-cache").glob("folder-*.json"))
    cached = arm64("-f", "json", str(site), env=env)
    assert cached.stdout == cold.stdout


def test_snapshot_and_diff(arm64: Run, tmp_path: Path) -> None:
    site = _site(tmp_path)
    snap = tmp_path / "good.json"
    made = arm64("snapshot", str(site), "-o", str(snap))
    assert made.returncode in (0, 1), made.stderr
    assert json.loads(snap.read_text())["targets"]
    same = arm64("diff", str(snap), str(site))
    assert same.returncode == 0, same.stdout + same.stderr
    shutil.copy(FIXTURES / "binaries" / "libext_cuda12.so", site / "gpu_demo" / "libnew12.so")  # a CUDA 12 library appears
    changed = arm64("diff", str(snap), str(site))
    assert changed.returncode == 1 and "libnew12.so" in changed.stdout, changed.stdout + changed.stderr


def test_preflight_without_a_driver(arm64: Run) -> None:
    done = arm64("preflight", "--sample-seconds", "0")
    assert done.returncode in (0, 1), done.stderr
    lines = [line for line in done.stdout.splitlines() if line[:1] == "G"]
    assert [line.split()[0] for line in lines] == [f"G{n}" for n in range(1, 11)]
    assert "nvidia-smi not found" in done.stdout


def test_a_pin_whose_releases_publish_no_aarch64_file_fails(tmp_path: Path) -> None:
    """onnxruntime-gpu 1.24.1 ships x86_64 wheels only, no aarch64 wheel and no sdist (knowledge/wheels.toml): pip
    cannot install it on a Spark, whatever else the file does; a release with an aarch64 wheel, or the same pin
    from another index, is not judged so."""
    req = tmp_path / "requirements.txt"
    req.write_text("numpy\nonnxruntime-gpu==1.24.1\n", encoding="utf-8")
    proc = run_envcheck("--format", "json", "--fail-on", "never", str(req))
    found = [f for t in json.loads(proc.stdout)["targets"] for f in t["findings"] if f["rule"] == "ARCH-wheel-platform"]
    assert [(f["status"], f["location"]["line"]) for f in found] == [("FAIL", 2)]
    for text in ("onnxruntime-gpu==1.29.0\n", "--index-url https://example.org/simple\nonnxruntime-gpu==1.24.1\n"):
        req.write_text(text, encoding="utf-8")
        proc = run_envcheck("--format", "json", "--fail-on", "never", str(req))
        assert not [f for t in json.loads(proc.stdout)["targets"] for f in t["findings"]
                    if f["rule"] == "ARCH-wheel-platform" and f["status"] in ("WARN", "FAIL")]
