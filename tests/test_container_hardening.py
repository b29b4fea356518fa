"""The probe container is hardened and always removed: tested against a real Docker engine.

A small test probe (written here, injected the same way as envcheck's collector) reports what the
container can do: network, root filesystem writes, capabilities, limits, user. The runner is the real
one (``envcheck.services.docker_runner.run_probe``); nothing is mocked.
"""

from __future__ import annotations

import io
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO
from docker_images import container_names, containers, stderr_of

from envcheck.services.docker_runner import (
    LABEL,
    ContainerOptions,
    ProbeRun,
    leftover_containers,
    run_probe,
    sweep_orphans,
)
from envcheck.sources.container import read_container

pytestmark = pytest.mark.docker

PROBE = textwrap.dedent('''
    """Test probe: report what this container may do, as JSON on stdout."""
    import errno, json, os, socket, sys, time

    def attempt(fn):
        try:
            fn()
            return "ok"
        except OSError as exc:
            return errno.errorcode.get(exc.errno, str(exc.errno))

    def write(path):
        with open(path, "w") as fh:
            fh.write("x")

    def connect(host, port):
        with socket.create_connection((host, port), timeout=2):
            pass

    def udp(host):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            s.connect((host, 53))
            s.send(b"x")
        finally:
            s.close()

    def status(field):
        for line in open("/proc/self/status"):
            if line.startswith(field + ":"):
                return line.split(":", 1)[1].strip()

    def first(*paths):
        for p in paths:
            try:
                return open(p).read().strip()
            except OSError:
                pass

    mode = sys.argv[1] if len(sys.argv) > 1 else "report"
    if mode == "sleep":
        print("sleeping", file=sys.stderr, flush=True)
        time.sleep(600)
    if mode == "hog":  # touch ever more memory, until the container's limit kills it
        hog = []
        while True:
            hog.append(b"\\x01" * (16 << 20))
    if mode == "flood":  # far more stdout than any collector document
        chunk = b"x" * (1 << 20)
        for _ in range(int(sys.argv[2])):
            sys.stdout.buffer.write(chunk)
        sys.stdout.flush()
        sys.exit(0)
    host_port = int(os.environ.get("HOST_PORT", "0") or 0)
    print(json.dumps({
        "uid": os.getuid(), "gid": os.getgid(),
        "interfaces": sorted(name for _, name in socket.if_nameindex()),
        "connect_public": attempt(lambda: connect("1.1.1.1", 443)),
        "udp_public": attempt(lambda: udp("8.8.8.8")),
        "connect_host_loopback": attempt(lambda: connect("127.0.0.1", host_port)) if host_port else None,
        "write_root": attempt(lambda: write("/envcheck-was-here")),
        "write_usr": attempt(lambda: write("/usr/envcheck-was-here")),
        "write_tmp": attempt(lambda: write("/tmp/envcheck-was-here")),
        "write_payload": attempt(lambda: write(os.path.join(os.path.dirname(os.path.dirname(__file__)), "x"))),
        "cap_eff": status("CapEff"), "no_new_privs": status("NoNewPrivs"),
        "memory_limit": first("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory.max"),
        "pids_limit": first("/sys/fs/cgroup/pids/pids.max", "/sys/fs/cgroup/pids.max"),
        "nvidia_visible_devices": os.environ.get("NVIDIA_VISIBLE_DEVICES"),
    }))
''')


@pytest.fixture(scope="session")
def test_probe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A package ``envcheck_test_probe`` whose ``__main__`` is the probe above."""
    package = tmp_path_factory.mktemp("probe") / "envcheck_test_probe"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "__main__.py").write_text(PROBE)
    return package


def probe_options(test_probe: Path, *args: str, **changes: Any) -> ContainerOptions:
    return ContainerOptions(probe_module="envcheck_test_probe", probe_args=args or ("report",),
                            payload=(test_probe,), **changes)


def report(run: ProbeRun) -> dict[str, Any]:
    assert run.exit_code == 0, run.stderr
    data: dict[str, Any] = json.loads(run.stdout)
    return data


@pytest.fixture(scope="module")
def host_listener() -> Any:
    """A TCP listener on the host's loopback: the container must not reach it."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(5)
    yield server
    server.close()


