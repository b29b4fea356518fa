"""Registry authentication against real registries on loopback: htpasswd Basic auth and token auth."""

from __future__ import annotations

import base64
import json
import os
import stat
from pathlib import Path

import pytest
from conftest import run_envcheck
from registry_fixtures import PASSWORD, REFRESH_TOKEN, USER, AuthRegistry, Fault
from test_image_registry import check, findings, image_facts

pytestmark = pytest.mark.registry


@pytest.fixture
def no_docker_config(tmp_path: Path) -> dict[str, str]:
    """An empty DOCKER_CONFIG, so the user's own ~/.docker never leaks into a test."""
    folder = tmp_path / "docker-config"
    folder.mkdir()
    return {"DOCKER_CONFIG": str(folder)}


def test_basic_auth_with_password_stdin(basic_registry: AuthRegistry, image_cache: Path, no_docker_config: dict[str, str]) -> None:
    code, report, _ = check(basic_registry.image, "--username", USER, "--password-stdin", cache=image_cache,
                            env=no_docker_config, input=PASSWORD + "\n")
    assert code == 0, findings(report)
    assert image_facts(report)["architecture"] == "arm64"


def test_basic_auth_wrong_password(basic_registry: AuthRegistry, image_cache: Path, no_docker_config: dict[str, str]) -> None:
    code, report, _ = check(basic_registry.image, "--username", USER, "--password-stdin", cache=image_cache,
                            env=no_docker_config, input="wrong\n")
    assert code == 3
    (finding,) = findings(report, "service-error")
    assert "rejected the credentials" in finding["message"] and "401" in finding["message"]


def test_basic_auth_without_credentials(basic_registry: AuthRegistry, image_cache: Path, no_docker_config: dict[str, str]) -> None:
    code, report, _ = check(basic_registry.image, cache=image_cache, env=no_docker_config)
    assert code == 3
    (finding,) = findings(report, "service-error")
    assert "requires a login" in finding["message"] and "docker login" in finding["message"]


def test_basic_auth_from_docker_config(basic_registry: AuthRegistry, image_cache: Path, tmp_path: Path) -> None:
    folder = tmp_path / "dc"
    folder.mkdir()
    auth = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    (folder / "config.json").write_text(json.dumps({"auths": {basic_registry.host: {"auth": auth}}}))
    code, report, _ = check(basic_registry.image, cache=image_cache, env={"DOCKER_CONFIG": str(folder)})
    assert code == 0, findings(report)


def test_token_auth_with_password(token_registry: AuthRegistry, image_cache: Path, no_docker_config: dict[str, str]) -> None:
    assert token_registry.token is not None
    before = len(token_registry.token.requests)
    code, report, _ = check(token_registry.image, "--username", USER, "--password-stdin", cache=image_cache,
                            env=no_docker_config, input=PASSWORD)
    assert code == 0, findings(report)
    asked = token_registry.token.requests[before:]
    # one token for the repository's pull scope, reused for the manifest and the config blob
    assert [q["scope"] for q in asked] == [["repository:private/app:pull"]]
    assert asked[0]["service"] == ["test-registry"]


def test_token_auth_wrong_password(token_registry: AuthRegistry, image_cache: Path, no_docker_config: dict[str, str]) -> None:
    code, report, _ = check(token_registry.image, "--username", USER, "--password-stdin", cache=image_cache,
                            env=no_docker_config, input="wrong")
    assert code == 3
    (finding,) = findings(report, "service-error")
    assert "token server" in finding["message"] and "refused" in finding["message"] and "--username/--password-stdin" in finding["message"]


def test_anonymous_token_for_a_public_repository(token_registry: AuthRegistry, image_cache: Path, no_docker_config: dict[str, str]) -> None:
    code, report, _ = check(token_registry.public_image, cache=image_cache, env=no_docker_config)
    assert code == 0, findings(report)


def test_anonymous_token_for_a_private_repository(token_registry: AuthRegistry, image_cache: Path, no_docker_config: dict[str, str]) -> None:
    code, report, _ = check(token_registry.image, cache=image_cache, env=no_docker_config)
    assert code == 3
    (finding,) = findings(report, "service-error")
    assert "needs authentication" in finding["message"]


def test_nvcr_style_challenge_without_service(token_registry: AuthRegistry, fault_proxy, image_cache: Path,  # type: ignore[no-untyped-def]
                                              no_docker_config: dict[str, str]) -> None:
    """nvcr.io sends `Bearer realm="...?scope=repository:R:pull,push"` with no service: ask for pull only."""
    assert token_registry.token is not None
    proxy = fault_proxy(Fault(r"^/v2/", "nvcr-challenge", times=-1), upstream=token_registry.host)
    before = len(token_registry.token.requests)
    code, report, _ = check(f"{proxy.host}/public/app:1.0", cache=image_cache, env=no_docker_config)
    assert code == 0, findings(report)
    asked = token_registry.token.requests[before:]
    assert asked and all(q["scope"] == ["repository:public/app:pull"] and "service" not in q for q in asked)


def test_credential_helper_supplies_the_login(token_registry: AuthRegistry, image_cache: Path, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    helper = bin_dir / "docker-credential-envtest"
    helper.write_text(f"""#!/bin/sh
[ "$1" = get ] || exit 1
read server
[ "$server" = "{token_registry.host}" ] && printf '{{"ServerURL":"%s","Username":"{USER}","Secret":"{PASSWORD}"}}' "$server" && exit 0
echo "credentials not found in native keychain"; exit 1
""")
    helper.chmod(helper.stat().st_mode | stat.S_IEXEC)
    folder = tmp_path / "dc"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"credHelpers": {token_registry.host: "envtest"}}))
    env = {"DOCKER_CONFIG": str(folder), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    code, report, _ = check(token_registry.image, cache=image_cache, env=env)
    assert code == 0, findings(report)


def test_password_options_are_checked(registry_images, image_cache: Path) -> None:  # type: ignore[no-untyped-def]
    done = run_envcheck("image", registry_images.single_arm64, "--password-stdin", input="x")
    assert done.returncode == 2 and "--password-stdin needs --username" in done.stderr
    done = run_envcheck("image", registry_images.single_arm64, "--username", "alice")
    assert done.returncode == 2 and "--password-stdin" in done.stderr


def test_identity_token_from_docker_config(token_registry: AuthRegistry, image_cache: Path, tmp_path: Path) -> None:
    """`docker login` against an OAuth registry stores an identity (refresh) token: envcheck POSTs it."""
    assert token_registry.token is not None
    folder = tmp_path / "dc"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"auths": {token_registry.host: {"identitytoken": REFRESH_TOKEN}}}))
    before = len(token_registry.token.requests)
    code, report, _ = check(token_registry.image, cache=image_cache, env={"DOCKER_CONFIG": str(folder)})
    assert code == 0, findings(report)
    asked = token_registry.token.requests[before:]
    assert [(q["method"], q["grant_type"], q["scope"]) for q in asked] == [(["POST"], ["refresh_token"], ["repository:private/app:pull"])]
    (folder / "config.json").write_text(json.dumps({"auths": {token_registry.host: {"identitytoken": "expired"}}}))
    code, report, _ = check(token_registry.image, cache=image_cache, env={"DOCKER_CONFIG": str(folder)})
    assert code == 3 and "refused" in findings(report, "service-error")[0]["message"]
