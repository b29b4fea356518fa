"""A stage is judged by what it does; whether the built image gets its results decides the level (issue 26
item 4). One rule of the engine for every check: a finding located in a stage that is not part of the built
image (neither the target, nor a stage the target builds on, copies from or mounts) is one level lower and
says why; a stage reached through FROM, COPY --from or RUN --mount=from chains keeps its full level."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import run_envcheck

ATTN = "FROM python:3.12-slim AS attn\nRUN pip install flash-attn\n\n"
NGC = "nvcr.io/nvidia/pytorch:25.11-py3"


def _findings(*args: str, cwd: Path) -> list[dict[str, Any]]:
    done = run_envcheck("-f", "json", "--fail-on", "never", *args, cwd=cwd)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    jsonschema.validate(report, json.loads(resources.files("envcheck.formats").joinpath("report.schema.json").read_text()))
    return [f for t in report["targets"] for f in t["findings"]]


def _flash_attn(findings: list[dict[str, Any]]) -> dict[str, Any]:
    (found,) = [f for f in findings if f["rule"] == "G2-flash-attn-build"]
    return found


@pytest.mark.parametrize(("tail", "args", "level"), [
    (f"FROM {NGC}\nRUN echo ok\n", (), "WARN"),  # nothing takes anything from stage attn
    (f"FROM {NGC}\nCOPY --from=attn /usr/local/bin/x /usr/local/bin/x\n", (), "FAIL"),
    (f"FROM {NGC}\nRUN --mount=type=bind,from=attn,source=/root,target=/w ls /w\n", (), "FAIL"),
    (f"FROM {NGC}\nRUN echo ok\n", ("--target", "attn"), "FAIL"),
    ("FROM attn AS mid\nRUN echo mid\n\nFROM mid\nRUN echo ok\n", (), "FAIL"),  # FROM chain
    (f"FROM attn AS mid\nRUN echo mid\n\nFROM {NGC}\nCOPY --from=mid /x /x\n", (), "FAIL"),  # copies a stage built on it
    (f"FROM {NGC} AS mid\nCOPY --from=attn /x /x\n\nFROM {NGC}\nCOPY --from=mid /x /x\n", (), "FAIL"),  # COPY chain
    (f"FROM {NGC} AS mid\nCOPY --from=attn /x /x\n\nFROM {NGC}\nRUN echo ok\n", (), "WARN"),  # its only user is unused
], ids=["unused", "copy-from", "mount-from", "target", "from-chain", "copy-of-child", "copy-chain", "unused-chain"])
def test_a_stage_outside_the_built_image_is_one_level_lower(tmp_path: Path, tail: str, args: tuple[str, ...], level: str) -> None:
    (tmp_path / "Dockerfile").write_text(ATTN + tail, encoding="utf-8")
    found = _flash_attn(_findings(*args, "Dockerfile", cwd=tmp_path))
    assert (found["status"], found["location"]["stage"]) == (level, "attn"), found
    outside = level == "WARN"
    assert ("stage 'attn' is not part of the built image" in found["message"]) is outside, found["message"]
    assert found["location"].get("outside_image", False) is outside


def test_a_warn_outside_the_built_image_is_info(tmp_path: Path) -> None:
    """A CUDA 12.9 base is a WARN where it is built into the image, INFO in a stage nothing uses."""
    (tmp_path / "Dockerfile").write_text(f"FROM nvcr.io/nvidia/pytorch:25.05-py3 AS old\nRUN echo old\n\nFROM {NGC}\nRUN echo ok\n",
                                         encoding="utf-8")
    levels = {args: [f["status"] for f in _findings(*args, "Dockerfile", cwd=tmp_path) if f["rule"] == "G1-cuda12-base"
                     and f["location"]["stage"] == "old"] for args in ((), ("--target", "old"))}
    assert levels == {(): ["INFO"], ("--target", "old"): ["WARN"]}


def test_compose_build_target_picks_the_built_stage(tmp_path: Path) -> None:
    """A service whose `build: target:` is the flash-attn stage gets the full level; one that builds the last
    stage gets it lowered; with both in one file, the line is one cause: the built one's finding."""
    (tmp_path / "Dockerfile").write_text(ATTN + f"FROM {NGC}\nRUN echo ok\n", encoding="utf-8")
    attn = "  attn:\n    build:\n      context: .\n      target: attn\n"
    app = "  app:\n    build:\n      context: .\n"
    found = []
    for services in (attn, app, attn + app):
        (tmp_path / "compose.yaml").write_text("services:\n" + services, encoding="utf-8")
        found.append({f["location"]["stage"]: f["status"] for f in _findings("compose.yaml", cwd=tmp_path)
                      if f["rule"] == "G2-flash-attn-build"})
    assert found == [{"attn/attn": "FAIL"}, {"app/attn": "WARN"}, {"attn/attn": "FAIL"}]


