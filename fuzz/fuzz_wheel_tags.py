"""Fuzz wheel filename/URL parsing, platform verdicts, and what versions/index URLs say about CUDA builds."""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import main

with atheris.instrument_imports(include=["envcheck"]):
    from envcheck.inspect.wheel_tags import WheelName, parse_wheel_name
    from envcheck.knowledge import builds
    from envcheck.knowledge.wheel_platforms import platform_verdict
    from envcheck.model import Package
    from envcheck.profile import load_profile

PROFILE = load_profile("dgx-spark")
EXTRA = [
    b"https://download.pytorch.org/whl/cu130/torch-2.9.0%2Bcu130-cp312-cp312-manylinux_2_28_aarch64.whl",
    b"flash_attn-2.8.3+cu12torch2.7cxx11abiTRUE-cp311-cp311-linux_x86_64.whl",
    b"numpy-2.1.0-cp311-cp311-macosx_14_0_arm64.whl",
    b"2.9.0+cu130",
    b"2.5.0a0+872d972e41.nv24.08",
    b"https://download.pytorch.org/whl/nightly/cu128",
    b"torch-2.9.0-py3-none-any.whl",
]


def target(data: bytes) -> None:
    text = data.decode("utf-8", errors="replace")
    wheel = parse_wheel_name(text)
    assert wheel is None or isinstance(wheel, WheelName)
    if wheel is not None:
        ok, why = platform_verdict(wheel.platforms, PROFILE)
        assert isinstance(ok, bool) and isinstance(why, str) and why
    ok, why = platform_verdict(tuple(text.split(".")[:4]), PROFILE)
    assert isinstance(ok, bool) and why
    build = builds.build_of_version(text)
    assert build is None or isinstance(build, builds.CudaBuild)
    build = builds.build_of_index(text)
    assert build is None or isinstance(build, builds.CudaBuild)
    builds.ngc_release(text)
    builds.cuda_from_tag(text)
    builds.distribution_cuda_major(Package(name=text.lower()[:40] or "x", version=text[:20] or None))
    builds.pypi_torch_build(text[:30], text[30:50] or None, "aarch64")


if __name__ == "__main__":
    main("wheel_tags", target, (), [], EXTRA, max_len=512)
