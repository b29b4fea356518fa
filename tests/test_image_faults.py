"""Faults between envcheck and a registry: each is a clear ERROR with exit code 3, never a traceback.

A fault-injecting proxy on loopback sits in front of the real registry (registry_fixtures.FaultProxy).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import requests
from registry_fixtures import Fault, FaultProxy, Images, refusing_port
from test_image_registry import check, findings, image_facts

pytestmark = pytest.mark.registry


def via(proxy: FaultProxy, ref: str) -> str:
    """``ref`` with its registry host replaced by the proxy's."""
    return proxy.host + "/" + ref.split("/", 1)[1]


def service_error(report: dict[str, Any]) -> str:
    (finding,) = findings(report, "service-error")
    assert finding["status"] == "ERROR" and finding["gotcha"] == "ENVCHECK"
    return str(finding["message"])


def layer_digests(images: Images, repo: str, tag: str) -> list[str]:
    accept = "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json"
    body = requests.get(f"http://{images.host}/v2/{repo}/manifests/{tag}", headers={"Accept": accept}, timeout=10).json()
    return [layer["digest"] for layer in body["layers"]]


def config_digest(images: Images, repo: str, tag: str) -> str:
    accept = "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json"
    body = requests.get(f"http://{images.host}/v2/{repo}/manifests/{tag}", headers={"Accept": accept}, timeout=10).json()
    return str(body["config"]["digest"])


def test_connection_refused(image_cache: Path) -> None:
    with refusing_port() as port:
        code, report, _ = check(f"127.0.0.1:{port}/lab/x:1", cache=image_cache)
    assert code == 3
    message = service_error(report)
    assert "could not be reached" in message and "connection refused" in message


@pytest.mark.parametrize(("status", "words"), [(401, "needs authentication"), (403, "denied (HTTP 403)"), (404, "not found (HTTP 404)")])
def test_refusals(registry_images: Images, fault_proxy, image_cache: Path, status: int, words: str) -> None:  # type: ignore[no-untyped-def]
    proxy = fault_proxy(Fault(r"/manifests/", "status", times=-1, status=status))
    code, report, _ = check(via(proxy, registry_images.single_arm64), cache=image_cache)
    assert code == 3
    assert words in service_error(report)


def test_429_then_success_honours_retry_after(registry_images: Images, fault_proxy, image_cache: Path) -> None:  # type: ignore[no-untyped-def]
    proxy = fault_proxy(Fault(r"/manifests/", "status", times=1, status=429, headers={"Retry-After": "1"}))
    code, report, _ = check(via(proxy, registry_images.single_arm64), cache=image_cache)
    assert code == 0, findings(report)
    manifest_asks = [p for m, p in proxy.seen if "/manifests/" in p]
    assert len(manifest_asks) == 2
    assert image_facts(report)["requests"] == 3


def test_500_then_success(registry_images: Images, fault_proxy, image_cache: Path) -> None:  # type: ignore[no-untyped-def]
    proxy = fault_proxy(Fault(r"/blobs/", "status", times=2, status=500), Fault(r"/manifests/", "status", times=1, status=503))
    code, report, _ = check(via(proxy, registry_images.single_arm64), cache=image_cache)
    assert code == 0, findings(report)
    assert image_facts(report)["requests"] == 5


def test_persistent_500_gives_up(registry_images: Images, fault_proxy, image_cache: Path) -> None:  # type: ignore[no-untyped-def]
    proxy = fault_proxy(Fault(r"/manifests/", "status", times=-1, status=502, headers={"Retry-After": "0"}))
    code, report, _ = check(via(proxy, registry_images.single_arm64), cache=image_cache)
    assert code == 3
    assert "HTTP 502" in service_error(report)
    assert len(proxy.seen) == 5  # the first try and four retries


