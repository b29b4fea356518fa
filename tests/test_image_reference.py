"""Image references, WWW-Authenticate challenges, token URLs and Docker config credentials (no network)."""

from __future__ import annotations

import base64
import json
import os
import stat
from pathlib import Path

import pytest

from envcheck.errors import ServiceError, UsageError
from envcheck.inspect.image_reference import parse_reference
from envcheck.services.registry.auth import (
    Challenge,
    credentials_from_docker_config,
    parse_challenge,
    token_url,
)
from envcheck.services.registry.client import RegistryClient
from envcheck.services.registry.platforms import platform_matches


@pytest.mark.parametrize(("text", "registry", "repository", "tag", "digest"), [
    ("ubuntu", "docker.io", "library/ubuntu", "latest", None),
    ("ubuntu:24.04", "docker.io", "library/ubuntu", "24.04", None),
    ("pytorch/pytorch:2.9.0-cuda13.0-cudnn9-runtime", "docker.io", "pytorch/pytorch", "2.9.0-cuda13.0-cudnn9-runtime", None),
    ("docker.io/library/python:3.12", "docker.io", "library/python", "3.12", None),
    ("index.docker.io/vllm/vllm-openai", "docker.io", "vllm/vllm-openai", "latest", None),
    ("nvcr.io/nvidia/pytorch:25.11-py3", "nvcr.io", "nvidia/pytorch", "25.11-py3", None),
    ("nvcr.io/nvidia/tensorrt-llm/release:1.2.0rc6", "nvcr.io", "nvidia/tensorrt-llm/release", "1.2.0rc6", None),
    ("localhost/app", "localhost", "app", "latest", None),
    ("localhost:5000/lab/x:1", "localhost:5000", "lab/x", "1", None),
    ("127.0.0.1:5000/lab/x", "127.0.0.1:5000", "lab/x", "latest", None),
    ("[::1]:5000/lab/x:v2", "[::1]:5000", "lab/x", "v2", None),
    ("ubuntu@sha256:" + "a" * 64, "docker.io", "library/ubuntu", None, "sha256:" + "a" * 64),
    ("nvcr.io/nvidia/pytorch:25.11-py3@sha256:" + "b" * 64, "nvcr.io", "nvidia/pytorch", "25.11-py3", "sha256:" + "b" * 64),
    ("docker://nvcr.io/nvidia/cuda:13.0.1-devel-ubuntu24.04", "nvcr.io", "nvidia/cuda", "13.0.1-devel-ubuntu24.04", None),
    ("my_org/my-app__x", "docker.io", "my_org/my-app__x", "latest", None),
])
def test_references_parse_as_docker_does(text: str, registry: str, repository: str, tag: str | None, digest: str | None) -> None:
    ref = parse_reference(text)
    assert (ref.registry, ref.repository, ref.tag, ref.digest) == (registry, repository, tag, digest)
    assert ref.reference == (digest or tag)


def test_docker_hub_is_served_by_registry_1() -> None:
    assert parse_reference("ubuntu").api_host == "registry-1.docker.io"
    assert parse_reference("nvcr.io/nvidia/pytorch:25.11-py3").api_host == "nvcr.io"


@pytest.mark.parametrize("text", [
    "", "Ubuntu", "nvcr.io/NVIDIA/pytorch:1", "ubuntu:", "ubuntu:bad tag", "ubuntu@sha256:abc",
    "ubuntu@sha256:" + "A" * 64, "lab//x", "lab/x-", "-lab/x", "ubuntu:" + "x" * 129,
])
def test_bad_references_are_usage_errors(text: str) -> None:
    with pytest.raises(UsageError):
        parse_reference(text)


def test_https_by_default_plain_http_only_for_loopback_and_named_hosts() -> None:
    assert RegistryClient(parse_reference("nvcr.io/nvidia/pytorch:25.11-py3")).base == "https://nvcr.io/v2/"
    assert RegistryClient(parse_reference("ubuntu")).base == "https://registry-1.docker.io/v2/"
    assert RegistryClient(parse_reference("registry.lab:5000/x")).base == "https://registry.lab:5000/v2/"
    assert RegistryClient(parse_reference("registry.lab:5000/x"), insecure=["registry.lab:5000"]).base == "http://registry.lab:5000/v2/"
    assert RegistryClient(parse_reference("registry.lab:5000/x"), insecure=["registry.lab"]).base == "http://registry.lab:5000/v2/"
    assert RegistryClient(parse_reference("other.lab:5000/x"), insecure=["registry.lab"]).base.startswith("https://")
    assert RegistryClient(parse_reference("127.0.0.1:5000/x")).base == "http://127.0.0.1:5000/v2/"
    assert RegistryClient(parse_reference("localhost:5000/x")).base == "http://localhost:5000/v2/"
    assert RegistryClient(parse_reference("[::1]:5000/x")).base == "http://[::1]:5000/v2/"
    assert RegistryClient(parse_reference("127.example.com/x")).base.startswith("https://")


