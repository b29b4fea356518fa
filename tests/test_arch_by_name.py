"""ARCH offline, by name from PyPI: what pip on linux/aarch64 takes for a pin, a range or a bare name
(knowledge/wheels.toml), and source archives whose build fails there (knowledge/cuda_extensions.toml)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import run_envcheck

from envcheck.knowledge import wheels


def _findings(path: Path, rule: str) -> list[dict[str, Any]]:
    proc = run_envcheck("--format", "json", "--fail-on", "never", str(path))
    assert proc.returncode == 0, proc.stderr
    return [f for t in json.loads(proc.stdout)["targets"] for f in t["findings"] if f["rule"] == rule]


def _fails(path: Path) -> list[str]:
    return [f["evidence"].get("package") for f in _findings(path, "ARCH-wheel-platform") if f["status"] == "FAIL"]


def test_a_source_archive_whose_build_fails_on_aarch64_is_a_fail(tmp_path: Path) -> None:
    """pillow-simd publishes only source archives, and their build passes x86 SIMD flags: by name from PyPI the
    install fails on a Spark; kept to x86_64 by a marker, or with another source of wheels, it is not judged."""
    req = tmp_path / "requirements.txt"
    for line in ("pillow-simd\n", "pillow-simd>=9\n", "Pillow-SIMD==12.1.1.post0\n"):
        req.write_text(line, encoding="utf-8")
        (found,) = [f for f in _findings(req, "ARCH-wheel-platform") if f["status"] == "FAIL"]
        assert found["evidence"]["package"] == "pillow-simd" and "pillow-simd/issues" in found["evidence"]["source"], found
        assert found["fix"].startswith("Use pillow"), found
        # one finding per cause: not a source-build WARN besides
        assert not _findings(req, "ARCH-no-aarch64-wheel"), line
    for text in ("pillow-simd; platform_machine == 'x86_64'\n", "--find-links https://example.org/wheels\npillow-simd\n",
                 "--index-url https://example.org/simple\npillow-simd\n"):
        req.write_text(text, encoding="utf-8")
        assert _fails(req) == [], text
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text("FROM nvcr.io/nvidia/pytorch:25.11-py3\nRUN pip install pillow-simd\n", encoding="utf-8")
    assert _fails(dockerfile) == ["pillow-simd"]


def _skips_newest() -> tuple[str, str, str]:
    """A recorded package whose newest final releases have no linux/aarch64 file while an older one has a wheel:
    (name, the newest, the one pip takes)."""
    for name in ("dgl", "open3d", "transformer-engine-cu12"):
        pick = wheels.linux_aarch64_pick(name, "")
        if pick and pick[0] is not None and pick[0].aarch64 == "wheel" and pick[1]:
            return name, pick[1][0].version, pick[0].version
    raise AssertionError("no recorded package skips its newest release on linux/aarch64")


def test_a_bare_name_takes_the_newest_release_with_an_aarch64_file(tmp_path: Path) -> None:
    """pip skips releases with no file for the platform: a bare name whose newest release has none but an older one
    ships an aarch64 wheel installs that one (no finding); the newest pinned cannot install (FAIL)."""
    name, newest, taken = _skips_newest()
    assert wheels.release(name, newest).aarch64 == "none" and wheels.release(name, taken).aarch64 == "wheel"
    req = tmp_path / "requirements.txt"
    req.write_text(f"{name}\n", encoding="utf-8")
    assert _fails(req) == []
    req.write_text(f"{name}>={taken}\n", encoding="utf-8")
    assert _fails(req) == []
    req.write_text(f"{name}=={newest}\n", encoding="utf-8")
    assert _fails(req) == [name]
    req.write_text(f"{name}>{taken}\n", encoding="utf-8")
    assert _fails(req) == [name]


def test_a_bare_name_no_release_of_which_has_an_aarch64_file_fails(tmp_path: Path) -> None:
    """decord: no release publishes a linux/aarch64 file. Bare, in a requirements file, pip cannot install it (FAIL);
    in a pyproject's opt-in extra, what the project installs by default is unaffected: told at INFO."""
    assert all(r.aarch64 == "none" for r in wheels.releases("decord"))
    req = tmp_path / "requirements.txt"
    req.write_text("decord\n", encoding="utf-8")
    assert _fails(req) == ["decord"]
    project = tmp_path / "pyproject.toml"
    project.write_text('[project]\nname = "app"\nversion = "0"\ndependencies = []\n\n[project.optional-dependencies]\n'
                       'decode = ["decord"]\n', encoding="utf-8")
    found = _findings(project, "ARCH-wheel-platform")
    assert [(f["status"], f["evidence"].get("package")) for f in found if f["status"] != "PASS"] == [("INFO", "decord")], found


def test_a_pre_release_with_a_file_is_what_pip_falls_back_to(tmp_path: Path) -> None:
    """pip takes a pre-release when no final release a specifier allows has a file for the platform: then nothing
    says the install fails (no FAIL), unlike a range whose releases, pre-releases too, all lack one."""
    listed = wheels.served("torchcodec")
    assert listed is not None
    finals = [v for v in listed.versions if not wheels.parse_version(v).is_prerelease]  # type: ignore[union-attr]
    cut = next(v for v in finals if wheels.release("torchcodec", v).aarch64 != "none")  # type: ignore[union-attr]
    pick = wheels.linux_aarch64_pick("torchcodec", f"<{cut}")
    assert pick is not None and pick[0] is not None and pick[0].version not in finals, pick
    req = tmp_path / "requirements.txt"
    req.write_text(f"torchcodec<{cut}\n", encoding="utf-8")
    assert _fails(req) == []


def test_a_cuda_extension_taken_as_a_source_archive_is_a_source_build(tmp_path: Path) -> None:
    """natten publishes only source archives on PyPI and builds CUDA kernels: a bare name is a source build on the
    Spark (WARN); flash-attn is G2-flash-attn-build's alone (one finding per cause)."""
    req = tmp_path / "requirements.txt"
    req.write_text("natten\n", encoding="utf-8")
    assert [f["status"] for f in _findings(req, "ARCH-no-aarch64-wheel")] == ["WARN"]
    req.write_text("flash-attn\n", encoding="utf-8")
    assert _findings(req, "ARCH-no-aarch64-wheel") == []
    assert [f["status"] for f in _findings(req, "G2-flash-attn-build")] == ["FAIL"]
    req.write_text("--find-links https://data.pyg.org/whl/torch-2.9.0+cu130.html\ntorch-scatter\n", encoding="utf-8")
    assert _findings(req, "ARCH-no-aarch64-wheel") == []
