"""`envcheck --resolve` against hostile package indexes, file hosts and locks (issue 25), one test per class.

The index is the suite's loopback index (tests/package_index.py) with its fault switches; the wheels are real
zip files, built here where the class needs a malformed one (a directory of 2 million entries, deflate bombs).
"""

from __future__ import annotations

import io
import json
import shutil
import struct
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bounded import run_envcheck_bounded
from conftest import require
from package_index import AARCH64, BINARIES, Dist, PackageIndex, build_wheel, serve, standard_index
from test_resolve import _env, _findings, _pylock, _resolve, _resolved, _status

UV = shutil.which("uv")


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
    code, target, _ = _resolve(tmp_path, uv_cache, index.url, text, name="pylock.toml")
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
    _, target, _ = _resolve(tmp_path, uv_cache, index.url, honest, name="pylock.toml")
    assert "FAIL" in _status(target, "G1-binary-soname"), target["findings"]
    assert "cache" not in _resolved(target)["cuda12ext"]["sources"]
    # the honest run's facts are cached and used again, under its own URL
    _, warm, _ = _resolve(tmp_path, uv_cache, index.url, honest, "--offline", name="pylock.toml")
    assert _resolved(warm)["cuda12ext"]["sources"] == ["lock file", "cache"]
    assert "FAIL" in _status(warm, "G1-binary-soname")


def test_index_metadata_is_used_only_with_its_announced_hash(index: PackageIndex) -> None:
    """A PEP 658 metadata file whose hash differs from the one its page announces is refused; without an
    announced hash, Requires-Dist comes from the wheel itself, never from a separate file nothing vouches for."""
    from envcheck.resolution import read_remote_wheel
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
    from envcheck.resolution import facts_table

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


# ------------------------------------------------------------------------------ 13-15: zip directories and deflate bombs

def _huge_directory_wheel(entries: int, claimed: int | None = None) -> bytes:
    """A zip of one empty member listed ``entries`` times in its central directory; the end record claims
    ``claimed`` entries (default: the truth, saturated at 65535 as a zip without zip64 records must)."""
    local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 0, 0, 0, 0, 0, 0, 1, 0) + b"a"
    entry = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0) + b"a"
    directory = entry * entries
    count = min(entries if claimed is None else claimed, 0xFFFF)
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, count, count, len(directory), len(local), 0)
    return local + directory + end


def _bomb_wheel(name: str, inflated: int, copies: int = 1) -> Dist:
    """A wheel whose ELF member is a real library padded with zeros to ``inflated`` bytes (about 1000:1), listed
    ``copies`` times in the directory (overlapping entries: one compressed stream, many members)."""
    elf = (BINARIES / "libext_cuda12.so").read_bytes()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(f"{name}-1.0.dist-info/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n\n")
        zf.writestr(f"{name}/_C.so", elf + bytes(inflated - len(elf)))
        zf.writestr(f"{name}-1.0.dist-info/WHEEL", f"Wheel-Version: 1.0\nTag: {AARCH64}\n")
    data = buf.getvalue()
    if copies > 1:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            start = zf.start_dir
        at = data.rindex(b"PK\x05\x06")
        directory = data[start:at]
        member = directory.index(f"{name}/_C.so".encode()) - 46
        one = directory[member:member + 46 + len(f"{name}/_C.so")]
        directory = directory + one * (copies - 1)
        total = len(zipfile.ZipFile(io.BytesIO(data)).infolist()) + copies - 1
        data = data[:start] + directory + struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, total, total, len(directory), start, 0)
    return Dist(f"{name}-1.0-{AARCH64}.whl", data)


def _lock_for(dist: Dist, url: str) -> str:
    return ('lock-version = "1.0"\ncreated-by = "test"\n\n[[packages]]\n'
            f'name = "{dist.filename.split("-")[0]}"\nversion = "1.0"\n'
            f'wheels = [{{ url = "{url}", size = {len(dist.data)}, hashes = {{ sha256 = "{dist.sha256}" }} }}]\n')