def test_challenges_parse_with_and_without_service() -> None:
    docker = parse_challenge('Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/ubuntu:pull"')
    assert docker == Challenge("bearer", {"realm": "https://auth.docker.io/token", "service": "registry.docker.io",
                                          "scope": "repository:library/ubuntu:pull"})
    nvcr = parse_challenge('Bearer realm="https://nvcr.io/proxy_auth?scope=repository:nvidia/pytorch:pull,push"')
    assert nvcr is not None and nvcr.params == {"realm": "https://nvcr.io/proxy_auth?scope=repository:nvidia/pytorch:pull,push"}
    basic = parse_challenge('Basic realm="test-realm"')
    assert basic == Challenge("basic", {"realm": "test-realm"})
    error = parse_challenge('Bearer realm="r",error="invalid_token", error_description="a \\"quoted\\" text"')
    assert error is not None and error.params["error_description"] == 'a "quoted" text'
    assert parse_challenge("") is None


def test_token_url_replaces_an_embedded_scope_and_keeps_service() -> None:
    nvcr = Challenge("bearer", {"realm": "https://nvcr.io/proxy_auth?scope=repository:nvidia/pytorch:pull,push"})
    assert token_url(nvcr, "repository:nvidia/pytorch:pull") == "https://nvcr.io/proxy_auth?scope=repository%3Anvidia%2Fpytorch%3Apull"
    hub = Challenge("bearer", {"realm": "https://auth.docker.io/token", "service": "registry.docker.io"})
    assert token_url(hub, "repository:library/ubuntu:pull") == (
        "https://auth.docker.io/token?service=registry.docker.io&scope=repository%3Alibrary%2Fubuntu%3Apull")
    with pytest.raises(ServiceError):
        token_url(Challenge("bearer", {"realm": "not a url"}), "x")


@pytest.mark.parametrize(("wanted", "offered", "match"), [
    ("linux/arm64", "linux/arm64", True), ("linux/arm64", "linux/arm64/v8", True),
    ("linux/arm64/v8", "linux/arm64", True), ("linux/arm64", "linux/amd64", False),
    ("linux/arm/v7", "linux/arm/v6", False), ("linux/arm64", "windows/arm64", False),
])
def test_platform_matching(wanted: str, offered: str, match: bool) -> None:
    assert platform_matches(wanted, offered) is match


def _config(folder: Path, data: dict[str, object]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(data))
    return folder


def test_docker_config_auths(tmp_path: Path) -> None:
    auth = base64.b64encode(b"alice:s3cret:with:colons").decode()
    folder = _config(tmp_path / "d", {"auths": {"127.0.0.1:5000": {"auth": auth}, "https://index.docker.io/v1/": {"auth": base64.b64encode(b"hub:pw").decode()}}})
    creds = credentials_from_docker_config("127.0.0.1:5000", folder)
    assert creds is not None and (creds.username, creds.password) == ("alice", "s3cret:with:colons")
    hub = credentials_from_docker_config("docker.io", folder)
    assert hub is not None and (hub.username, hub.password) == ("hub", "pw")
    assert credentials_from_docker_config("nvcr.io", folder) is None
    assert credentials_from_docker_config("nvcr.io", tmp_path / "missing") is None
    broken = _config(tmp_path / "b", {"auths": {"nvcr.io": {"auth": "%%%"}}})
    with pytest.raises(UsageError):
        credentials_from_docker_config("nvcr.io", broken)
    (tmp_path / "j").mkdir()
    (tmp_path / "j" / "config.json").write_text("{not json")
    with pytest.raises(UsageError):
        credentials_from_docker_config("nvcr.io", tmp_path / "j")


HELPER = """#!/bin/sh
# A docker-credential helper speaking the real protocol: `get` reads the server URL on stdin.
[ "$1" = get ] || exit 1
read server
case "$server" in
  nvcr.io) printf '{"ServerURL":"nvcr.io","Username":"$oauthtoken","Secret":"nvapi-key"}\\n' ;;
  token.lab) printf '{"ServerURL":"token.lab","Username":"<token>","Secret":"refresh-me"}\\n' ;;
  *) echo "credentials not found in native keychain"; exit 1 ;;
esac
"""


@pytest.fixture
def helper_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    helper = bin_dir / "docker-credential-envtest"
    helper.write_text(HELPER)
    helper.chmod(helper.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return bin_dir


def test_credential_helpers_through_the_helper_protocol(tmp_path: Path, helper_path: Path) -> None:
    store = _config(tmp_path / "store", {"credsStore": "envtest"})
    creds = credentials_from_docker_config("nvcr.io", store)
    assert creds is not None and (creds.username, creds.password) == ("$oauthtoken", "nvapi-key")
    assert creds.origin == "docker-credential-envtest"
    token = credentials_from_docker_config("token.lab", store)
    assert token is not None and token.identity_token == "refresh-me" and not token.username
    assert credentials_from_docker_config("elsewhere.lab", store) is None
    per_host = _config(tmp_path / "per", {"credHelpers": {"nvcr.io": "envtest"}, "auths": {"nvcr.io": {"auth": base64.b64encode(b"x:y").decode()}}})
    found = credentials_from_docker_config("nvcr.io", per_host)
    assert found is not None and found.password == "nvapi-key"  # credHelpers win over auths, as in the Docker CLI
    missing = _config(tmp_path / "missing", {"credHelpers": {"nvcr.io": "nosuchhelper"}})
    with pytest.raises(UsageError, match="docker-credential-nosuchhelper"):
        credentials_from_docker_config("nvcr.io", missing)
