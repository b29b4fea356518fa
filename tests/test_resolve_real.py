"""`envcheck --resolve` against the real public index, with a bounded number of look-ups (slow; CI runs them).

Each test names the few files it reads; none walks the index. The facts checked are the ones issue 15 measured:
xformers 0.0.35 has only an sdist for linux/aarch64; bitsandbytes 0.50.2's aarch64 libbitsandbytes_cuda130.so
carries sm_121 SASS; torch 2.14.1's aarch64 wheel links the CUDA 13 libraries (no false G1).
"""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path
from typing import Any

import pytest
from conftest import require, run_envcheck

from envcheck.profile import load_profile
from envcheck.resolution import best_wheel, read_remote_wheel
from envcheck.services.package_index import IndexClient

pytestmark = pytest.mark.slow
PYPI = "https://pypi.org/simple/"


def _online() -> bool:
    try:
        socket.create_connection(("pypi.org", 443), timeout=5).close()
        return True
    except OSError:
        return False


@pytest.fixture(scope="module", autouse=True)
def _needs_index() -> None:
    require(_online(), "the public package index (pypi.org) is not reachable")
    require(shutil.which("uv") is not None, "uv is not installed (pip install 'envcheck-spark[resolve]')")


def _resolve(tmp_path: Path, text: str, *args: str) -> dict[str, Any]:
    (tmp_path / "requirements-freeze.txt").write_text(text)
    env = {"PIP_INDEX_URL": "", "PIP_EXTRA_INDEX_URL": "", "PIP_FIND_LINKS": "", "UV_NO_CONFIG": "1",
           "ENVCHECK_CACHE_DIR": str(tmp_path / "cache")}
    proc = run_envcheck("--resolve", "--index-url", PYPI, "-f", "json", "--fail-on", "never", *args,
                        str(tmp_path / "requirements-freeze.txt"), env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    target: dict[str, Any] = json.loads(proc.stdout)["targets"][0]
    return target


def test_xformers_0_0_35_is_sdist_only_on_aarch64(tmp_path: Path) -> None:
    target = _resolve(tmp_path, "xformers==0.0.35\n")
    (record,) = [r for r in target["inventory"]["resolved"] if r["name"] == "xformers"]
    assert record["kind"] == "sdist" and record["filename"] == "xformers-0.0.35.tar.gz"
    assert any(f["rule"] == "ARCH-resolve-source-build" and f["status"] == "FAIL" for f in target["findings"])


def test_bitsandbytes_0_50_2_cuda130_library_has_sm121_sass() -> None:
    """Read from the index itself (not the facts table): one project page, one metadata file, range reads."""
    client = IndexClient()
    files = [f for f in client.project_files(PYPI, "bitsandbytes") if "-0.50.2-" in f.filename and f.filename.endswith(".whl")]
    chosen, _ = best_wheel([f.filename for f in files], load_profile("dgx-spark"), "3.12")
    assert chosen is not None and "aarch64" in chosen
    item = next(f for f in files if f.filename == chosen)
    facts = read_remote_wheel(client, item.url, item.size, item.sha256)
    (lib,) = [b for b in facts.binaries if b["member"].endswith("libbitsandbytes_cuda130.so")]
    assert lib["machine"] == "aarch64" and "sm_121" in lib["sass"] and lib["cuda_major"] == 13
    assert facts.requires and any(r.startswith("torch") for r in facts.requires)
    assert "range read" in facts.sources and client.traffic.bytes < 2 * (item.size or 0)


def test_torch_2_14_1_aarch64_links_cuda13_no_false_g1(tmp_path: Path) -> None:
    target = _resolve(tmp_path, "torch==2.14.1\n")
    (record,) = [r for r in target["inventory"]["resolved"] if r["name"] == "torch"]
    assert record["filename"] == "torch-2.14.1-cp312-cp312-manylinux_2_28_aarch64.whl"
    cuda = [b for b in target["inventory"]["binaries"] if b.get("cuda_major")]
    assert cuda and {b["cuda_major"] for b in cuda} == {13}
    assert not [f for f in target["findings"] if f["gotcha"] == "G1" and f["status"] == "FAIL"]
    torch_meta = next(p for p in target["inventory"]["packages"] if p["name"] == "torch" and p.get("role") == "resolved")
    assert any(r.startswith("nvidia-cudnn-cu13==") for r in torch_meta["requires"])  # Requires-Dist of the real wheel


def test_bitsandbytes_0_45_5_has_no_file_for_aarch64(tmp_path: Path) -> None:
    target = _resolve(tmp_path, "bitsandbytes==0.45.5\n")
    fails = [f for f in target["findings"] if f["rule"] == "ARCH-resolve-no-file" and f["status"] == "FAIL"]
    assert fails and "x86_64" in fails[0]["message"] and "win_amd64" in fails[0]["message"]


def test_surya_ocr_pin_conflict_from_index_metadata(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("surya-ocr==0.17.1\ntorch==2.5.1\n")
    env = {"PIP_INDEX_URL": "", "PIP_EXTRA_INDEX_URL": "", "PIP_FIND_LINKS": "", "UV_NO_CONFIG": "1", "ENVCHECK_CACHE_DIR": str(tmp_path / "c")}
    proc = run_envcheck("--resolve", "--index-url", PYPI, "-f", "json", "--fail-on", "never", str(tmp_path / "requirements.txt"), env=env, timeout=600)
    target = json.loads(proc.stdout)["targets"][0]
    (conflict,) = [f for f in target["findings"] if f["rule"] == "G9-resolve-conflict"]
    assert "surya-ocr==0.17.1 depends on torch>=2.7.0" in conflict["message"] and "torch==2.5.1" in conflict["message"]
    assert conflict["location"]["line"] == 1
