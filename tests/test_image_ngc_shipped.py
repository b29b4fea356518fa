"""Config-level G2/G9 on images derived from NGC PyTorch: what the base ships is known from its
NVIDIA_PYTORCH_VERSION, so Unsloth installed on top is judged without pulling a layer."""

from __future__ import annotations

from pathlib import Path

import pytest
from registry_fixtures import (
    NGC_25_10_ENV,
    NGC_HISTORY,
    Images,
    Layer,
    Pusher,
    config_for,
    push_image,
    tar_of,
)
from test_image_registry import check, findings

pytestmark = pytest.mark.registry


def _push_derived(registry_images: Images, repo: str, extra_history: list[str]) -> str:
    pusher = Pusher(registry_images.host)
    history = [*NGC_HISTORY, *({"created_by": f"RUN /bin/sh -c {cmd} # buildkit"} for cmd in extra_history)]
    layer = Layer(tar_of({"etc/os-release": b"ID=ubuntu\nVERSION_ID=24.04\n"}))
    push_image(pusher, repo, "1.0", config_for("arm64", NGC_25_10_ENV, history=history), [layer])
    return f"{registry_images.host}/{repo}:1.0"


def test_unsloth_on_ngc_base_warns_at_config_level(registry_images: Images, image_cache: Path) -> None:
    ref = _push_derived(registry_images, "lab/ngc-unsloth", ["pip install --no-deps unsloth==2025.10.1 unsloth_zoo==2025.10.1"])
    code, report, _ = check(ref, cache=image_cache)
    (warn,) = findings(report, "G2-unsloth-prefers-flash-attn")
    assert warn["status"] == "WARN"
    assert "HAS_FLASH_ATTENTION" in warn["fix"]
    assert code == 0  # a WARN is below the default --fail-on


def test_pin_that_replaces_ngc_torch_fails_at_config_level(registry_images: Images, image_cache: Path) -> None:
    ref = _push_derived(registry_images, "lab/ngc-xformers", ["pip install xformers==0.0.33.post1"])
    code, report, _ = check(ref, cache=image_cache)
    replaced = findings(report, "G9-ngc-torch-replaced")
    assert replaced and replaced[0]["status"] == "FAIL" and "2.9.0a0" in replaced[0]["message"]
    assert code == 1


def test_plain_ngc_image_stays_clean(registry_images: Images, image_cache: Path) -> None:
    code, report, _ = check(registry_images.ngc_arm64, cache=image_cache)
    assert code == 0
    assert not findings(report, "G2-unsloth-prefers-flash-attn")
