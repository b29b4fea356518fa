"""HTTPS registries and where their credentials may go (issue 13, "Credentials").

Real registries (Debian's docker-registry) serve HTTPS under ``*.envcheck.test`` names with a throwaway
CA, behind a loopback CONNECT proxy that maps those names to loopback ports (registry_fixtures.
TlsRegistries): envcheck reaches them the way it reaches a private registry through a corporate proxy,
trusting the CA through ``REQUESTS_CA_BUNDLE``. A registry's 401 may name a token server on another
host; envcheck sends the credentials there as docker does, but never in clear text from an HTTPS
registry: a plain-HTTP realm is refused before any request is made (loopback excepted).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import run_envcheck
from registry_fixtures import PASSWORD, USER, TlsRegistries

pytestmark = pytest.mark.registry


def check(ref: str, env: dict[str, str], *, login: bool = True, cache: Any) -> tuple[int, dict[str, Any]]:
    """`envcheck image REF -f json` (with alice's password on stdin when ``login``): (exit code, report)."""
    args = ["--username", USER, "--password-stdin"] if login else []
    done = run_envcheck("image", ref, "-f", "json", "--no-progress", *args, input=PASSWORD if login else None,
                        env={"ENVCHECK_CACHE_DIR": str(cache), **env}, timeout=60)
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    assert PASSWORD not in done.stdout + done.stderr
    return done.returncode, json.loads(done.stdout)


def service_error(report: dict[str, Any]) -> str:
    (finding,) = [f for t in report["targets"] for f in t["findings"] if f["rule"] == "service-error"]
    assert "\n" not in finding["message"]
    return str(finding["message"])


def test_https_registry_with_a_private_ca_and_an_https_token_server(tls_registries: TlsRegistries, image_cache: Any) -> None:
    asked = len(tls_registries.token.requests)
    code, report = check(tls_registries.image, tls_registries.env(), cache=image_cache)
    assert code == 0, report
    assert report["targets"][0]["inventory"]["host"]["image"]["architecture"] == "arm64"
    assert any(line.startswith("CONNECT auth.envcheck.test:443 ") for line in tls_registries.proxy.seen)
    new = tls_registries.token.requests[asked:]
    assert new and all(q.get("scope") == ["repository:private/app:pull"] for q in new)


def test_without_the_ca_it_is_a_tls_error(tls_registries: TlsRegistries, image_cache: Any) -> None:
    env = {k: v for k, v in tls_registries.env().items() if k != "REQUESTS_CA_BUNDLE"}
    env["REQUESTS_CA_BUNDLE"] = ""  # requests' default bundle (certifi), which does not hold the test CA
    code, report = check(tls_registries.image, env, cache=image_cache)
    assert code == 3
    message = service_error(report)
    assert "TLS error" in message and "registry.envcheck.test" in message and "REQUESTS_CA_BUNDLE" in message


@pytest.mark.parametrize("login", [True, False])
def test_plain_http_realm_of_an_https_registry_is_refused(tls_registries: TlsRegistries, image_cache: Any, login: bool) -> None:
    seen = len(tls_registries.proxy.seen)
    code, report = check(tls_registries.downgrade, tls_registries.env(), login=login, cache=image_cache)
    assert code == 3
    message = service_error(report)
    assert "downgrade.envcheck.test is reached over HTTPS" in message
    assert "plain-HTTP token server (http://auth.envcheck.test)" in message and "--insecure-registry" in message
    # nothing went to the realm: through HTTP_PROXY a plain request would be a "GET http://auth..." line
    assert [line for line in tls_registries.proxy.seen[seen:] if "auth.envcheck.test" in line] == []


def test_plain_http_realm_on_loopback_is_allowed(tls_registries: TlsRegistries, image_cache: Any) -> None:
    """Loopback never leaves the machine: an HTTPS registry may name a token server on 127.0.0.1."""
    code, report = check(tls_registries.loopback_realm, tls_registries.env(), cache=image_cache)
    assert code == 0, report
    assert report["targets"][0]["inventory"]["host"]["image"]["architecture"] == "arm64"
