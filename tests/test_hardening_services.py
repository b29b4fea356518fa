"""Service faults from issue 8 that test_image_faults.py does not cover, each against the real loopback registry.

A fault-injecting proxy (registry_fixtures.FaultProxy) sits between envcheck and the registry: TCP resets
mid-stream, a server that trickles a byte at a time and never finishes (slow-loris), 401 answers with
challenges nobody can use, 502/503 bursts and outages, manifests under the wrong Content-Type, and
redirects to another host (where credentials must not follow) or in a loop. Each answer is checked for
the exit code (3: a service failed), one clear line naming the registry and what happened, the number of
requests the proxy saw (retries are bounded) and no traceback. Subprocesses are bounded with ``timeout=``;
nothing asserts on elapsed time.

The last test starts a private Docker engine (its own dockerd, data root, exec root and socket under a
temporary folder; the shared engine is only read from, to copy one test image) and kills it while
``envcheck container`` runs.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import requests
from conftest import REPO, run_envcheck
from registry_fixtures import (
    DOCKER_LIST,
    OCI_INDEX,
    PASSWORD,
    USER,
    AuthRegistry,
    Fault,
    FaultProxy,
    Images,
    refusing_port,
)

BOUND = 60  # seconds any one envcheck run may take before the test fails (a hang is a failure)
ACCEPT = "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json"
Proxy = Callable[..., FaultProxy]


def via(proxy: FaultProxy, ref: str) -> str:
    """``ref`` with its registry host replaced by the proxy's."""
    return proxy.host + "/" + ref.split("/", 1)[1]


def check(ref: str, *args: str, cache: Path, env: dict[str, str] | None = None, input: str | None = None) -> tuple[int, dict[str, Any]]:
    """`envcheck image REF -f json`, bounded in time: (exit code, report); never a traceback."""
    done = run_envcheck("image", ref, "-f", "json", "--no-progress", *args, input=input, timeout=BOUND,
                        env={"ENVCHECK_CACHE_DIR": str(cache), **(env or {})})
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    schema = json.loads((REPO / "envcheck" / "formats" / "report.schema.json").read_text())
    jsonschema.validate(report, schema)
    return done.returncode, report


def findings(report: dict[str, Any], rule: str | None = None) -> list[dict[str, Any]]:
    found = [f for t in report["targets"] for f in t["findings"]]
    return [f for f in found if rule is None or f["rule"] == rule]


def service_error(report: dict[str, Any], registry: str) -> str:
    """The one service-error finding's message: one line that names ``registry``."""
    (finding,) = findings(report, "service-error")
    assert finding["status"] == "ERROR" and finding["gotcha"] == "ENVCHECK"
    message = str(finding["message"])
    assert "\n" not in message and registry in message, message
    return message


def asks(proxy: FaultProxy, part: str) -> int:
    """How many requests whose path contains ``part`` reached the proxy."""
    return sum(1 for _, path in proxy.seen if part in path)


def manifest_of(images: Images, repo: str, tag: str) -> dict[str, Any]:
    got = requests.get(f"http://{images.host}/v2/{repo}/manifests/{tag}", headers={"Accept": ACCEPT}, timeout=10)
    got.raise_for_status()
    return got.json()  # type: ignore[no-any-return]


# ---- 1. connection reset (TCP RST) -----------------------------------------------------------------------------

@pytest.mark.registry
def test_reset_in_the_middle_of_a_manifest(registry_images: Images, fault_proxy: Proxy, image_cache: Path) -> None:
    proxy = fault_proxy(Fault(r"/manifests/", "reset", times=-1))
    code, report = check(via(proxy, registry_images.single_arm64), cache=image_cache)
    assert code == 3
    message = service_error(report, proxy.host)
    assert "connection broke while reading" in message and "manifest arm64" in message
    assert asks(proxy, "/manifests/") == 3  # the first try and two more, then it gives up


@pytest.mark.registry
def test_one_reset_manifest_is_asked_for_again(registry_images: Images, fault_proxy: Proxy, image_cache: Path) -> None:
    proxy = fault_proxy(Fault(r"/manifests/", "reset", times=1))
    code, report = check(via(proxy, registry_images.single_arm64), cache=image_cache)
    assert code == 0, findings(report)
    assert asks(proxy, "/manifests/") == 2


