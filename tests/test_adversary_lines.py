"""Text inputs whose cost is in their number of lines (fuzz/seed_builders.py, hostile_line_inputs()): millions of
short lines, many lines that cannot be read, thousands of copies of one requirement, scripts whose commands each
see thousands of variables. Each run, next to a good file that must still be judged, stays within the bars of
tests/bounded.py; docs/limits.md states the limits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bounded import run_envcheck_bounded
from seed_builders import hostile_line_inputs

HOSTILE = hostile_line_inputs()
# a good file of the same kind, read in the same run: its FAIL proves it was judged
GOOD = {"requirements": ("torch==2.5.1+cu121\n", "G1-cuda12-local-version"),
        "freeze": ("torch==2.5.1+cu121\n", "G1-cuda12-local-version"),
        "shell": ("pip install torch==2.5.1+cu121\n", "G1-cuda12-local-version"),
        "compose": ("services:\n  a:\n    image: nvidia/cuda:12.4.1-devel-ubuntu22.04\n", "G1-cuda12-base")}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_text_input_of_many_lines_is_bounded_and_the_others_are_still_judged(tmp_path: Path, name: str) -> None:
    kind, content = HOSTILE[name]
    hostile = tmp_path / name
    hostile.write_bytes(content)
    good = tmp_path / "good"
    text, rule = GOOD[kind]
    good.write_text(text, encoding="utf-8")
    run = run_envcheck_bounded("--kind", kind, str(hostile), str(good), "--no-cache", "-f", "json", "--fail-on", "never")
    run.assert_within(seconds=10, rss_mb=300)
    assert "Traceback" not in run.stderr and "internal error" not in run.stdout, run.describe()
    report = json.loads(run.stdout)
    by_target = {t["target"]: t["findings"] for t in report["targets"]}
    assert len(by_target[str(hostile)]) <= 25_000, len(by_target[str(hostile)])  # not one finding per line of millions
    assert (rule, "FAIL") in {(f["rule"], f["status"]) for f in by_target[str(good)]}, run.describe()
