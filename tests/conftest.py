"""Shared test helpers. Tests talk to loopback only; optional resources skip outside CI and fail in it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
# fuzz/seed_builders.py: the archives and image layouts both the fuzz harnesses and the property tests start from
sys.path.insert(1, str(REPO / "fuzz"))
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require(condition: bool, reason: str) -> None:
    """Skip (outside CI) or fail (under CI=true) when an optional resource is missing."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"required in CI but missing: {reason}")
    pytest.skip(reason)


def run_envcheck(*args: str, cwd: Path | None = None, input: str | None = None, env: dict[str, str] | None = None,
                 timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run the real command line (`python -m envcheck ...`) and return the finished process."""
    full_env = dict(os.environ)
    full_env.setdefault("ENVCHECK_CACHE_DIR", str(REPO / ".work" / "test-cache"))
    # The envcheck under test is this checkout's, whatever the cwd (an installed copy may be elsewhere).
    full_env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), full_env.get("PYTHONPATH", "")) if p)
    if env:
        full_env.update(env)
    return subprocess.run(
        [sys.executable, "-m", "envcheck", *args],
        cwd=cwd or REPO, input=input, capture_output=True, text=True, timeout=timeout, env=full_env,
    )


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES


# Container test images (built once per session) and the Docker client fixture: tests/docker_images.py.
pytest_plugins = ["docker_images", "registry_fixtures"]


@pytest.fixture(scope="session")
def preflight_envs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Real venvs with real pip-installed package sets for the preflight tests (tests/preflight_envs.py)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from preflight_envs import build_envs

    return build_envs(tmp_path_factory.mktemp("preflight-envs"))
