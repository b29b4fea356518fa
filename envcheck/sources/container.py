"""Run envcheck's collector inside a container image and read back the inventory it reports.

``envcheck container IMAGE`` starts IMAGE through the Docker SDK against whatever engine the
environment names (``DOCKER_HOST`` including ``ssh://``, ``DOCKER_CONTEXT``/the CLI's current context,
``DOCKER_TLS_VERIFY``/``DOCKER_CERT_PATH``), copies envcheck's pure-Python collector plus the
pure-Python libraries it needs into a fresh volume (``put_archive`` before start: the image itself is
never modified) and runs ``python3 -m envcheck.collect.probe`` with the image's own interpreter.

The container is hardened by default: no network, read-only root filesystem with a small tmpfs at
``/tmp``, every capability dropped, ``no-new-privileges``, memory and pids limits, a non-root user unless
the image or ``--user`` says otherwise, and a wall-clock timeout after which it is killed. It is always
removed (with its volume), also when the run fails, times out, or the envcheck process gets SIGINT or
SIGTERM: the engine itself removes it when it exits (``AutoRemove``, as ``docker run --rm``), so a
container stopped by an engine crash is removed when that engine restarts, and envcheck removes it too.
Its output is read through an attach made before it starts (kept up to a bound), its exit status from a
wait registered before it starts.

When the image has no ``python3`` or one older than 3.10, the live collector cannot run; the source
then says so (an ERROR finding) and still does a static look at the exported container filesystem:
installed distributions from ``*.dist-info/METADATA`` and the ELF files the folder reader finds.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gzip
import hashlib
import io
import json
import os
import re
import secrets
import shutil
import signal
import socket
import tarfile
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from envcheck.errors import InputError, ServiceError, UsageError
from envcheck.model import BaseImage, Inventory, Location, ReadProblem

if TYPE_CHECKING:
    from docker import DockerClient
    from docker.models.containers import Container

    from envcheck.engine import Target

KIND = "container"
PROBE_MODULE = "envcheck.collect.probe"
PAYLOAD_DIR = "/.envcheck-probe"  # a path no image has, so the fresh volume starts empty
MIN_PYTHON = (3, 10)
PYTHON_TAG = "envcheck-python:"  # the bootstrap's first stderr line: version and interpreter path
TOO_OLD_EXIT = 90  # the bootstrap's exit status when the interpreter is older than MIN_PYTHON
NOBODY = "65534:65534"
LABEL = "io.envcheck.probe"
PULL_POLICIES = ("missing", "always", "never")
MAX_STDOUT = 64 << 20  # the collector's document; more than this is not a collector's output
MAX_STDERR = 1 << 20  # the end of its error output is kept

# Runs under whatever python3 the image has, so it must parse on old Pythons (2.7 included): it reports
# the interpreter, refuses old ones with a distinct exit status, arms an in-container alarm (the
# container ends by itself even if envcheck dies with SIGKILL), then runs the probe module.
BOOTSTRAP = (
    "import sys\n"
    "v = sys.version_info\n"
    "sys.stderr.write('" + PYTHON_TAG + " %d.%d.%d %s\\n' % (v[0], v[1], v[2], sys.executable))\n"
    "sys.stderr.flush()\n"
    "if tuple(v[:2]) < " + repr(MIN_PYTHON) + ":\n"
    "    sys.exit(" + str(TOO_OLD_EXIT) + ")\n"
    "import runpy, signal\n"
    "signal.alarm(int(sys.argv[1]))\n"
    "sys.path.insert(0, '" + PAYLOAD_DIR + "')\n"
    "module = sys.argv[2]\n"
    "sys.argv = [module] + sys.argv[3:]\n"
    "runpy.run_module(module, run_name='__main__', alter_sys=True)\n"
)


@dataclass(frozen=True)
class ContainerOptions:
    """How to start the probe container. Defaults are the hardened ones."""

    gpus: str | None = None  # "all", a count ("2") or device ids ("0,1"); None: no GPU, GPU lines SKIP
    timeout: float = 120.0  # wall-clock seconds from start to exit, then the container is killed
    user: str | None = None  # None: the image's USER if it is not root, else nobody (65534:65534)
    pull: str = "missing"  # missing | always | never
    memory: str = "4g"
    pids: int = 512
    tmpfs_size: str = "64m"
    probe_module: str = PROBE_MODULE
    probe_args: tuple[str, ...] = ()
    payload: tuple[Path, ...] | None = None  # package folders to inject; None: envcheck + its collector deps
    environment: tuple[tuple[str, str], ...] = ()  # extra variables for the collector's environment


@dataclass
class ProbeRun:
    """What one probe container did: its exit status, output and how it ended."""

    image: str
    container_name: str
    exit_code: int | None = None  # None: it never ran or was killed at the timeout
    stdout: bytes = b""
    stderr: str = ""
    python: str | None = None  # "3.11.2" as the bootstrap reported it
    python_path: str | None = None
    no_python: bool = False  # the image has no python3 on PATH
    permission_denied: bool = False  # python3 exists but this user may not run it
    timed_out: bool = False
    user: str = ""
    gpus: str | None = None
    seconds: float = 0.0
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def python_too_old(self) -> bool:
        return self.exit_code == TOO_OLD_EXIT and self.python is not None


# --------------------------------------------------------------------------------------------- engine


def engine_client(timeout: float = 60.0) -> DockerClient:
    """A Docker SDK client for the engine the environment names; ServiceError when it does not answer.

    Order: ``DOCKER_HOST`` (with ``DOCKER_TLS_VERIFY``/``DOCKER_CERT_PATH``), then ``DOCKER_CONTEXT`` or the
    Docker CLI's current context, then the local socket. ``ssh://`` hosts go through the ``ssh`` client
    when it is installed (as the Docker CLI does), else paramiko; the SDK needs paramiko either way.
    """
    try:
        from docker.errors import DockerException
    except ImportError as exc:  # pragma: no cover - docker is a declared dependency
        raise ServiceError(f"the Docker SDK is not installed ({exc}); pip install docker") from exc
    where = os.environ.get("DOCKER_HOST") or "the local Docker engine"
    try:
        if os.environ.get("DOCKER_HOST"):
            client = _engine_client_class().from_env(
                timeout=int(timeout), use_ssh_client=_use_ssh_binary(os.environ["DOCKER_HOST"]))
        else:
            host, tls = _context_endpoint()
            if host is None:
                client = _engine_client_class().from_env(timeout=int(timeout))
            else:
                where = host
                client = _engine_client_class()(
                    base_url=host, tls=tls or False, timeout=int(timeout), use_ssh_client=_use_ssh_binary(host)
                )
        client.ping()
    except ServiceError:
        raise
    except DockerException as exc:
        raise ServiceError(
            f"cannot reach the Docker engine at {where}: {_short(exc)}. Start the engine or set DOCKER_HOST "
            "(unix://, tcp:// with DOCKER_TLS_VERIFY/DOCKER_CERT_PATH, or ssh://user@host)."
        ) from exc
    except Exception as exc:  # requests/paramiko/socket errors surface unwrapped from ping()
        raise ServiceError(f"cannot reach the Docker engine at {where}: {type(exc).__name__}: {_short(exc)}") from exc
    return client


@lru_cache(maxsize=1)
def _engine_client_class() -> type[DockerClient]:
    """``docker.DockerClient`` whose requests trust the engine's CA (``DOCKER_CERT_PATH/ca.pem``).

    requests lets ``REQUESTS_CA_BUNDLE``/``CURL_CA_BUNDLE`` from the environment replace a session's
    ``verify`` on every request, so with either set (common behind corporate proxies) the SDK would
    check the engine's certificate against the public CAs and refuse it. Here a CA file set on the
    session wins; proxies and everything else from the environment still apply.
    """
    import docker

    class EngineAPI(docker.APIClient):  # type: ignore[misc]
        def merge_environment_settings(self, url: Any, proxies: Any, stream: Any, verify: Any, cert: Any) -> Any:
            if verify is None and isinstance(self.verify, str):
                verify = self.verify
            return super().merge_environment_settings(url, proxies, stream, verify, cert)

    class EngineClient(docker.DockerClient):  # type: ignore[misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self.api = EngineAPI(*args, **kwargs)

    return EngineClient


def _use_ssh_binary(host: str) -> bool:
    """For ``ssh://``, use the ``ssh`` client when it is installed, as the Docker CLI does.

    Then ``~/.ssh/config``, known_hosts, agents and ProxyJump behave exactly as for ``docker -H ssh://``.
    Without it the SDK's paramiko transport is used. The SDK imports paramiko for ``ssh://`` either way.
    """
    if not host.startswith("ssh://"):
        return False
    try:
        import paramiko  # noqa: F401
    except ImportError:
        raise ServiceError(
            f"DOCKER_HOST={host} needs the paramiko package (the Docker SDK's ssh:// transport): "
            "pip install 'envcheck[ssh]'"
        ) from None
    return shutil.which("ssh") is not None


def _context_endpoint() -> tuple[str | None, Any]:
    """Host and TLS settings of ``DOCKER_CONTEXT`` or the CLI's current context (None: the default).

    Read from the Docker CLI's own store (``$DOCKER_CONFIG`` or ``~/.docker``: ``config.json``
    ``currentContext``, ``contexts/meta/<sha256 of name>/meta.json``, ``contexts/tls/<id>/docker/``),
    because the SDK's reader ignores contexts when no ``config.json`` exists.
    """
    config_dir = Path(os.environ.get("DOCKER_CONFIG") or Path.home() / ".docker")
    name = os.environ.get("DOCKER_CONTEXT")
    if not name:
        try:
            name = json.loads((config_dir / "config.json").read_text(encoding="utf-8")).get("currentContext")
        except (OSError, ValueError, AttributeError):
            name = None
    if not name or name == "default":
        return None, None
    context_id = hashlib.sha256(name.encode()).hexdigest()
    meta_path = config_dir / "contexts" / "meta" / context_id / "meta.json"
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        endpoint = meta["Endpoints"]["docker"]
        host = str(endpoint["Host"])
    except FileNotFoundError:
        raise ServiceError(f"Docker context {name!r} does not exist ({meta_path} is missing; docker context ls "
                           "lists the contexts)") from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ServiceError(f"cannot read Docker context {name!r} from {meta_path}: {_short(exc)}") from exc
    tls_dir = config_dir / "contexts" / "tls" / context_id / "docker"
    if not tls_dir.is_dir():
        return host, None
    from docker.tls import TLSConfig

    cert, key, ca = tls_dir / "cert.pem", tls_dir / "key.pem", tls_dir / "ca.pem"
    return host, TLSConfig(
        client_cert=(str(cert), str(key)) if cert.is_file() and key.is_file() else None,
        ca_cert=str(ca) if ca.is_file() else None,
        verify=not endpoint.get("SkipTLSVerify", False),
    )


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 300 else text[:297] + "..."


def ensure_image(client: DockerClient, image: str, pull: str) -> Any:
    """The local image, pulled first when the policy asks; InputError when it cannot be had."""
    from docker.errors import APIError, ImageNotFound

    if pull not in PULL_POLICIES:
        raise UsageError(f"--pull must be one of {', '.join(PULL_POLICIES)}, not {pull!r}")
    if pull != "always":
        try:
            return client.images.get(image)
        except ImageNotFound:
            if pull == "never":
                raise InputError(f"image {image} is not present on the engine and --pull=never", image) from None
        except APIError as exc:
            raise ServiceError(f"the Docker engine failed to look up {image}: {_short(exc)}") from exc
    try:
        return client.images.pull(image)
    except ImageNotFound as exc:
        raise InputError(f"image {image} was not found: {_short(exc)}", image) from exc
    except APIError as exc:
        text = str(exc).lower()
        if any(word in text for word in ("not found", "manifest unknown", "does not exist", "repository name must")):
            raise InputError(f"image {image} could not be pulled: {_short(exc)}", image) from exc
        raise ServiceError(f"pulling {image} failed: {_short(exc)}") from exc


# -------------------------------------------------------------------------------------------- payload


def payload_folders() -> tuple[Path, ...]:
    """The pure-Python packages the collector needs inside the image: envcheck and its readers' deps.

    Python 3.10 images have no ``tomllib`` (envcheck's knowledge files are TOML): on Python 3.11+ the
    standard library's pure-Python ``tomllib`` travels and is installed in the payload as ``tomli``, the
    same code under the name envcheck imports on 3.10. (An installed tomli may be a compiled build for
    this machine only, so it travels only when it is pure Python.)
    """
    import packaging

    import envcheck

    folders = [Path(envcheck.__file__).parent, Path(packaging.__file__).parent]
    toml = _pure_toml_package()
    if toml is not None:
        folders.append(toml)
    return tuple(folders)


def _pure_toml_package() -> Path | None:
    with contextlib.suppress(ImportError):
        import tomllib

        return Path(tomllib.__file__).parent
    with contextlib.suppress(ImportError):
        import tomli

        folder = Path(tomli.__file__).parent
        if not any(folder.glob("*.so")):
            return folder
    return None


@lru_cache(maxsize=8)
def payload_archive(folders: tuple[Path, ...], compress: bool = False) -> bytes:
    """A tar of ``folders`` (source files only, no caches), root-owned and world-readable, read-only.

    Only package folders travel, never ``*.dist-info``: the collector must not see envcheck's own copies
    of packaging as distributions installed in the image. ``compress``: gzip it (the
    engine unpacks gzip), worth it when the engine is remote (tcp://, ssh://), not on a local socket.
    """
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for folder in folders:
            top = "tomli" if folder.name == "tomllib" else folder.name  # see payload_folders
            for path in sorted(folder.rglob("*")):
                relative = Path(top, path.relative_to(folder))
                if "__pycache__" in relative.parts or path.suffix in (".pyc", ".pyo") or path.is_symlink():
                    continue
                info = tar.gettarinfo(str(path), arcname=relative.as_posix())
                info.uid = info.gid = 0
                info.uname = info.gname = "root"
                info.mtime = 0
                if path.is_dir():
                    info.mode = 0o755
                    tar.addfile(info)
                elif path.is_file():
                    info.mode = 0o444
                    with path.open("rb") as fh:
                        tar.addfile(info, fh)
    data = buffer.getvalue()
    return gzip.compress(data, compresslevel=6, mtime=0) if compress else data


def _engine_is_local(client: DockerClient) -> bool:
    """True for a unix socket (the SDK's base URL ``http+docker://localhost``)."""
    return str(getattr(client.api, "base_url", "")).startswith("http+docker://localhost")


# ------------------------------------------------------------------------------------------------ run


@contextlib.contextmanager
def _signals_raise() -> Iterator[None]:
    """SIGTERM raises SystemExit(143) while a container exists, so ``finally`` blocks still remove it.

    SIGINT already raises KeyboardInterrupt. Only the main thread can install handlers; elsewhere this
    does nothing (the caller's own handling applies).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Hold SIGINT/SIGTERM while removing a container; a signal that arrives meanwhile is delivered after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _choose_user(image_obj: Any, requested: str | None) -> str:
    if requested:
        return requested
    configured = str(((image_obj.attrs or {}).get("Config") or {}).get("User") or "").strip()
    if configured and configured.split(":")[0] not in ("root", "0"):
        return configured
    return NOBODY


def _device_requests(gpus: str | None) -> list[Any]:
    """``--gpus`` as the CLI understands it: all, a count, or comma-separated device ids."""
    if not gpus:
        return []
    from docker.types import DeviceRequest

    value = gpus.strip()
    if value.startswith("device="):
        value = value[len("device="):]
    if value == "all":
        return [DeviceRequest(count=-1, capabilities=[["gpu"]])]
    if value.isdigit():
        return [DeviceRequest(count=int(value), capabilities=[["gpu"]])]
    ids = [part.strip() for part in value.split(",") if part.strip()]
    if not ids:
        raise UsageError(f"--gpus {gpus!r}: expected all, a count, or device ids such as 0,1")
    return [DeviceRequest(device_ids=ids, capabilities=[["gpu"]])]


def _container_settings(image: str, name: str, user: str, options: ContainerOptions) -> dict[str, Any]:
    from docker.types import LogConfig

    environment = {
        "PYTHONDONTWRITEBYTECODE": "1",
        "HOME": "/tmp",
        "ENVCHECK_IN_CONTAINER": "1",
        "ENVCHECK_GPUS": options.gpus or "",
    }
    environment.update(dict(options.environment))
    if not options.gpus:
        # NGC images set NVIDIA_VISIBLE_DEVICES=all; with the nvidia runtime as the engine's default
        # that alone would hand the container every GPU. No --gpus means no GPU.
        environment["NVIDIA_VISIBLE_DEVICES"] = "void"
    alarm = max(1, int(options.timeout) + 5)
    return {
        "image": image,
        "name": name,
        "auto_remove": True,  # the engine removes it on exit, also after a restart that found it stopped
        "entrypoint": ["python3"],
        "command": ["-c", BOOTSTRAP, str(alarm), options.probe_module, *collector_args(options)],
        "user": user,
        "working_dir": "/tmp",
        "environment": environment,
        "network_mode": "none",
        "read_only": True,
        "tmpfs": {"/tmp": f"rw,nosuid,nodev,noexec,size={options.tmpfs_size}"},
        "volumes": [PAYLOAD_DIR],  # an anonymous volume: fresh, removed with the container
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "mem_limit": options.memory,
        "memswap_limit": options.memory,
        "pids_limit": options.pids,
        "ipc_mode": "private",
        "log_config": LogConfig(type="json-file", config={"max-size": "8m", "max-file": "1"}),
        "labels": _labels(),
        "device_requests": _device_requests(options.gpus),
        "stdin_open": False,
        "tty": False,
    }


def collector_args(options: ContainerOptions) -> list[str]:
    """Arguments for the probe module: the real collector gets binaries, its timeout and GPU switches."""
    if options.probe_module != PROBE_MODULE or options.probe_args:
        return list(options.probe_args)
    args = ["--binaries", "--timeout", f"{max(5.0, min(60.0, options.timeout / 2)):g}"]
    if not options.gpus:
        args.append("--no-nvidia-smi")  # no GPU was given to the container: GPU readings are SKIP
    return args


_NO_EXECUTABLE = re.compile(r"executable file not found|no such file or directory", re.IGNORECASE)


def run_probe(client: DockerClient, image: str, options: ContainerOptions | None = None,
              image_obj: Any = None) -> ProbeRun:
    """Start the probe container for ``image``, wait for it (at most ``options.timeout``) and remove it.

    Never leaves a container behind: removal runs in ``finally`` with SIGINT/SIGTERM held, and the
    container is created under a known name so that even an interrupted ``create`` call is cleaned up.
    """
    from docker.errors import APIError, DockerException, NotFound

    options = options or ContainerOptions()
    if image_obj is None:
        image_obj = client.images.get(image)
    name = f"envcheck-probe-{os.getpid()}-{secrets.token_hex(4)}"
    user = _choose_user(image_obj, options.user)
    run = ProbeRun(image=image, container_name=name, user=user, gpus=options.gpus)
    folders = options.payload if options.payload is not None else payload_folders()
    archive = payload_archive(tuple(folders), compress=not _engine_is_local(client))
    started = time.monotonic()
    container: Container | None = None
    try:
        with _signals_raise():
            try:
                container = client.containers.create(**_container_settings(image, name, user, options))
                if not container.put_archive(PAYLOAD_DIR, archive):
                    raise ServiceError(f"the Docker engine refused the collector payload for {image}")
                # Both before start: the container may exit (and the engine remove it) at once.
                waiter = _ExitWaiter(client, container.id, max(1.0, options.timeout - (time.monotonic() - started)))
                output = _Output(client.api.attach_socket(container.id, params={"stdout": 1, "stderr": 1, "stream": 1}))
                try:
                    container.start()
                except APIError as exc:
                    output.close()
                    waiter.close()
                    if _NO_EXECUTABLE.search(str(exc)) and "python3" in str(exc):
                        run.no_python = True
                        return run
                    if "permission denied" in str(exc).lower() and "python3" in str(exc):
                        run.permission_denied = True  # python3 is there, but not for this user
                        return run
                    if "could not select device driver" in str(exc):
                        raise InputError(
                            f"--gpus {options.gpus}: the Docker engine cannot give containers GPUs ({_short(exc)}). "
                            "Install the NVIDIA Container Toolkit where the engine runs, or run without --gpus "
                            "(GPU readings are then SKIP).", image) from exc
                    raise
                try:
                    status = waiter.result()
                except OSError as exc:  # requests' errors are OSErrors; a read timeout means the clock ran out
                    output.close()
                    if not _is_timeout(exc):
                        raise ServiceError(
                            f"lost the Docker engine ({_engine_where()}) while {image} ran: {_short(exc)}. The engine "
                            "removes the probe container when it comes back (or the next `envcheck container` run does)"
                        ) from exc
                    run.timed_out = True
                    with contextlib.suppress(DockerException):
                        container.kill()
                    return run
                run.exit_code = int(status.get("StatusCode", -1))
                output.finish(timeout=10.0)
                run.stdout, stderr = output.stdout(), output.stderr()
                run.stderr = stderr.decode("utf-8", "replace")
                run.facts["killed"] = run.exit_code == 137
                run.facts["memory"] = options.memory
                run.facts["stdout_truncated"] = output.truncated
            except APIError as exc:
                raise ServiceError(f"the Docker engine failed while running {image}: {_short(exc)}") from exc
            except (DockerException, OSError) as exc:
                raise ServiceError(f"the Docker engine ({_engine_where()}) failed while running {image}: {_short(exc)}") from exc
    finally:
        with _signals_held():
            _remove(client, container, name, NotFound)
        run.seconds = time.monotonic() - started
    _read_python_tag(run)
    return run


class _ExitWaiter:
    """The engine's answer to "wait until it is removed", asked before the container starts.

    The engine registers the wait, then sends the response headers at once (``stream=True`` returns on
    them) and the body, with the exit status, once the container is gone. Reading the body is bounded
    by ``timeout`` seconds of silence (requests' read timeout).
    """

    def __init__(self, client: DockerClient, container_id: str, timeout: float) -> None:
        api = client.api
        self._response = api._post(api._url("/containers/{0}/wait", container_id),
                                   params={"condition": "removed"}, stream=True, timeout=timeout)
        api._raise_for_status(self._response)

    def result(self) -> dict[str, Any]:
        try:
            body = self._response.content
        finally:
            self._response.close()
        try:
            data = json.loads(body or b"{}")
        except ValueError:
            data = {}
        return data if isinstance(data, dict) else {}

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._response.close()


class _Output:
    """The container's stdout and stderr, read by a thread from an attach socket, within bounds.

    The socket carries the engine's multiplexed stream (8-byte frame headers: stream id, size) and is
    read with plain blocking reads: the SDK's reader polls the file descriptor, which misses data that
    TLS has already decrypted and buffered, so over ``tcp://`` with TLS it stalls. Stdout beyond
    MAX_STDOUT is dropped (``truncated``); of stderr the last MAX_STDERR bytes are kept.
    """

    def __init__(self, sock: Any) -> None:
        self._sock = sock
        ends: tuple[Any, ...] = (sock, getattr(sock, "_sock", None))
        for end in ends:  # blocking: the collector may be quiet for minutes
            with contextlib.suppress(Exception):
                end.settimeout(None)
        self._out = bytearray()
        self._err = bytearray()
        self.truncated = False
        self._thread = threading.Thread(target=self._read, name="envcheck-probe-output", daemon=True)
        self._thread.start()

    def _recv(self) -> bytes:
        if hasattr(self._sock, "recv"):
            return bytes(self._sock.recv(1 << 16))
        return bytes(self._sock.read(1 << 16) or b"")  # socket.SocketIO (unix sockets, plain tcp)

    def _read(self) -> None:
        pending = bytearray()
        try:
            while chunk := self._recv():
                pending += chunk
                while len(pending) >= 8:
                    size = int.from_bytes(pending[4:8], "big")
                    if len(pending) < 8 + size:
                        break
                    self._keep(pending[0], pending[8:8 + size])
                    del pending[:8 + size]
        except Exception:  # the stream ends with the container, the engine or close()
            return

    def _keep(self, stream: int, data: bytes | bytearray) -> None:
        if stream == 1:
            room = MAX_STDOUT - len(self._out)
            self.truncated = self.truncated or len(data) > room
            self._out += data[:max(0, room)]
        elif stream == 2:
            self._err += data
            if len(self._err) > 2 * MAX_STDERR:
                del self._err[:-MAX_STDERR]

    def finish(self, timeout: float) -> None:
        """Wait for the stream to end (the container is gone), at most ``timeout`` seconds."""
        self._thread.join(timeout)
        self.close()

    def close(self) -> None:
        ends: tuple[Any, ...] = (getattr(self._sock, "_sock", None), self._sock)
        for end in ends:
            with contextlib.suppress(Exception):
                end.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(Exception):
            self._sock.close()

    def stdout(self) -> bytes:
        return bytes(self._out)

    def stderr(self) -> bytes:
        return bytes(self._err[-MAX_STDERR:])


def _engine_where() -> str:
    """The engine address for messages: DOCKER_HOST, else the context or local socket the SDK chose."""
    return os.environ.get("DOCKER_HOST") or "the current Docker context or local socket"


def _is_timeout(exc: Exception) -> bool:
    """A read timeout of ``wait``: requests raises ReadTimeout, or ConnectionError on a unix socket."""
    import requests

    if isinstance(exc, requests.exceptions.ReadTimeout):
        return True
    return isinstance(exc, requests.exceptions.ConnectionError) and "timed out" in str(exc).lower()


def _remove(client: DockerClient, container: Container | None, name: str, not_found: type[Exception]) -> None:
    """Remove the probe container and its volume, by object or, if create was interrupted, by name."""
    for _ in range(3):
        try:
            target = container if container is not None else client.containers.get(name)
            target.remove(force=True, v=True)
            return
        except not_found:
            return
        except Exception:  # the engine is busy removing it already (409), or a transient failure
            time.sleep(0.2)


def _read_python_tag(run: ProbeRun) -> None:
    for line in run.stderr.splitlines():
        if line.startswith(PYTHON_TAG):
            parts = line[len(PYTHON_TAG):].split(None, 1)
            if parts:
                run.python = parts[0]
            if len(parts) > 1:
                run.python_path = parts[1].strip()
            break


def _labels() -> dict[str, str]:
    """Labels that say which envcheck process, on which machine, owns a probe container."""
    return {LABEL: "1", f"{LABEL}.pid": str(os.getpid()), f"{LABEL}.host": socket.gethostname()}


def sweep_orphans(client: DockerClient) -> list[str]:
    """Remove probe containers whose envcheck process on this machine is gone (SIGKILL, power loss).

    Only containers labelled with this machine's host name and a process id that no longer exists are
    touched; containers of other machines sharing the engine, and of live processes, are left alone.
    """
    from docker.errors import DockerException

    removed: list[str] = []
    try:
        found = client.containers.list(
            all=True, filters={"label": [LABEL, f"{LABEL}.host={socket.gethostname()}"]})
    except DockerException:
        return removed
    for container in found:
        try:
            pid = int((container.labels or {}).get(f"{LABEL}.pid", ""))
        except ValueError:
            continue
        if pid == os.getpid() or _process_alive(pid):
            continue
        with contextlib.suppress(DockerException):
            container.remove(force=True, v=True)
            removed.append(str(container.name))
    return removed


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def leftover_containers(client: DockerClient) -> list[str]:
    """Names of probe containers this process started that still exist (for tests and diagnostics)."""
    # One call, no per-container inspect: a container the engine removes meanwhile (AutoRemove) is simply absent.
    found = client.api.containers(all=True, filters={"label": f"{LABEL}.pid={os.getpid()}"})
    return [str(c["Names"][0]).lstrip("/") for c in found if c.get("Names")]


# ------------------------------------------------------------------------------------- inventory


def read_container(image: str, options: ContainerOptions | None = None,
                   client: DockerClient | None = None) -> Inventory:
    """The inventory of ``image`` as its own python3 sees it, or a static look when it cannot run."""
    options = options or ContainerOptions()
    if client is None:
        own = engine_client()
        try:
            return read_container(image, options, own)
        finally:
            own.close()
    image_obj = ensure_image(client, image, options.pull)
    sweep_orphans(client)
    run = run_probe(client, image, options, image_obj)
    if run.permission_denied and options.user is None:
        # The image keeps its interpreter from other users (e.g. under a 0700 /root): non-root is not
        # possible here, so run as root; still no capabilities, no network, read-only, no-new-privileges.
        run = run_probe(client, image, dataclasses.replace(options, user="0:0"), image_obj)
    where = Location(image)
    if run.no_python or run.python_too_old:
        inventory = static_look(client, image, image_obj)
        why = (
            "has no python3 on its PATH"
            if run.no_python
            else f"has Python {run.python} ({run.python_path}); the collector needs Python "
            f"{MIN_PYTHON[0]}.{MIN_PYTHON[1]} or newer"
        )
        inventory.problems.insert(0, ReadProblem(
            f"image {image} {why}, so the live checks (torch, flash-attn, sonames, GPU) did not run; "
            f"a static look at its filesystem found {len(inventory.packages)} distributions and "
            f"{len(inventory.binaries)} ELF files",
            where,
        ))
    elif run.permission_denied:
        inventory = Inventory(context="installed", problems=[ReadProblem(
            f"user {run.user} may not run python3 in {image}; pass --user with a user that can", where)])
    elif run.timed_out:
        inventory = Inventory(context="installed", problems=[ReadProblem(
            f"the collector in {image} did not finish within {options.timeout:g} s; the container was killed "
            "(raise --timeout for images with very large site-packages)", where)])
    else:
        inventory = _inventory_from_output(image, run)
    inventory.context = "installed"
    if not options.gpus and (inventory.host.nvidia_smi or {}).get("status") == "not-run":
        inventory.host = replace(inventory.host, nvidia_smi=None)  # no GPU was given: the GPU lines say "not run" (SKIP), not "failed"
    inventory.images.append(_image_fact(image, image_obj))
    if not isinstance(inventory.host.container, dict) and (run.no_python or run.python_too_old):
        # the static look has no live container markers; the target is a container image all the same
        inventory.host = replace(inventory.host, container={"kind": "docker", "evidence": [f"{image} is a container image (static look)"]})
    inventory.host = replace(inventory.host, container_run={
        "image": image,
        "user": run.user,
        "gpus": run.gpus,
        "python": run.python,
        "python_path": run.python_path,
        "exit_code": run.exit_code,
        "seconds": round(run.seconds, 3),
        "hardened": {"network": "none", "read_only_rootfs": True, "cap_drop": "ALL", "no_new_privileges": True,
                     "memory": options.memory, "pids": options.pids},
    })
    return inventory


def _image_fact(image: str, image_obj: Any) -> BaseImage:
    attrs = image_obj.attrs or {}
    arch = attrs.get("Architecture")
    os_name = attrs.get("Os")
    platform = f"{os_name}/{arch}" + (f"/{attrs['Variant']}" if attrs.get("Variant") else "") if arch and os_name else None
    return BaseImage(ref=image, platform=platform, location=Location(image))


def _inventory_from_output(image: str, run: ProbeRun) -> Inventory:
    """Parse and validate the probe's JSON; anything wrong with it is a ReadProblem, never a crash."""
    text = run.stdout.decode("utf-8", "replace")
    tail = _stderr_tail(run.stderr)
    if run.facts.get("killed") and not text.strip():
        return Inventory(problems=[ReadProblem(
            f"the collector in {image} was killed (exit status 137): it ran out of memory under the container's "
            f"limit (raise --memory, now {run.facts.get('memory', '?')}) or was killed from outside envcheck",
            Location(image))])
    if run.facts.get("stdout_truncated"):
        return Inventory(problems=[ReadProblem(
            f"the collector in {image} printed more than {MAX_STDOUT >> 20} MiB; that is not a collector's result",
            Location(image, member="stdout", offset=MAX_STDOUT))])
    if not text.strip():
        return Inventory(problems=[ReadProblem(
            f"the collector in {image} exited with status {run.exit_code} and printed no result"
            + (f"; its last error output: {tail}" if tail else ""), Location(image, member="stdout"))])
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        # The collector prints its document as the last line; something in the image (a sitecustomize,
        # a noisy .pth file) may have printed before it. A last line that is a whole object is the result.
        last = text.rstrip().rsplit("\n", 1)[-1]
        with contextlib.suppress(json.JSONDecodeError):
            data = json.loads(last) if last.startswith("{") else None
            if isinstance(data, dict):
                return _validated(data, image, run, tail)
        return Inventory(problems=[ReadProblem(
            f"the collector in {image} printed a result that is not valid JSON ({exc.msg} at line {exc.lineno}, "
            f"column {exc.colno}); exit status {run.exit_code}" + (f"; its last error output: {tail}" if tail else ""),
            Location(image, member="stdout", line=exc.lineno, offset=exc.pos))])
    if not isinstance(data, dict):
        return Inventory(problems=[ReadProblem(
            f"the collector in {image} printed JSON of type {type(data).__name__}, not an object",
            Location(image, member="stdout", offset=0))])
    return _validated(data, image, run, tail)


def _validated(data: dict[str, Any], image: str, run: ProbeRun, tail: str) -> Inventory:
    from envcheck.sources.host import inventory_from_probe

    inventory: Inventory = inventory_from_probe(data, image)  # validates; bad fields become problems
    _relabel(inventory, image)
    if run.exit_code not in (0, None):
        inventory.problems.append(ReadProblem(
            f"the collector in {image} exited with status {run.exit_code}" + (f": {tail}" if tail else ""),
            Location(image)))
    return inventory


def _relabel(inventory: Inventory, image: str) -> None:
    """Paths inside the container become members of the image (``IMAGE!/usr/lib/...``), as in a static look."""

    def moved(location: Location | None) -> Location | None:
        if location is None or not location.path.startswith("/") or location.member:
            return location
        return dataclasses.replace(location, path=image, member=location.path)

    inventory.packages[:] = [dataclasses.replace(p, location=moved(p.location)) for p in inventory.packages]
    inventory.binaries[:] = [dataclasses.replace(b, location=moved(b.location)) for b in inventory.binaries]
    inventory.env[:] = [dataclasses.replace(e, location=moved(e.location)) for e in inventory.env]
    inventory.problems[:] = [dataclasses.replace(p, location=moved(p.location)) for p in inventory.problems]


def _stderr_tail(stderr: str, lines: int = 3) -> str:
    kept = [line for line in stderr.splitlines() if line.strip() and not line.startswith(PYTHON_TAG)]
    return " | ".join(kept[-lines:])[:500]


# ---------------------------------------------------------------------------------------- static look

_LIBRARY_NAME = re.compile(r"\.so(\.\d+)*$")
_SITE_DIRS = ("site-packages", "dist-packages")
_MAX_MEMBER = 1 << 30


def static_look(client: DockerClient, image: str, image_obj: Any = None) -> Inventory:
    """What the image filesystem shows without running it: installed distributions and ELF files.

    Exports a created (never started) container's filesystem as a tar stream and keeps only what the
    folder reader needs: ``*.dist-info/METADATA`` and ``RECORD`` in site-packages, ELF files there, and
    shared libraries (``*.so*``) elsewhere. The folder reader then reads them on the host exactly as it
    reads a local site-packages; paths and locations are relabelled to the image's own paths.
    """
    from docker.errors import DockerException, NotFound

    inventory = Inventory(context="installed")
    name = f"envcheck-export-{os.getpid()}-{secrets.token_hex(4)}"
    container: Container | None = None
    with tempfile.TemporaryDirectory(prefix="envcheck-export-") as scratch:
        root = Path(scratch) / "fs"
        root.mkdir()
        kept = 0
        try:
            with _signals_raise():
                container = client.containers.create(
                    image, name=name, entrypoint=["/nonexistent"], network_mode="none",
                    labels=_labels(),
                )
                kept = _extract_relevant(_ChunkReader(container.export(chunk_size=1 << 20)), root)
        except (DockerException, tarfile.TarError, OSError) as exc:
            inventory.problems.append(ReadProblem(
                f"could not export the filesystem of {image} for a static look: {_short(exc)}", Location(image)))
        finally:
            with _signals_held():
                _remove(client, container, name, NotFound)
        if kept:
            _read_exported(root, inventory, image)
    return inventory


class _ChunkReader(io.RawIOBase):
    """A file object over the SDK's chunk iterator, so tarfile can stream the export."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = iter(chunks)
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._pending:
            try:
                self._pending = next(self._chunks)
            except StopIteration:
                return 0
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size


def _extract_relevant(stream: io.RawIOBase, root: Path) -> int:
    """Copy the members the folder reader needs out of a filesystem tar stream; returns how many."""
    kept = 0
    with tarfile.open(fileobj=io.BufferedReader(stream, 1 << 20), mode="r|") as tar:
        for member in tar:
            if not member.isfile() or member.size > _MAX_MEMBER:
                continue
            path = PurePosixPath(member.name.lstrip("./").lstrip("/"))
            if ".." in path.parts or not path.parts:
                continue
            in_site = any(part in _SITE_DIRS for part in path.parts)
            # site-packages, and CUDA/NVIDIA library folders (/usr/local/cuda*/lib64, .../nvidia/...):
            # what the live collector reads too; the image's own libc and friends are not the question
            cuda_folder = any(part.startswith("cuda") or "nvidia" in part for part in path.parts[:-1])
            if not (in_site or cuda_folder):
                continue
            metadata = in_site and len(path.parts) >= 2 and path.parts[-2].endswith(".dist-info") \
                and path.name in ("METADATA", "RECORD")
            library = bool(_LIBRARY_NAME.search(path.name))
            if not (metadata or library or (in_site and member.size >= 64)):
                continue
            fh = tar.extractfile(member)
            if fh is None:
                continue
            head = fh.read(8)
            if not metadata and not head.startswith((b"\x7fELF", b"!<arch>\n")):
                continue
            local = root.joinpath(*path.parts)
            local.parent.mkdir(parents=True, exist_ok=True)
            with local.open("wb") as out:
                out.write(head)
                while chunk := fh.read(1 << 20):
                    out.write(chunk)
            kept += 1
    return kept


def _read_exported(root: Path, inventory: Inventory, image: str) -> None:
    """Read the extracted tree with the folder reader and relabel paths to the image's own."""
    try:
        from envcheck.sources import ReadOptions, module_for

        found = module_for("folder").read(root, ReadOptions(kind="folder", use_cache=False))
    except (ImportError, UsageError) as exc:
        inventory.problems.append(ReadProblem(
            f"the files exported from {image} were not read: the folder reader is not available ({exc})",
            Location(image)))
        return
    prefix = str(root)

    def inside(path: str) -> str:
        return "/" + path[len(prefix):].lstrip("/") if path.startswith(prefix) else path

    def relocate(location: Location | None) -> Location:
        if location is None:
            return Location(image)
        return dataclasses.replace(location, path=image, member=inside(location.path))

    for package in found.packages:
        inventory.packages.append(dataclasses.replace(package, location=relocate(package.location)))
    for binary in found.binaries:
        inventory.binaries.append(dataclasses.replace(
            binary, path=inside(binary.path), location=Location(image, member=inside(binary.path))))
    for problem in found.problems:
        inventory.problems.append(dataclasses.replace(problem, location=relocate(problem.location)))


# ---------------------------------------------------------------------------------------------- target


def container_target(image: str, **opts: Any) -> Target:
    """An engine target that checks ``image`` by running the collector inside it.

    Keyword options are :class:`ContainerOptions` fields (gpus, timeout, user, pull, memory, pids, ...).
    """
    from envcheck.engine import Target

    known = set(ContainerOptions.__dataclass_fields__)
    unknown = sorted(set(opts) - known)
    if unknown:
        raise UsageError(f"unknown container option(s): {', '.join(unknown)}")
    options = ContainerOptions(**{k: v for k, v in opts.items() if v is not None})
    if options.pull not in PULL_POLICIES:
        raise UsageError(f"pull must be one of {', '.join(PULL_POLICIES)}, not {options.pull!r}")
    _device_requests(options.gpus)  # a malformed --gpus is a usage error before anything starts
    return Target(name=image, kind=KIND, read=lambda: read_container(image, options))