def test_default_run_is_hardened(docker_client: Any, test_images: Any, test_probe: Path, host_listener: Any) -> None:
    options = probe_options(test_probe)
    run = run_probe(docker_client, test_images.python, options)
    data = report(run)
    assert data["interfaces"] == ["lo"]
    assert data["connect_public"] in ("ENETUNREACH", "EHOSTUNREACH", "EACCES", "EPERM")
    assert data["udp_public"] in ("ENETUNREACH", "EHOSTUNREACH", "EACCES", "EPERM")
    assert data["write_root"] in ("EROFS", "EACCES")
    assert data["write_usr"] in ("EROFS", "EACCES")
    assert data["write_tmp"] == "ok"  # the small tmpfs is the only writable place
    assert data["write_payload"] in ("EACCES", "EROFS")  # the injected code cannot be changed by nobody
    assert (data["uid"], data["gid"]) == (65534, 65534)
    assert int(data["cap_eff"], 16) == 0
    assert data["no_new_privs"] == "1"
    assert int(data["memory_limit"]) == 4 * 1024**3
    assert data["pids_limit"] == str(options.pids)
    assert data["nvidia_visible_devices"] == "void"  # no --gpus: no GPU even under the nvidia runtime
    assert run.user == "65534:65534"
    assert run.python == "3.11.2"


def test_host_loopback_is_not_reachable(docker_client: Any, test_images: Any, test_probe: Path,
                                        host_listener: Any) -> None:
    port = host_listener.getsockname()[1]
    # the same port on the container's own loopback: nothing listens there, the host's listener is not it
    options = probe_options(test_probe, environment=(("HOST_PORT", str(port)),))
    run = run_probe(docker_client, test_images.python, options)
    assert report(run)["connect_host_loopback"] == "ECONNREFUSED"


def test_root_user_still_cannot_write_the_root_filesystem(docker_client: Any, test_images: Any,
                                                         test_probe: Path) -> None:
    data = report(run_probe(docker_client, test_images.python, probe_options(test_probe, user="0:0")))
    assert data["uid"] == 0
    assert data["write_root"] == "EROFS"
    assert data["write_usr"] == "EROFS"
    assert int(data["cap_eff"], 16) == 0


def test_image_user_is_kept_when_not_root(docker_client: Any, test_images: Any, test_probe: Path) -> None:
    tag = test_images.python.replace("envcheck-test/py:", "envcheck-test/py-user:")
    docker_client.images.build(fileobj=io.BytesIO(f"FROM {test_images.python}\nUSER 1234:1234\n".encode()),
                               tag=tag, rm=True, network_mode="none")
    data = report(run_probe(docker_client, tag, probe_options(test_probe)))
    assert (data["uid"], data["gid"]) == (1234, 1234)


def test_timeout_kills_and_removes(docker_client: Any, test_images: Any, test_probe: Path) -> None:
    started = time.monotonic()
    run = run_probe(docker_client, test_images.python, probe_options(test_probe, "sleep", timeout=3))
    assert run.timed_out
    assert run.exit_code is None
    assert time.monotonic() - started < 20
    assert leftover_containers(docker_client) == []
    assert containers(docker_client, {"name": run.container_name}) == []


def test_collector_out_of_memory_is_a_clear_error(docker_client: Any, test_images: Any, test_probe: Path) -> None:
    inventory = read_container(test_images.python, probe_options(test_probe, "hog", memory="64m"), docker_client)
    (problem,) = inventory.problems
    assert "was killed (exit status 137)" in problem.message and "raise --memory, now 64m" in problem.message
    assert leftover_containers(docker_client) == []


