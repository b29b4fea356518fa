"""Compose files written as a menu of alternative servers, and images the project builds itself (issue 32):
G6 adds up only services that can run together, a finding about a flag sits on the flag's line, a service
under a profile is one level lower, and a locally built image is not drift."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from conftest import run_envcheck


def _findings(path: Path) -> list[dict[str, Any]]:
    done = run_envcheck("--format", "json", "--fail-on", "fail", str(path))
    assert done.returncode in (0, 1), done.stderr
    findings: list[dict[str, Any]] = json.loads(done.stdout)["targets"][0]["findings"]
    return findings


def _rule(findings: list[dict[str, Any]], rule: str, *statuses: str) -> list[dict[str, Any]]:
    return [f for f in findings if f["rule"] == rule and f["status"] in (statuses or ("WARN", "FAIL"))]


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


# One container name through a YAML anchor: `docker compose up -d chat` starts one of them; a second replaces it.
MENU = """
    x-server: &server
      image: spark-vllm
      container_name: vllm
      network_mode: host
      gpus: all

    services:
      chat:
        <<: *server
        command: >
          vllm serve /models/chat
            --max-model-len 32768
            --gpu-memory-utilization 0.7
      coder:
        <<: *server
        command: >
          /opt/launch.sh vllm serve /models/coder
            --gpu-memory-utilization 0.8
      big:
        <<: *server
        profiles: ["big"]
        command: >
          vllm serve /models/big
            --gpu-memory-utilization 0.95
"""


def test_services_that_cannot_run_together_are_not_added_up(tmp_path: Path) -> None:
    findings = _findings(_write(tmp_path / "menu" / "compose.yaml", MENU))
    assert not _rule(findings, "G6-pool-overcommit")
    # the same servers as separate containers on their own ports do run together, the wrapped one included
    separate = MENU.replace("      container_name: vllm\n      network_mode: host\n", "")
    (overcommit,) = _rule(_findings(_write(tmp_path / "apart" / "compose.yaml", separate)), "G6-pool-overcommit")
    assert overcommit["status"] == "FAIL" and "1.50" in overcommit["message"] and "coder" in overcommit["message"]
    # one host port under host networking is the same exclusion as one container name
    port = MENU.replace("      container_name: vllm\n", "")
    assert not _rule(_findings(_write(tmp_path / "port" / "compose.yaml", port)), "G6-pool-overcommit")


def test_a_flag_in_a_folded_command_is_reported_on_its_line_and_a_profile_lowers_it(tmp_path: Path) -> None:
    text = MENU.replace("--gpu-memory-utilization 0.7", "--gpu-memory-utilization 0.96")
    findings = _findings(_write(tmp_path / "compose.yaml", text))
    (memory,) = _rule(findings, "G3-memory-fraction")
    assert memory["location"]["line"] == 13 and "chat" in memory["message"]  # the flag's line, not `command:` (10)
    # the same share under a profile: it starts only when asked for, so the finding is one level lower
    (asked,) = [f for f in _rule(findings, "G3-memory-fraction", "INFO") if "big" in f["message"]]
    assert asked["location"]["line"] == 24 and asked["location"]["on_request"] is True
    assert "only when asked for" in asked["message"]


def test_an_image_no_registry_serves_is_a_local_build_not_drift(tmp_path: Path) -> None:
    findings = _findings(_write(tmp_path / "compose.yaml", MENU))
    # `spark-vllm` is no official image: it was built here; one line, reported once for the three services
    (local,) = _rule(findings, "G9-floating-base-tag", "INFO", "WARN")
    assert local["status"] == "INFO" and local["location"]["line"] == 2 and "built locally" in local["message"]
    dockerfile = _write(tmp_path / "patch" / "Dockerfile", """
        ARG BASE=vllm-sm121:latest
        FROM ${BASE}
        COPY patch.py /opt/patch.py
    """)
    (built,) = _rule(_findings(dockerfile), "G9-floating-base-tag", "INFO", "WARN")
    assert built["status"] == "INFO"
    # a pulled image on a moving tag stays a policy WARN: official (python) or third-party (vllm/vllm-openai)
    pulled = _write(tmp_path / "pulled" / "Dockerfile", """
        FROM python:latest AS tools
        FROM vllm/vllm-openai:nightly
        COPY --from=tools /usr/local/bin/python3 /usr/local/bin/tool-python
    """)
    assert [f["status"] for f in _rule(_findings(pulled), "G9-floating-base-tag", "INFO", "WARN")] == ["WARN", "WARN"]


def test_a_service_running_an_image_another_service_builds_is_not_a_pull(tmp_path: Path) -> None:
    _write(tmp_path / "Dockerfile", "FROM nvcr.io/nvidia/vllm:25.11-py3\n")
    compose = _write(tmp_path / "compose.yaml", """
        services:
          build-once:
            build: .
            image: ghcr.io/lab/spark-serve:latest
          chat:
            image: ghcr.io/lab/spark-serve:latest
            gpus: all
            command: vllm serve /models/chat --gpu-memory-utilization 0.4
          coder:
            image: ghcr.io/lab/spark-serve:latest
            gpus: all
            command: vllm serve /models/coder --gpu-memory-utilization 0.4
    """)
    assert not _rule(_findings(compose), "G9-floating-base-tag", "INFO", "WARN")  # judged as its Dockerfile's FROM
    pulled = _write(tmp_path / "pulled" / "compose.yaml", compose.read_text().replace("    build: .\n", ""))
    floating = _rule(_findings(pulled), "G9-floating-base-tag", "INFO", "WARN")  # nobody builds it: pulled
    assert [(f["status"], f["location"]["line"]) for f in floating] == [("WARN", 5), ("WARN", 9)]  # one per written line
