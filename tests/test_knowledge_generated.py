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
    raw = _raw()  # a project recorded on its own (--fetch-platform NAME) carries its own day
    for rel in (r for rels in wheels._table().values() for r in rels):
        assert rel.source.startswith("https://pypi.org/pypi/"), rel
        assert rel.checked == raw["projects"][rel.package].get("fetched", raw["fetched"]), rel


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


def _old_sdist(name: str, version: str, requires_txt: str) -> Any:
    """A real source archive of the setuptools era: PKG-INFO without Requires-Dist, egg-info/requires.txt with them."""
    import io
    import tarfile

    from package_index import Dist, metadata_text

    base = f"{name}-{version}"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for member, data in ((f"{base}/PKG-INFO", metadata_text(name, version)),
                             (f"{base}/{name}.egg-info/requires.txt", requires_txt.encode())):
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return Dist(f"{base}.tar.gz", buf.getvalue())


def test_a_release_without_wheels_is_read_from_its_source_archive_within_a_bound() -> None:
    """audiocraft publishes only sdists: their PKG-INFO (or the egg-info requires.txt, extras left out) gives each
    release's torch/torchvision/torchaudio pins, which become its row; a larger archive is an error, not read."""
    import requests
    from package_index import PackageIndex, build_sdist, serve

    gen = _generator()
    index = PackageIndex()
    new = build_sdist("audiocraft", "1.3.0", ("torch==2.1.0", "torchaudio<2.1.2,>=2.0.0", "torchvision==0.16.0", "numpy"))
    old = _old_sdist("audiocraft", "1.0.0", "torch>=2.0.0\ntorchaudio>=2.0.0\nnumpy\n\n[dev]\ntorch==1.13\n")
    index.add("audiocraft", new, old)
    served = serve(index)
    next(served)
    try:
        session = requests.Session()
        got = {d.filename: gen._sdist_requires(session, [[d.filename, index.file_url(d.filename)]]) for d in (new, old)}
        assert got[new.filename]["requires"] == ["torch==2.1.0", "torchaudio<2.1.2,>=2.0.0", "torchvision==0.16.0"]
        assert got[new.filename]["url"].endswith("(audiocraft-1.3.0/PKG-INFO)")
        assert got[old.filename]["requires"] == ["torch>=2.0.0", "torchaudio>=2.0.0"]
        gen.SDIST_BYTES = len(new.data) - 1
        assert "larger than" in gen._sdist_requires(session, [[new.filename, index.file_url(new.filename)]])["error"]
    finally:
        served.close()
    raw: dict[str, Any] = {"fetched": "2026-01-02", "metadata": {
        f"audiocraft-{v} (release)": got[d.filename] for v, d in (("1.3.0", new), ("1.0.0", old))}, "records": {},
        "projects": {"audiocraft": {"url": "https://pypi.org/pypi/audiocraft/json", "latest": "1.3.0", "versions": {
            v: {"uploaded": "2024-06-03", "files": [[d.filename, "https://files.example/" + d.filename]]}
            for v, d in (("1.3.0", new), ("1.0.0", old))}}}}
    rows = gen.generate(raw).split("[[wheel]]")[1:]
    assert [x for x in rows[0].splitlines() if x.startswith("torch")] == ['torch = ">=2.0.0"', 'torchaudio = ">=2.0.0"']
    assert [x for x in rows[1].splitlines() if x.startswith("torch")] == \
        ['torch = "==2.1.0"', 'torchvision = "==0.16.0"', 'torchaudio = "<2.1.2,>=2.0.0"']
