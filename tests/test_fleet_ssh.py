"""A Spark read over SSH (issue 30 item 4): a real OpenSSH server on loopback, keys made here, the CLI run
with a HOME that holds the client key and known_hosts (no agent)."""

from __future__ import annotations

import getpass
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import require, run_envcheck
from registry_fixtures import free_port


@dataclass(frozen=True)
class Sshd:
    url: str  # ssh://USER@127.0.0.1:PORT (this process's user)
    home: Path  # HOME with .ssh/id_ed25519 and .ssh/known_hosts
    stranger_home: Path  # HOME with the key but an empty known_hosts


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    binary = shutil.which("sshd") or ("/usr/sbin/sshd" if Path("/usr/sbin/sshd").exists() else None)
    require(binary is not None and shutil.which("ssh-keygen") is not None, "an OpenSSH server (apt-get install openssh-server)")
    assert binary is not None
    work = tmp_path_factory.mktemp("sshd")
    os.chmod(work, 0o700)
    keygen = ["ssh-keygen", "-q", "-t", "ed25519", "-N", ""]
    subprocess.run([*keygen, "-f", str(work / "host_key")], check=True)
    subprocess.run([*keygen, "-f", str(work / "client_key")], check=True)
    (work / "authorized_keys").write_text((work / "client_key.pub").read_text())
    os.chmod(work / "authorized_keys", 0o600)
    Path("/run/sshd").mkdir(parents=True, exist_ok=True)  # sshd's privilege-separation directory
    port = free_port()
    config = work / "sshd_config"
    config.write_text(f"Port {port}\nListenAddress 127.0.0.1\nHostKey {work / 'host_key'}\nPidFile {work / 'sshd.pid'}\n"
                      f"AuthorizedKeysFile {work / 'authorized_keys'}\nStrictModes no\nUsePAM no\nPasswordAuthentication no\n"
                      "KbdInteractiveAuthentication no\nPubkeyAuthentication yes\nPermitRootLogin prohibit-password\n")
    proc = subprocess.Popen([binary, "-D", "-e", "-f", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if proc.poll() is not None:
                pytest.fail(f"sshd did not start: {proc.stderr.read().decode() if proc.stderr else ''}")
            time.sleep(0.05)
    homes = []
    for name, known in (("home", True), ("stranger", False)):
        home = work / name
        (home / ".ssh").mkdir(parents=True)
        shutil.copy(work / "client_key", home / ".ssh" / "id_ed25519")
        os.chmod(home / ".ssh" / "id_ed25519", 0o600)
        host_key = " ".join((work / "host_key.pub").read_text().split()[:2])
        (home / ".ssh" / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_key}\n" if known else "")
        homes.append(home)
    yield Sshd(f"ssh://{getpass.getuser()}@127.0.0.1:{port}", homes[0], homes[1])
    proc.terminate()
    proc.wait(10)


def envcheck_as(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"HOME": str(home), "SSH_AUTH_SOCK": ""}
    return run_envcheck(*args, env=env, timeout=180)


def packages(snapshot: dict[str, object]) -> set[tuple[str, str]]:
    targets = snapshot["targets"]
    assert isinstance(targets, list)
    return {(p["name"], p.get("version", "")) for p in targets[0]["inventory"].get("packages", [])}


def test_snapshot_over_ssh_reads_what_a_local_snapshot_reads(sshd: Sshd, tmp_path: Path) -> None:
    remote = envcheck_as(sshd.home, "snapshot", sshd.url, "--python", sys.executable, "-o", str(tmp_path / "remote.json"))
    assert remote.returncode == 0, remote.stderr
    local = envcheck_as(sshd.home, "snapshot", "--python", sys.executable, "--no-binaries", "-o", str(tmp_path / "local.json"))
    assert local.returncode == 0, local.stderr
    there, here = json.loads((tmp_path / "remote.json").read_text()), json.loads((tmp_path / "local.json").read_text())
    name = f"ssh://{sshd.url.split('@', 1)[1]} (python: {sys.executable})"
    assert there["targets"][0]["target"] == name
    assert there["targets"][0]["kind"] == "host"
    assert packages(there) == packages(here) and len(packages(there)) > 10
    # the same machine twice, and against this host: twins that match
    twins = envcheck_as(sshd.home, "diff", "--twins", sshd.url, sshd.url, "--python", sys.executable)
    assert twins.returncode == 0, twins.stdout + twins.stderr
    merged = run_envcheck("merge", str(tmp_path / "remote.json"), str(tmp_path / "local.json"), "-f", "html")
    assert f"{name}</a>" in merged.stdout.split('id="matrix"', 1)[1]


def test_preflight_of_a_remote_host(sshd: Sshd) -> None:
    done = envcheck_as(sshd.home, "preflight", "--host", sshd.url, "--python", sys.executable)
    lines = done.stdout.splitlines()
    assert [line.split()[0] for line in lines[:10]] == [f"G{i}" for i in range(1, 11)], done.stdout + done.stderr
    assert "Traceback" not in done.stderr


def test_an_unknown_host_key_is_refused(sshd: Sshd) -> None:
    done = envcheck_as(sshd.stranger_home, "snapshot", sshd.url, "--python", sys.executable, "-o", "-")
    assert done.returncode == 3
    assert "not in ~/.ssh/known_hosts" in done.stderr + done.stdout and "never accepts an unknown key" in done.stderr + done.stdout
    bad = run_envcheck("snapshot", "ssh://root:secret@127.0.0.1:22", "-o", "-")
    assert bad.returncode == 2 and "secret" not in bad.stderr
