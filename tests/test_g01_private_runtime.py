"""G1 over a wheel that ships its own, auditwheel-renamed CUDA 12 runtime (PyNvVideoCodec 2.2.4:
libcudart-5961e14e.so.12.3.101, linked by that name): the copy loads with the wheel, and the CUDA 13 driver runs
an older runtime, so it is INFO, not a FAIL; a plain libcudart.so.12 it needs from outside still FAILs.
Real gcc-built libraries, judged through the command line as an installed folder and as a wheel."""

from __future__ import annotations

import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
from conftest import installed_dist, require, run_envcheck

RENAMED = "libcudart-5961e14e.so.12.3.101"


@pytest.fixture(scope="module")
def libraries(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    require(shutil.which("gcc") is not None, "gcc not on PATH")
    out = tmp_path_factory.mktemp("private-runtime")
    (out / "stub.c").write_text("int cudaGetDeviceCount(int *n) { *n = 0; return 0; }\n")
    (out / "ext.c").write_text("int cudaGetDeviceCount(int *n); int ext(void) { int n; cudaGetDeviceCount(&n); return n; }\n")
    for soname in (RENAMED, "libcudart.so.12"):
        subprocess.run(["gcc", "-shared", "-fPIC", f"-Wl,-soname,{soname}", "-o", str(out / soname), str(out / "stub.c")], check=True)
    for name, lib in (("ext_private.so", RENAMED), ("ext_plain.so", "libcudart.so.12")):
        subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,--no-as-needed", "-o", str(out / name), str(out / "ext.c"),
                        f"-L{out}", f"-l:{lib}"], check=True)
    return {p.name: p for p in out.iterdir()}


def _g1(target: Path) -> list[tuple[str, str]]:
    done = run_envcheck("-f", "json", str(target))
    assert done.returncode in (0, 1), done.stderr
    return sorted((f["status"], f["message"]) for t in json.loads(done.stdout)["targets"] for f in t["findings"]
                  if f["rule"] == "G1-binary-soname" and f["status"] != "PASS")


def test_an_installed_private_cuda12_runtime_is_info(tmp_path: Path, libraries: dict[str, Path]) -> None:
    installed_dist(tmp_path, "videocodec", "2.2.4", {"videocodec/_codec.so": libraries["ext_private.so"],
                                                    f"videocodec.libs/{RENAMED}": libraries[RENAMED]})
    [(status, message)] = _g1(tmp_path)
    assert status == "INFO" and f"videocodec ships its own copy of {RENAMED} (CUDA 12" in message


def test_a_wheel_with_its_private_runtime_is_info_and_one_needing_libcudart_so_12_fails(
        tmp_path: Path, libraries: dict[str, Path]) -> None:
    wheel = tmp_path / "videocodec-2.2.4-cp312-cp312-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.write(libraries["ext_private.so"], "videocodec/_codec.so")
        zf.write(libraries[RENAMED], f"videocodec.libs/{RENAMED}")
        zf.writestr("videocodec-2.2.4.dist-info/METADATA", "Metadata-Version: 2.1\nName: videocodec\nVersion: 2.2.4\n")
        zf.writestr("videocodec-2.2.4.dist-info/WHEEL", "Wheel-Version: 1.0\nTag: cp312-cp312-manylinux_2_28_x86_64\n")
        zf.writestr("videocodec-2.2.4.dist-info/RECORD", "")
    assert [s for s, _ in _g1(wheel)] == ["INFO"]
    site = tmp_path / "site"  # the same extension needing the plain soname: the Spark has no libcudart.so.12
    installed_dist(site, "plain", "1.0", {"plain/_ext.so": libraries["ext_plain.so"]})
    [(status, message)] = _g1(site)
    assert status == "FAIL" and "needs libcudart.so.12" in message