def _bounded_resolve(tmp_path: Path, uv_cache: Path, served: PackageIndex, dist: Dist, *args: str) -> tuple[Any, dict[str, Any]]:
    lock = tmp_path / "pylock.toml"
    lock.write_text(_lock_for(dist, served.file_url(dist.filename)))
    run = run_envcheck_bounded("--resolve", "--index-url", served.url, "-f", "json", "--fail-on", "never", "--no-cache", *args,
                               str(lock), env=_env(tmp_path, uv_cache), kill_after=90)
    run.assert_within(seconds=10, rss_mb=300)
    return run, json.loads(run.stdout)["targets"][0]


def test_remote_wheel_with_two_million_directory_entries_is_refused_before_parsing(tmp_path: Path, uv_cache: Path) -> None:
    idx = PackageIndex()
    dist = Dist(f"flood-1.0-{AARCH64}.whl", _huge_directory_wheel(2_000_000))
    idx.add("flood", dist)
    for served in serve(idx):
        _, target = _bounded_resolve(tmp_path, uv_cache, served, dist)
        errors = [f["message"] for f in _findings(target, "input-error")]
        assert any("central directory" in m and "100000 entries" in m for m in errors), target["findings"]
        assert served.bytes_sent < 1 << 20  # the directory itself was never downloaded


def test_local_wheel_whose_directory_lies_about_its_size_is_refused(tmp_path: Path) -> None:
    wheel = tmp_path / f"liar-1.0-{AARCH64}.whl"
    wheel.write_bytes(_huge_directory_wheel(600_000, claimed=3))  # 28 MiB of entries; the end record says 3
    run = run_envcheck_bounded("-f", "json", "--no-cache", str(wheel), kill_after=90)
    run.assert_within(seconds=10, rss_mb=300)
    assert run.returncode == 2 and "more than 100000 entries" in run.stdout, run.describe()


@pytest.mark.parametrize("copies", [1, 40])
def test_remote_deflate_bombs_meet_the_same_expansion_limit_as_local_wheels(tmp_path: Path, uv_cache: Path, copies: int) -> None:
    idx = PackageIndex()
    dist = _bomb_wheel("bomb", (64 << 20) if copies == 1 else (12 << 20), copies)
    idx.add("bomb", dist)
    local = tmp_path / dist.filename
    local.write_bytes(dist.data)
    for served in serve(idx):
        _, target = _bounded_resolve(tmp_path, uv_cache, served, dist)
        refused = [f["message"] for f in _findings(target, "input-error") if "expansion limit" in f["message"]]
        assert refused and all("--max-expansion" in m for m in refused), target["findings"]
        assert len(refused) == 1, refused  # one finding per member name (the copies share one)
        if copies == 1:
            # the same file as a local wheel is refused by the same rule
            run = run_envcheck_bounded("-f", "json", "--no-cache", str(local), kill_after=90)
            assert "expansion limit" in run.stdout and run.returncode == 2
            # --max-expansion moves both: with a higher limit the member is read and judged
            _, raised = _bounded_resolve(tmp_path, uv_cache, served, dist, "--max-expansion", "5000")
            assert not [f for f in _findings(raised, "input-error") if "expansion limit" in f["message"]]
            assert "FAIL" in _status(raised, "G1-binary-soname")


# ------------------------------------------------------------------------------ 9-10: slow hosts

THREE = ("cleanext-1.0-py3-none-manylinux_2_28_aarch64.whl", "cuda12ext-1.0-py3-none-manylinux_2_28_aarch64.whl",
         "sm80ext-1.0-py3-none-manylinux_2_28_aarch64.whl")


@pytest.mark.parametrize("where", ["headers", "body"])
def test_a_slowloris_host_costs_one_deadline_per_run(tmp_path: Path, uv_cache: Path, where: str) -> None:
    """The deadline covers connecting, the headers and the body; a host that let it pass is not asked again."""
    for served in serve(standard_index()):
        setattr(served, f"drip_{where}", 0.2)
        lock = tmp_path / "pylock.toml"
        lock.write_text(_pylock(served, *THREE))
        run = run_envcheck_bounded("--resolve", "-f", "json", "--fail-on", "never", "--no-cache", str(lock),
                                   env=_env(tmp_path, uv_cache, ENVCHECK_HTTP_TIMEOUT="2"), kill_after=90)
        run.assert_within(seconds=10, rss_mb=300, wall_slack=1.0)
        target = json.loads(run.stdout)["targets"][0]
        errors = [f["message"] for f in _findings(target, "service-error")]
        assert run.returncode == 3 and len(errors) == 3, target["findings"]
        assert sum("within 2 s" in m and "not asked" not in m for m in errors) == 1, errors
        assert sum("not asked" in m for m in errors) == 2, errors
        assert len([r for r in served.requests if r.startswith("GET /files/")]) == 1