def test_collector_output_is_bounded(docker_client: Any, test_images: Any, test_probe: Path) -> None:
    from envcheck.services.docker_runner import MAX_STDOUT

    megabytes = (MAX_STDOUT >> 20) + 16
    inventory = read_container(test_images.python, probe_options(test_probe, "flood", str(megabytes)), docker_client)
    (problem,) = inventory.problems
    assert f"printed more than {MAX_STDOUT >> 20} MiB" in problem.message
    assert problem.location is not None and problem.location.offset == MAX_STDOUT
    assert leftover_containers(docker_client) == []


def test_fifty_runs_leave_nothing(docker_client: Any, test_images: Any, test_probe: Path) -> None:
    volumes_before = {v.name for v in docker_client.volumes.list()}
    options = probe_options(test_probe)
    for _ in range(50):
        assert report(run_probe(docker_client, test_images.python, options))["uid"] == 65534
    assert leftover_containers(docker_client) == []
    assert {v.name for v in docker_client.volumes.list()} <= volumes_before  # anonymous volumes went too


SLOW_SITECUSTOMIZE = """\
import os, sys, time
if os.environ.get("ENVCHECK_IN_CONTAINER") == "1":  # only under envcheck: hang like a stuck import
    sys.stderr.write("sleeping\\n")
    sys.stderr.flush()
    time.sleep(600)
"""


@pytest.fixture(scope="module")
def slow_image(docker_client: Any, test_images: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The python image plus a sitecustomize that hangs at interpreter start (a stuck collector)."""
    context = tmp_path_factory.mktemp("slow")
    (context / "sitecustomize.py").write_text(SLOW_SITECUSTOMIZE)
    (context / "Dockerfile").write_text(
        f"FROM {test_images.python}\nCOPY sitecustomize.py /usr/local/lib/python3.11/dist-packages/\n")
    tag = test_images.python.replace("envcheck-test/py:", "envcheck-test/py-user:slow-")
    docker_client.images.build(path=str(context), tag=tag, rm=True, network_mode="none")
    return tag


def start_envcheck(docker_client: Any, image: str) -> tuple[subprocess.Popen[str], dict[str, str]]:
    """The real command line on a hanging image; returns once its container is running."""
    child = subprocess.Popen([sys.executable, "-m", "envcheck", "container", image, "--timeout", "300"],
                             cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    label = {"label": f"{LABEL}.pid={child.pid}"}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        running = containers(docker_client, {**label, "status": "running"}, all=False)
        if running and b"sleeping" in stderr_of(docker_client, running[0]):
            return child, label
        if child.poll() is not None:
            pytest.fail(f"envcheck ended early: {child.communicate()}")
        time.sleep(0.1)
    child.kill()
    child.wait()
    pytest.fail("the probe container never started")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_killed_envcheck_removes_its_container(docker_client: Any, slow_image: str, signum: int) -> None:
    child, label = start_envcheck(docker_client, slow_image)
    try:
        os.kill(child.pid, signum)
        _, stderr = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 128 + signum, stderr
    assert "Traceback" not in stderr
    assert containers(docker_client, label) == []


def test_container_of_a_sigkilled_envcheck_is_swept(docker_client: Any, slow_image: str) -> None:
    child, label = start_envcheck(docker_client, slow_image)
    child.kill()  # SIGKILL: no cleanup can run in that process
    child.communicate(timeout=30)
    orphans = container_names(docker_client, label)
    assert len(orphans) == 1  # left behind, still running the hanging collector
    assert sweep_orphans(docker_client) == orphans  # the next run's sweep removes it
    assert containers(docker_client, label) == []


def test_probe_container_killed_from_outside(docker_client: Any, slow_image: str) -> None:
    """Someone (an operator, the OOM killer of the host) kills the probe container: a clear ERROR, no leftovers."""
    child, label = start_envcheck(docker_client, slow_image)
    try:
        (running,) = containers(docker_client, label, all=False)
        docker_client.api.kill(running["Id"])
        stdout, stderr = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 2, stdout + stderr
    assert "Traceback" not in stdout + stderr
    assert "was killed (exit status 137)" in stdout and "killed from outside envcheck" in stdout
    assert containers(docker_client, label) == []
