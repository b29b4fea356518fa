"""Base image references mapped with knowledge/ngc_tags.toml: known, inferred, and unknown tags."""

from __future__ import annotations

from pathlib import Path

import pytest

from envcheck import knowledge
from envcheck.knowledge.base_images import describe, is_arm64
from envcheck.sources import ReadOptions
from envcheck.sources.dockerfile import read, shipped_packages


def test_every_row_is_sourced_and_the_cuda13_boundary_is_25_08() -> None:
    table = knowledge.load("ngc_tags")
    assert table["meta"]["updated"] and table["meta"]["sources"]
    assert table["first_cuda13_pytorch"] == "25.08"
    for family in ("pytorch", "vllm"):
        for row in table[family]:
            assert row.get("source"), row
            if row.get("cuda"):
                major = int(str(row["cuda"]).split(".")[0])
                assert (major >= 13) == (tuple(map(int, row["tag"].split("."))) >= (25, 8)), row
    first = next(r for r in table["pytorch"] if r["tag"] == "25.08")
    assert first["cuda"] == "13.0" and first["torch"].startswith("2.8.0a0") and not first.get("inferred")


@pytest.mark.parametrize(("ref", "family", "cuda", "known", "inferred"), [
    ("nvcr.io/nvidia/pytorch:25.11-py3", "ngc-pytorch", "13.0", True, False),
    ("nvcr.io/nvidia/pytorch:25.08-py3", "ngc-pytorch", "13.0", True, False),
    ("nvcr.io/nvidia/pytorch:25.06-py3", "ngc-pytorch", "12.9", True, True),
    ("nvcr.io/nvidia/pytorch:25.07-py3", "ngc-pytorch", "12", False, True),   # not in the table: before 25.08
    ("nvcr.io/nvidia/pytorch:28.01-py3", "ngc-pytorch", "13", False, True),   # newer than the table
    ("nvcr.io/nvidia/vllm:25.12.post1-py3", "ngc-vllm", "13.1", True, True),
    ("nvcr.io/nvidia/cuda:13.0.1-devel-ubuntu24.04", "cuda", "13.0", True, False),
    ("nvidia/cuda:12.4.1-cudnn-devel-ubuntu22.04", "cuda", "12.4", True, False),
    ("docker.io/nvidia/cuda:11.8.0-runtime-ubuntu22.04", "cuda", "11.8", True, False),
    ("pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime", "other", "12", False, True),
    ("lmsysorg/sglang:latest-cu130", "other", "13", False, True),
    ("python:3.12-slim", "other", None, False, False),
    # other NGC families: the release month fixes the CUDA (read from the PyTorch row of that month)
    ("nvcr.io/nvidia/nemo:26.04", "ngc", "13.2", True, True),
    ("nvcr.io/nvidia/pyg:25.03-py3", "ngc", "12.8", True, True),
    ("nvcr.io/nvidia/pyg:25.08-py3", "ngc", "13.0", True, True),
    ("nvcr.io/nvidia/jax:25.07-py3", "ngc", "12", False, True),  # no row for 25.07: before the first CUDA 13 month
    ("nvcr.io/nvidia/jax:27.01-py3", "ngc", "13", False, True),
    ("nvcr.io/nvidia/tensorflow:25.02-tf2-py3", "ngc", "12.8", True, True),
    ("nvcr.io/nvidia/tritonserver:25.10-py3", "ngc", "13.0", True, True),
    ("nvcr.io/nvidia/tritonserver:25.10-trtllm-python-py3", "ngc", "12.9", True, False),  # the TRT-LLM builds lag
    ("nvcr.io/nvidia/tritonserver:26.01-trtllm-python-py3", "ngc", "13", False, True),
    ("nvcr.io/nvidia/cuda-dl-base:25.03-cuda12.8-devel-ubuntu24.04", "ngc", "12.8", True, False),  # the tag names it
    ("nvcr.io/nvidia/tensorrt-llm/release:1.2.0rc6", "ngc", None, False, False),  # not a YY.MM release
])
def test_describe(ref: str, family: str, cuda: str | None, known: bool, inferred: bool) -> None:
    facts = describe(ref)
    assert (facts.family, facts.cuda, facts.known, facts.inferred) == (family, cuda, known, inferred)
    if inferred and not known:
        assert facts.note  # what was inferred is said, in words
    if family == "ngc" and cuda is not None:
        assert facts.source  # every mapping names where it comes from


