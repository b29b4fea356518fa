"""`envcheck --resolve` against hostile package indexes, file hosts and locks (issue 25), one test per class.

The index is the suite's loopback index (tests/package_index.py) with its fault switches; the wheels are real
zip files, built here where the class needs a malformed one (a directory of 2 million entries, deflate bombs).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from package_index import PackageIndex, build_wheel, serve, standard_index
from test_resolve import _findings, _pylock, _resolve, _resolved, _status


@pytest.fixture(scope="module")
def uv_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("uv-cache")


@pytest.fixture(scope="module")
def index() -> Iterator[PackageIndex]:
    yield from serve(standard_index())


def _line_of(text: str, needle: str) -> int:
    return text[:text.index(needle)].count("\n") + 1


# ------------------------------------------------------------------------------ 1: a claimed hash is never a path

@pytest.mark.parametrize("claimed", ["{outside}/owned", "../../../owned", "ab" * 31 + "/..", "A" * 64 + "\n"])
def test_a_lock_hash_that_is_not_a_sha256_is_an_input_error_and_writes_nothing(
        tmp_path: Path, uv_cache: Path, index: PackageIndex, claimed: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    claimed = claimed.format(outside=outside)
    good = index.file("cuda12ext-1.0-py3-none-manylinux_2_28_aarch64.whl")
    assert good is not None
    text = _pylock(index, good.filename, "cleanext-1.0-py3-none-manylinux_2_28_aarch64.whl").replace(good.sha256, json.dumps(claimed)[1:-1])
    cache = tmp_path / "cache"
    code, target, out = _resolve(tmp_path, uv_cache, index.url, text, name="pylock.toml")
    errors = [f for f in _findings(target, "input-error") if "64 hexadecimal digits" in f["message"]]
    assert code == 2 and len(errors) == 1, target["findings"]
    assert errors[0]["location"]["line"] == _line_of(text, "wheels = ")  # the hostile entry's hash
    assert "cuda12ext" in errors[0]["message"]
    assert "\n" not in errors[0]["message"]
    # the other entry is still judged, the hostile one is not read at all
    assert _resolved(target)["cleanext"]["sources"] != ["lock file"]
    assert not [b for b in target["inventory"].get("binaries", []) if "cuda12ext" in b["location"]["path"]]
    # nothing written outside the cache folder, nothing named after the claim inside it
    assert list(outside.iterdir()) == []
    assert not (tmp_path.parent / "owned.json").exists() and not (tmp_path / "owned.json").exists()
    written = [p for p in cache.rglob("*") if p.is_file()] if cache.exists() else []
    assert all(p.resolve().is_relative_to(cache.resolve()) for p in written)
    assert all(len(p.stem) == 64 for p in written if p.parent.parent.name.startswith("files-"))


# ------------------------------------------------------------------------------ 2: no poisoned cache

def test_a_hash_paired_with_another_files_url_never_poisons_a_later_honest_run(
        tmp_path: Path, uv_cache: Path, index: PackageIndex) -> None:
    cuda12 = index.file("cuda12ext-1.0-py3-none-manylinux_2_28_aarch64.whl")
    clean = index.file("cleanext-1.0-py3-none-manylinux_2_28_aarch64.whl")
    assert cuda12 is not None and clean is not None
    honest = _pylock(index, cuda12.filename)
    # the hostile lock: the CUDA 12 wheel's hash and size, the clean wheel's URL
    hostile = honest.replace(index.file_url(cuda12.filename), index.file_url(clean.filename))
    _, poisoned, _ = _resolve(tmp_path, uv_cache, index.url, hostile, name="pylock.toml")
    assert "FAIL" not in _status(poisoned, "G1-binary-soname")  # it read the clean file, as its URL says
    code, target, _ = _resolve(tmp_path, uv_cache, index.url, honest, name="pylock.toml", env={"ENVCHECK_HTTP_TIMEOUT": "10"})
    assert "FAIL" in _status(target, "G1-binary-soname"), target["findings"]
    assert "cache" not in _resolved(target)["cuda12ext"]["sources"]
    # the honest run's facts are cached and used again, under its own URL
    _, warm, _ = _resolve(tmp_path, uv_cache, index.url, honest, "--offline", name="pylock.toml")
    assert _resolved(warm)["cuda12ext"]["sources"] == ["lock file", "cache"]
    assert "FAIL" in _status(warm, "G1-binary-soname")


def test_index_metadata_is_used_only_with_its_announced_hash(index: PackageIndex) -> None:
    """A PEP 658 metadata file whose hash differs from the one its page announces is refused; without an
    announced hash, Requires-Dist comes from the wheel itself, never from a separate file nothing vouches for."""
    from envcheck.resolve import read_remote_wheel
    from envcheck.services.package_index import FileProblem, IndexClient

    idx = standard_index()
    wheel = build_wheel("liar", "1.0", ("real-dep>=1",), tag="py3-none-any")
    wheel.metadata = b"Metadata-Version: 2.1\nName: liar\nVersion: 1.0\nRequires-Dist: harmless\n\n"
    idx.add("liar", wheel)
    for served in serve(idx):
        client = IndexClient()
        facts = read_remote_wheel(client, served.file_url(wheel.filename), len(wheel.data), wheel.sha256)
        assert facts.requires == ("real-dep>=1",) and "wheel metadata" in facts.sources
        assert not any(r.endswith(".metadata") for r in served.requests)
        listed = next(f for f in client.project_files(served.url, "liar"))
        assert listed.metadata_sha256  # the page announces the served file's hash: it matches
        facts = read_remote_wheel(client, listed.url, listed.size, listed.sha256, listed.metadata_sha256)
        assert facts.requires == ("harmless",) and "index metadata" in facts.sources
        with pytest.raises(FileProblem, match="sha256 does not match"):
            read_remote_wheel(client, listed.url, listed.size, listed.sha256, "0" * 64)


def test_the_shipped_facts_table_wins_over_a_cache_entry(tmp_path: Path, uv_cache: Path, index: PackageIndex) -> None:
    from envcheck.resolve import facts_table

    sha, row = next(iter(facts_table().items()))
    cache = tmp_path / "cache"
    entry = cache / "files-v2" / sha[:2] / f"{sha}.json"
    entry.parent.mkdir(parents=True)
    entry.write_text(json.dumps({"format": 2, "requires": ["poisoned"], "tags": [], "binaries": [], "problems": []}))
    filename = row.get("filename") or "torch-2.14.1-cp312-cp312-manylinux_2_28_aarch64.whl"
    text = ('lock-version = "1.0"\ncreated-by = "test"\n\n[[packages]]\nname = "torch"\nversion = "2.14.1"\n'
            f'wheels = [{{ url = "{index.file_url(filename)}", size = 1, hashes = {{ sha256 = "{sha}" }} }}]\n')
    _, target, _ = _resolve(tmp_path, uv_cache, index.url, text, "--offline", name="pylock.toml")
    assert "facts table" in _resolved(target)["torch"]["sources"]
    pkg = next(p for p in target["inventory"]["packages"] if p.get("role") == "resolved")
    assert "poisoned" not in (pkg.get("requires") or [])
