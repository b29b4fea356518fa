"""G9-ngc-torch-replaced in a compose file: a requirement is judged against the NGC torch of its own service's
build, never against another service's NGC base."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from conftest import run_envcheck


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")


def test_a_slim_service_beside_an_ngc_service_keeps_its_own_torch(tmp_path: Path) -> None:
    _write(tmp_path / "services" / "trainer" / "Dockerfile", """
        FROM nvcr.io/nvidia/pytorch:25.11-py3
        COPY requirements.txt /app/
        RUN pip install -r /app/requirements.txt
    """)
    _write(tmp_path / "services" / "trainer" / "requirements.txt", "peft==0.17.1\n")
    _write(tmp_path / "services" / "embeddings" / "Dockerfile", """
        FROM python:3.11-slim
        COPY requirements.txt /app/
        RUN pip install -r /app/requirements.txt
    """)
    _write(tmp_path / "services" / "embeddings" / "requirements.txt", "sentence-transformers==2.3.1\ntorch==2.6.0\n")
    _write(tmp_path / "compose" / "docker-compose.yml", """
        services:
          trainer:
            build:
              context: ../services/trainer
          embeddings:
            build:
              context: ../services/embeddings
    """)

    def replaced() -> list[str]:
        done = run_envcheck("-f", "json", "--fail-on", "never", str(tmp_path / "compose" / "docker-compose.yml"))
        findings = json.loads(done.stdout)["targets"][0]["findings"]
        return [f["location"]["path"] for f in findings if f["rule"] == "G9-ngc-torch-replaced" and f["status"] == "FAIL"]

    assert replaced() == []  # python:3.11-slim has no NGC torch to replace
    _write(tmp_path / "services" / "trainer" / "requirements.txt", "peft==0.17.1\ntorch==2.6.0\n")
    (where,) = replaced()  # the NGC service's own pin still is
    assert where.endswith("trainer/requirements.txt")