def test_config_whose_digest_does_not_match(registry_images: Images, fault_proxy, image_cache: Path) -> None:  # type: ignore[no-untyped-def]
    proxy = fault_proxy(Fault(r"/blobs/", "corrupt", times=-1))
    code, report, _ = check(via(proxy, registry_images.single_arm64), cache=image_cache)
    assert code == 3
    assert "does not match its digest" in service_error(report)
    assert not (image_cache / "blobs").exists() or not any((image_cache / "blobs").rglob("*"))  # nothing bad was cached
    assert not findings(report, "ARCH-image-config")


def test_manifest_whose_digest_does_not_match(registry_images: Images, fault_proxy, image_cache: Path) -> None:  # type: ignore[no-untyped-def]
    digest = registry_images.digests["ngc_arm64_child"]
    proxy = fault_proxy(Fault(digest, "corrupt", times=-1))
    code, report, _ = check(via(proxy, registry_images.ngc_arm64), cache=image_cache)
    assert code == 3
    assert f"expected {digest}" in service_error(report)


def test_layer_whose_digest_does_not_match(registry_images: Images, fault_proxy, image_cache: Path) -> None:  # type: ignore[no-untyped-def]
    layers = layer_digests(registry_images, "lab/deep", "clean")
    proxy = fault_proxy(Fault(layers[0], "corrupt", times=-1))
    code, report, _ = check(via(proxy, registry_images.deep_clean), "--deep", "--platform", "linux/amd64", cache=image_cache)
    assert code == 3
    assert "does not match its digest" in service_error(report)
    assert not report["targets"][0]["inventory"].get("packages")
    assert not list(image_cache.glob("deep-*"))


def test_stream_cut_in_the_middle_of_a_layer(registry_images: Images, fault_proxy, image_cache: Path) -> None:  # type: ignore[no-untyped-def]
    layers = layer_digests(registry_images, "lab/deep", "clean")
    proxy = fault_proxy(Fault(layers[0], "cut", times=-1))
    code, report, _ = check(via(proxy, registry_images.deep_clean), "--deep", "--platform", "linux/amd64", cache=image_cache)
    assert code == 3
    message = service_error(report)
    assert "connection broke" in message or "ended after" in message


def test_stream_cut_in_the_middle_of_the_config(registry_images: Images, fault_proxy, image_cache: Path) -> None:  # type: ignore[no-untyped-def]
    digest = config_digest(registry_images, "lab/single", "arm64")
    proxy = fault_proxy(Fault(digest, "cut", times=-1))
    code, report, _ = check(via(proxy, registry_images.single_arm64), cache=image_cache)
    assert code == 3
    message = service_error(report)
    assert "connection broke" in message or "ended after" in message


def test_manifest_that_is_not_json(registry_images: Images, fault_proxy, image_cache: Path) -> None:  # type: ignore[no-untyped-def]
    proxy = fault_proxy(Fault(r"/manifests/", "not-json", times=-1))
    code, report, _ = check(via(proxy, registry_images.single_arm64), cache=image_cache)
    assert code == 3
    assert "is not JSON" in service_error(report)


def test_index_refused_when_accept_lacks_its_type(registry_images: Images, fault_proxy, image_cache: Path) -> None:  # type: ignore[no-untyped-def]
    """A proxy that narrows Accept makes distribution 2.8 answer 404 'OCI index found': ask for the index alone."""
    proxy = fault_proxy(Fault(r"/manifests/25\.10-py3$", "accept-docker-only", times=-1))
    code, report, _ = check(via(proxy, registry_images.ngc_arm64), cache=image_cache)
    assert code == 0, findings(report)
    assert image_facts(report)["platforms"] == ["linux/amd64", "linux/arm64"]


def test_one_unreachable_image_does_not_stop_the_others(registry_images: Images, image_cache: Path) -> None:
    from conftest import run_envcheck

    with refusing_port() as port:
        done = run_envcheck("-f", "json", "image", f"127.0.0.1:{port}/lab/x:1", env={"ENVCHECK_CACHE_DIR": str(image_cache)})
    assert done.returncode == 3 and "Traceback" not in done.stderr
    json.loads(done.stdout)
