"""Shared test helpers. Tests talk to loopback only; optional resources skip outside CI and fail in it."""

from __future__ import annotations

import json
import os
import platform
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
# fuzz/seed_builders.py: the archives and image layouts both the fuzz harnesses and the property tests start from
sys.path.insert(1, str(REPO / "fuzz"))
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

# A suite started in the background of a non-interactive shell (`.ci/run &`, nohup) inherits SIGINT ignored,
# and so would every process it starts: the Ctrl-C tests need it delivered as from a terminal.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def require(condition: bool, reason: str, provided: bool = True) -> None:
    """Skip (outside CI) or fail (under CI=true) when an optional resource is missing.

    ``provided``: whether CI provides the resource on this machine at all (see :func:`ci_provides`); a
    resource that cannot exist here (a test dependency with no wheel for this architecture) is a skip
    with its reason, also under CI.
    """
    if condition:
        return
    if IN_CI and provided:
        pytest.fail(f"required in CI but missing: {reason}")
    if not provided:
        reason += f" (CI does not provide it on {platform.machine()}, Python {platform.python_version()}: see the marker in pyproject's test extra)"
    pytest.skip(reason)


def ci_provides(distribution: str, machine: Mapping[str, str] | None = None) -> bool:
    """Whether `pip install -e '.[test]'` (what .ci/setup runs) installs ``distribution`` on this machine:
    its requirement in pyproject's ``test`` extra has no environment marker, or one that holds here
    (``atheris``: x86_64 and Python < 3.14; ``dockerfile``: x86_64 only). ``machine`` overrides marker
    variables (``{"platform_machine": "aarch64"}``) to ask about another machine."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    for line in extras["test"]:
        requirement = Requirement(line)
        if canonicalize_name(requirement.name) == canonicalize_name(distribution):
            return requirement.marker is None or requirement.marker.evaluate({"extra": "test", **(machine or {})})
    raise AssertionError(f"{distribution} is not in pyproject's test extra")


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


# Build tools come from the new virtualenv and pip's isolated build, never from this interpreter.
_BUILD_TOOLS = ("pip", "setuptools", "pkg_resources", "_distutils_hack", "wheel", "distutils-precedence")


def _dependency_view(folder: Path) -> Path:
    """A folder of links to what this interpreter has installed (every site-packages directory on its path,
    whether it is a virtualenv or the system interpreter), except envcheck itself (the copy under test
    must be the one that runs) and the build tools."""
    folder.mkdir(parents=True, exist_ok=True)
    for site in [p for p in sys.path if p.rstrip("/").endswith(("site-packages", "dist-packages"))]:
        if not os.path.isdir(site):
            continue
        for entry in sorted(Path(site).iterdir()):
            name = entry.name.lower()
            skip = (name.startswith(("envcheck", "__editable__", "_envcheck", *(f"{t}-" for t in _BUILD_TOOLS)))
                    or name in _BUILD_TOOLS or entry.suffix == ".pth")
            if not skip and not (folder / entry.name).exists():
                (folder / entry.name).symlink_to(entry)
    return folder


def offline_pip_env(folder: Path) -> dict[str, str]:
    """The environment for a `pip install .` of envcheck into a NEW virtualenv with no network (the README's
    first command, pre-commit's hook environments), in a virtualenv as on the system interpreter:

    - envcheck's dependencies: PYTHONPATH shows the new interpreter what this one has installed (a
      virtualenv's --system-site-packages would show the base interpreter's packages, not this virtualenv's);
    - the build backend for pip's isolated build: the setuptools wheel virtualenv (pre-commit's own
      dependency) carries for seeding, as the only find-links folder; no index.
    """
    import virtualenv

    wheels = Path(virtualenv.__file__).parent / "seed" / "wheels" / "embed"
    require(any(wheels.glob("setuptools-*.whl")), f"virtualenv carries no setuptools wheel in {wheels}")
    view = _dependency_view(folder)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PIP_NO_BUILD_ISOLATION", "VIRTUALENV_SYSTEM_SITE_PACKAGES", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL")}
    return {**env, "PYTHONPATH": str(view), "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels)}


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


def installed_dist(site: Path, name: str, version: str, files: dict[str, Path]) -> None:
    """An installed distribution as pip leaves it: the files, METADATA and a RECORD naming them."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\n")
    for relative, source in files.items():
        (site / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, site / relative)
    record = [f"{r},," for r in files] + [f"{info.name}/METADATA,,", f"{info.name}/RECORD,,"]
    (info / "RECORD").write_text("\n".join(record) + "\n")


SCAN_CHILD = (
    "import json, sys\n"
    "from pathlib import Path\n"
    "from envcheck.sources import ReadOptions, scan_workers\n"
    "from envcheck.sources.folder import scan_folder\n"
    "options = ReadOptions(**json.loads(sys.argv[2]))\n"
    "if options.scan_workers != 1 and not scan_workers.can_fork():\n"
    "    sys.exit('a thread runs beside the scan: it would not fork its workers')\n"
    "print(json.dumps(scan_folder(Path(sys.argv[1]), options).to_json()))\n"
)


def scan_in_child(site: Path, **options: object) -> object:
    """A folder scan's inventory (``to_json`` form) from a fresh process, with ``ReadOptions(**options)``.

    Scans that fork workers are compared in a child of their own: the suite's process runs other threads
    (loopback servers of session fixtures), and a scan forks workers only while no other thread runs, so
    an in-process "workers" scan would silently be the serial one. The child refuses to scan when it could
    not fork."""
    done = subprocess.run([sys.executable, "-c", SCAN_CHILD, str(site), json.dumps(options)], capture_output=True,
                          text=True, timeout=600, env=dict(os.environ, PYTHONPATH=str(REPO)), cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under ``-n N --dist loadgroup`` (``.ci/run``) the tests that use the Docker engine run one after another
    in one worker, since some compare the engine's containers and volumes before and after; the rest spread."""
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if item.get_closest_marker("docker") or "docker_client" in fixtures or "test_images" in fixtures:
            item.add_marker(pytest.mark.xdist_group("engine"))
