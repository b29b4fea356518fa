"""Which engine ``envcheck container`` talks to: DOCKER_HOST (unix, ssh://), Docker contexts.

Real parts only: the session's engine, the Docker CLI to create contexts in a private DOCKER_CONFIG,
a real OpenSSH server on loopback for ``DOCKER_HOST=ssh://`` (the remote side runs
``docker system dial-stdio`` exactly as on a Spark reached over ssh), and a TLS listener with
openssl-made certificates in front of the engine's socket for ``DOCKER_TLS_VERIFY``/``DOCKER_CERT_PATH``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import require, run_envcheck

pytestmark = pytest.mark.docker


def run_json(*args: str, env: dict[str, str]) -> tuple[int, dict[str, Any]]:
    done = run_envcheck("container", *args, "--format", "json", env=env)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, json.loads(done.stdout)


def statuses(report: dict[str, Any], gotcha: str) -> set[str]:
    return {f["status"] for t in report["targets"] for f in t["findings"] if f["gotcha"] == gotcha}


def docker_cli() -> str | None:
    return shutil.which("docker")


def make_context(config: Path, name: str, host: str) -> None:
    subprocess.run([docker_cli() or "docker", "context", "create", name, "--docker", f"host={host}"],
                   env={**os.environ, "DOCKER_CONFIG": str(config)}, check=True, capture_output=True, text=True)


def test_docker_context_is_used(docker_client: Any, test_images: Any, tmp_path: Path) -> None:
    require(docker_cli() is not None, "the docker CLI creates the contexts")
    socket_path = docker_client.api.base_url  # http+docker://localhost for the default unix socket
    assert socket_path
    make_context(tmp_path, "local", "unix:///var/run/docker.sock")
    make_context(tmp_path, "dead", "unix:///nonexistent/docker.sock")
    base = {"DOCKER_CONFIG": str(tmp_path), "DOCKER_HOST": ""}
    code, report = run_json(test_images.cuda13, "--ignore", "ARCH", env={**base, "DOCKER_CONTEXT": "local"})
    assert code == 0 and statuses(report, "G1") == {"PASS"}
    code, report = run_json(test_images.cuda13, env={**base, "DOCKER_CONTEXT": "dead"})
    assert code == 3
    assert "unix:///nonexistent/docker.sock" in report["targets"][0]["findings"][0]["message"]
    # the CLI's current context (config.json currentContext) counts when DOCKER_CONTEXT is unset
    config = json.loads((tmp_path / "config.json").read_text()) if (tmp_path / "config.json").exists() else {}
    config["currentContext"] = "dead"
    (tmp_path / "config.json").write_text(json.dumps(config))
    code, _ = run_json(test_images.cuda13, env=base)
    assert code == 3


@pytest.fixture(scope="module")
def ssh_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """An OpenSSH server on 127.0.0.1 with a throwaway key, and an ``ssh`` on PATH that uses it."""
    sshd = shutil.which("sshd") or ("/usr/sbin/sshd" if os.access("/usr/sbin/sshd", os.X_OK) else None)
    require(sshd is not None and shutil.which("ssh") is not None and shutil.which("ssh-keygen") is not None,
            "DOCKER_HOST=ssh:// needs openssh-server and openssh-client")
    try:
        import paramiko  # noqa: F401
    except ImportError:
        require(False, "DOCKER_HOST=ssh:// needs paramiko (pip install 'envcheck-spark[ssh]')")
    require(docker_cli() is not None and os.geteuid() == 0, "the ssh side runs `docker system dial-stdio` as root")
    work = tmp_path_factory.mktemp("ssh")
    for key in ("hostkey", "userkey"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(work / key)], check=True)
    shutil.copy(work / "userkey.pub", work / "authorized_keys")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (work / "sshd_config").write_text(
        f"ListenAddress 127.0.0.1\nPort {port}\nHostKey {work}/hostkey\nAuthorizedKeysFile {work}/authorized_keys\n"
        "PermitRootLogin prohibit-password\nPasswordAuthentication no\nStrictModes no\nUsePAM no\n"
        f"PidFile {work}/sshd.pid\n"
    )
    (work / "ssh_config").write_text(
        f"Host *\n  IdentityFile {work}/userkey\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n"
        "  LogLevel ERROR\n  BatchMode yes\n"
    )
    bin_dir = work / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "ssh"  # ssh reads ~/.ssh/config from the passwd home; point it at ours instead
    wrapper.write_text(f'#!/bin/sh\nexec {shutil.which("ssh")} -F {work}/ssh_config "$@"\n')
    wrapper.chmod(0o755)
    Path("/run/sshd").mkdir(parents=True, exist_ok=True)  # sshd's privilege-separation directory
    server = subprocess.Popen([str(sshd), "-D", "-f", str(work / "sshd_config"), "-E", str(work / "sshd.log")])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            time.sleep(0.1)
    try:
        yield {"DOCKER_HOST": f"ssh://root@127.0.0.1:{port}", "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_ssh_docker_host(ssh_engine: dict[str, str], test_images: Any) -> None:
    code, report = run_json(test_images.cuda12, env=ssh_engine)
    assert code == 1
    assert "FAIL" in statuses(report, "G1")
    host = report["targets"][0]["inventory"]["host"]
    assert host["container_run"]["user"] == "65534:65534"


def test_ssh_docker_host_refused(ssh_engine: dict[str, str], test_images: Any) -> None:
    bad = {**ssh_engine, "DOCKER_HOST": ssh_engine["DOCKER_HOST"].replace("root@", "nosuchuser@")}
    code, report = run_json(test_images.cuda12, env=bad)
    assert code == 3
    assert report["targets"][0]["findings"][0]["rule"] == "service-error"


# --------------------------------------------------------------------------- DOCKER_HOST=tcp:// + TLS


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_tls_files(folder: Path, name: str) -> Path:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, as DOCKER_CERT_PATH holds them."""
    folder.mkdir(parents=True)
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN={name}-ca",
             "-keyout", "ca-key.pem", "-out", "ca.pem", cwd=folder)
    (folder / "server.ext").write_text("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    (folder / "client.ext").write_text("extendedKeyUsage=clientAuth\n")
    for who in ("server", "client"):
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}-{who}",
                 "-keyout", f"{who}-key.pem", "-out", f"{who}.csr", cwd=folder)
        _openssl("x509", "-req", "-in", f"{who}.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem", "-CAcreateserial",
                 "-days", "2", "-extfile", f"{who}.ext", "-out", f"{who}.pem", cwd=folder)
    shutil.copy(folder / "client.pem", folder / "cert.pem")
    shutil.copy(folder / "client-key.pem", folder / "key.pem")
    return folder


