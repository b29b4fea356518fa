"""`envcheck image REF --run` is `envcheck container REF`: the same collector, the same findings."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import run_envcheck

pytestmark = pytest.mark.docker


def _rules(report: dict[str, Any]) -> set[tuple[str, str]]:
    return {(f["rule"], f["status"]) for t in report["targets"] for f in t["findings"] if f["gotcha"] != "G3"}


def test_image_run_equals_container(test_images: Any) -> None:
    via_image = run_envcheck("image", test_images.cuda12, "--run", "--format", "json")
    via_container = run_envcheck("container", test_images.cuda12, "--format", "json")
    assert "Traceback" not in via_image.stderr
    a, b = json.loads(via_image.stdout), json.loads(via_container.stdout)
    assert a["targets"][0]["kind"] == "container"
    assert _rules(a) == _rules(b)
    assert ("G1-live-torch", "FAIL") in _rules(a)
    assert via_image.returncode == via_container.returncode == 1


def test_image_run_refuses_options_that_do_not_apply() -> None:
    done = run_envcheck("image", "example.org/x:1", "--run", "--deep")
    assert done.returncode == 2 and "--run" in done.stderr and "Traceback" not in done.stderr
