"""Image references parsed the way Docker parses them (``distribution/reference`` normalisation): ``ubuntu``
is ``docker.io/library/ubuntu:latest``; with a tag and a digest, the digest wins for fetching."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from envcheck.errors import UsageError

DEFAULT_REGISTRY = "docker.io"
DOCKER_HUB_API_HOST = "registry-1.docker.io"  # where docker.io's distribution API actually lives
_LEGACY_HUB_HOSTS = ("index.docker.io", "registry-1.docker.io", "registry.hub.docker.com")

_COMPONENT = re.compile(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*\Z")
_TAG = re.compile(r"[\w][\w.-]{0,127}\Z")
_DIGEST = re.compile(r"[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,}\Z")
_SHA256 = re.compile(r"sha256:[a-f0-9]{64}\Z")
_HOST = re.compile(r"(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*|\[[0-9a-fA-F:.]+\])(?::[0-9]+)?\Z")


@dataclass(frozen=True)
class Reference:
    registry: str  # as the user names it: docker.io, nvcr.io, 127.0.0.1:5000
    repository: str  # nvidia/pytorch, library/ubuntu
    tag: str | None = None
    digest: str | None = None

    @property
    def api_host(self) -> str:
        """The host that serves the distribution API (docker.io is served by registry-1.docker.io)."""
        return DOCKER_HUB_API_HOST if self.registry == DEFAULT_REGISTRY else self.registry

    @property
    def hostname(self) -> str:
        """The registry host without its port or IPv6 brackets."""
        host = self.registry
        if host.startswith("["):
            return host[1 : host.index("]")]
        return host.rsplit(":", 1)[0] if ":" in host else host

    @property
    def is_loopback(self) -> bool:
        """Docker treats loopback registries as insecure by default."""
        return is_loopback_host(self.hostname)

    @property
    def reference(self) -> str:
        """What to ask the registry for: the digest when there is one, else the tag."""
        return self.digest or self.tag or "latest"

    def __str__(self) -> str:
        tag, digest = f":{self.tag}" if self.tag else "", f"@{self.digest}" if self.digest else ""
        return f"{self.registry}/{self.repository}{tag}{digest}"


def parse_reference(text: str) -> Reference:
    """Parse ``text`` as ``docker pull`` would; raise UsageError naming the bad part."""
    original = text
    text = text.strip()
    if text.startswith("docker://"):
        text = text[len("docker://") :].lstrip("/")
    if not text:
        raise UsageError("empty image reference")
    digest = None
    if "@" in text:
        text, digest = text.split("@", 1)
        if not _DIGEST.match(digest):
            raise UsageError(f"image reference {original!r}: invalid digest {digest!r} (expected sha256:<64 hex digits>)")
        if digest.startswith("sha256:") and not _SHA256.match(digest):
            raise UsageError(f"image reference {original!r}: a sha256 digest has 64 lowercase hex digits")
    tag = None
    colon = text.rfind(":")
    if colon > text.rfind("/"):
        text, tag = text[:colon], text[colon + 1 :]
        if not _TAG.match(tag):
            raise UsageError(f"image reference {original!r}: invalid tag {tag!r}")
    first, _, rest = text.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost" or first.startswith("[")):
        registry, path = first, rest
        if not _HOST.match(registry):
            raise UsageError(f"image reference {original!r}: invalid registry host {registry!r}")
    else:
        registry, path = DEFAULT_REGISTRY, text
    if registry in _LEGACY_HUB_HOSTS:
        registry = DEFAULT_REGISTRY
    if registry == DEFAULT_REGISTRY and "/" not in path:
        path = f"library/{path}"
    for component in path.split("/"):
        if not _COMPONENT.match(component):
            hint = " (repository names are lowercase)" if component.lower() != component else ""
            raise UsageError(f"image reference {original!r}: invalid repository name component {component!r}{hint}")
    if len(path) > 255:
        raise UsageError(f"image reference {original!r}: repository name longer than 255 characters")
    if tag is None and digest is None:
        tag = "latest"
    return Reference(registry=registry, repository=path, tag=tag, digest=digest)


def is_loopback_host(hostname: str) -> bool:
    """True for ``localhost``, 127.0.0.0/8 and ``::1`` (a host name without port or brackets)."""
    if hostname.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(hostname).is_loopback
    except ValueError:
        return False
