"""G2 on live readings: a flash-attn whose CUDA extension does not load, read by the real probe."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from envcheck import engine
from envcheck.model import Status
from envcheck.profile import load_profile
from envcheck.sources.host import PROBE_PATH, inventory_from_probe


def _g2(inventory_python: Path) -> list[tuple[str, Status]]:
    out = subprocess.run([str(inventory_python), str(PROBE_PATH)], capture_output=True, text=True, check=True, timeout=120).stdout
    inv = inventory_from_probe(json.loads(out), "test")
    found = engine.evaluate(inv, load_profile(), "host")
    return [(f.rule, f.status) for f in found if f.gotcha == "G2"]


def test_flash_attn_without_its_extension_fails(preflight_envs: dict[str, Path]) -> None:
    g2 = _g2(preflight_envs["good"])
    assert ("G2-live-flash-attn-extension", Status.FAIL) in g2


def test_no_flash_attn_no_live_finding(preflight_envs: dict[str, Path]) -> None:
    g2 = _g2(preflight_envs["cu12"])
    assert not [r for r, _ in g2 if r == "G2-live-flash-attn-extension"]
