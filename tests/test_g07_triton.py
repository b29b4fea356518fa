"""G7-triton-ptxas: a Triton whose bundled ptxas predates sm_121 (3.5.x: ptxas 12.8) fails every kernel build on
a Spark (triton-lang/triton#8539); 3.6 and newer bundle one that knows it. Judged through the command line over
the inputs that name an exact Triton: requirements, freeze output, an installed folder."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from conftest import installed_dist, run_envcheck

from envcheck import engine
from envcheck.config import Config
from envcheck.model import EnvVar, Inventory, Location, Package, Role, Status
from envcheck.profile import load_profile

RULE = "G7-triton-ptxas"


def _found(*args: str) -> list[tuple[str, int | None, str]]:
    done = run_envcheck("-f", "json", *args)
    assert done.returncode in (0, 1), done.stderr
    return [(f["status"], (f["location"] or {}).get("line"), f["message"]) for t in json.loads(done.stdout)["targets"]
            for f in t["findings"] if f["rule"] == RULE]


@pytest.mark.parametrize(("pin", "status"), [
    ("triton==3.5.0", "FAIL"), ("triton==3.5.1", "FAIL"), ("triton==3.6.0", "PASS"), ("triton==3.9.0", "PASS"),
])
def test_a_pinned_triton_is_judged_by_the_ptxas_it_bundles(tmp_path: Path, pin: str, status: str) -> None:
    (tmp_path / "requirements.txt").write_text(f"torch==2.11.0\n{pin}\n")
    [(got, line, message)] = _found(str(tmp_path / "requirements.txt"))
    assert (got, line) == (status, 2)
    assert ("ptxas 12.8" in message and "sm_121a" in message) if status == "FAIL" else "compiles for sm_121a" in message


def test_a_triton_with_no_aarch64_wheel_is_an_install_failure_not_a_ptxas_one(tmp_path: Path) -> None:
    # triton 3.3.1 publishes x86_64 wheels only: it never installs on a Spark, so its ptxas is not the cause
    (tmp_path / "requirements.txt").write_text("triton==3.3.1\n")
    done = run_envcheck("-f", "json", str(tmp_path / "requirements.txt"))
    findings = json.loads(done.stdout)["targets"][0]["findings"]
    assert not [f for f in findings if f["rule"] == RULE]
    assert [f["status"] for f in findings if f["rule"] == "ARCH-wheel-platform"] == ["FAIL"]


def test_unpinned_constraint_and_conda_triton_say_nothing(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("triton>=3.5\n-c constraints.txt\n")
    (tmp_path / "constraints.txt").write_text("triton==3.5.0\n")
    (tmp_path / "environment.yml").write_text("name: t\nchannels: [conda-forge]\ndependencies:\n  - triton=3.5.0\n")
    assert _found(str(tmp_path / "requirements.txt"), str(tmp_path / "environment.yml")) == []


def test_a_triton_another_index_may_serve_is_not_judged(tmp_path: Path) -> None:
    # Jetson AI Lab's sbsa/cu130 index builds its own triton: the PyPI table does not describe it
    (tmp_path / "requirements.txt").write_text("--extra-index-url https://pypi.jetson-ai-lab.io/sbsa/cu130\ntriton==3.5.0\n")
    assert _found(str(tmp_path / "requirements.txt")) == []


def test_installed_pytorch_triton_and_triton_in_a_folder(tmp_path: Path) -> None:
    (tmp_path / "freeze.txt").write_text("pytorch-triton==3.5.0+git7416ffcb\n")
    [(status, _, message)] = _found("--kind", "freeze", str(tmp_path / "freeze.txt"))
    assert status == "FAIL" and message.startswith("pytorch-triton 3.5.0+git7416ffcb bundles ptxas 12.8")
    site = tmp_path / "site"
    installed_dist(site, "triton", "3.5.1", {})
    assert [s for s, _, _ in _found(str(site))] == ["FAIL"]


def test_next_to_a_cu13x_torch_that_bundles_ptxas_it_is_a_warn(tmp_path: Path) -> None:
    # torch.compile hands torch/bin/ptxas to Triton; kernels launched through Triton directly still fail
    (tmp_path / "requirements.txt").write_text("--index-url https://download.pytorch.org/whl/cu130\ntorch==2.9.0+cu130\ntriton==3.5.0\n")
    [(status, line, message)] = _found(str(tmp_path / "requirements.txt"))
    assert (status, line) == ("WARN", 3) and "torch.compile uses the ptxas of torch 2.9.0+cu130" in message


@pytest.mark.parametrize(("version", "status"), [("2.9.0", "FAIL"), ("2.9.0+cu130", "WARN")])
def test_a_torch_wheel_is_judged_by_the_triton_it_pins(tmp_path: Path, version: str, status: str) -> None:
    # torch 2.9.0's Requires-Dist pins triton==3.5.0: pip installs exactly that one with the wheel
    wheel = tmp_path / f"torch-{version.replace('+', '%2B')}-cp312-cp312-manylinux_2_28_aarch64.whl"
    info = f"torch-{version}.dist-info"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n"
                                         "Requires-Dist: triton==3.5.0; platform_system == \"Linux\"\n")
        zf.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nTag: cp312-cp312-manylinux_2_28_aarch64\n")
        zf.writestr(f"{info}/RECORD", "")
    [(got, _, message)] = _found(str(wheel))
    assert got == status and message.startswith(f"triton 3.5.0 (which torch {version} pins) bundles ptxas 12.8")


def test_a_freeze_of_an_ngc_container_is_info(tmp_path: Path) -> None:
    # NGC PyTorch images set TRITON_PTXAS_PATH to their CUDA toolkit's ptxas (examples/freeze-ngc-unsloth.txt)
    (tmp_path / "freeze.txt").write_text("torch==2.10.0a0+b558c986e8.nv25.11\ntriton==3.5.0\n")
    [(status, line, message)] = _found("--kind", "freeze", str(tmp_path / "freeze.txt"))
    assert (status, line) == ("INFO", 2) and "NGC container" in message


def test_triton_ptxas_path_replaces_the_bundled_ptxas() -> None:
    where = Location("Dockerfile", line=3)
    inv = Inventory(packages=[Package("triton", "3.5.0", role=Role.INSTALLED, installed=True, location=where)],
                    env=[EnvVar("TRITON_PTXAS_PATH", "/usr/local/cuda/bin/ptxas")], context="installed")
    result = engine.judge(engine.Target("image", "image", lambda: inv), inv, load_profile("dgx-spark"), Config())
    [found] = [f for f in result.findings if f.rule == RULE]
    assert found.status is Status.INFO and "TRITON_PTXAS_PATH=/usr/local/cuda/bin/ptxas" in found.message


def test_a_torch_29_pin_with_no_triton_line_brings_no_triton_to_a_spark(tmp_path: Path) -> None:
    """PyPI's torch 2.9.0/2.9.1 aarch64 wheels require triton only where platform_machine == "x86_64"
    (knowledge/raw/pypi.json, their METADATA): on a Spark pip installs no Triton with them, so no ptxas finding
    is implied; a triton 3.5 line of its own is judged."""
    req = tmp_path / "requirements.txt"
    req.write_text("torch==2.9.1\n", encoding="utf-8")
    found = [f for t in json.loads(run_envcheck("-f", "json", "--fail-on", "never", str(req)).stdout)["targets"]
             for f in t["findings"] if f["rule"] == "G7-triton-ptxas"]
    assert not [f for f in found if f["status"] in ("FAIL", "WARN")], found
    req.write_text("torch==2.9.1\ntriton==3.5.1\n", encoding="utf-8")
    found = [f for t in json.loads(run_envcheck("-f", "json", "--fail-on", "never", str(req)).stdout)["targets"]
             for f in t["findings"] if f["rule"] == "G7-triton-ptxas"]
    assert [(f["status"], f["location"]["line"]) for f in found] == [("FAIL", 2)], found
