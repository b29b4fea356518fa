"""G9-ngc-torch-replaced when a stage replaces NGC's torch on purpose: `pip install --force-reinstall torchvision`
(unpinned) pulls the torch its newest release pins, like `-U torch`; the finding is a FAIL when the torch that
arrives does not run on the Spark and a WARN when it is a CUDA 13 build (the image runs, NGC's own extensions
built against the removed torch do not), and G1-cuda12-base then calls a CUDA 12 base a shell (WARN)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_envcheck


def _levels(tmp_path: Path, base: str, run: str) -> dict[str, tuple[int, str]]:
    (tmp_path / "Dockerfile").write_text(f"FROM {base}\nRUN pip install --no-cache-dir {run}\n")
    done = run_envcheck("-f", "json", "--fail-on", "never", "Dockerfile", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    findings = json.loads(done.stdout)["targets"][0]["findings"]
    return {f["rule"]: (f["location"]["line"], f["status"]) for f in findings
            if f["rule"] in ("G9-ngc-torch-replaced", "G1-cuda12-base") and f["status"] in ("WARN", "FAIL")}


@pytest.mark.parametrize("run", ["--force-reinstall torchvision", "-U torchaudio", "--force-reinstall torch"])
def test_replacing_ngc_torch_with_the_newest_cuda13_torch_is_a_warn(tmp_path: Path, run: str) -> None:
    assert _levels(tmp_path, "nvcr.io/nvidia/pytorch:25.01-py3", run) == {
        "G9-ngc-torch-replaced": (2, "WARN"), "G1-cuda12-base": (1, "WARN")}


def test_a_partner_pinned_or_without_a_replacing_flag_implies_no_torch(tmp_path: Path) -> None:
    assert _levels(tmp_path, "nvcr.io/nvidia/pytorch:25.11-py3", "torchvision") == {}
    assert _levels(tmp_path, "nvcr.io/nvidia/pytorch:25.11-py3", "--force-reinstall --no-deps torchvision") == {}
