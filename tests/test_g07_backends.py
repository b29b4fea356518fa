"""G7 over a package whose binaries carry kernels for different GPUs, as vLLM's wheel does: arch- or
family-specific backends for other GPU generations (FlashMLA sm_90a/sm_100f, FA3 sm_90a) next to a core
that runs on sm_121 are a WARN; without that core, or when the binary is plain or this generation's
specific build (sm_120a), it is a FAIL. Real nvcc-built libraries, judged through the command line."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import installed_dist, require, run_envcheck

GENCODES: dict[str, tuple[tuple[str, str], ...]] = {
    "core.so": (("compute_120", "sm_120"),),
    "fa3.so": (("compute_90a", "sm_90a"),),
    "mla.so": (("compute_100f", "sm_100f"),),
    "sm120a.so": (("compute_120a", "sm_120a"),),
    "sm80.so": (("compute_80", "sm_80"),),
    "ptx80.so": (("compute_80", "compute_80"),),
    # vLLM 0.11.1's FA3 (_vllm_fa3_C): Hopper kernels next to a few plain sm_80 ones, no PTX
    "fa3fat.so": (("compute_80", "sm_80"), ("compute_90a", "sm_90a")),
}


@pytest.fixture(scope="session")
def libraries(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    require(shutil.which("nvcc") is not None, "nvcc not on PATH")
    out = tmp_path_factory.mktemp("g07-backends")
    (out / "k.cu").write_text("__global__ void k(int *p) { *p = 42; }\nvoid launch(int *p) { k<<<1, 1>>>(p); }\n")
    for name, codes in GENCODES.items():
        gencodes = [flag for arch, code in codes for flag in ("-gencode", f"arch={arch},code={code}")]
        subprocess.run(["nvcc", "-shared", "-Xcompiler", "-fPIC", "-cudart", "shared", *gencodes,
                        "-o", str(out / name), str(out / "k.cu")], check=True, timeout=300)
    return {name: out / name for name in GENCODES}


def _g7(site: Path) -> list[tuple[str, str]]:
    done = run_envcheck("-f", "json", str(site))
    assert done.returncode in (0, 1), done.stderr
    return sorted((f["status"], f["message"]) for t in json.loads(done.stdout)["targets"] for f in t["findings"]
                  if f["rule"] == "G7-binary-no-sm121" and f["status"] in ("WARN", "FAIL"))


def test_other_generation_backends_next_to_a_running_core_are_one_warn(tmp_path: Path, libraries: dict[str, Path]) -> None:
    installed_dist(tmp_path, "servekit", "1.0", {f"servekit/{n}": libraries[n] for n in ("core.so", "fa3.so", "mla.so")})
    [(status, message)] = _g7(tmp_path)
    assert status == "WARN"
    assert "servekit: 2 binaries" in message and "sm_100f, sm_90a" in message


def test_a_backend_with_plain_kernels_of_an_older_gpu_beside_its_specific_ones_is_a_backend(
        tmp_path: Path, libraries: dict[str, Path]) -> None:
    """FA3 in vLLM 0.11.1's wheel: sm_90a kernels and a few plain sm_80 ones, none for sm_121, next to a core
    with sm_120 SASS: a backend vLLM selects on Hopper only, so one WARN, not a FAIL."""
    installed_dist(tmp_path, "servekit", "1.0", {f"servekit/{n}": libraries[n] for n in ("core.so", "fa3fat.so", "mla.so")})
    [(status, message)] = _g7(tmp_path)
    assert status == "WARN" and "servekit: 2 binaries" in message and "sm_80" in message, message


@pytest.mark.parametrize("core", [None, "ptx80.so"])
def test_without_a_core_with_sass_for_the_gpu_the_same_backends_fail(tmp_path: Path, libraries: dict[str, Path],
                                                                     core: str | None) -> None:
    # a package whose only code that reaches sm_121 is PTX to JIT is not known to run its main path here
    names = ("fa3.so", "mla.so", *((core,) if core else ()))
    installed_dist(tmp_path, "hopperonly", "1.0", {f"hopperonly/{n}": libraries[n] for n in names})
    assert [s for s, _ in _g7(tmp_path)] == ["FAIL"]


@pytest.mark.parametrize("other", ["sm120a.so", "sm80.so"])
def test_a_plain_or_this_generations_specific_build_still_fails(tmp_path: Path, libraries: dict[str, Path],
                                                                other: str) -> None:
    # sm_120a is what a package picks for a 12.x GPU, and it does not run on 12.1; sm_80 is generic code
    installed_dist(tmp_path, "mixed", "1.0", {f"mixed/{n}": libraries[n] for n in ("core.so", "fa3.so", other)})
    [(status, message)] = _g7(tmp_path)
    assert status == "FAIL" and message.startswith("mixed: 2 binaries")  # the backend goes with the failing binary
