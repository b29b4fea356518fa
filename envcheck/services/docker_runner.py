"""Run envcheck's collector in a hardened probe container (copied into a fresh volume: the image is never
modified), always removed afterwards, its output bounded; ``exported_filesystem`` streams a created, never
started container's filesystem."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import re
import secrets
import signal
import socket
import tarfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envcheck.errors import InputError, ServiceError, UsageError
from envcheck.services.docker_engine import engine_is_local, engine_where, short_error
from envcheck.services.registry.inflate import ChunkReader

if TYPE_CHECKING:
    from docker import DockerClient
    from docker.models.containers import Container

PROBE_MODULE = "envcheck.collect.probe"
PAYLOAD_DIR = "/.envcheck-probe"  # a path no image has, so the fresh volume starts empty
MIN_PYTHON = (3, 10)
PYTHON_TAG = "envcheck-python:"  # the bootstrap's first stderr line: version and interpreter path
TOO_OLD_EXIT = 90  # the bootstrap's exit status when the interpreter is older than MIN_PYTHON
NOBODY = "65534:65534"
LABEL = "io.envcheck.probe"
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


def payload_folders() -> tuple[Path, ...]:
    """envcheck, packaging and a pure-Python TOML reader: Python 3.10 images have no ``tomllib``, so the
    standard library's travels as ``tomli`` (an installed tomli travels only when it is not compiled)."""
    import packaging

    import envcheck
    folders = (Path(envcheck.__file__).parent, Path(packaging.__file__).parent)
    with contextlib.suppress(ImportError):
        import tomllib
        return (*folders, Path(tomllib.__file__).parent)
    with contextlib.suppress(ImportError):
        import tomli
        if not any(Path(tomli.__file__).parent.glob("*.so")):
            return (*folders, Path(tomli.__file__).parent)
    return folders


@lru_cache(maxsize=8)
def payload_archive(folders: tuple[Path, ...], compress: bool = False) -> bytes:
    """A root-owned, read-only tar of ``folders`` (never ``*.dist-info``: the collector must not see
    envcheck's packaging as installed in the image); gzip pays only for a remote engine."""
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