def test_the_run_deadline_bounds_every_index_read_together(tmp_path: Path, uv_cache: Path) -> None:
    for served in serve(standard_index()):
        served.drip_headers = 0.2
        lock = tmp_path / "pylock.toml"
        lock.write_text(_pylock(served, *THREE))
        run = run_envcheck_bounded("--resolve", "-f", "json", "--fail-on", "never", "--no-cache", str(lock),
                                   env=_env(tmp_path, uv_cache, ENVCHECK_HTTP_TIMEOUT="60", ENVCHECK_RESOLVE_TIMEOUT="2"),
                                   kill_after=90)
        run.assert_within(seconds=10, rss_mb=300, wall_slack=1.0)
        assert run.returncode == 3 and "ENVCHECK_RESOLVE_TIMEOUT=2 s" in run.stdout, run.describe()


# ------------------------------------------------------------------------------ 11-12: uv against hostile indexes

def _uv_env(tmp_path: Path, uv_cache: Path, **extra: str) -> dict[str, str]:
    """The suite's environment without its own uv timeouts: envcheck's are the ones passed down."""
    return _env(tmp_path, uv_cache, UV_HTTP_TIMEOUT="", UV_HTTP_RETRIES="", UV_CACHE_DIR=str(tmp_path / "uv"), **extra)


def test_uv_against_a_slow_index_gets_our_deadlines(tmp_path: Path) -> None:
    require(UV is not None, "uv is not installed (pip install 'envcheck[resolve]')")
    for served in serve(standard_index()):
        served.delay = 120.0
        (tmp_path / "requirements.txt").write_text("cleanext==1.0\n")
        run = run_envcheck_bounded("--resolve", "--index-url", served.url, "-f", "json", "--fail-on", "never", "--no-cache",
                                   str(tmp_path / "requirements.txt"),
                                   env=_uv_env(tmp_path, tmp_path, ENVCHECK_HTTP_TIMEOUT="2"), kill_after=90)
        run.assert_within(seconds=10, rss_mb=300, wall_slack=1.5)
        assert run.returncode == 3, run.describe()
        # a Dockerfile's RUN lines share the run's deadline: N installs never cost N times uv's wait
        runs = "".join(f"RUN pip install --index-url {served.url} cleanext=={v}\n" for v in ("1.0", "1.1", "1.2", "1.3"))
        (tmp_path / "Dockerfile").write_text("FROM nvcr.io/nvidia/pytorch:25.09-py3\n" + runs)
        run = run_envcheck_bounded("--resolve", "-f", "json", "--fail-on", "never", "--no-cache", str(tmp_path / "Dockerfile"),
                                   env=_uv_env(tmp_path, tmp_path, ENVCHECK_HTTP_TIMEOUT="60", ENVCHECK_RESOLVE_TIMEOUT="3"),
                                   kill_after=90)
        run.assert_within(seconds=10, rss_mb=300, wall_slack=1.0)
        target = json.loads(run.stdout)["targets"][0]
        errors = [f["message"] for f in _findings(target, "service-error")]
        assert run.returncode == 3 and len(errors) == 4 and all("ENVCHECK_RESOLVE_TIMEOUT=3 s" in m for m in errors), errors


def test_uv_against_an_endless_index_page_is_stopped_at_its_memory_limit(tmp_path: Path) -> None:
    require(UV is not None, "uv is not installed (pip install 'envcheck[resolve]')")
    for served in serve(standard_index()):
        served.endless_pages = True
        (tmp_path / "requirements.txt").write_text("cleanext==1.0\n")
        run = run_envcheck_bounded("--resolve", "--index-url", served.url, "-f", "json", "--fail-on", "never", "--no-cache",
                                   str(tmp_path / "requirements.txt"),
                                   env=_uv_env(tmp_path, tmp_path, ENVCHECK_UV_MEMORY="200MiB"), kill_after=90)
        run.assert_within(seconds=20, rss_mb=500)
        target = json.loads(run.stdout)["targets"][0]
        errors = [f["message"] for f in _findings(target, "service-error")]
        assert run.returncode == 3 and any("more than 200 MiB" in m and "ENVCHECK_UV_MEMORY" in m for m in errors), run.describe()


