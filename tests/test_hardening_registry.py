"""Issue 13, registry: hostile answers end in bounded time and memory, as a service error (exit code 3).

Each test puts a fault-injecting proxy (registry_fixtures.FaultProxy) in front of the real loopback
registry and runs the real command line through tests/bounded.py, which measures the child's CPU time,
wall time and peak RSS: a Retry-After far beyond the deadline, retries that would outlive it, gzip
answers (error bodies, tokens, manifests, redirect bodies) that inflate to 1 GiB, and broken chunked
bodies. The bars are the issue's (10 s, 300 MB).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from bounded import BoundedRun, run_envcheck_bounded
from conftest import REPO
from registry_fixtures import Fault, FaultProxy, Images, gzip_bomb
from test_hardening_services import Proxy, asks, findings, service_error, via

pytestmark = pytest.mark.registry
GZIP = {"Content-Encoding": "gzip"}


def bounded_check(ref: str, *args: str, cache: Path) -> tuple[int | None, dict[str, Any], BoundedRun]:
    """`envcheck image REF -f json` within the issue's bars: (exit code, report, the measured run)."""
    run = run_envcheck_bounded("image", ref, "-f", "json", "--no-progress", *args, env={"ENVCHECK_CACHE_DIR": str(cache)})
    run.assert_within(seconds=10, rss_mb=300)
    assert "Traceback" not in run.stdout + run.stderr, run.stderr
    report: dict[str, Any] = json.loads(run.stdout)
    jsonschema.validate(report, json.loads((REPO / "envcheck" / "formats" / "report.schema.json").read_text()))
    return run.returncode, report, run


# ---- retries and waits stay inside the deadline ------------------------------------------------------------------

@pytest.mark.parametrize(("status", "retry_after"), [
    (429, "99999"),
    (503, "Fri, 31 Dec 2100 23:59:59 GMT"),
    (429, "inf"),
])
def test_retry_after_past_the_deadline_ends_at_once(registry_images: Images, fault_proxy: Proxy, image_cache: Path,
                                                    status: int, retry_after: str) -> None:
    proxy = fault_proxy(Fault(r"/manifests/", "status", times=-1, status=status, headers={"Retry-After": retry_after}))
    code, report, _ = bounded_check(via(proxy, registry_images.single_arm64), cache=image_cache)
    assert code == 3
    message = service_error(report, proxy.host)
    assert f"HTTP {status}" in message and "Retry-After" in message and "--http-timeout" in message
    assert asks(proxy, "/manifests/") == 1  # no wait, no second try: the answer was "not before the deadline"


def test_retries_and_waits_share_the_http_timeout(registry_images: Images, fault_proxy: Proxy, image_cache: Path) -> None:
    """Four retries a second apart would take 4 s; --http-timeout 2 bounds the whole request, waits included."""
    proxy = fault_proxy(Fault(r"/manifests/", "status", times=-1, status=429, headers={"Retry-After": "1"}))
    code, report, _ = bounded_check(via(proxy, registry_images.single_arm64), "--http-timeout", "2", cache=image_cache)
    assert code == 3
    message = service_error(report, proxy.host)
    assert "past the 2 s deadline" in message and "HTTP 429" in message
    assert asks(proxy, "/manifests/") <= 3  # each wait is a full second, so at most two of them fit in 2 s


def test_retry_after_within_the_deadline_is_honoured(registry_images: Images, fault_proxy: Proxy, image_cache: Path) -> None:
    proxy = fault_proxy(Fault(r"/manifests/", "status", times=2, status=429, headers={"Retry-After": "0"}))
    code, report, _ = bounded_check(via(proxy, registry_images.single_arm64), cache=image_cache)
    assert code == 0, findings(report)
    assert asks(proxy, "/manifests/") == 3


# ---- every body read whole has a limit on its decoded size --------------------------------------------------------

def test_gzip_error_body_inflating_to_a_gib(registry_images: Images, fault_proxy: Proxy, image_cache: Path) -> None:
    proxy = fault_proxy(Fault(r"/manifests/", "status", times=-1, status=404, headers=GZIP, body=gzip_bomb()))
    code, report, _ = bounded_check(via(proxy, registry_images.single_arm64), cache=image_cache)
    assert code == 3
    assert "not found (HTTP 404)" in service_error(report, proxy.host)  # the detail is dropped, the answer kept


def test_gzip_token_inflating_to_a_gib(registry_images: Images, fault_proxy: Proxy, image_cache: Path) -> None:
    proxy = fault_proxy(Fault(r"/manifests/", "status", times=-1, status=401,
                              headers={"WWW-Authenticate": 'Bearer realm="http://{proxy}/token",service="x"'}),
                        Fault(r"^/token", "status", times=-1, status=200, headers=GZIP, body=gzip_bomb()))
    code, report, _ = bounded_check(via(proxy, registry_images.single_arm64), cache=image_cache)
    assert code == 3
    message = service_error(report, proxy.host)
    assert "token" in message and "larger than 1 MiB (counted after decompression)" in message
    assert asks(proxy, "/token") == 1


