"""G1 and G2 over what a wheel's Requires-Dist makes pip install with it: CUDA 12 library distributions, an exactly
pinned torch and flash-attn (a source build on aarch64) are judged at the wheel, where their markers hold on the
Spark (linux/aarch64, no extra); a CUDA 12 distribution's own wheel is one finding, not one more per CUDA 12
dependency. Through the command line."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from conftest import run_envcheck


def _wheel(folder: Path, name: str, *requires: str, version: str = "1.0") -> Path:
    path = folder / f"{name.replace('-', '_')}-{version.replace('+', '%2B')}-py3-none-manylinux_2_28_aarch64.whl"
    info = f"{name.replace('-', '_')}-{version}.dist-info"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                                         + "".join(f"Requires-Dist: {r}\n" for r in requires))
        zf.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nTag: py3-none-manylinux_2_28_aarch64\n")
        zf.writestr(f"{info}/RECORD", "")
    return path


def _g1(wheel: Path, gotcha: str = "G1") -> list[tuple[str, str, str]]:
    done = run_envcheck("-f", "json", str(wheel))
    assert done.returncode in (0, 1), done.stderr
    return sorted((f["rule"], f["status"], f["message"]) for t in json.loads(done.stdout)["targets"] for f in t["findings"]
                  if f["gotcha"] == gotcha and f["status"] in ("WARN", "FAIL"))


def test_cuda12_dependencies_and_a_pinned_cpu_torch_are_judged_at_the_wheel(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path, "fakeml", 'nvidia-cublas-cu12==12.8.4.1; platform_system == "Linux"', "cupy-cuda12x>=13",
                   "torch==2.8.0", "numpy")
    found = _g1(wheel)
    assert [(r, s) for r, s, _ in found] == [("G1-cpu-build", "WARN"), ("G1-cuda12-distribution", "FAIL"),
                                             ("G1-cuda12-distribution", "FAIL")]
    assert any(m.startswith("nvidia-cublas-cu12 12.8.4.1 carries CUDA 12") for _, _, m in found)


def test_markers_that_exclude_the_spark_and_extras_say_nothing(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path, "fakeml", "nvidia-cublas-cu12==12.8.4.1; platform_machine == 'x86_64'",
                   "cupy-cuda12x; extra == 'cuda12'", "torch==2.15.0")
    assert _g1(wheel) == []  # PyPI's torch 2.15.0 for aarch64 is a CUDA 13 build


def test_a_cuda12_distributions_own_wheel_is_one_finding(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path, "jax-cuda12-plugin", "jax-cuda12-pjrt==1.0")
    [(rule, status, message)] = _g1(wheel)
    assert (rule, status) == ("G1-cuda12-distribution", "FAIL") and message.startswith("jax-cuda12-plugin 1.0")


def test_a_wheel_that_requires_flash_attn_makes_pip_build_it(tmp_path: Path) -> None:
    assert [r for r, _, _ in _g1(_wheel(tmp_path, "fa-user", "flash-attn>=2.7"), "G2")] == ["G2-flash-attn-build"]
    (tmp_path / "x").mkdir()
    assert _g1(_wheel(tmp_path / "x", "fa-opt", "flash-attn>=2.7; extra == 'gpu'"), "G2") == []


def test_a_cu130_wheel_pins_the_torch_of_its_own_index(tmp_path: Path) -> None:
    # pip takes torch==2.9.0 from the cu130 index the torchvision 0.24.0+cu130 wheel comes from: a CUDA 13 torch
    assert _g1(_wheel(tmp_path, "torchvision", "torch==2.9.0", version="0.24.0+cu130")) == []
    (tmp_path / "pypi").mkdir()  # PyPI's torchvision 0.24.0 pulls PyPI's torch 2.9.0: CPU-only on aarch64
    found = _g1(_wheel(tmp_path / "pypi", "torchvision", "torch==2.9.0", version="0.24.0"))
    assert [(r, s) for r, s, _ in found] == [("G1-cpu-build", "WARN")]
