"""The Docker engine ``docker`` would use (DOCKER_HOST, else the current context, else the local socket), and
images on it. Failing to reach it is a ServiceError; an image that does not exist an InputError."""

from __future__ import annotations

import hashlib
import json
import shutil
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envcheck.config import env
from envcheck.errors import EnvcheckError, InputError, ServiceError, UsageError, missing_extra

if TYPE_CHECKING:
    from docker import DockerClient

PULL_POLICIES = ("missing", "always", "never")


def engine_client(timeout: float = 60.0) -> DockerClient:
    """A Docker SDK client for the engine the environment names; ServiceError when it does not answer."""
    try:
        from docker.errors import DockerException
    except ImportError as exc:  # pragma: no cover - docker is a declared dependency
        raise ServiceError(f"the Docker SDK is not installed ({exc}); pip install docker") from exc
    docker_host = env("DOCKER_HOST")
    where = docker_host or "unix:///var/run/docker.sock (DOCKER_HOST is not set)"
    try:
        if docker_host:
            client = _engine_client_class().from_env(timeout=int(timeout), use_ssh_client=_use_ssh_binary(docker_host))
        else:
            host, tls = _context_endpoint()
            if host is None:
                client = _engine_client_class().from_env(timeout=int(timeout))
            else:
                where = host
                client = _engine_client_class()(base_url=host, tls=tls or False, timeout=int(timeout),
                                                use_ssh_client=_use_ssh_binary(host))
        client.ping()
    except EnvcheckError:  # already said (a missing extra, a refused context)
        raise
    except DockerException as exc:
        raise ServiceError(
            f"cannot reach the Docker engine at {where}: {short_error(exc)}. Start the engine or set DOCKER_HOST "
            "(unix://, tcp:// with DOCKER_TLS_VERIFY/DOCKER_CERT_PATH, or ssh://HOST)."
        ) from exc
    except Exception as exc:  # requests/paramiko/socket errors surface unwrapped from ping()
        raise ServiceError(f"cannot reach the Docker engine at {where}: {type(exc).__name__}: {short_error(exc)}") from exc
    return client


@lru_cache(maxsize=1)
def _engine_client_class() -> type[DockerClient]:
    """``docker.DockerClient`` that trusts the engine's CA even with ``REQUESTS_CA_BUNDLE``/``CURL_CA_BUNDLE``
    set (common behind corporate proxies): requests would otherwise replace the session's ``verify`` with
    them."""
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
    """For ``ssh://``, the ``ssh`` client when installed, as the Docker CLI does (so ~/.ssh/config, agents and
    ProxyJump behave as for ``docker -H``); else paramiko, which the SDK imports for ``ssh://`` either way."""
    if not host.startswith("ssh://"):
        return False
    try:
        import paramiko  # noqa: F401
    except ImportError:
        raise missing_extra(f"DOCKER_HOST={host}", "paramiko (the Docker SDK's ssh:// transport)", "ssh") from None
    return shutil.which("ssh") is not None


def _context_endpoint() -> tuple[str | None, Any]:
    """Host and TLS settings of ``DOCKER_CONTEXT`` or the CLI's current context (None: the default), read from
    the CLI's own store: the SDK's reader ignores contexts when no ``config.json`` exists."""
    config_dir = Path(env("DOCKER_CONFIG") or Path.home() / ".docker")
    name = env("DOCKER_CONTEXT")
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
        raise ServiceError(f"cannot read Docker context {name!r} from {meta_path}: {short_error(exc)}") from exc
    tls_dir = config_dir / "contexts" / "tls" / context_id / "docker"
    if not tls_dir.is_dir():
        return host, None
    from docker.tls import TLSConfig
    cert, key, ca = tls_dir / "cert.pem", tls_dir / "key.pem", tls_dir / "ca.pem"
    return host, TLSConfig(client_cert=(str(cert), str(key)) if cert.is_file() and key.is_file() else None,
                           ca_cert=str(ca) if ca.is_file() else None,
                           verify=not endpoint.get("SkipTLSVerify", False))


def short_error(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 300 else text[:297] + "..."


def ensure_image(client: DockerClient, image: str, pull: str) -> Any:
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
            raise ServiceError(f"the Docker engine failed to look up {image}: {short_error(exc)}") from exc
    try:
        return client.images.pull(image)
    except ImageNotFound as exc:
        raise InputError(f"image {image} was not found: {short_error(exc)}", image) from exc
    except APIError as exc:
        text = str(exc).lower()
        if any(word in text for word in ("not found", "manifest unknown", "does not exist", "repository name must")):
            raise InputError(f"image {image} could not be pulled: {short_error(exc)}", image) from exc
        raise ServiceError(f"pulling {image} failed: {short_error(exc)}") from exc


def engine_is_local(client: DockerClient) -> bool:
    """True for a unix socket (the SDK's base URL ``http+docker://localhost``)."""
    return str(getattr(client.api, "base_url", "")).startswith("http+docker://localhost")


def engine_where() -> str:
    return env("DOCKER_HOST") or "the current Docker context or local socket"