@pytest.fixture(scope="module")
def tls_engine(docker_client: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The engine's unix socket behind a TLS listener on 127.0.0.1 that demands a client certificate
    (what `dockerd --tlsverify -H tcp://...` does), so the SDK's TLS settings are really used."""
    import ssl
    import threading

    require(shutil.which("openssl") is not None, "openssl makes the test certificates")
    require(os.path.exists("/var/run/docker.sock"), "the TLS listener forwards to /var/run/docker.sock")
    certs = make_tls_files(tmp_path_factory.mktemp("tls") / "good", "envcheck")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certs / "server.pem", certs / "server-key.pem")
    context.load_verify_locations(certs / "ca.pem")
    context.verify_mode = ssl.CERT_REQUIRED
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    stop = threading.Event()

    def pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while chunk := source.recv(65536):
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                with contextlib.suppress(OSError):
                    end.close()

    def serve() -> None:
        while not stop.is_set():
            try:
                raw, _ = listener.accept()
            except OSError:
                return
            try:
                client = context.wrap_socket(raw, server_side=True)
            except (OSError, ssl.SSLError):
                raw.close()
                continue
            engine = socket.socket(socket.AF_UNIX)
            engine.connect("/var/run/docker.sock")
            threading.Thread(target=pump, args=(client, engine), daemon=True).start()
            threading.Thread(target=pump, args=(engine, client), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"tcp://127.0.0.1:{listener.getsockname()[1]}", certs
    finally:
        stop.set()
        listener.close()


def test_tls_docker_host(tls_engine: tuple[str, Path], test_images: Any, tmp_path: Path) -> None:
    host, certs = tls_engine
    env = {"DOCKER_HOST": host, "DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": str(certs)}
    code, report = run_json(test_images.cuda13, "--ignore", "ARCH", env=env)
    assert code == 0 and statuses(report, "G1") == {"PASS"}
    # another CA's certificates: the engine's certificate is not trusted, nothing runs
    wrong = make_tls_files(tmp_path / "wrong", "other")
    code, report = run_json(test_images.cuda13, env={**env, "DOCKER_CERT_PATH": str(wrong)})
    assert code == 3
    message = report["targets"][0]["findings"][0]["message"]
    assert host.replace("tcp://", "") in message and "SSL" in message.upper()