# ------------------------------------------------------------------------------ 17: a private index with credentials

def test_a_private_index_s_credentials_serve_envcheck_s_own_reads_never_shown(tmp_path: Path) -> None:
    require(UV is not None, "uv is not installed (pip install 'envcheck[resolve]')")
    for served in serve(standard_index()):
        served.auth = ("alice", "s3cr3t-pw")
        private = served.url.replace("http://", "http://alice:s3cr3t-pw@")
        cache = tmp_path / "cache"
        code, target, out = _resolve(tmp_path, tmp_path / "uv", private, "cuda12ext==1.0\n", "-v", env=_uv_env(tmp_path, tmp_path))
        assert code == 0, target["findings"]  # --fail-on never: no service error, nothing unread
        assert "FAIL" in _status(target, "G1-binary-soname"), target["findings"]
        assert {"wheel metadata", "range read"} <= set(_resolved(target)["cuda12ext"]["sources"])
        assert "s3cr3t-pw" not in out and "alice" not in out
        for path in cache.rglob("*"):
            if path.is_file():
                assert b"s3cr3t-pw" not in path.read_bytes(), path


# ------------------------------------------------------------------------------ issue 26, 3: no flood

def _cubin(sm: int) -> bytes:
    """A standalone cubin as nvcc -cubin writes its header: ELF64, e_machine 190 (CUDA), ABI 7, the SM in e_flags."""
    ident = b"\x7fELF" + bytes([2, 1, 1, 0x33, 7]) + bytes(7)
    return ident + struct.pack("<HHIQQQIHHHHHH", 2, 190, 1, 0, 0, 0, sm, 64, 56, 0, 64, 0, 0) + bytes(64)


def test_many_binaries_of_one_package_are_one_finding_per_cause(tmp_path: Path, uv_cache: Path) -> None:
    idx = PackageIndex()
    kernels = {f"kernels/cubins/sm{sm}/k{n}.cubin": _cubin(sm) for n in range(150) for sm in (90, 100)}
    kernels |= {"kernels/_a.so": (BINARIES / "gpu_sm80.so").read_bytes(), "kernels/_b.so": (BINARIES / "gpu_sm80.so").read_bytes()}
    picked = {f"picked/cubins/sm{sm}/k{n}.cubin": _cubin(sm) for n in range(20) for sm in (90, 121)}
    wheels = [build_wheel("kernels", "1.0", (), kernels, stored=tuple(kernels)), build_wheel("picked", "1.0", (), picked)]
    for wheel in wheels:
        idx.add(wheel.filename.split("-")[0], wheel)
    for served in serve(idx):
        lock = tmp_path / "pylock.toml"
        lock.write_text(_pylock(served, *(w.filename for w in wheels)))
        run = run_envcheck_bounded("--resolve", "-f", "json", "--no-cache", str(lock), env=_env(tmp_path, uv_cache), kill_after=90)
        run.assert_within(seconds=10, rss_mb=300)
        target = json.loads(run.stdout)["targets"][0]
        g7 = [f for f in _findings(target, "G7-binary-no-sm121") if f["status"] != "PASS"]
        by = {(f["evidence"].get("distribution"), f["status"]): f for f in g7}
        assert len(g7) == 3, [(f["status"], f["message"]) for f in g7]
        fail = by[("kernels", "FAIL")]
        assert fail["evidence"]["count"] == 2 and "_a.so" in " ".join(fail["evidence"]["binaries"])
        warn = by[("kernels", "WARN")]
        assert "none for sm_121" in warn["message"] and warn["evidence"]["count"] == 200  # the cubins read
        assert ("picked", "INFO") in by
        notes = [f["message"] for f in target["findings"] if f["rule"] == "input-skipped"]
        assert any("100 of its 300 per-kernel cubins were not read" in m for m in notes), notes
        assert not _findings(target, "input-error") and run.returncode == 1, run.describe()