@pytest.mark.registry
def test_reset_before_any_answer(registry_images: Images, fault_proxy: Proxy, image_cache: Path) -> None:
    proxy = fault_proxy(Fault(r"/manifests/", "reset-before-answer", times=-1))
    code, report = check(via(proxy, registry_images.single_arm64), cache=image_cache)
    assert code == 3
    message = service_error(report, proxy.host)
    assert "could not be reached" in message and "connection reset by the server" in message
    assert asks(proxy, "/manifests/") == 3


@pytest.mark.registry
def test_reset_in_the_middle_of_a_layer(registry_images: Images, fault_proxy: Proxy, image_cache: Path) -> None:
    layer = manifest_of(registry_images, "lab/deep", "clean")["layers"][0]["digest"]
    proxy = fault_proxy(Fault(layer, "reset", times=-1))
    code, report = check(via(proxy, registry_images.deep_clean), "--deep", "--platform", "linux/amd64", cache=image_cache)
    assert code == 3
    message = service_error(report, proxy.host)
    assert "connection broke while reading" in message and f"layer {layer[:19]}" in message
    assert asks(proxy, layer) == 1  # a layer stream is not restarted behind the scanner's back
    assert not report["targets"][0]["inventory"].get("packages")  # nothing half-read is reported as the image
    assert not list(image_cache.glob("deep-*"))


# ---- 2. slow-loris ---------------------------------------------------------------------------------------------

SHORT = {"ENVCHECK_HTTP_TIMEOUT": "2"}


@pytest.mark.registry
@pytest.mark.parametrize("action", ["slow-body", "slow-headers"])
def test_trickling_manifest_hits_the_deadline(registry_images: Images, fault_proxy: Proxy, image_cache: Path, action: str) -> None:
    proxy = fault_proxy(Fault(r"/manifests/", action, times=-1, interval=0.3))
    code, report = check(via(proxy, registry_images.single_arm64), cache=image_cache, env=SHORT)
    assert code == 3
    message = service_error(report, proxy.host)
    assert "within 2 s" in message and "manifest arm64" in message and "ENVCHECK_HTTP_TIMEOUT" in message
    assert asks(proxy, "/manifests/") == 1  # a passed deadline is not retried: it is the user's bound


@pytest.mark.registry
def test_trickling_layer_hits_the_deadline(registry_images: Images, fault_proxy: Proxy, image_cache: Path) -> None:
    layer = manifest_of(registry_images, "lab/deep", "clean")["layers"][0]["digest"]
    proxy = fault_proxy(Fault(layer, "slow-body", times=-1, interval=0.3))
    code, report = check(via(proxy, registry_images.deep_clean), "--deep", "--platform", "linux/amd64", "--http-timeout", "2",
                         cache=image_cache)
    assert code == 3
    message = service_error(report, proxy.host)
    assert f"layer {layer[:19]}" in message and "did not arrive in full" in message and "--http-timeout" in message
    assert asks(proxy, layer) == 1


@pytest.mark.registry
def test_http_timeout_is_documented_and_checked() -> None:
    done = run_envcheck("image", "--help", timeout=BOUND)
    assert done.returncode == 0 and "--http-timeout" in done.stdout and "ENVCHECK_HTTP_TIMEOUT" in done.stdout
    bad = run_envcheck("image", "127.0.0.1:1/x:1", env={"ENVCHECK_HTTP_TIMEOUT": "soon"}, timeout=BOUND)
    assert bad.returncode == 2 and "ENVCHECK_HTTP_TIMEOUT='soon'" in bad.stderr and "Traceback" not in bad.stderr


# ---- 3. 401 with a challenge nobody can use ----------------------------------------------------------------------

@pytest.mark.registry
@pytest.mark.parametrize(("challenge", "words"), [
    ("!!! %%% ###", "challenge envcheck cannot read"),
    ('Bearer service="registry.example",scope="repository:lab/single:pull"', "unusable realm ''"),
    ('Bearer realm="ftp://127.0.0.1/token"', "unusable realm 'ftp://127.0.0.1/token'"),
    ('Negotiate realm="corp"', "unsupported authentication scheme 'negotiate'"),
    ("", "needs authentication (HTTP 401)"),
])
def test_401_with_an_unusable_challenge(registry_images: Images, fault_proxy: Proxy, image_cache: Path, challenge: str,
                                        words: str) -> None:
    headers = {"WWW-Authenticate": challenge} if challenge else {}
    proxy = fault_proxy(Fault(r"/manifests/", "status", times=-1, status=401, headers=headers))
    code, report = check(via(proxy, registry_images.single_arm64), cache=image_cache)
    assert code == 3
    assert words in service_error(report, proxy.host)
    assert asks(proxy, "/manifests/") == 1


