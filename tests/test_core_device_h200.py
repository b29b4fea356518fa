"""Regression on a real CUDA 13 environment: the inventory `envcheck preflight --binaries` collected on a
lent NVIDIA H200 (torch 2.11.0+cu130, 866 ELF files, 2026-12-02), re-judged by today's checks.

A correct CUDA 13 environment must come out clean for G1 (triton bundles CUPTI 12 for its profiler, and
nothing links it) and without G7 warnings for NVIDIA's own CUDA 13 libraries.
"""

from __future__ import annotations

import gzip
import json

import pytest
from conftest import FIXTURES

from envcheck import engine
from envcheck.model import Inventory, Status
from envcheck.profile import load_profile

CAPTURE = FIXTURES / "device" / "h200" / "preflight-binaries.json.gz"


@pytest.fixture(scope="module")
def h200_inventory() -> Inventory:
    report = json.loads(gzip.decompress(CAPTURE.read_bytes()))
    return Inventory.from_json(report["targets"][0]["inventory"])


def test_capture_is_the_real_environment(h200_inventory: Inventory) -> None:
    assert len(h200_inventory.binaries) > 800
    torch = h200_inventory.package("torch")
    assert torch is not None and torch.version == "2.11.0"
    assert any(b.path.endswith("torch/lib/libtorch_cuda.so") and "sm_121a" in b.sass for b in h200_inventory.binaries)


def test_correct_cuda13_environment_is_clean_for_g1_and_g7(h200_inventory: Inventory) -> None:
    findings = engine.evaluate(h200_inventory, load_profile(), "host")
    bad = [(f.rule, f.message) for f in findings if f.gotcha in ("G1", "G7", "G9") and f.status in (Status.FAIL, Status.WARN, Status.ERROR)]
    assert not bad, bad
    cupti = [f for f in findings if f.rule == "G1-binary-soname" and "libcupti.so.12" in f.message]
    assert cupti and all(f.status is Status.INFO for f in cupti)
    # x86_64 binaries are still x86_64: judged for a Spark they are an ARCH failure, truthfully.
    assert any(f.gotcha == "ARCH" and f.status is Status.FAIL for f in findings)