@pytest.mark.parametrize(("body", "said"), [
    (json.dumps({"token": "t" * 80_000}).encode(), "cannot be sent back"),  # under the answer's limit, too big for a header
    (json.dumps({"token": "abc\r\nX-Injected: 1"}).encode(), "cannot be sent back"),
    (b'{"token": "t", "expires_in": ' + b"9" * 4000 + b"}", "JSON of a token"),  # float() overflows
    (b"[" * 5_000 + b"]" * 5_000, "JSON of a token"),  # nested past the parser's recursion limit
], ids=["huge-token", "newline-in-token", "huge-expiry", "deep-nesting"])
def test_a_hostile_token_answer_is_a_service_error(registry_images: Images, fault_proxy: Proxy, image_cache: Path,
                                                   body: bytes, said: str) -> None:
    """Whatever the token server answers with HTTP 200, the run ends in a clean service error (exit 3)."""
    proxy = fault_proxy(Fault(r"/manifests/", "status", times=-1, status=401,
                              headers={"WWW-Authenticate": 'Bearer realm="http://{proxy}/token",service="x"'}),
                        Fault(r"^/token", "status", times=-1, status=200, headers={"Content-Type": "application/json"}, body=body))
    code, report, run = bounded_check(via(proxy, registry_images.single_arm64), cache=image_cache)
    assert code == 3 and "internal error" not in run.stderr, run.describe()
    message = service_error(report, proxy.host)
    assert "token" in message and said in message, message


def test_gzip_manifest_inflating_to_a_gib(registry_images: Images, fault_proxy: Proxy, image_cache: Path) -> None:
    proxy = fault_proxy(Fault(r"/manifests/", "status", times=-1, status=200, headers=GZIP, body=gzip_bomb()))
    code, report, _ = bounded_check(via(proxy, registry_images.single_arm64), cache=image_cache)
    assert code == 3
    assert "larger than 4 MiB (counted after decompression)" in service_error(report, proxy.host)


def test_gzip_manifest_is_decoded(registry_images: Images, fault_proxy: Proxy, image_cache: Path) -> None:
    """The other side of the limit: a registry (or a CDN) that gzips a real manifest is read as usual."""
    import gzip

    import requests

    repo, tag = registry_images.single_arm64.split("/", 1)[1].rsplit(":", 1)
    accept = "application/vnd.oci.image.manifest.v1+json"
    raw = requests.get(f"http://{registry_images.host}/v2/{repo}/manifests/{tag}", headers={"Accept": accept}, timeout=10).content
    proxy = fault_proxy(Fault(r"/manifests/", "status", times=-1, status=200, body=gzip.compress(raw),
                              headers={**GZIP, "Content-Type": accept}))
    code, report, _ = bounded_check(via(proxy, registry_images.single_arm64), cache=image_cache)
    assert code == 0, findings(report)
    assert report["targets"][0]["inventory"]["host"]["image"]["architecture"] == "arm64"


def test_redirect_whose_body_inflates_to_a_gib(registry_images: Images, fault_proxy: Proxy, image_cache: Path) -> None:
    """requests reads a redirect's body before following it: envcheck reads at most 64 KiB of it, raw."""
    repo, tag = registry_images.single_arm64.split("/", 1)[1].rsplit(":", 1)
    bomb = gzip_bomb()
    answer = (f"HTTP/1.1 302 Found\r\nLocation: http://{registry_images.host}/v2/{repo}/manifests/{tag}\r\n"
              f"Content-Encoding: gzip\r\nContent-Length: {len(bomb)}\r\n\r\n").encode() + bomb
    proxy = fault_proxy(Fault(r"/manifests/", "raw", times=-1, body=answer))
    code, report, _ = bounded_check(via(proxy, registry_images.single_arm64), cache=image_cache)
    assert code == 0, findings(report)


# ---- a broken answer from the registry is the registry's fault (exit 3), not the input's ---------------------------

@pytest.mark.parametrize(("status", "words"), [("404 Not Found", "not found (HTTP 404)"),
                                               ("200 OK", "connection broke while reading")])
def test_malformed_chunked_body(registry_images: Images, fault_proxy: Proxy, image_cache: Path, status: str, words: str) -> None:
    answer = (f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
              "zz-not-a-chunk-size\r\n{}\r\n").encode()
    proxy: FaultProxy = fault_proxy(Fault(r"/manifests/", "raw", times=-1, body=answer))
    code, report, _ = bounded_check(via(proxy, registry_images.single_arm64), cache=image_cache)
    assert code == 3
    assert words in service_error(report, proxy.host)


# ---- a layer stream is held to its descriptor's size ----------------------------------------------------------

def test_layer_longer_than_its_manifest_says(registry_images: Images, fault_proxy: Proxy, image_cache: Path) -> None:
    """Reading stops one byte past the size the manifest gives, before the digest could even be checked."""
    from test_hardening_services import manifest_of

    layer = manifest_of(registry_images, "lab/deep", "clean")["layers"][0]
    proxy = fault_proxy(Fault(layer["digest"], "rewrite", times=-1, body=bytes(layer["size"] + (8 << 20))))
    code, report, _ = bounded_check(via(proxy, registry_images.deep_clean), "--deep", "--platform", "linux/amd64",
                                    cache=image_cache)
    assert code == 3
    message = service_error(report, proxy.host)
    assert f"layer {layer['digest'][:19]}: more than the {layer['size']} bytes the manifest says" in message