@pytest.mark.registry
def test_401_whose_token_server_is_down(registry_images: Images, fault_proxy: Proxy, image_cache: Path) -> None:
    with refusing_port() as port:  # nothing answers there, and no other server of the suite can take the port
        token_host = f"127.0.0.1:{port}"
        proxy = fault_proxy(Fault(r"/manifests/", "status", times=-1, status=401,
                                  headers={"WWW-Authenticate": f'Bearer realm="http://{token_host}/token",service="x"'}))
        code, report = check(via(proxy, registry_images.single_arm64), cache=image_cache)
    assert code == 3
    message = service_error(report, token_host)  # names the token server, which is what failed
    assert "could not be reached" in message and "a token for repository:lab/single:pull" in message
    assert asks(proxy, "/manifests/") == 1


# ---- 4. 502/503 bursts and outages ------------------------------------------------------------------------------

@pytest.mark.registry
@pytest.mark.parametrize("status", [502, 503])
def test_bursts_of_5xx_are_retried(registry_images: Images, fault_proxy: Proxy, image_cache: Path, status: int) -> None:
    proxy = fault_proxy(Fault(r"/manifests/", "status", times=2, status=status, headers={"Retry-After": "0"}),
                        Fault(r"/blobs/", "status", times=1, status=status, headers={"Retry-After": "0"}))
    code, report = check(via(proxy, registry_images.single_arm64), cache=image_cache)
    assert code == 0, findings(report)
    assert asks(proxy, "/manifests/") == 3 and asks(proxy, "/blobs/") == 2
    assert [f["status"] for f in findings(report, "ARCH-image-config")] == ["PASS"]


@pytest.mark.registry
def test_503_forever_gives_up(registry_images: Images, fault_proxy: Proxy, image_cache: Path) -> None:
    proxy = fault_proxy(Fault(r"/manifests/", "status", times=-1, status=503, headers={"Retry-After": "0"}))
    code, report = check(via(proxy, registry_images.single_arm64), cache=image_cache)
    assert code == 3
    assert "answered HTTP 503 for manifest arm64" in service_error(report, proxy.host)
    assert len(proxy.seen) == 5  # the first try and four retries


# ---- 5. wrong Content-Type ----------------------------------------------------------------------------------------

@pytest.mark.registry
@pytest.mark.parametrize("content_type", ["text/html; charset=utf-8", "application/octet-stream", "application/json",
                                          OCI_INDEX, DOCKER_LIST])
def test_manifest_under_a_wrong_content_type(registry_images: Images, fault_proxy: Proxy, image_cache: Path,
                                             content_type: str) -> None:
    """A valid manifest is judged by its own mediaType, whatever the header says (even an index type)."""
    proxy = fault_proxy(Fault(r"/manifests/", "rewrite", times=-1, headers={"Content-Type": content_type}))
    code, report = check(via(proxy, registry_images.single_arm64), cache=image_cache)
    assert code == 0, findings(report)
    facts = report["targets"][0]["inventory"]["host"]["image"]
    assert facts["media_type"] == "application/vnd.oci.image.manifest.v1+json"
    assert facts["architecture"] == "arm64" and facts["platforms"] == ["linux/arm64"]


@pytest.mark.registry
@pytest.mark.parametrize("content_type", ["text/plain", "application/vnd.oci.image.manifest.v1+json"])
def test_index_under_a_wrong_content_type(registry_images: Images, fault_proxy: Proxy, image_cache: Path, content_type: str) -> None:
    proxy = fault_proxy(Fault(r"/manifests/25\.10-py3$", "rewrite", times=-1, headers={"Content-Type": content_type}))
    code, report = check(via(proxy, registry_images.ngc_arm64), cache=image_cache)
    assert code == 0, findings(report)
    facts = report["targets"][0]["inventory"]["host"]["image"]
    assert facts["media_type"] == OCI_INDEX and facts["platforms"] == ["linux/amd64", "linux/arm64"]
    assert facts["manifest_digest"] == registry_images.digests["ngc_arm64_child"]


