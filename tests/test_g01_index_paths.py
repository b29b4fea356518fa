"""G1-cuda12-index for any index whose path names a CUDA 11/12 build (real files, through the CLI)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import run_envcheck


def _g1(path: Path) -> list[tuple[str, int | None, str]]:
    done = run_envcheck("--format", "json", str(path))
    assert done.returncode in (0, 1), done.stderr
    report = json.loads(done.stdout)
    found: list[dict[str, Any]] = [f for t in report["targets"] for f in t["findings"]]
    return sorted((f["rule"], f.get("location", {}).get("line"), f["status"]) for f in found
                  if f["rule"].startswith("G1-") and f["status"] in ("FAIL", "WARN"))


@pytest.mark.parametrize(("url", "flagged"), [
    ("https://pypi.jetson-ai-lab.dev/sbsa/cu128", True),
    ("https://pypi.jetson-ai-lab.dev/jp6/cu126/", True),
    ("https://mirror.corp.example/cu121/simple", True),
    ("https://pypi.jetson-ai-lab.dev/sbsa/cu130", False),  # a CUDA 13 build
    ("https://cu128.example/simple", False),  # a host name is not a path segment
    ("https://docs.example/pkgs/cu128-notes/simple", False),  # a word that starts with a tag is not one
    ("https://pypi.example/simple?flavor=cu128", False),  # nor is a query
])
def test_an_index_whose_path_names_a_cuda12_build_serves_cuda12(tmp_path: Path, url: str, flagged: bool) -> None:
    req = tmp_path / "requirements.txt"
    req.write_text(f"--extra-index-url {url}\nflash-attn\n")
    assert (("G1-cuda12-index", 1, "FAIL") in _g1(req)) is flagged
    if not flagged:
        assert [f for f in _g1(req) if f[0] == "G1-cuda12-index"] == []
