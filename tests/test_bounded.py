"""The bounded-run helper measures what it claims: exit codes, output, peak RSS, CPU time, and the hard kill."""

from __future__ import annotations

import sys

import pytest
from bounded import run_bounded, run_envcheck_bounded


def test_small_command_is_measured_small() -> None:
    run = run_bounded([sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"])
    assert run.returncode == 3 and run.stdout == "out\n" and "err" in run.stderr
    assert not run.killed and 0 < run.peak_rss_mb < 100
    run.assert_within(seconds=10, rss_mb=300)


def test_peak_rss_of_a_big_allocation_is_seen_and_fails_the_bar() -> None:
    # 400 MiB touched, then freed: the peak, not the end state, is what counts.
    run = run_bounded([sys.executable, "-c", "b = bytearray(400 << 20); del b"])
    assert run.returncode == 0 and 380 < run.peak_rss_mb < 600, run.describe()
    with pytest.raises(AssertionError, match="MiB RSS"):
        run.assert_within(rss_mb=300)


def test_a_hang_is_killed_with_its_children() -> None:
    code = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"
    run = run_bounded([sys.executable, "-c", code], kill_after=1.0)
    assert run.killed and run.returncode is None and run.wall_s < 30
    with pytest.raises(AssertionError, match="did not finish"):
        run.assert_within()


def test_cpu_time_is_measured() -> None:
    run = run_bounded([sys.executable, "-c", "n = 0\nfor i in range(3_000_000): n += i"])
    assert run.cpu_s > 0.05 and run.wall_s >= run.cpu_s * 0.5
    with pytest.raises(AssertionError, match="CPU"):
        run.assert_within(seconds=0.01, wall_slack=1e6)


def test_input_reaches_stdin_and_envcheck_runs() -> None:
    run = run_bounded([sys.executable, "-c", "import sys; print(sys.stdin.read().upper())"], input="abc")
    assert run.stdout.strip() == "ABC"
    version = run_envcheck_bounded("--version")
    assert version.returncode == 0 and version.stdout.strip(), version.describe()
    version.assert_within()