@pytest.mark.registry
@pytest.mark.parametrize(("content_type", "body", "words"), [
    ("text/html", b"<html><body>Sign in to the proxy</body></html>", "is not JSON"),
    ("application/json", b'{"detail": "upstream timed out"}', "neither an image manifest nor an index"),
    ("application/json", b'{"mediaType": "application/vnd.example.report+json", "schemaVersion": 2}',
     "neither an image manifest nor an index"),
])
def test_not_a_manifest_under_any_content_type(registry_images: Images, fault_proxy: Proxy, image_cache: Path, content_type: str,
                                               body: bytes, words: str) -> None:
    proxy = fault_proxy(Fault(r"/manifests/", "rewrite", times=-1, headers={"Content-Type": content_type}, body=body))
    code, report = check(via(proxy, registry_images.single_arm64), cache=image_cache)
    assert code == 3
    message = service_error(report, proxy.host)
    assert words in message and f"Content-Type {content_type}" in message
    assert not findings(report, "ARCH-image-no-arm64")  # no false verdict on a page that is not the image


# ---- 6. redirects to another host ------------------------------------------------------------------------------

class Storage:
    """A recording blob host on 127.0.0.2 (another address, as registries send blobs to S3 or a CDN).

    It serves ``/storage/v2/...`` by fetching ``/v2/...`` from ``upstream`` with its own ``authorization``
    (as a pre-signed URL would) and records the headers of every request it receives.
    """

    def __init__(self, upstream: str, authorization: Callable[[str], dict[str, str]] | None = None) -> None:
        self.received: list[tuple[str, dict[str, str]]] = []
        storage = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                storage.received.append((self.path, dict(self.headers.items())))
                path = self.path.removeprefix("/storage")
                extra = authorization(path) if authorization else {}
                got = requests.get(f"http://{upstream}{path}", headers=extra, timeout=30)
                self.send_response(got.status_code)
                self.send_header("Content-Length", str(len(got.content)))
                self.end_headers()
                self.wfile.write(got.content)

        self.server = ThreadingHTTPServer(("127.0.0.2", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base = f"http://127.0.0.2:{self.server.server_address[1]}/storage"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def storage() -> Iterator[Callable[..., Storage]]:
    made: list[Storage] = []

    def make(upstream: str, authorization: Callable[[str], dict[str, str]] | None = None) -> Storage:
        made.append(Storage(upstream, authorization))
        return made[-1]

    yield make
    for server in made:
        server.close()


def to_storage(target: Storage) -> Fault:
    return Fault(r"/blobs/", "redirect", times=-1, status=307, headers={"Location": target.base + "{path}"})


@pytest.mark.registry
def test_blobs_follow_a_redirect_to_storage(registry_images: Images, fault_proxy: Proxy, storage: Callable[..., Storage],
                                            image_cache: Path) -> None:
    target = storage(registry_images.host)
    proxy = fault_proxy(to_storage(target))
    code, report = check(via(proxy, registry_images.deep_clean), "--deep", "--platform", "linux/amd64", cache=image_cache)
    assert code == 1  # the image's own findings (an amd64 image): the same as read straight from the registry
    assert not findings(report, "service-error") and not findings(report, "input-error")
    assert any(p["name"] == "torch" for p in report["targets"][0]["inventory"]["packages"])
    layers = manifest_of(registry_images, "lab/deep", "clean")["layers"]
    assert len(target.received) == 1 + len(layers)  # the config and every layer came from storage
    assert report["targets"][0]["inventory"]["host"]["image"]["deep"]["layers_scanned"] == len(layers)


@pytest.mark.registry
def test_basic_credentials_do_not_follow_a_redirect(basic_registry: AuthRegistry, fault_proxy: Proxy,
                                                    storage: Callable[..., Storage], image_cache: Path) -> None:
    basic = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    target = storage(basic_registry.host, lambda path: {"Authorization": basic})
    proxy = fault_proxy(to_storage(target), upstream=basic_registry.host)
    code, report = check(via(proxy, basic_registry.image), "--deep", "--username", USER, "--password-stdin",
                         input=PASSWORD + "\n", cache=image_cache)
    assert code == 0, findings(report)
    assert any(h.get("Authorization") == basic for h in proxy.headers_seen)  # the registry itself got the login
    assert len(target.received) == 2  # config and layer
    for path, headers in target.received:
        assert not any(k.lower() in ("authorization", "proxy-authorization") for k in headers), (path, headers)
        assert PASSWORD not in json.dumps(headers) and base64.b64encode(PASSWORD.encode()).decode() not in json.dumps(headers)


@pytest.mark.registry
def test_bearer_tokens_do_not_follow_a_redirect(token_registry: AuthRegistry, fault_proxy: Proxy,
                                                storage: Callable[..., Storage], image_cache: Path) -> None:
    assert token_registry.token is not None
    token = token_registry.token

    def pull_token(path: str) -> dict[str, str]:
        repo = path.split("/v2/", 1)[1].rsplit("/blobs/", 1)[0]
        got = requests.get(token.realm, params={"service": token.service, "scope": f"repository:{repo}:pull"},
                           auth=(USER, PASSWORD), timeout=10)
        return {"Authorization": f"Bearer {got.json()['token']}"}

    target = storage(token_registry.host, pull_token)
    proxy = fault_proxy(to_storage(target), upstream=token_registry.host)
    code, report = check(via(proxy, token_registry.image), "--deep", "--username", USER, "--password-stdin",
                         input=PASSWORD + "\n", cache=image_cache)
    assert code == 0, findings(report)
    bearer = [h["Authorization"] for h in proxy.headers_seen if h.get("Authorization", "").startswith("Bearer ")]
    assert bearer  # the registry itself got the token
    assert len(target.received) == 2
    for path, headers in target.received:
        assert not any(k.lower() in ("authorization", "proxy-authorization") for k in headers), (path, headers)
        assert not any(value.split(" ", 1)[1] in json.dumps(headers) for value in bearer)


@pytest.mark.registry
def test_redirect_loop_is_bounded(registry_images: Images, fault_proxy: Proxy, image_cache: Path) -> None:
    loop = Fault(r"/blobs/", "redirect", times=-1, status=302)
    proxy = fault_proxy(loop)
    loop.headers["Location"] = f"http://{proxy.host}{{path}}x"  # each blob request to another path on itself, forever
    code, report = check(via(proxy, registry_images.single_arm64), cache=image_cache)
    assert code == 3
    message = service_error(report, proxy.host)
    assert "more than 10 times" in message and "redirect loop" in message
    assert asks(proxy, "/blobs/") == 11  # the first request and ten redirects


# ---- 7. the Docker engine goes away mid-run -----------------------------------------------------------------------

class PrivateEngine:
    """A dockerd of this test's own: data root, exec root, pid file and unix socket under ``root``.

    ``--bridge=none --iptables=false``: no network setup on the machine (containers run with no network).
    Its containerd is its own child (state under the exec root). Only processes it started are stopped.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.host = f"unix://{root}/docker.sock"
        self.process: subprocess.Popen[bytes] | None = None
        (root / "daemon.json").write_text("{}")  # not /etc/docker/daemon.json

    def start(self) -> None:
        log = (self.root / "dockerd.log").open("ab")
        self.process = subprocess.Popen(
            ["dockerd", "--config-file", str(self.root / "daemon.json"), "--data-root", str(self.root / "data"),
             "--exec-root", str(self.root / "exec"), "--pidfile", str(self.root / "docker.pid"), "-H", self.host,
             "--bridge=none", "--iptables=false", "--ip-masq=false"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        import docker

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with docker.APIClient(base_url=self.host, timeout=5) as api:
                    api.ping()
                return
            except Exception:
                if self.process.poll() is not None:
                    break
                time.sleep(0.2)
        raise RuntimeError(f"the private dockerd did not start: {(self.root / 'dockerd.log').read_text()[-2000:]}")

    def client(self) -> Any:
        import docker

        return docker.DockerClient(base_url=self.host, timeout=120)

    def kill(self) -> None:
        """SIGKILL the dockerd (a crash: nothing of it can clean up)."""
        assert self.process is not None
        self.process.kill()
        self.process.wait(30)
        # Its containerd dies with it (parent-death signal) but stays a zombie here, since this machine's init
        # does not reap; dockerd would take the zombie's pid in containerd.pid for a live containerd and wait
        # for it forever. A service manager clears that state on restart; so does this.
        pid_file = self.root / "exec" / "containerd" / "containerd.pid"
        deadline = time.monotonic() + 30
        while pid_file.exists() and time.monotonic() < deadline:
            stat = Path(f"/proc/{pid_file.read_text().strip() or 0}/stat")
            if not stat.exists() or stat.read_text().split(")", 1)[1].split()[0] == "Z":
                pid_file.unlink()
                break
            time.sleep(0.1)

    def own_processes(self) -> list[int]:
        """Pids of processes whose command line names this engine's folder (its containerd and shims)."""
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if str(self.root) in cmdline:
                found.append(int(entry.name))
        return found

    def tear_down(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()  # a clean stop also stops its containerd
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        for pid in self.own_processes():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()
                  if line.split()[1].startswith(str(self.root))]
        for mount in sorted(mounts, key=len, reverse=True):  # dockerd bind-mounts its data root onto itself
            subprocess.run(["umount", "-l", mount], check=False, capture_output=True)
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture
def private_engine(docker_client: Any, test_images: Any) -> Iterator[tuple[PrivateEngine, str, str]]:
    """A started private engine holding the python test image and a copy whose interpreter hangs at start."""
    from conftest import require
    from test_container_hardening import SLOW_SITECUSTOMIZE

    require(shutil.which("dockerd") is not None and os.geteuid() == 0, "a private Docker engine needs dockerd and root")
    # A short path: a unix socket path must stay under 108 bytes.
    engine = PrivateEngine(Path(tempfile.mkdtemp(prefix="ecd-", dir="/tmp")))
    try:
        engine.start()
        with contextlib.closing(engine.client()) as client:
            client.images.load(b"".join(docker_client.images.get(test_images.python).save(named=True)))  # read-only on the shared engine
            context = engine.root / "slow"
            context.mkdir()
            (context / "sitecustomize.py").write_text(SLOW_SITECUSTOMIZE)
            (context / "Dockerfile").write_text(
                f"FROM {test_images.python}\nCOPY sitecustomize.py /usr/local/lib/python3.11/dist-packages/\n")
            slow = "envcheck-test/private-slow:1"
            client.images.build(path=str(context), tag=slow, rm=True, network_mode="none")
        yield engine, test_images.python, slow
    finally:
        engine.tear_down()


@pytest.mark.docker
def test_engine_that_goes_away_mid_run(private_engine: tuple[PrivateEngine, str, str], tmp_path: Path) -> None:
    from docker_images import containers, stderr_of

    from envcheck.services.docker_runner import LABEL

    engine, quick, slow = private_engine
    env = {**os.environ, "DOCKER_HOST": engine.host, "ENVCHECK_CACHE_DIR": str(tmp_path / "cache")}
    child = subprocess.Popen([sys.executable, "-m", "envcheck", "-f", "json", "container", slow, "--timeout", "300"],
                             cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    mine = {"label": f"{LABEL}.pid={child.pid}"}
    try:
        with contextlib.closing(engine.client()) as client:
            deadline = time.monotonic() + BOUND
            while time.monotonic() < deadline and child.poll() is None:
                running = containers(client, {**mine, "status": "running"}, all=False)
                if running and b"sleeping" in stderr_of(client, running[0]):
                    break
                time.sleep(0.1)
            else:
                pytest.fail(f"the probe container never started: {child.poll()}")
        engine.kill()  # the engine goes away while the collector runs
        stdout, stderr = child.communicate(timeout=BOUND)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 3, stderr
    assert "Traceback" not in stdout + stderr
    (finding,) = findings(json.loads(stdout), "service-error")
    assert "\n" not in finding["message"]
    assert f"lost the Docker engine ({engine.host}) while {slow} ran" in finding["message"]

    engine.start()  # the engine is back: it finds the probe container stopped and removes it (AutoRemove)
    with contextlib.closing(engine.client()) as client:
        deadline = time.monotonic() + BOUND
        while containers(client, mine) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert containers(client, mine) == []  # no envcheck run needed to clean up
        done = run_envcheck("-f", "json", "container", quick, env={"DOCKER_HOST": engine.host}, timeout=BOUND)
        assert done.returncode in (0, 1) and "Traceback" not in done.stderr
        assert not findings(json.loads(done.stdout), "service-error")
        assert containers(client, {"label": LABEL}) == []  # nothing of either run is left
