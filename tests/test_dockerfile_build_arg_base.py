"""A FROM whose base is a build argument with no default (``ARG BASE`` before the first FROM, the value passed
with ``--build-arg`` by a build wrapper) is a valid Dockerfile: envcheck says the base is not checked (INFO) and
still reads the stage. An ARG declared inside a stage is not visible to FROM: Docker reads an empty name and the
build fails, so that one stays an ERROR that says why (issue 32, corpus seventh batch)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import run_envcheck


def _check(tmp_path: Path, text: str, *args: str) -> dict[str, Any]:
    path = tmp_path / "Containerfile"
    path.write_text(text, encoding="utf-8")
    done = run_envcheck("-f", "json", "-v", "--fail-on", "never", *args, str(path))
    target: dict[str, Any] = json.loads(done.stdout)["targets"][0]
    return target


@pytest.mark.parametrize("base", ["${BASE_IMAGE_REF}", "nvcr.io/nvidia/pytorch:${TAG}-py3"])
def test_a_base_given_by_build_arg_is_skipped_not_an_error(tmp_path: Path, base: str) -> None:
    target = _check(tmp_path, f"ARG BASE_IMAGE_REF\nARG TAG\nFROM {base}\n"
                              "RUN pip install torch==2.5.1 --index-url https://download.pytorch.org/whl/cu121\n")
    statuses = {(f["rule"], f["status"]) for f in target["findings"]}
    assert ("input-error", "ERROR") not in statuses and target["kind"] == "dockerfile"
    (note,) = [f for f in target["findings"] if f["rule"] == "input-skipped"]
    assert note["status"] == "INFO" and note["location"]["line"] == 3 and "--build-arg" in note["message"]
    assert ("G1-cuda12-index", "FAIL") in statuses  # the stage is still read


def test_the_build_arg_value_is_checked_when_given(tmp_path: Path) -> None:
    target = _check(tmp_path, "ARG BASE\nFROM ${BASE}\n", "--build-arg", "BASE=nvidia/cuda:12.4.1-devel-ubuntu22.04")
    assert [f["status"] for f in target["findings"] if f["rule"] == "G1-cuda12-base"] == ["FAIL"]


def test_an_arg_declared_inside_a_stage_is_not_seen_by_from(tmp_path: Path) -> None:
    target = _check(tmp_path, "FROM ubuntu:24.04 AS build\nARG RUNTIME=nvcr.io/nvidia/pytorch:25.11-py3\n"
                              "FROM ${RUNTIME}\n")
    (error,) = [f for f in target["findings"] if f["status"] == "ERROR"]
    assert error["location"]["line"] == 3 and "not declared before the first FROM" in error["message"]
