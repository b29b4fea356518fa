"""Generated knowledge: wheels.toml is exactly what scripts/gen_knowledge.py makes from the recorded raw answers."""

from __future__ import annotations

import copy
import importlib.util
import json
import sys
from types import ModuleType
from typing import Any

import pytest
from conftest import REPO

from envcheck.knowledge import wheels


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_knowledge", REPO / "scripts" / "gen_knowledge.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_knowledge"] = module
    spec.loader.exec_module(module)
    return module


def _raw() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((REPO / "knowledge" / "raw" / "pypi.json").read_text(encoding="utf-8"))
    return data


def test_the_shipped_table_is_what_the_generator_makes_from_the_recorded_data() -> None:
    shipped = (REPO / "envcheck" / "knowledge" / "wheels.toml").read_text(encoding="utf-8")
    assert _generator().generate(_raw()) == shipped, "run: python3 scripts/gen_knowledge.py"


def test_every_row_names_its_source_url_and_the_day_it_was_recorded() -> None:
    day = _raw()["fetched"]
    for rel in (r for rels in wheels._table().values() for r in rels):
        assert rel.source.startswith("https://pypi.org/pypi/"), rel
        assert rel.checked == day


def test_the_table_answers_the_questions_the_checks_ask() -> None:
    assert [wheels.release(p, v).torch for p, v in (("torchvision", "0.24.0"), ("torchaudio", "2.9.1"), ("vllm", "0.11.2"))] \
        == ["==2.9.0", "==2.9.1", "==2.9.0"]  # type: ignore[union-attr]
    assert wheels.aarch64_cuda("vllm", "0.11.2") == "12"  # PyPI's aarch64 vLLM of the torch 2.9 era: CUDA 12 (G1)
    assert wheels.aarch64_cuda("vllm", "0.34.0") == "13"  # read from the wheel's own shared objects
    assert wheels.aarch64_cuda("torchvision", "0.24.1") == "none"  # beside PyPI's CPU-only aarch64 torch 2.9.1
    assert wheels.aarch64_cuda("torch", "2.14.1") == "13"
    assert [wheels.release(p).aarch64 for p in ("flash-attn", "xformers", "vllm", "torch")] == ["sdist", "sdist", "wheel", "wheel"]  # type: ignore[union-attr]
    assert wheels.cpu_only_on_aarch64("ctranslate2") is not None
    assert wheels.cpu_only_on_aarch64("onnxruntime-gpu") is None and wheels.cpu_only_on_aarch64("cupy-cuda13x") is None


def _mini(requires_aarch64: list[str], x86_record: dict[str, Any] | None) -> dict[str, Any]:
    url = "https://pypi.org/packages/x/"
    files = [["pkg-1.0-cp312-cp312-manylinux_2_28_aarch64.whl", url + "a.whl"], ["pkg-1.0-cp312-cp312-manylinux_2_28_x86_64.whl", url + "x.whl"]]
    raw: dict[str, Any] = {
        "fetched": "2026-01-02",
        "projects": {"pkg": {"url": "https://pypi.org/pypi/pkg/json", "latest": "1.0", "versions": {"1.0": {"uploaded": "2026-01-01", "files": files}}}},
        "metadata": {files[0][0]: {"url": url + "a.whl.metadata", "requires": requires_aarch64}},
        "records": {files[0][0]: {"url": url + "a.whl", "cuda_libraries": [], "cuda_sonames_named": [], "cuda_code_in": []}},
    }
    if x86_record is not None:
        raw["records"][files[1][0]] = {"url": url + "x.whl", "cuda_libraries": [], **x86_record}
    return raw


@pytest.mark.parametrize(("requires", "x86", "expected"), [
    # a requirement gated on platform_machine == 'x86_64' says nothing about the aarch64 wheel
    (['nvidia-cuda-runtime-cu12==12.8.90; platform_system == "Linux" and platform_machine == "x86_64"'], None, None),
    (['cuda-toolkit[cudart]==13.0.3; platform_system == "Linux"'], None, "13"),
    # "no CUDA on aarch64" is claimed only beside an x86_64 wheel that has GPU code (cupy loads CUDA at run time)
    ([], {"cuda_sonames_named": [], "cuda_code_in": []}, None),
    ([], {"cuda_sonames_named": ["libcublas.so.12"], "cuda_code_in": []}, "none"),
])
def test_cuda_of_an_aarch64_wheel_is_claimed_only_where_the_record_shows_it(requires: list[str], x86: dict[str, Any] | None,
                                                                             expected: str | None) -> None:
    text = _generator().generate(copy.deepcopy(_mini(requires, x86)))
    line = next((x for x in text.splitlines() if x.startswith("aarch64_cuda")), None)
    assert (line.split('"')[1] if line else None) == expected


def test_the_hand_kept_torch_pins_agree_with_what_the_releases_declare() -> None:
    """pins.toml's torch rows for torchvision/xformers/vllm say what the recorded Requires-Dist of each release says."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    from envcheck import knowledge

    checked = 0
    for row in knowledge.load("pins")["pin"]:
        if row["requires"] != "torch" or not wheels.known(row["package"]):
            continue
        when = SpecifierSet(row["when"], prereleases=True)
        for rel in wheels.releases(row["package"]):
            if rel.torch is None or Version(rel.version) not in when:
                continue
            checked += 1
            if rel.torch.startswith("==") and "*" not in rel.torch:
                assert Version(rel.torch[2:]) in SpecifierSet(row["spec"], prereleases=True), (row, rel)
            else:
                assert SpecifierSet(rel.torch) == SpecifierSet(row["spec"]), (row, rel)
    assert checked >= 10


def test_ngc_pytorch_rows_agree_with_the_quoted_release_notes() -> None:
    """Each release note quoted in knowledge/raw/ngc_release_notes.json: ngc_tags.toml's row has its torch and CUDA."""
    import re

    from envcheck import knowledge

    notes = json.loads((REPO / "knowledge" / "raw" / "ngc_release_notes.json").read_text(encoding="utf-8"))["releases"]
    rows = {row["tag"]: row for row in knowledge.load("ngc_tags")["pytorch"]}
    assert notes
    for note in notes:
        assert note["url"].startswith("https://docs.nvidia.com/") and note["read"]
        cuda = re.search(r"based on CUDA (\d+\.\d+)", note["quotes"]["cuda"])
        torch = re.search(r"is based on (\S+?)\s*\.?$", note["quotes"]["torch"])
        assert cuda and torch, note
        row = rows[note["tag"]]
        assert row["cuda"] == cuda.group(1), (row, note)
        assert row["torch"].startswith(torch.group(1)), (row, note)
