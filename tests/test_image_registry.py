"""`envcheck image` against a real registry on loopback: media types, platforms, config-level findings, cache."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import requests
from conftest import REPO, run_envcheck
from registry_fixtures import Fault, Images

pytestmark = pytest.mark.registry


def check(ref: str, *args: str, cache: Path, env: dict[str, str] | None = None, input: str | None = None) -> tuple[int, dict[str, Any], str]:
    """Run `envcheck image REF -f json`; (exit code, report, stderr)."""
    done = run_envcheck("image", ref, "-f", "json", "--no-progress", *args, env={"ENVCHECK_CACHE_DIR": str(cache), **(env or {})}, input=input)
    assert "Traceback" not in done.stderr + done.stdout
    report = json.loads(done.stdout) if done.stdout.strip() else {}
    if report:
        jsonschema.validate(report, _schema())  # every image report is a valid envcheck JSON report
    return done.returncode, report, done.stderr


@functools.lru_cache(maxsize=1)
def _schema() -> dict[str, Any]:
    return json.loads((REPO / "envcheck" / "formats" / "report.schema.json").read_text())  # type: ignore[no-any-return]


def findings(report: dict[str, Any], rule: str | None = None) -> list[dict[str, Any]]:
    found = [f for t in report.get("targets", []) for f in t["findings"]]
    return [f for f in found if rule is None or f["rule"] == rule]


def image_facts(report: dict[str, Any]) -> dict[str, Any]:
    return report["targets"][0]["inventory"]["host"]["image"]  # type: ignore[no-any-return]


def test_ngc_like_cuda13_index_is_clean(registry_images: Images, image_cache: Path) -> None:
    code, report, _ = check(registry_images.ngc_arm64, cache=image_cache)
    assert code == 0
    facts = image_facts(report)
    assert facts["platforms"] == ["linux/amd64", "linux/arm64"]
    assert facts["media_type"] == "application/vnd.oci.image.index.v1+json"
    assert facts["digest"] == registry_images.digests["ngc_arm64"]
    assert facts["manifest_digest"] == registry_images.digests["ngc_arm64_child"]
    assert facts["architecture"] == "arm64"
    assert facts["labels"]["com.nvidia.pytorch.version"] == "2.9.0a0+145a3a7"
    assert [f["status"] for f in findings(report, "G1-image-cuda")] == ["PASS"]
    assert [f["status"] for f in findings(report, "ARCH-image-config")] == ["PASS"]
    assert not [f for f in findings(report) if f["status"] in ("FAIL", "ERROR", "WARN")]
    env = {e["name"]: e["value"] for e in report["targets"][0]["inventory"]["env"] if e.get("origin") == "config"}
    assert env["CUDA_VERSION"] == "13.0.2.006" and env["NVIDIA_PYTORCH_VERSION"] == "25.10"
    assert env["TORCH_CUDA_ARCH_LIST"] == "8.0 8.6 9.0 10.0 11.0 12.0+PTX"
    assert any("flash_attn" in line for line in facts["history"])
    # index + child manifest + config: three registry requests, no layers
    assert facts["requests"] == 3


def test_index_without_arm64_fails_and_lists_platforms(registry_images: Images, image_cache: Path) -> None:
    code, report, _ = check(registry_images.amd64_only, cache=image_cache)
    assert code == 1
    (finding,) = findings(report, "ARCH-image-no-arm64")
    assert finding["status"] == "FAIL"
    assert "linux/amd64, linux/ppc64le" in finding["message"]
    assert finding["evidence"]["platforms"] == ["linux/amd64", "linux/ppc64le"]
    assert image_facts(report)["platform_found"] is False


def test_platform_option_selects_another_child(registry_images: Images, image_cache: Path) -> None:
    code, report, _ = check(registry_images.amd64_only, "--platform", "linux/amd64", cache=image_cache)
    assert code == 0, findings(report)
    assert image_facts(report)["architecture"] == "amd64"
    assert not findings(report, "ARCH-image-no-arm64")


def test_docker_manifest_list_with_arm64_v8(registry_images: Images, image_cache: Path) -> None:
    code, report, _ = check(registry_images.docker_list, cache=image_cache)
    assert code == 0
    facts = image_facts(report)
    assert facts["media_type"] == "application/vnd.docker.distribution.manifest.list.v2+json"
    assert facts["platforms"] == ["linux/amd64", "linux/arm64/v8"]
    assert (facts["architecture"], facts["variant"]) == ("arm64", "v8")


def test_single_manifest_whose_config_is_amd64(registry_images: Images, image_cache: Path) -> None:
    code, report, _ = check(registry_images.single_amd64, cache=image_cache)
    assert code == 1
    (finding,) = findings(report, "ARCH-image-config")
    assert finding["status"] == "FAIL" and "linux/amd64, not linux/arm64" in finding["message"]
    assert image_facts(report)["media_type"] == "application/vnd.docker.distribution.manifest.v2+json"


def test_single_arm64_manifest_passes(registry_images: Images, image_cache: Path) -> None:
    code, report, _ = check(registry_images.single_arm64, cache=image_cache)
    assert code == 0
    assert image_facts(report)["platforms"] == ["linux/arm64"]
    assert image_facts(report)["requests"] == 2


def test_cuda12_ngc_config_fails_g1(registry_images: Images, image_cache: Path) -> None:
    code, report, _ = check(registry_images.ngc_cuda12, cache=image_cache)
    assert code == 1
    (finding,) = findings(report, "G1-image-cuda")
    assert finding["status"] == "FAIL"
    assert "CUDA 12" in finding["message"] and "CUDA_VERSION=12.6.2.004" in finding["message"]


def test_digest_references_and_cache(registry_images: Images, image_cache: Path) -> None:
    digest = registry_images.digests["ngc_arm64"]
    name = registry_images.ngc_arm64.rsplit(":", 1)[0]
    code, first, _ = check(f"{name}@{digest}", cache=image_cache)
    assert code == 0 and image_facts(first)["requests"] == 3
    # tag + digest: the digest is fetched; everything is in the cache now, so no request at all
    code, second, _ = check(f"{registry_images.ngc_arm64}@{digest}", cache=image_cache)
    assert code == 0
    assert image_facts(second)["requests"] == 0 and image_facts(second)["cache_hits"] == 3
    assert [(f["rule"], f["status"]) for f in findings(first)] == [(f["rule"], f["status"]) for f in findings(second)]
    # by tag: the tag is always asked (tags move), child manifest and config come from the cache
    code, third, _ = check(registry_images.ngc_arm64, cache=image_cache)
    assert image_facts(third)["requests"] == 1
    # --no-cache asks again
    code, fourth, _ = check(registry_images.ngc_arm64, "--no-cache", cache=image_cache)
    assert image_facts(fourth)["requests"] == 3


def test_a_damaged_cache_entry_is_a_miss(registry_images: Images, image_cache: Path) -> None:
    check(registry_images.single_arm64, cache=image_cache)
    for entry in (image_cache / "blobs" / "sha256").iterdir():
        entry.write_bytes(b"garbage")
    code, report, _ = check(registry_images.single_arm64, cache=image_cache)
    assert code == 0 and image_facts(report)["requests"] == 2 and image_facts(report)["cache_hits"] == 0


def test_missing_tag_and_bad_reference(registry_images: Images, image_cache: Path) -> None:
    code, report, _ = check(f"{registry_images.host}/lab/single:nosuchtag", cache=image_cache)
    assert code == 3
    (finding,) = findings(report, "service-error")
    assert "not found (HTTP 404)" in finding["message"] and "MANIFEST_UNKNOWN" in finding["message"]
    done = run_envcheck("image", f"{registry_images.host}/Lab/Single:1")
    assert done.returncode == 2 and "lowercase" in done.stderr and "Traceback" not in done.stderr


def test_text_output_names_the_platforms(registry_images: Images, image_cache: Path) -> None:
    done = run_envcheck("image", registry_images.amd64_only, env={"ENVCHECK_CACHE_DIR": str(image_cache)})
    assert done.returncode == 1
    assert "ARCH" in done.stdout and "linux/amd64, linux/ppc64le" in done.stdout
    assert "\r" not in done.stderr  # no progress bar when not on a terminal


def test_registry_behaviour_the_client_relies_on(registry_images: Images) -> None:
    """distribution 2.8: an OCI index is a 404 unless Accept names it (the case manifest() handles)."""
    name = registry_images.ngc_arm64.split("/", 1)[1].replace(":", "/manifests/")
    url = f"http://{registry_images.host}/v2/{name}"
    assert requests.get(url, headers={"Accept": "application/vnd.docker.distribution.manifest.v2+json"}, timeout=10).status_code == 404
    assert requests.get(url, headers={"Accept": "application/vnd.oci.image.index.v1+json"}, timeout=10).status_code == 200


def test_proxy_from_the_environment_and_insecure_registry(registry_images: Images, fault_proxy, image_cache: Path) -> None:  # type: ignore[no-untyped-def]
    """A named registry goes through HTTP_PROXY (the proxy forwards to loopback); plain HTTP only when named insecure."""
    proxy = fault_proxy(Fault("^$", "status", times=0))
    name = "registry.lab:5000/" + registry_images.single_arm64.split("/", 1)[1]
    env = {"HTTP_PROXY": f"http://{proxy.host}", "HTTPS_PROXY": f"http://{proxy.host}", "NO_PROXY": "", "no_proxy": ""}
    code, report, _ = check(name, "--insecure-registry", "registry.lab:5000", cache=image_cache, env=env)
    assert code == 0, findings(report)
    assert proxy.seen and all(path.startswith("http://registry.lab:5000/v2/lab/single/") for _, path in proxy.seen)
    # not named insecure: HTTPS through the proxy (CONNECT, which this proxy refuses), never plain HTTP
    seen = len(proxy.seen)
    code, report, _ = check(name, cache=image_cache, env=env)
    assert code == 3 and "could not be reached" in findings(report, "service-error")[0]["message"]
    assert len(proxy.seen) == seen


def test_moving_tag_and_bare_pip_history(registry_images: Images, image_cache: Path) -> None:
    code, report, _ = check(registry_images.bare_pip_latest, cache=image_cache)
    assert code == 0  # WARN findings only (--fail-on fail)
    # the history's `pip install torch==2.9.0` is a CPU-only build on aarch64 PyPI (the lead's G1 rule, same facts)
    assert [f["status"] for f in findings(report, "G1-cpu-build")] == ["WARN"]  # it runs on the Grace CPU
    (floating,) = findings(report, "G9-image-floating-tag")
    assert floating["status"] == "WARN" and registry_images.digests["bare_pip_latest"] in floating["message"]
    (bare,) = findings(report, "G9-image-bare-pip")
    assert bare["status"] == "WARN" and "torch, xformers" in bare["message"]
    assert bare["location"]["member"] == "history[2]"
    # the NGC image: a release tag, and its history installs no stack package with pip
    _, ngc, _ = check(registry_images.ngc_arm64, cache=image_cache)
    assert [f["status"] for f in findings(ngc, "G9-image-floating-tag")] == ["PASS"]
    assert not findings(ngc, "G9-image-bare-pip")