def test_tags_digests_and_platforms() -> None:
    assert describe("ubuntu").tag is None and describe("ubuntu").floating
    assert describe("nvcr.io/nvidia/pytorch:latest").floating
    assert not describe("ubuntu@sha256:" + "a" * 64).floating
    assert not describe("localhost:5000/lab/img:1.0").floating
    assert describe("pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime").amd64_only
    assert [is_arm64(p) for p in ("linux/arm64", "linux/arm64/v8", "linux/amd64", None)] == [True, True, False, None]


def test_shipped_packages_only_for_known_cuda13_ngc_images() -> None:
    names = {(p.name, p.version) for p in shipped_packages("nvcr.io/nvidia/pytorch:25.09-py3", None)}
    assert names == {("torch", "2.9.0a0+50eac811a6.nv25.09"), ("flash-attn", "2.7.4.post1"), ("triton", "3.4.0+gitc817b9b6")}
    assert all(p.installed for p in shipped_packages("nvcr.io/nvidia/pytorch:25.09-py3", None))
    assert shipped_packages("nvcr.io/nvidia/pytorch:24.10-py3", None) == []  # CUDA 12: G1-cuda12-base reports it
    assert shipped_packages("python:3.12", None) == []
    vllm = {p.name: p.version for p in shipped_packages("nvcr.io/nvidia/vllm:26.01-py3", None)}
    assert vllm["torch"] == "2.10.0a0+a36e1d39eb.nv26.01.42222806"


def test_an_invalid_reference_is_an_error_at_its_line(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text("FROM python:3.12 AS ok\nRUN pip install a==1\nFROM Bad/Name:1 AS bad\nRUN pip install b==1\n")
    inv = read(tmp_path / "Dockerfile", ReadOptions())
    assert [(p.location.line if p.location else None) for p in inv.problems] == [3]
    assert "lowercase" in inv.problems[0].message
    assert [p.name for p in inv.packages] == ["a"]  # the good stage is still read


def test_every_family_month_row_and_variant_is_sourced() -> None:
    table = knowledge.load("ngc_tags")
    assert table["release_cuda_source"] and table["release_cuda_inferred"]
    assert {"nvidia/pytorch", "nvidia/pyg", "nvidia/jax", "nvidia/tensorflow", "nvidia/tritonserver", "nvidia/vllm",
            "nvidia/nemo", "nvidia/cuda-dl-base"} <= set(table["monthly_release_repos"])
    for row in [*table["release_variant"], *table["release_variant_row"], *table["tensorflow"]]:
        assert row["source"], row


def test_an_ngc_family_of_a_cuda12_month_fails_g1(tmp_path: Path) -> None:
    from envcheck import engine
    from envcheck.config import Config
    from envcheck.profile import load_profile

    (tmp_path / "Dockerfile").write_text("FROM nvcr.io/nvidia/pyg:25.03-py3\nRUN pip install torch-geometric==2.6.1\n")
    target = engine.Target(str(tmp_path / "Dockerfile"), "dockerfile", lambda: read(tmp_path / "Dockerfile", ReadOptions()))
    result = engine.judge(target, engine.read_safely(target), load_profile("dgx-spark"), Config())
    g1 = [f for f in result.findings if f.rule == "G1-cuda12-base"]
    assert [f.status.value for f in g1] == ["FAIL"] and "CUDA 12.8" in g1[0].message and "25.03" in g1[0].message
    assert not [f for f in result.findings if f.rule == "G9-base-image-unknown"]


@pytest.mark.parametrize(("ref", "amd64_only"), [
    ("rayproject/ray:2.9.0-gpu", True),
    ("rayproject/ray:2.9.0-py310-cu121", True),
    ("rayproject/ray:2.40.0-py312", True),          # no suffix: amd64 (Ray's -cpu alias)
    ("rayproject/ray:2.9.0-py310-gpu-aarch64", False),  # Ray's arm64 images carry the -aarch64 suffix
    ("rayproject/ray:2.52.0-py312-gpu", False),     # multi-platform indexes since Ray's 2025 CI change: not claimed
    ("rayproject/ray:latest-gpu", False),           # a moving tag the table cannot place
    ("rayproject/ray:nightly-py312-gpu", False),
    ("rayproject/ray-ml:2.9.0-py310-gpu", True),    # ray-ml is not built for arm64 at all
])
def test_ray_release_tags_are_amd64_only_before_its_multi_platform_indexes(ref: str, amd64_only: bool) -> None:
    facts = describe(ref)
    assert facts.amd64_only is amd64_only
    assert ("-aarch64" in facts.platform_note) is (amd64_only and facts.repository == "rayproject/ray")
