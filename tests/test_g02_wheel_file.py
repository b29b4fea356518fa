"""G2-flash-attn-build over a flash-attn wheel file a Dockerfile installs: a glob envcheck cannot read is a WARN."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from conftest import run_envcheck


def _g2(tmp_path: Path, install: str) -> list[dict[str, Any]]:
    (tmp_path / "Dockerfile").write_text(textwrap.dedent(f"""
        FROM nvidia/cuda:13.0.1-cudnn-devel-ubuntu24.04
        RUN pip install --break-system-packages torch==2.9.1 --index-url https://download.pytorch.org/whl/cu130
        COPY wheels/ /tmp/wheels/
        RUN pip install --break-system-packages {install}
    """).lstrip("\n"), encoding="utf-8")
    proc = run_envcheck("-f", "json", "Dockerfile", cwd=tmp_path)
    return [f for t in json.loads(proc.stdout)["targets"] for f in t["findings"]
            if f["rule"] == "G2-flash-attn-build" and f["status"] != "PASS"]


def test_a_flash_attn_wheel_glob_warns_and_a_named_aarch64_wheel_passes(tmp_path: Path) -> None:
    (glob,) = _g2(tmp_path, "/tmp/wheels/flash_attn-*.whl")
    assert (glob["status"], glob["location"]["line"]) == ("WARN", 4)
    assert "cannot read" in glob["message"] and "source" not in glob["message"]
    assert not _g2(tmp_path, "/tmp/wheels/flash_attn-2.8.3-cp312-cp312-linux_aarch64.whl")
    assert not _g2(tmp_path, "/tmp/wheels/*.whl")  # no name to read: nothing is claimed