def test_a_file_read_through_an_unused_stage_is_reported_once_by_its_own_target(tmp_path: Path) -> None:
    """requirements.txt is a target of its own: the Dockerfile stage outside the built image that installs it
    does not repeat its finding, lowered, as a second one."""
    (tmp_path / "requirements.txt").write_text("torch==2.5.1+cu121\n", encoding="utf-8")
    (tmp_path / "Dockerfile").write_text("FROM python:3.12-slim AS dev\nCOPY requirements.txt .\nRUN pip install -r requirements.txt\n\n"
                                         f"FROM {NGC}\nRUN echo ok\n", encoding="utf-8")
    found = [(f["location"]["path"], f["status"]) for f in _findings(".", cwd=tmp_path) if f["rule"] == "G1-cuda12-local-version"]
    assert found == [("requirements.txt", "FAIL")]


@pytest.mark.parametrize(("rule", "head"), [
    ("G1-cuda12-base", "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04 AS attn\nRUN echo build\n\n"),
    ("ARCH-base-platform", "FROM --platform=linux/amd64 ubuntu:24.04 AS attn\nRUN echo build\n\n"),
])
def test_base_image_rules_leave_the_level_to_the_stage_rule(tmp_path: Path, rule: str, head: str) -> None:
    """The rules that once picked WARN for any stage outside the final stage themselves: a stage the final image
    copies from is at full level, an unused one is lowered by the engine like every other finding."""
    levels = []
    for tail in (f"FROM {NGC}\nCOPY --from=attn /opt/tool /opt/tool\n", f"FROM {NGC}\nRUN echo ok\n"):
        (tmp_path / "Dockerfile").write_text(head + tail, encoding="utf-8")
        levels += [f["status"] for f in _findings("Dockerfile", cwd=tmp_path) if f["rule"] == rule and f["status"] != "PASS"]
    assert levels == ["FAIL", "WARN"]


def test_a_file_installed_in_and_outside_the_built_image_is_one_finding(tmp_path: Path) -> None:
    """The same requirements file installed by an unused stage and by the final one is one cause: the final
    stage's finding, at full level."""
    (tmp_path / "requirements.txt").write_text("torch==2.5.1+cu121\n", encoding="utf-8")
    install = "COPY requirements.txt .\nRUN pip install -r requirements.txt\n"
    (tmp_path / "Dockerfile").write_text(f"FROM python:3.12-slim AS dev\n{install}\nFROM python:3.12-slim\n{install}", encoding="utf-8")
    found = [(f["location"]["stage"], f["status"]) for f in _findings("Dockerfile", cwd=tmp_path) if f["rule"] == "G1-cuda12-local-version"]
    assert found == [("1", "FAIL")]


@pytest.mark.parametrize(("run", "level"), [
    ('pip install flash-attn --no-build-isolation || echo "flash-attn failed, using SDPA"', "WARN"),
    ("pip install flash-attn --no-build-isolation || true", "WARN"),
    ("pip install flash-attn --no-build-isolation || exit 1", "FAIL"),
    ("pip install flash-attn --no-build-isolation", "FAIL"),
])
def test_a_flash_attn_build_whose_failure_is_ignored_is_a_warn(tmp_path: Path, run: str, level: str) -> None:
    # hours of source build either way, but with `|| echo` / `|| true` the image still builds, without flash-attn
    (tmp_path / "Dockerfile").write_text(f"FROM nvidia/cuda:13.0.2-devel-ubuntu24.04\nRUN {run}\n")
    found = _flash_attn(_findings("Dockerfile", cwd=tmp_path))
    assert found["status"] == level and found["location"]["line"] == 2
    assert ("failure is ignored" in found["message"]) == (level == "WARN")


@pytest.mark.parametrize(("declared", "amd64", "arm64"), [
    ("ARG TARGETARCH=amd64", "FAIL", "FAIL"),  # the default shadows BuildKit's arm64; --build-arg arm64 takes the other
    ("ARG TARGETARCH", "WARN", "FAIL"),  # BuildKit's arm64: only base-arm64 is built on a Spark
])
def test_a_stage_chosen_by_the_platform_arg_is_judged_for_the_spark(tmp_path: Path, declared: str, amd64: str,
                                                                    arm64: str) -> None:
    (tmp_path / "Dockerfile").write_text(
        f"{declared}\n"
        "FROM nvcr.io/nvidia/pytorch:25.01-py3 AS base-amd64\n"
        "FROM nvcr.io/nvidia/pytorch:24.08-py3 AS base-arm64\n"
        "FROM base-${TARGETARCH}\n"
        "RUN echo ok\n")
    bases = {f["location"]["line"]: f["status"] for f in _findings("Dockerfile", cwd=tmp_path)
             if f["rule"] == "G1-cuda12-base"}
    assert bases == {2: amd64, 3: arm64}
    # a platform the build is told explicitly is the one built
    told = {f["location"]["line"]: f["status"] for f in _findings("Dockerfile", "--build-arg", "TARGETARCH=amd64", cwd=tmp_path)
            if f["rule"] == "G1-cuda12-base"}
    assert told == {2: "FAIL", 3: "WARN"}
