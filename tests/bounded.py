"""Run a child process under a hard time limit and measure its wall time, CPU time and peak RSS.

For the tests of hostile inputs (issue 13: "every class finishes in under 10 s and under 300 MB RSS"),
and the only timed assertions the suite allows. Usage::

    from bounded import run_envcheck_bounded, run_bounded

    run = run_envcheck_bounded(str(wheel), "--no-cache", "-f", "json")   # python -m envcheck ...
    run.assert_within(seconds=10, rss_mb=300)     # the issue's bars (see the method for load slack)
    assert run.returncode == 2 and "expands past" in run.stdout

    run = run_bounded(["some", "command"], cwd=tmp_path, kill_after=60)  # any command line

How it measures: a small Python wrapper process starts the command and collects it with ``os.wait4``,
which gives the child's own ``ru_maxrss`` (including the children it waited for) and its user+system
CPU time. Measuring through a wrapper matters: Linux records the *old* address space's high-water mark
when a process execs, so a child spawned straight from pytest (hundreds of MB) would report pytest's RSS;
through the wrapper that floor is the wrapper's own ~15 MB. A command still running after ``kill_after``
seconds is killed with its whole process group (``killed`` is True, ``returncode`` None): a hang never
blocks the suite. stdout/stderr are captured as text (undecodable bytes replaced).

Other lanes (Dockerfile, dependency files, registry) reuse this helper: keep the API stable.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# Runs in the wrapper process: start the command in its own session, poll wait4 until it ends or the
# hard limit passes, then write {"status", "rss_kb", "cpu_s", "wall_s", "killed"} to the report file.
_WRAPPER = r"""
import json, os, signal, subprocess, sys, time
spec = json.loads(sys.argv[1])
start = time.monotonic()
proc = subprocess.Popen(spec["args"], cwd=spec["cwd"], env=spec["env"], start_new_session=True)
killed = False
delay = 0.001
while True:
    pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
    if pid:
        break
    if time.monotonic() - start > spec["kill_after"]:
        killed = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        pid, status, usage = os.wait4(proc.pid, 0)
        break
    time.sleep(delay)
    delay = min(delay * 2, 0.02)
wall = time.monotonic() - start
with open(spec["report"], "w") as fh:
    json.dump({"status": None if killed else os.waitstatus_to_exitcode(status), "rss_kb": usage.ru_maxrss,
               "cpu_s": usage.ru_utime + usage.ru_stime, "wall_s": wall, "killed": killed}, fh)
"""


@dataclass(frozen=True)
class BoundedRun:
    """What one bounded run did and cost."""

    args: tuple[str, ...]
    returncode: int | None  # None when it was killed at ``kill_after``
    stdout: str
    stderr: str
    wall_s: float  # start to exit (or kill), measured by the wrapper
    cpu_s: float  # user + system CPU seconds of the command and the children it waited for
    peak_rss_mb: float  # ru_maxrss in MiB (includes a floor of the wrapper's own ~15 MB)
    killed: bool

    def describe(self) -> str:
        """One line for assertion messages: the command, the costs and the tail of its output."""
        tail = (self.stderr or self.stdout)[-600:]
        state = "killed at the hard limit" if self.killed else f"exit {self.returncode}"
        return (f"{' '.join(self.args)[:300]}: {state}, {self.wall_s:.2f} s wall, {self.cpu_s:.2f} s CPU, "
                f"{self.peak_rss_mb:.0f} MiB peak RSS; output tail: {tail!r}")

    def assert_within(self, seconds: float = 10.0, rss_mb: float = 300.0, wall_slack: float = 3.0) -> None:
        """Fail unless the run finished, used under ``seconds`` of CPU time and ``rss_mb`` MiB of peak RSS,
        and took under ``seconds * wall_slack`` wall time.

        CPU time carries the bar because it does not grow with the machine's load; the wall-time check
        (slack for a busy shared CI machine, where a 2 s run can take 6) still catches a blocked read or a
        sleep, which burn no CPU. Choose ``seconds`` as the issue's bar, never as a tight fit.
        """
        assert not self.killed, f"did not finish: {self.describe()}"
        assert self.cpu_s < seconds, f"over {seconds} s of CPU: {self.describe()}"
        assert self.wall_s < seconds * wall_slack, f"over {seconds * wall_slack} s wall: {self.describe()}"
        assert self.peak_rss_mb < rss_mb, f"over {rss_mb} MiB RSS: {self.describe()}"


def run_bounded(
    args: list[str] | tuple[str, ...],
    *,
    cwd: Path | str | None = None,
    env: dict[str, str] | None = None,
    input: str | bytes | None = None,
    kill_after: float = 60.0,
) -> BoundedRun:
    """Run ``args`` (no shell) and measure it; killed with its process group after ``kill_after`` s.

    ``env`` replaces the environment (default: this process's); ``input`` is written to its stdin
    (default: no stdin, so a command that waits for input sees end-of-file rather than hanging).
    """
    with tempfile.TemporaryDirectory(prefix="bounded-") as tmp:
        report = os.path.join(tmp, "report.json")
        spec = {"args": [str(a) for a in args], "cwd": str(cwd or REPO), "env": dict(os.environ if env is None else env),
                "kill_after": kill_after, "report": report}
        data = input.encode() if isinstance(input, str) else input
        done = subprocess.run(
            [sys.executable, "-c", _WRAPPER, json.dumps(spec)], input=data if data is not None else b"",
            capture_output=True, timeout=kill_after + 60, check=False,
        )
        try:
            with open(report, encoding="utf-8") as fh:
                measured = json.load(fh)
        except (OSError, ValueError) as exc:
            raise RuntimeError(f"the measuring wrapper failed: {done.stderr.decode(errors='replace')[-2000:]}") from exc
    return BoundedRun(
        args=tuple(spec["args"]), returncode=measured["status"],
        stdout=done.stdout.decode("utf-8", "replace"), stderr=done.stderr.decode("utf-8", "replace"),
        wall_s=float(measured["wall_s"]), cpu_s=float(measured["cpu_s"]),
        peak_rss_mb=measured["rss_kb"] / 1024, killed=bool(measured["killed"]),
    )


def run_envcheck_bounded(
    *args: str,
    cwd: Path | str | None = None,
    env: dict[str, str] | None = None,
    input: str | bytes | None = None,
    kill_after: float = 60.0,
) -> BoundedRun:
    """``python -m envcheck ARGS`` through :func:`run_bounded`, with the suite's cache folder (as
    ``conftest.run_envcheck``) unless ``env`` sets ``ENVCHECK_CACHE_DIR``. ``env`` adds to this process's."""
    full_env = dict(os.environ)
    full_env.setdefault("ENVCHECK_CACHE_DIR", str(REPO / ".work" / "test-cache"))
    full_env.update(env or {})
    return run_bounded([sys.executable, "-m", "envcheck", *args], cwd=cwd or REPO, env=full_env, input=input,
                       kill_after=kill_after)
