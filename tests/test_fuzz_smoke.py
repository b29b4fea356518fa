"""A short atheris run of every harness in fuzz/ (a few seconds each), as the long campaigns run them:
niced, with the memory limit and the 2 s per-input timeout, in a fresh work folder seeded from the
real fixtures. Fails on any crash that is not an already reported one, any hang or memory blow-up,
and on a harness that no longer executes inputs. ``fuzz/run.sh SECONDS`` runs the long campaigns."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, ci_provides, require

sys.path.insert(0, str(REPO / "fuzz"))
from harness import is_known

HARNESSES = sorted(p.stem.removeprefix("fuzz_") for p in (REPO / "fuzz").glob("fuzz_*.py"))
SMOKE_SECONDS = 2


def test_every_parser_has_a_harness() -> None:
    """The issue's parser list, each with its harness (a new parser needs a new harness here)."""
    assert set(HARNESSES) >= {
        "requirements", "pip_args", "pyproject", "locks", "wheel_tags", "dockerfile", "shell", "elf", "fatbin",
        "wheel", "layer", "image_layout", "docker_archive", "registry_text", "host_readings", "probe_output",
        "config", "base_images", "dist_info", "checks", "registry_http", "input_kinds",
    }


@pytest.mark.parametrize("name", HARNESSES)
def test_harness_smoke_run(name: str, tmp_path: Path) -> None:
    require(importlib.util.find_spec("atheris") is not None, "atheris is not installed (pip install -e '.[test]')",
            provided=ci_provides("atheris"))
    env = dict(os.environ, ENVCHECK_FUZZ_WORK=str(tmp_path), ENVCHECK_FUZZ_KEEP_GOING="1",
               ENVCHECK_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run(
        ["nice", "-n", "19", sys.executable, str(REPO / "fuzz" / f"fuzz_{name}.py"), f"-max_total_time={SMOKE_SECONDS}",
         "-rss_limit_mb=2048", "-timeout=2", "-print_final_stats=1"],
        cwd=REPO, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=180,
    )
    log = done.stdout + done.stderr
    assert done.returncode == 0, f"{name}: libFuzzer stopped (crash, hang or memory):\n{log[-4000:]}"
    runs = re.findall(r"stat::number_of_executed_units: (\d+)", log)
    seeds = len(list((tmp_path / name / "seeds").iterdir()))
    assert runs and int(runs[-1]) > seeds, f"{name}: executed {runs} inputs from {seeds} seeds\n{log[-2000:]}"
    new = []
    for report in sorted((tmp_path / name / "findings").glob("*.txt")):
        signature = report.read_text(encoding="utf-8").splitlines()[0]
        if not is_known(signature):
            new.append(report.read_text(encoding="utf-8")[-3000:])
    assert not new, f"{name}: new crash(es), inputs in {tmp_path / name / 'findings'}:\n" + "\n---\n".join(new)
