"""Registry credentials (the command line, then the Docker config as the Docker CLI reads it) and the
``WWW-Authenticate`` challenge flow (Bearer tokens and Basic)."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from envcheck.config import env
from envcheck.errors import ServiceError, UsageError

HUB_CONFIG_KEY = "https://index.docker.io/v1/"
_HUB_ALIASES = ("docker.io", "index.docker.io", "registry-1.docker.io", HUB_CONFIG_KEY)
_PARAM = re.compile(r'\s*([A-Za-z][\w-]*)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,"]*))\s*,?')


@dataclass(frozen=True)
class Credentials:
    """A user name and secret; ``identity_token`` is an OAuth refresh token from ``docker login``."""

    username: str = ""
    password: str = ""
    identity_token: str = ""
    origin: str = ""  # where they came from, for messages: --username, config auths, helper name

    def basic_header(self) -> str:
        raw = f"{self.username}:{self.password}".encode()
        return "Basic " + base64.b64encode(raw).decode()


@dataclass(frozen=True)
class Challenge:
    scheme: str  # bearer | basic (lower case)
    params: dict[str, str] = field(default_factory=dict)


def parse_challenge(header: str) -> Challenge | None:
    """The first challenge of a ``WWW-Authenticate`` header; None when it has no scheme."""
    header = header.strip()
    match = re.match(r"([A-Za-z][\w-]*)\s*", header)
    if not match:
        return None
    scheme = match.group(1).lower()
    params: dict[str, str] = {}
    rest = header[match.end() :]
    pos = 0
    while pos < len(rest):
        param = _PARAM.match(rest, pos)
        if not param or param.end() == pos:
            break
        value = param.group(2) if param.group(2) is not None else param.group(3)
        params[param.group(1).lower()] = re.sub(r"\\(.)", r"\1", value or "")
        pos = param.end()
    return Challenge(scheme, params)


def docker_config_dir() -> Path:
    folder = env("DOCKER_CONFIG")
    return Path(folder) if folder else Path.home() / ".docker"


def _config_keys(registry: str) -> list[str]:
    if registry in _HUB_ALIASES:
        return [HUB_CONFIG_KEY, "docker.io", "index.docker.io", "registry-1.docker.io"]
    return [registry, f"https://{registry}", f"http://{registry}", f"https://{registry}/v1/", f"https://{registry}/v2/"]


def run_credential_helper(helper: str, server: str, timeout: float = 30) -> Credentials | None:
    program = f"docker-credential-{helper}"
    try:
        done = subprocess.run([program, "get"], input=server, capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError:
        raise UsageError(f"the Docker config names credential helper {helper!r}, but {program} is not on PATH") from None
    except subprocess.TimeoutExpired:
        raise ServiceError(f"{program} did not answer within {timeout:.0f} s") from None
    if done.returncode != 0:
        text = (done.stdout + done.stderr).strip()
        if "credentials not found" in text.lower():
            return None
        raise ServiceError(f"{program} get failed for {server}: {text or 'exit code ' + str(done.returncode)}")
    try:
        data = json.loads(done.stdout)
        username, secret = str(data.get("Username", "")), str(data.get("Secret", ""))
    except (ValueError, AttributeError):
        raise ServiceError(f"{program} get printed something that is not the helper protocol's JSON") from None
    if username == "<token>":  # the helper protocol's marker for an identity (refresh) token
        return Credentials(identity_token=secret, origin=program)
    return Credentials(username, secret, origin=program)


def credentials_from_docker_config(registry: str, config_dir: Path | None = None) -> Credentials | None:
    path = (config_dir or docker_config_dir()) / "config.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read Docker config {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise UsageError(f"Docker config {path} is not a JSON object")
    keys = _config_keys(registry)
    helpers = data.get("credHelpers") or {}
    for key in keys:
        if isinstance(helpers, dict) and key in helpers:
            return run_credential_helper(str(helpers[key]), key)
    auths = data.get("auths") or {}
    store = data.get("credsStore")
    if store:
        for key in keys:
            found = run_credential_helper(str(store), key)
            if found is not None:
                return found
    for key in keys:
        entry = auths.get(key) if isinstance(auths, dict) else None
        if not isinstance(entry, dict):
            continue
        if entry.get("identitytoken"):
            return Credentials(identity_token=str(entry["identitytoken"]), origin=f"{path} auths")
        if entry.get("auth"):
            try:
                username, _, password = base64.b64decode(str(entry["auth"]), validate=True).decode().partition(":")
            except ValueError:  # binascii.Error, non-ASCII text, bad UTF-8
                raise UsageError(f"Docker config {path}: auths[{key!r}].auth is not base64 of user:password") from None
            return Credentials(username, password, origin=f"{path} auths")
        if entry.get("username"):
            return Credentials(str(entry["username"]), str(entry.get("password", "")), origin=f"{path} auths")
    return None


def token_url(challenge: Challenge, scope: str) -> str:
    """The token URL for ``scope``: nvcr.io's realm carries its own scope (``pull,push``), replaced so that
    anonymous pulls are not refused for push."""
    realm = challenge.params.get("realm", "")
    try:
        parts = urlsplit(realm)
        parts.port  # noqa: B018  (raises ValueError for a bad port)
    except ValueError:
        raise ServiceError(f"registry sent a Bearer challenge with an unusable realm {realm!r}") from None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ServiceError(f"registry sent a Bearer challenge with an unusable realm {realm!r}")
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "scope"]
    if challenge.params.get("service") and not any(k == "service" for k, _ in query):
        query.append(("service", challenge.params["service"]))
    query.append(("scope", scope))
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(query), ""))


@dataclass
class TokenCache:
    """Bearer tokens by (realm, service, scope) until shortly before they expire."""
    tokens: dict[tuple[str, str, str], tuple[str, float]] = field(default_factory=dict)

    def get(self, key: tuple[str, str, str]) -> str | None:
        token, until = self.tokens.get(key, ("", 0.0))
        return token if until > time.monotonic() else None

    def put(self, key: tuple[str, str, str], token: str, expires_in: float) -> None:
        # Refresh 10 % early.
        self.tokens[key] = (token, time.monotonic() + max(expires_in, 1) * 0.9)