@contextlib.contextmanager
def signals_raise() -> Iterator[None]:
    """SIGTERM raises SystemExit(143) while a container exists, so ``finally`` blocks still remove it
    (main thread only: only it can install handlers)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
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


def device_requests(gpus: str | None) -> list[Any]:
    if not gpus:
        return []
    from docker.types import DeviceRequest
    value = gpus.strip().removeprefix("device=")
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
    environment = {"PYTHONDONTWRITEBYTECODE": "1", "HOME": "/tmp", "ENVCHECK_IN_CONTAINER": "1",
                   "ENVCHECK_GPUS": options.gpus or "", **dict(options.environment)}
    if not options.gpus:
        # NGC images set NVIDIA_VISIBLE_DEVICES=all; with the nvidia runtime as the engine's default
        # that alone would hand the container every GPU. No --gpus means no GPU.
        environment["NVIDIA_VISIBLE_DEVICES"] = "void"
    alarm = max(1, int(options.timeout) + 5)
    return {
        "image": image, "name": name, "user": user, "working_dir": "/tmp", "environment": environment,
        "auto_remove": True,  # the engine removes it on exit, also after a restart that found it stopped
        "entrypoint": ["python3"],
        "command": ["-c", BOOTSTRAP, str(alarm), options.probe_module, *collector_args(options)],
        "network_mode": "none", "read_only": True, "cap_drop": ["ALL"], "security_opt": ["no-new-privileges"],
        "tmpfs": {"/tmp": f"rw,nosuid,nodev,noexec,size={options.tmpfs_size}"},
        "volumes": [PAYLOAD_DIR],  # an anonymous volume: fresh, removed with the container
        "mem_limit": options.memory, "memswap_limit": options.memory, "pids_limit": options.pids,
        "ipc_mode": "private", "labels": probe_labels(), "device_requests": device_requests(options.gpus),
        "log_config": LogConfig(type="json-file", config={"max-size": "8m", "max-file": "1"}),
        "stdin_open": False, "tty": False,
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
    """Run the probe container for ``image`` (at most ``options.timeout``) and remove it: in ``finally``, with
    signals held, by a known name so that even an interrupted ``create`` is cleaned up."""
    from docker.errors import APIError, DockerException, NotFound
    options = options or ContainerOptions()
    if image_obj is None:
        image_obj = client.images.get(image)
    name = f"envcheck-probe-{os.getpid()}-{secrets.token_hex(4)}"
    user = _choose_user(image_obj, options.user)
    run = ProbeRun(image=image, container_name=name, user=user, gpus=options.gpus)
    folders = options.payload if options.payload is not None else payload_folders()
    archive = payload_archive(tuple(folders), compress=not engine_is_local(client))
    started = time.monotonic()
    container: Container | None = None
    try:
        with signals_raise():
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
                            f"--gpus {options.gpus}: the Docker engine cannot give containers GPUs ({short_error(exc)}). "
                            "Install the NVIDIA Container Toolkit where the engine runs, or run without --gpus "
                            "(GPU readings are then SKIP).", image) from exc
                    raise
                try:
                    status = waiter.result()
                except OSError as exc:  # requests' errors are OSErrors; a read timeout means the clock ran out
                    output.close()
                    if not _is_timeout(exc):
                        raise ServiceError(
                            f"lost the Docker engine ({engine_where()}) while {image} ran: {short_error(exc)}. The engine "
                            "removes the probe container when it comes back (or the next `envcheck container` run does)"
                        ) from exc
                    run.timed_out = True
                    with contextlib.suppress(DockerException):
                        container.kill()
                    return run
                run.exit_code = int(status.get("StatusCode", -1))
                output.finish(timeout=10.0)
                run.stdout, run.stderr = output.stdout(), output.stderr().decode("utf-8", "replace")
                run.facts.update(killed=run.exit_code == 137, memory=options.memory,
                                 stdout_truncated=output.truncated)
            except APIError as exc:
                raise ServiceError(f"the Docker engine failed while running {image}: {short_error(exc)}") from exc
            except (DockerException, OSError) as exc:
                raise ServiceError(f"the Docker engine ({engine_where()}) failed while running {image}: "
                                   f"{short_error(exc)}") from exc
    finally:
        with signals_held():
            remove_container(client, container, name, NotFound)
        run.seconds = time.monotonic() - started
    _read_python_tag(run)
    return run


class _ExitWaiter:
    """The engine's answer to "wait until it is removed", asked before the container starts: headers at once,
    the body (the exit status) once it is gone, read within ``timeout`` seconds of silence."""

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
    """The container's multiplexed stdout/stderr, read by a thread with plain blocking reads (the SDK's reader
    polls the descriptor and stalls on data TLS has already buffered); stdout past MAX_STDOUT is dropped
    (``truncated``), of stderr the last MAX_STDERR bytes are kept."""

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


def _is_timeout(exc: Exception) -> bool:
    """A read timeout of ``wait``: requests raises ReadTimeout, or ConnectionError on a unix socket."""
    import requests
    return isinstance(exc, requests.exceptions.ReadTimeout) or (
        isinstance(exc, requests.exceptions.ConnectionError) and "timed out" in str(exc).lower())


def remove_container(client: DockerClient, container: Container | None, name: str, not_found: type[Exception]) -> None:
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
    tag = next((line for line in run.stderr.splitlines() if line.startswith(PYTHON_TAG)), PYTHON_TAG)
    parts = tag[len(PYTHON_TAG):].split(None, 1)
    if parts:
        run.python = parts[0]
    if len(parts) > 1:
        run.python_path = parts[1].strip()


def probe_labels() -> dict[str, str]:
    return {LABEL: "1", f"{LABEL}.pid": str(os.getpid()), f"{LABEL}.host": socket.gethostname()}


def sweep_orphans(client: DockerClient) -> list[str]:
    """Remove probe containers whose envcheck process on this machine is gone (SIGKILL, power loss); those of
    other machines sharing the engine, and of live processes, stay."""
    from docker.errors import DockerException
    removed: list[str] = []
    try:
        here = f"{LABEL}.host={socket.gethostname()}"
        found = client.containers.list(all=True, filters={"label": [LABEL, here]})
    except DockerException:
        return removed
    for container in found:
        try:
            pid = int((container.labels or {}).get(f"{LABEL}.pid", ""))
        except ValueError:
            continue
        if pid == os.getpid():
            continue
        try:
            os.kill(pid, 0)
        except ProcessLookupError:  # its process is gone
            with contextlib.suppress(DockerException):
                container.remove(force=True, v=True)
                removed.append(str(container.name))
        except PermissionError:  # alive, another user's
            pass
    return removed


def leftover_containers(client: DockerClient) -> list[str]:
    found = client.api.containers(all=True, filters={"label": f"{LABEL}.pid={os.getpid()}"})
    return [str(c["Names"][0]).lstrip("/") for c in found if c.get("Names")]


@contextlib.contextmanager
def exported_filesystem(client: DockerClient, image: str) -> Iterator[io.RawIOBase]:
    """The filesystem of a created, never started container of ``image`` (no network, an entrypoint that does
    not exist), as a tar stream; the container is removed afterwards."""
    from docker.errors import DockerException, NotFound
    name = f"envcheck-export-{os.getpid()}-{secrets.token_hex(4)}"
    container: Container | None = None
    try:
        with signals_raise():
            try:
                container = client.containers.create(image, name=name, entrypoint=["/nonexistent"],
                                                     network_mode="none", labels=probe_labels())
                yield ChunkReader(container.export(chunk_size=1 << 20))
            except DockerException as exc:
                raise ServiceError(short_error(exc)) from exc
    finally:
        with signals_held():
            remove_container(client, container, name, NotFound)
