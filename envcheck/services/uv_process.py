"""uv as a bounded child process: a slow or endless index must not hold envcheck longer than its own reads,
nor grow uv until the OOM killer picks a process. uv gets envcheck's request deadline, runs in its own process
group under the run's deadline and is killed past a memory limit; each stop is a ServiceError naming the
setting to move."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass

from envcheck.config import child_environment, env, parse_size
from envcheck.errors import ServiceError
from envcheck.services.package_index import DEFAULT_DEADLINE, run_left, run_seconds

MAX_SECONDS = 600.0  # one uv run, at most (the run's deadline usually ends it sooner)
DEFAULT_MEMORY = 2 << 30  # uv's resident memory (a 300 MB index page costs it about 700 MB)
POLL = 0.05  # seconds between looks at uv's memory


@dataclass(frozen=True)
class UvResult:
    returncode: int
    stderr: str


def memory_limit() -> int:
    """The most resident memory uv may use, from ``ENVCHECK_UV_MEMORY`` (``2GiB``, ``0``: no limit)."""
    raw = env("ENVCHECK_UV_MEMORY")
    if not raw:
        return DEFAULT_MEMORY
    if raw.strip() == "0":
        return 0
    return parse_size(raw, "ENVCHECK_UV_MEMORY")


def uv_environment(**overrides: str) -> dict[str, str]:
    """envcheck's request deadline and one retry, unless the user chose uv's own."""
    ours = env("ENVCHECK_HTTP_TIMEOUT")
    extra: dict[str, str] = {}
    if ours or not env("UV_HTTP_TIMEOUT"):
        try:
            seconds = float(ours) if ours else DEFAULT_DEADLINE
        except ValueError:
            seconds = DEFAULT_DEADLINE
        extra["UV_HTTP_TIMEOUT"] = str(max(1, round(seconds if seconds > 0 else DEFAULT_DEADLINE)))
    if not env("UV_HTTP_RETRIES"):
        extra["UV_HTTP_RETRIES"] = "1"
    return child_environment(**extra, **overrides)


def run_uv(cmd: list[str], cwd: str, shown: str, **overrides: str) -> UvResult:
    left = min(MAX_SECONDS, run_left())
    if left <= 0:
        raise ServiceError(f"{shown}: not resolved: the run's deadline for index reads and resolver runs passed "
                           f"(ENVCHECK_RESOLVE_TIMEOUT={run_seconds():g} s)")
    limit = memory_limit()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, cwd=cwd, env=uv_environment(**overrides), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        cause = ""
        try:
            end = time.monotonic() + left
            while proc.poll() is None:
                if time.monotonic() > end:
                    cause = (f"uv did not finish resolving within {left:g} s (an index that answers "
                             f"slowly?); the run's deadline is ENVCHECK_RESOLVE_TIMEOUT={run_seconds():g} s, "
                             "each request's ENVCHECK_HTTP_TIMEOUT")
                elif limit and _resident(proc.pid) > limit:
                    cause = (f"uv used more than {limit >> 20} MiB of memory while resolving (an index page too large, "
                             f"or one that never ends?) and was stopped; raise the limit with ENVCHECK_UV_MEMORY")
                if cause:
                    break
                time.sleep(POLL)
        finally:
            if cause or proc.poll() is None:
                with contextlib.suppress(OSError):
                    os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if cause:
            raise ServiceError(f"{shown}: {cause}")
        size = err.seek(0, os.SEEK_END)
        err.seek(max(0, size - (1 << 20)))  # uv's error is at the end of what it wrote
        return UvResult(proc.returncode, err.read().decode("utf-8", "replace"))


def _resident(pid: int) -> int:
    """Resident bytes of ``pid`` (0 where /proc cannot tell: other systems get no memory limit)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0
