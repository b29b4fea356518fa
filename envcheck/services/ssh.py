"""One command on a remote machine over SSH (paramiko), with ``~/.ssh/config``, the agent and key files (never
a password). The host key must already be in known_hosts: an unknown or changed key is refused, never accepted
silently. Bounded by a connect timeout, a deadline and an output limit; every failure is a ServiceError."""

from __future__ import annotations

import os
import re
import shlex
import time
from dataclasses import dataclass
from pathlib import Path

from envcheck.errors import ServiceError, UsageError, missing_extra

CONNECT_TIMEOUT = 15.0
MAX_OUTPUT = 64 << 20
_SPEC = re.compile(r"ssh://(?:(?P<user>[A-Za-z0-9._-]{1,64})@)?(?P<host>[A-Za-z0-9.-]{1,253}|\[[0-9A-Fa-f:.]+\])(?::(?P<port>\d{1,5}))?/?\Z")


@dataclass(frozen=True)
class SshHost:
    host: str
    user: str | None = None
    port: int | None = None

    def __str__(self) -> str:
        return "ssh://" + (f"{self.user}@" if self.user else "") + self.host + (f":{self.port}" if self.port else "")


def parse_ssh(text: str) -> SshHost:
    found = _SPEC.match(text)
    port = int(found.group("port")) if found and found.group("port") else None
    if found is None or (port is not None and not 0 < port < 65536):
        raise UsageError(f"{text[:80]!r}: expected ssh://[USER@]HOST[:PORT] (no password, path or options)")
    return SshHost(found.group("host").strip("[]"), found.group("user"), port)


def run_remote(target: SshHost, argv: list[str], stdin: bytes, deadline: float) -> tuple[int, bytes, bytes]:
    try:
        import paramiko
    except ImportError:
        raise missing_extra(f"{target}: reading a machine over SSH", "paramiko", "ssh") from None
    config = _ssh_config(target.host)
    hostname = config.get("hostname", target.host)
    port = target.port or int(config.get("port", 22))
    user = target.user or config.get("user") or _local_user()
    client = paramiko.SSHClient()
    client.load_system_host_keys()
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    try:
        client.connect(hostname, port=port, username=user, key_filename=config.get("identityfile") or None,
                       timeout=CONNECT_TIMEOUT, banner_timeout=CONNECT_TIMEOUT, auth_timeout=CONNECT_TIMEOUT,
                       allow_agent=True, look_for_keys=True)
    except paramiko.BadHostKeyException:
        raise ServiceError(f"{target}: the host key differs from the one in known_hosts; envcheck refuses it (check "
                           "the machine, then fix ~/.ssh/known_hosts)") from None
    except paramiko.SSHException as exc:
        if "not found in known_hosts" in str(exc):
            raise ServiceError(f"{target}: the host key of {hostname}:{port} is not in ~/.ssh/known_hosts; envcheck never "
                               f"accepts an unknown key: connect once with `ssh -p {port} {user}@{hostname}` and "
                               "check the fingerprint") from None
        raise ServiceError(f"{target}: SSH to {hostname}:{port} as {user} failed: {str(exc)[:300]} (keys are taken from "
                           "the SSH agent and ~/.ssh; envcheck takes no password)") from None
    except OSError as exc:
        raise ServiceError(f"{target}: {hostname}:{port} could not be reached: {exc.strerror or exc}") from None
    try:
        return _exec(client, target, " ".join(shlex.quote(a) for a in argv), stdin, deadline)
    finally:
        client.close()


def _exec(client: object, target: SshHost, command: str, stdin: bytes, deadline: float) -> tuple[int, bytes, bytes]:
    transport = client.get_transport()  # type: ignore[attr-defined]
    channel = transport.open_session(timeout=CONNECT_TIMEOUT)
    channel.settimeout(1.0)
    channel.exec_command(command)
    channel.sendall(stdin)
    channel.shutdown_write()
    out, err = bytearray(), bytearray()
    until = time.monotonic() + deadline
    while True:
        if time.monotonic() > until:
            channel.close()
            raise ServiceError(f"{target}: the command did not finish within {deadline:g} s")
        got = False
        while channel.recv_ready():
            out += channel.recv(1 << 16)
            got = True
        while channel.recv_stderr_ready():
            err += channel.recv_stderr(1 << 16)
            got = True
        if len(out) > MAX_OUTPUT or len(err) > MAX_OUTPUT:
            channel.close()
            raise ServiceError(f"{target}: the command printed more than {MAX_OUTPUT >> 20} MiB; refusing to read it")
        if channel.exit_status_ready() and not channel.recv_ready() and not channel.recv_stderr_ready():
            break
        if not got:
            time.sleep(0.02)
    status = channel.recv_exit_status()
    channel.close()
    return status, bytes(out), bytes(err)


def _ssh_config(host: str) -> dict[str, str]:
    path = Path(os.path.expanduser("~")) / ".ssh" / "config"
    try:
        import paramiko
        config = paramiko.SSHConfig.from_path(str(path)) if path.is_file() else None
    except (OSError, ValueError, ImportError):
        return {}
    if config is None:
        return {}
    found = config.lookup(host)
    out = {k: str(found[k]) for k in ("hostname", "user", "port") if k in found}
    files = found.get("identityfile")
    if isinstance(files, list) and files:
        out["identityfile"] = str(files[0])
    return out


def _local_user() -> str:
    import getpass
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "root"
