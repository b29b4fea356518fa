"""G1 over binaries gives one finding per cause: a package's binaries that need (or are) CUDA 12 libraries are
one finding per distribution (all its CUDA majors), naming them in its evidence (count, first ones), as G7 groups a
package's binaries; a CUDA 12 distribution whose binaries say so is that same finding, not one more
(cupy-cuda12x's wheel gave 1 + 5, bitsandbytes 0.42.0 twenty). Through the CLI, on real ELF files."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

from conftest import FIXTURES, installed_dist, run_envcheck

BIN = FIXTURES / "binaries"
CUDA12 = BIN / "libext_cuda12.so"  # needs libcudart.so.12 and libcublas.so.12


def _g1(target: Path, cwd: Path) -> list[dict[str, Any]]:
    proc = run_envcheck("-f", "json", str(target), cwd=cwd, env={"ENVCHECK_CACHE_DIR": str(cwd / "cache")})
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    return [f for t in report["targets"] for f in t["findings"] if f["gotcha"] == "G1" and f["status"] in ("WARN", "FAIL")]


def test_a_folder_gives_one_g1_finding_per_package(tmp_path: Path) -> None:
    site = tmp_path / "site"
    installed_dist(site, "cuda12-ext", "1.0", {f"cuda12_ext/_mod{i}.so": CUDA12 for i in range(4)})
    installed_dist(site, "other-ext", "2.0", {"other_ext/_a.so": CUDA12, "other_ext/_b.so": CUDA12})
    found = _g1(site, tmp_path)
    assert sorted((f["rule"], f["evidence"]["distribution"]) for f in found) == [
        ("G1-binary-soname", "cuda12-ext"), ("G1-binary-soname", "other-ext")], found
    mine = next(f for f in found if f["evidence"]["distribution"] == "cuda12-ext")
    assert mine["status"] == "FAIL" and mine["evidence"]["count"] == 4 and mine["evidence"]["cuda_major"] == 12
    assert sorted(mine["evidence"]["binaries"]) == sorted(str(site / f"cuda12_ext/_mod{i}.so") for i in range(4))
    assert mine["evidence"]["libraries"] == ["libcublas.so.12", "libcudart.so.12"]
    assert mine["message"].startswith("cuda12-ext: 4 binaries need CUDA 12 libraries (libcublas.so.12, libcudart.so.12)")


def test_a_cuda12_distribution_with_its_binaries_is_one_finding(tmp_path: Path) -> None:
    """nvidia-cuda-runtime-cu12 installed: its name and its libcudart.so.12 are one cause, reported once."""
    site = tmp_path / "site"
    installed_dist(site, "nvidia-cuda-runtime-cu12", "12.8.90", {
        "nvidia/cuda_runtime/lib/libcudart.so.12": BIN / "libcudart.so.12", "nvidia/cuda_runtime/lib/libext.so": CUDA12})
    [one] = _g1(site, tmp_path)
    assert one["rule"] == "G1-binary-soname" and one["status"] == "FAIL", one
    assert one["evidence"]["count"] == 2 and "need or are CUDA 12 libraries" in one["message"], one
    assert one["fix"].startswith("Replace nvidia-cuda-runtime-cu12 with nvidia-cuda-runtime"), one


def test_a_wheel_gives_one_g1_finding(tmp_path: Path) -> None:
    """cupy-cuda12x's wheel: one finding for the distribution and its five CUDA 12 extensions, whose fix is cupy-cuda13x."""
    wheel = tmp_path / "cupy_cuda12x-13.6.0-cp312-cp312-manylinux2014_aarch64.whl"
    members = [f"cupy/_m{i}.so" for i in range(5)]
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("cupy_cuda12x-13.6.0.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: false\n"
                    "Tag: cp312-cp312-manylinux2014_aarch64\n")
        zf.writestr("cupy_cuda12x-13.6.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: cupy-cuda12x\nVersion: 13.6.0\n")
        for member in members:
            zf.writestr(member, CUDA12.read_bytes())
        zf.writestr("cupy_cuda12x-13.6.0.dist-info/RECORD", "".join(f"{m},,\n" for m in members))
    [one] = _g1(wheel, tmp_path)
    assert one["rule"] == "G1-binary-soname" and one["evidence"]["count"] == 5, one
    assert sorted(one["evidence"]["binaries"]) == members and "cupy-cuda13x" in one["fix"]
    assert one["location"]["member"] in members


def test_loose_files_of_one_folder_are_one_finding_and_two_folders_two(tmp_path: Path) -> None:
    for folder in ("a", "b"):
        for name in ("libone.so", "libtwo.so"):
            (tmp_path / "tree" / folder).mkdir(parents=True, exist_ok=True)
            (tmp_path / "tree" / folder / name).write_bytes(CUDA12.read_bytes())
    found = _g1(tmp_path / "tree", tmp_path)
    assert len(found) == 2 and all(f["evidence"]["count"] == 2 for f in found), found
    assert all("(no known distribution)" in f["message"] and "Rebuild" in f["fix"] for f in found), found


def test_a_package_with_cuda11_and_cuda12_variants_and_no_cuda13_one_is_one_finding(tmp_path: Path) -> None:
    """bitsandbytes 0.46 ships libraries for CUDA 11 and 12 and none for 13: one cause (no CUDA 13 build), one finding."""
    import subprocess
    (tmp_path / "stub.c").write_text("int cuda_stub(void) { return 0; }\n", encoding="utf-8")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", "libcudart.so.11.0", "-Wl,-soname,libcudart.so.11.0", "stub.c"],
                   cwd=tmp_path, check=True)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", "_cuda11.so", "-Wl,--no-as-needed", "stub.c", "./libcudart.so.11.0"],
                   cwd=tmp_path, check=True)
    site = tmp_path / "site"
    installed_dist(site, "variants-ext", "0.46.0", {"variants_ext/_cuda11.so": tmp_path / "_cuda11.so",
                                                   "variants_ext/_cuda12.so": CUDA12})
    [one] = _g1(site, tmp_path)
    assert one["rule"] == "G1-binary-soname" and one["evidence"]["count"] == 2, one
    assert "CUDA 11/12 libraries" in one["message"], one
