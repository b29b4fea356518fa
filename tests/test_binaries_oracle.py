"""Oracle: fatbin architectures parsed by envcheck == what cuobjdump lists, over libraries nvcc builds here.

The libraries are built once per session in a temporary folder with the nvcc on PATH (CUDA 13), over
many -gencode combinations (sm_121, sm_121a, sm_121f, compute_121*, cross pairs, -rdc, compression, -G,
objects and archives). cuobjdump comes from the nvidia-cuda-cuobjdump wheel (a test-only dependency).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import require

from benchmarks.cuobjdump_oracle import cuobjdump_lists, find_cuobjdump, parsed_lists
from envcheck.inspect.elf import FileSource
from envcheck.sources.binaries import read_binary

pytestmark = pytest.mark.nvcc

KERNEL = "__global__ void k(int *p) { *p = 42; }\nvoid launch(int *p) { k<<<1, 1>>>(p); }\n"
KERNEL2 = "__global__ void k2(int *p) { *p = 7; }\nvoid launch2(int *p) { k2<<<1, 1>>>(p); }\n"


def g(arch: str, code: str) -> list[str]:
    return ["-gencode", f"arch={arch},code={code}"]


# name -> (nvcc flags, expected runnability on sm_121 by the documented rules of research/fatbin.md §10.1)
SHARED_BUILDS: dict[str, tuple[list[str], str | None]] = {
    "sm121": (g("compute_121", "sm_121"), "native"),
    "sm121a": (g("compute_121a", "sm_121a"), "native"),
    "sm121f": (g("compute_121f", "sm_121f"), "native"),
    "ptx121": (g("compute_121", "compute_121"), "ptx-jit"),
    "ptx121a": (g("compute_121a", "compute_121a"), "ptx-jit"),
    "ptx121f": (g("compute_121f", "compute_121f"), "ptx-jit"),
    "ptx120f": (g("compute_120f", "compute_120f"), "ptx-jit"),
    "arch_sm121a": (["-arch=sm_121a"], "native"),
    "c120_sm121": (g("compute_120", "sm_121"), "native"),
    "c120f_sm121": (g("compute_120f", "sm_121"), "native"),
    "c120_sm121f_shared_rt": ([*g("compute_120", "sm_121f"), "-cudart", "shared"], "native"),
    "sm120": (g("compute_120", "sm_120"), "compatible"),
    "sm120f": (g("compute_120f", "sm_120f"), "compatible"),
    "sm120a": (g("compute_120a", "sm_120a"), "none"),
    "ptx120a": (g("compute_120a", "compute_120a"), "none"),
    "sm80": (g("compute_80", "sm_80"), "none"),
    "sm80_ptx80": ([*g("compute_80", "sm_80"), *g("compute_80", "compute_80")], "ptx-jit"),
    "sm100f_ptx100f": ([*g("compute_100f", "sm_100f"), *g("compute_100f", "compute_100f")], "none"),
    "mix": ([*g("compute_80", "sm_80"), *g("compute_90a", "sm_90a"), *g("compute_100a", "sm_100a"), *g("compute_120", "sm_120"),
             *g("compute_121a", "sm_121a"), *g("compute_121f", "sm_121f"), *g("compute_120", "compute_120")], "native"),
    "zstd_all": ([*g("compute_80", "sm_80"), *g("compute_120", "sm_120"), *g("compute_120", "compute_120"), "--compress-mode=size"], "compatible"),
    "lz4": ([*g("compute_80", "sm_80"), *g("compute_120", "sm_120"), *g("compute_120", "compute_120"), "--compress-mode=speed"], "compatible"),
    "no_compress": ([*g("compute_80", "sm_80"), *g("compute_120", "compute_120"), "-no-compress"], "ptx-jit"),
    "rdc": (["-rdc=true", *g("compute_121", "sm_121"), *g("compute_120", "compute_120")], "native"),
    "rdc_sm80_ptx": (["-rdc=true", *g("compute_80", "sm_80"), *g("compute_80", "compute_80")], "ptx-jit"),
    "debug_G": ([*g("compute_121", "sm_121"), "-G"], "native"),
}


cuobjdump_path = find_cuobjdump


@pytest.fixture(scope="session")
def nvcc_builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    require(shutil.which("nvcc") is not None, "nvcc not on PATH")
    root = tmp_path_factory.mktemp("nvcc")
    (root / "k.cu").write_text(KERNEL)
    (root / "k2.cu").write_text(KERNEL2)

    def build(item: tuple[str, tuple[list[str], str | None]]) -> tuple[str, Path]:
        name, (flags, _level) = item
        out = root / f"lib{name}.so"
        subprocess.run(["nvcc", "-shared", "-Xcompiler", "-fPIC", *flags, "-o", str(out), "k.cu", "k2.cu"],
                       cwd=root, check=True, capture_output=True, timeout=300)
        return name, out

    def extra(cmd: list[str], name: str) -> tuple[str, Path]:
        subprocess.run(cmd, cwd=root, check=True, capture_output=True, timeout=300)
        return name, root / name

    jobs = list(SHARED_BUILDS.items())
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        built = dict(pool.map(build, jobs))
        others = [
            (["nvcc", "-lib", "-rdc=true", *g("compute_121", "sm_121"), *g("compute_120", "compute_120"), "-o", "libk_rdc.a", "k.cu", "k2.cu"], "libk_rdc.a"),
            (["nvcc", "-lib", *g("compute_90a", "sm_90a"), *g("compute_121f", "sm_121f"), "-o", "libk.a", "k.cu", "k2.cu"], "libk.a"),
            (["nvcc", "-c", *g("compute_90a", "sm_90a"), *g("compute_90a", "compute_90a"), "-o", "k_90a.o", "k.cu"], "k_90a.o"),
            (["nvcc", "-dc", *g("compute_121", "lto_121"), "-o", "k_lto.o", "k.cu"], "k_lto.o"),
        ]
        for name, path in pool.map(lambda job: extra(*job), others):
            built[name] = path
    return built


@pytest.fixture(scope="session")
def cuobjdump() -> str:
    tool = cuobjdump_path()
    require(tool is not None, "cuobjdump not installed (pip install nvidia-cuda-cuobjdump)")
    assert tool is not None
    return tool


def test_every_build_matches_cuobjdump(nvcc_builds: dict[str, Path], cuobjdump: str) -> None:
    mismatches = []
    for name, path in sorted(nvcc_builds.items()):
        for everything in (False, True):
            want = cuobjdump_lists(cuobjdump, path, everything)
            got = parsed_lists(path, everything)
            if want != got:
                mismatches.append((name, everything, want, got))
    assert not mismatches, mismatches
    # the oracle compared something: every build but the LTO object has GPU code cuobjdump lists
    assert all(cuobjdump_lists(cuobjdump, p, True) not in (([], []),) and not isinstance(cuobjdump_lists(cuobjdump, p, True), str) for n, p in nvcc_builds.items() if n != "k_lto.o")


@pytest.mark.parametrize("name", sorted(SHARED_BUILDS))
def test_runnability_on_sm121(nvcc_builds: dict[str, Path], name: str) -> None:
    path = nvcc_builds[name]
    with path.open("rb") as fh:
        reading = read_binary(FileSource(fh, path.stat().st_size), str(path))
    assert reading.problems == []
    assert reading.binary is not None
    assert reading.binary.sm121 == SHARED_BUILDS[name][1], (name, reading.binary)


def test_variants_keep_a_and_f(nvcc_builds: dict[str, Path]) -> None:
    path = nvcc_builds["mix"]
    with path.open("rb") as fh:
        b = read_binary(FileSource(fh, path.stat().st_size), str(path)).binary
    assert b is not None
    # cuobjdump hides the f of cubins; envcheck keeps it
    assert set(b.sass) == {"sm_80", "sm_90a", "sm_100a", "sm_120", "sm_121a", "sm_121f"}
    assert b.ptx == ("compute_120",)
    assert b.ptx_isa == ("9.0",)


def test_lto_object_lists_lto_ir(nvcc_builds: dict[str, Path]) -> None:
    path = nvcc_builds["k_lto.o"]
    with path.open("rb") as fh:
        b = read_binary(FileSource(fh, path.stat().st_size), str(path)).binary
    assert b is not None
    assert b.lto == ("lto_121",)
    assert b.sass == () and b.ptx == ()
    assert b.sm121 is None  # LTO IR is not code the runtime loads


def test_archive_members_are_read(nvcc_builds: dict[str, Path]) -> None:
    path = nvcc_builds["libk.a"]
    with path.open("rb") as fh:
        b = read_binary(FileSource(fh, path.stat().st_size), str(path)).binary
    assert b is not None
    assert b.elf_type == "AR"
    assert set(b.sass) == {"sm_90a", "sm_121f"}
    assert b.sm121 == "native"


CUBINS = {"sm_121a": "-arch=sm_121a", "sm_121f": "-arch=sm_121f", "sm_120": "-arch=sm_120", "sm_90": "-arch=sm_90",
          "sm_90a": "-arch=sm_90a", "sm_100a": "-arch=sm_100a", "sm_80": "-arch=sm_80"}


@pytest.fixture(scope="session")
def cubins(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    require(shutil.which("nvcc") is not None, "nvcc not on PATH")
    root = tmp_path_factory.mktemp("cubins")
    (root / "k.cu").write_text(KERNEL)

    def build(item: tuple[str, str]) -> tuple[str, Path]:
        name, flag = item
        out = root / f"k_{name}.cubin"
        subprocess.run(["nvcc", "-cubin", flag, "-o", str(out), "k.cu"], cwd=root, check=True, capture_output=True, timeout=300)
        return name, out

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        return dict(pool.map(build, CUBINS.items()))


def test_standalone_cubins_match_cuobjdump(cubins: dict[str, Path], cuobjdump: str) -> None:
    for name, path in cubins.items():
        want, _ptx = cuobjdump_lists(cuobjdump, path, False)
        with path.open("rb") as fh:
            b = read_binary(FileSource(fh, path.stat().st_size), str(path)).binary
        assert b is not None and b.machine == "cuda"
        assert list(b.sass) == want == [name.rstrip("f")], name  # a cubin does not record the f
    levels = {}
    for name, path in cubins.items():
        with path.open("rb") as fh:
            b = read_binary(FileSource(fh, path.stat().st_size), str(path)).binary
        assert b is not None
        levels[name] = b.sm121
    assert levels == {"sm_121a": "native", "sm_121f": "native", "sm_120": "compatible", "sm_90": "none",
                      "sm_90a": "none", "sm_100a": "none", "sm_80": "none"}
