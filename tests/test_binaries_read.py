"""Reading ELF files, folders and wheels: real gcc/nvcc-built fixtures, malformed variants of them, and
the checks (G1, G7, ARCH) run over what was read."""

from __future__ import annotations

import io
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO, require, run_envcheck
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile

from envcheck import engine
from envcheck.config import Config, RunOptions
from envcheck.inspect import fatbin
from envcheck.inspect.elf import BytesSource, FileSource
from envcheck.model import Binary, Inventory, Status
from envcheck.profile import load_profile
from envcheck.sources import ReadOptions
from envcheck.sources import binaries as binaries_source
from envcheck.sources import folder as folder_source
from envcheck.sources import walk as walk_source
from envcheck.sources import wheel as wheel_source
from envcheck.sources.binaries import UnreadableBinary, binary_from_file, read_binary
from envcheck.sources.folder import scan_folder, site_packages_of

BIN = FIXTURES / "binaries"
GPU_FIXTURES = sorted(p.name for p in BIN.glob("gpu_*.so"))
ALL_FIXTURES = sorted(p.name for p in BIN.iterdir() if p.is_file())
NO_CACHE = ReadOptions(use_cache=False)


def read_path(path: Path, deep: bool = False) -> binaries_source.BinaryReading:
    with path.open("rb") as fh:
        return read_binary(FileSource(fh, path.stat().st_size), str(path), deep_fatbin=deep)


def findings(inv: Inventory, kind: str = "folder", **options: bool) -> list:
    return engine.evaluate(inv, load_profile("dgx-spark"), kind, RunOptions(**options))


def pyelftools_facts(path: Path) -> tuple[str, str | None, tuple[str, ...], tuple[str, ...]]:
    """machine, soname, needed, runpath as pyelftools reads them (an independent reader)."""
    with path.open("rb") as fh:
        elf = ELFFile(fh)
        machine = {"EM_X86_64": "x86_64", "EM_AARCH64": "aarch64", "EM_386": "x86"}.get(elf["e_machine"], elf["e_machine"])
        soname, needed, runpath = None, [], []
        for section in elf.iter_sections():
            if isinstance(section, DynamicSection):
                for tag in section.iter_tags():
                    if tag.entry.d_tag == "DT_NEEDED":
                        needed.append(tag.needed)
                    elif tag.entry.d_tag == "DT_SONAME":
                        soname = tag.soname
                    elif tag.entry.d_tag in ("DT_RUNPATH", "DT_RPATH"):
                        runpath.extend(p for p in (tag.runpath if tag.entry.d_tag == "DT_RUNPATH" else tag.rpath).split(":") if p)
        return machine, soname, tuple(needed), tuple(runpath)


# ---- the checked-in fixtures and the script that makes them --------------------------------------------


@pytest.mark.parametrize("name", [n for n in ALL_FIXTURES if not n.endswith(".a")])
def test_dynamic_facts_agree_with_pyelftools(name: str) -> None:
    reading = read_path(BIN / name)
    assert reading.problems == []
    b = reading.binary
    assert b is not None
    assert (b.machine, b.soname, b.needed, b.runpath) == pyelftools_facts(BIN / name)


def test_cuda12_and_cuda13_consumers() -> None:
    b12 = read_path(BIN / "libext_cuda12.so").binary
    b13 = read_path(BIN / "libext_cuda13.so").binary
    assert b12 is not None and b13 is not None
    assert {"libcudart.so.12", "libcublas.so.12", "libnccl.so.2"} <= set(b12.needed)
    assert b12.cuda_major == 12
    assert b12.runpath == ("$ORIGIN/../lib",)
    # libcufft.so.12 is a CUDA 13 library; libnccl.so.2 says nothing
    assert b13.cuda_major == 13
    assert b12.sm121 is None and b12.sass == ()  # no GPU code at all


@pytest.mark.parametrize(("name", "sass", "ptx", "level"), [
    ("gpu_sm121.so", ("sm_121",), (), "native"),
    ("gpu_sm80.so", ("sm_80",), (), "none"),
    ("gpu_sm80_ptx.so", ("sm_80",), ("compute_80",), "ptx-jit"),
    ("gpu_sm120a.so", ("sm_120a",), (), "none"),
    ("gpu_sm120_121a.so", ("sm_120", "sm_121a"), (), "native"),
    ("gpu_rdc_sm80_ptx.so", ("sm_80",), ("compute_80",), "ptx-jit"),
])
def test_gpu_fixtures(name: str, sass: tuple[str, ...], ptx: tuple[str, ...], level: str) -> None:
    b = read_path(BIN / name).binary
    assert b is not None
    assert (b.sass, b.ptx, b.sm121) == (sass, ptx, level)
    assert "libcudart.so.13" in b.needed and b.cuda_major == 13
    assert b.bytes_read < b.size  # headers only


@pytest.mark.parametrize(("capability", "verdicts"), [
    ("12.1", {"gpu_sm121.so": "PASS", "gpu_sm80.so": "FAIL", "gpu_sm120a.so": "FAIL", "gpu_sm80_ptx.so": "WARN"}),
    ("8.0", {"gpu_sm121.so": "FAIL", "gpu_sm80.so": "PASS", "gpu_sm120a.so": "FAIL", "gpu_sm80_ptx.so": "PASS"}),
    ("12.0", {"gpu_sm121.so": "FAIL", "gpu_sm80.so": "FAIL", "gpu_sm120a.so": "PASS", "gpu_sm80_ptx.so": "WARN"}),
])
def test_gpu_code_is_judged_for_the_profile_gpu(tmp_path: Path, capability: str, verdicts: dict[str, str]) -> None:
    """G7 judges what a fatbin holds against the profile's compute capability, not the GB10's: the same real
    fatbins pass on a profile whose GPU they were built for and fail elsewhere (a loose file is its own cause)."""
    shipped = (REPO / "envcheck" / "profiles" / "dgx-spark.toml").read_text(encoding="utf-8")
    profile = tmp_path / "other-gpu.toml"
    profile.write_text(shipped.replace('compute_capability = "12.1"', f'compute_capability = "{capability}"'))
    folder = tmp_path / "lib"
    folder.mkdir()
    for name in verdicts:
        shutil.copy(BIN / name, folder / name)
    done = run_envcheck("-f", "json", "--no-cache", "--profile", str(profile), *(str(folder / n) for n in verdicts))
    assert "Traceback" not in done.stderr, done.stderr
    found: dict[str, set[str]] = {}
    for target in json.loads(done.stdout)["targets"]:
        statuses = {f["status"] for f in target["findings"] if f["rule"] in ("G7-binary-no-sm121", "G7-binary-ptx-only")}
        found[Path(target["target"]).name] = statuses - {"INFO"}
    assert found == {name: {status} for name, status in verdicts.items()}


def test_32_bit_elf() -> None:
    b = read_path(BIN / "libext32_cuda12.so").binary
    assert b is not None
    assert (b.machine, b.soname, b.needed, b.cuda_major) == ("x86", "libext32.so", ("libcudart.so.12",), 12)


def test_static_library_members() -> None:
    b = read_path(BIN / "gpu_static_sm121f.a").binary
    assert b is not None
    assert (b.elf_type, b.machine, b.sass, b.ptx, b.sm121) == ("AR", "x86_64", ("sm_121f",), ("compute_120",), "native")
    assert b.sections == ("__nv_relfatbin",) and not b.static_cudart


def test_rdc_ptx_lives_in_relfatbin() -> None:
    b = read_path(BIN / "gpu_rdc_sm80_ptx.so").binary
    assert b is not None
    assert set(b.sections) == {".nv_fatbin", "__nv_relfatbin"}


@pytest.fixture(scope="session")
def rebuilt_fixtures(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require(shutil.which("gcc") is not None, "gcc not on PATH")
    out = tmp_path_factory.mktemp("rebuilt")
    subprocess.run(["bash", str(FIXTURES / "build_binaries.sh"), str(out)], check=True, capture_output=True, timeout=600)
    return out


def test_build_script_reproduces_the_fixtures(rebuilt_fixtures: Path) -> None:
    names = sorted(p.name for p in rebuilt_fixtures.iterdir())
    if shutil.which("nvcc") is None:
        names = [n for n in names if not n.startswith("gpu_")]
    assert names
    for name in names:
        old, new = read_path(BIN / name).binary, read_path(rebuilt_fixtures / name).binary
        assert old is not None and new is not None
        fields = ("machine", "soname", "needed", "runpath", "cuda_major", "sass", "ptx", "sm121", "sections")
        assert [getattr(old, f) for f in fields] == [getattr(new, f) for f in fields], name


def test_binary_from_file_public_api(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("hello\n" * 10)
    with text.open("rb") as fh:
        assert binary_from_file(fh, str(text), text.stat().st_size) is None
    data = (BIN / "gpu_sm121.so").read_bytes()
    b = binary_from_file(io.BytesIO(data), "gpu_sm121.so", len(data))
    assert b is not None and b.sass == ("sm_121",)
    cut = data[:200]
    with pytest.raises(UnreadableBinary) as info:
        binary_from_file(io.BytesIO(cut), "cut.so", len(cut))
    assert info.value.problems and "cut.so" in info.value.problems[0].message


# ---- malformed input: an ERROR for that file, bounded work, the scan goes on ---------------------------


def _section(data: bytes, name: str) -> tuple[int, int, int]:
    """(section header offset, sh_offset, sh_size) of ``name`` found with pyelftools."""
    elf = ELFFile(io.BytesIO(data))
    for i, s in enumerate(elf.iter_sections()):
        if s.name == name:
            return elf["e_shoff"] + i * elf["e_shentsize"], s["sh_offset"], s["sh_size"]
    raise AssertionError(name)


def _malformed_variants() -> dict[str, bytes]:
    data = (BIN / "gpu_sm120_121a.so").read_bytes()
    shdr, fat_off, _fat_size = _section(data, ".nv_fatbin")
    out: dict[str, bytes] = {}
    out["truncated_in_header"] = data[:40]
    out["truncated_before_section_table"] = data[: len(data) - 200]
    out["truncated_in_fatbin"] = data[: fat_off + 100]
    lying = bytearray(data)
    struct.pack_into("<Q", lying, shdr + 32, 1 << 40)  # sh_size of .nv_fatbin: a terabyte
    out["section_size_lies"] = bytes(lying)
    fat_lies = bytearray(data)
    struct.pack_into("<Q", fat_lies, fat_off + 8, 1 << 50)  # container claims more than the section
    out["container_size_lies"] = bytes(fat_lies)
    zero_entry = bytearray(data)
    struct.pack_into("<I", zero_entry, fat_off + 16 + 4, 0)  # first entry header size 0: would loop forever
    out["entry_header_size_zero"] = bytes(zero_entry)
    loop_entry = bytearray(data)
    struct.pack_into("<Q", loop_entry, fat_off + 16 + 8, (1 << 64) - 64)  # payload size wraps around
    out["entry_payload_wraps"] = bytes(loop_entry)
    many = bytearray(data)
    struct.pack_into("<H", many, 0x3C, 0xFFFF)  # e_shnum
    out["section_count_lies"] = bytes(many)
    return out


MALFORMED = _malformed_variants()


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_binary_is_an_error_not_a_crash(tmp_path: Path, name: str) -> None:
    bad = tmp_path / f"{name}.so"
    bad.write_bytes(MALFORMED[name])
    start = time.perf_counter()
    reading = read_path(bad)
    assert time.perf_counter() - start < 5  # bounded (a loop or a terabyte read would not return)
    assert reading.problems, reading
    assert all(p.location is not None and p.location.path == str(bad) for p in reading.problems)
    assert any(p.location.offset is not None for p in reading.problems if p.location)


def test_folder_scan_goes_on_past_bad_files(tmp_path: Path) -> None:
    for name, data in MALFORMED.items():
        (tmp_path / f"{name}.so").write_bytes(data)
    shutil.copy(BIN / "gpu_sm121.so", tmp_path / "good.so")
    inv = scan_folder(tmp_path, NO_CACHE)
    assert any(b.path.endswith("good.so") and b.sass == ("sm_121",) for b in inv.binaries)
    bad_files = {Path(p.location.path).name for p in inv.problems if p.location}
    assert bad_files == {f"{n}.so" for n in MALFORMED}
    errors = [f for f in findings(inv) if f.status is Status.ERROR]
    assert {Path(f.location.path).name for f in errors} == bad_files


def test_cli_reports_error_and_exit_code_2_for_a_bad_binary(tmp_path: Path) -> None:
    bad = tmp_path / "truncated.so"
    bad.write_bytes(MALFORMED["truncated_in_fatbin"])
    proc = run_envcheck(str(bad), "--format", "json", env={"ENVCHECK_CACHE_DIR": str(tmp_path / "cache")})
    assert proc.returncode == 2, proc.stderr
    report = json.loads(proc.stdout)
    text = json.dumps(report)
    assert "ERROR" in text and "truncated.so" in text


# ---- wheels ---------------------------------------------------------------------------------------------


def make_wheel(folder: Path, name: str, members: dict[str, bytes], tag: str = "py3-none-manylinux_2_28_x86_64",
               requires: tuple[str, ...] = ()) -> Path:
    path = folder / f"{name}-1.0-{tag}.whl"
    dist = f"{name}-1.0.dist-info"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n" + "".join(f"Requires-Dist: {r}\n" for r in requires)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for member, data in members.items():
            zf.writestr(member, data)
        zf.writestr(f"{dist}/METADATA", meta)
        zf.writestr(f"{dist}/WHEEL", f"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: {tag}\n")
        zf.writestr(f"{dist}/RECORD", "")
    return path


COMPARED = ("machine", "elf_type", "soname", "needed", "runpath", "cuda_major", "sass", "ptx", "lto", "ptx_isa", "sm121", "sections", "static_cudart", "size")


def facts(b: Binary) -> tuple[object, ...]:
    return tuple(getattr(b, f) for f in COMPARED)


@pytest.mark.parametrize("in_memory", [16 << 20, 0], ids=["in-memory", "streamed"])
def test_wheel_members_read_like_files(tmp_path: Path, in_memory: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wheel_source, "IN_MEMORY", in_memory)  # 0: every member goes through the stream reader
    members = {f"pkg/lib/{n}": (BIN / n).read_bytes() for n in ALL_FIXTURES}
    members["pkg/__init__.py"] = b"# not a binary\n"
    whl = make_wheel(tmp_path, "pkg", members, requires=("numpy>=1.0",))
    inv = wheel_source.read(whl, NO_CACHE)
    assert inv.problems == []
    got = {Path(b.path).name: facts(b) for b in inv.binaries}
    want = {n: facts(read_path(BIN / n).binary) for n in ALL_FIXTURES}  # type: ignore[arg-type]
    assert got == want
    assert all(b.location is not None and b.location.member == b.path for b in inv.binaries)
    assert all(b.distribution == "pkg" for b in inv.binaries)
    [w] = inv.wheels
    assert (w.name, w.version, w.tags, w.requires) == ("pkg", "1.0", ("py3-none-manylinux_2_28_x86_64",), ("numpy>=1.0",))
    assert inv.packages[0].name == "pkg" and not inv.packages[0].installed


def test_wheel_member_claiming_100_gb(tmp_path: Path) -> None:
    good = (BIN / "gpu_sm121.so").read_bytes()
    whl = make_wheel(tmp_path, "bomb", {"bomb/lib/huge.so": good, "bomb/lib/good.so": good})
    raw = bytearray(whl.read_bytes())
    # Rewrite the central directory entry of huge.so: uncompressed size 0xFFFFFFFF plus a zip64 extra
    # field carrying 100 GB (what a zip with a 100 GB member looks like).
    name = b"bomb/lib/huge.so"
    at = raw.find(b"PK\x01\x02")
    while raw[at + 46 : at + 46 + len(name)] != name:
        at = raw.find(b"PK\x01\x02", at + 4)
    struct.pack_into("<I", raw, at + 24, 0xFFFFFFFF)
    extra = struct.pack("<HHQ", 1, 8, 100 << 30)
    name_len, extra_len = struct.unpack_from("<HH", raw, at + 28)
    insert_at = at + 46 + name_len
    raw[insert_at:insert_at] = extra
    struct.pack_into("<H", raw, at + 30, extra_len + len(extra))
    eocd = raw.rfind(b"PK\x05\x06")
    cd_size = struct.unpack_from("<I", raw, eocd + 12)[0]
    struct.pack_into("<I", raw, eocd + 12, cd_size + len(extra))
    whl.write_bytes(bytes(raw))
    with zipfile.ZipFile(whl) as zf:
        assert zf.getinfo("bomb/lib/huge.so").file_size == 100 << 30  # the zip really claims 100 GB
    start = time.perf_counter()
    inv = wheel_source.read(whl, NO_CACHE)
    assert time.perf_counter() - start < 10
    [problem] = inv.problems
    assert problem.location is not None and problem.location.member == "bomb/lib/huge.so"
    assert "claims" in problem.message
    assert [Path(b.path).name for b in inv.binaries] == ["good.so"]


def test_wheel_with_corrupt_member_data(tmp_path: Path) -> None:
    good = (BIN / "gpu_sm121.so").read_bytes()
    whl = make_wheel(tmp_path, "corrupt", {"c/lib/a.so": good, "c/lib/b.so": good})
    raw = bytearray(whl.read_bytes())
    with zipfile.ZipFile(whl) as zf:
        info = zf.getinfo("c/lib/a.so")
    start = info.header_offset + 30 + len(info.filename)
    for i in range(start + 200, start + 400):
        raw[i] ^= 0xA5
    whl.write_bytes(bytes(raw))
    inv = wheel_source.read(whl, NO_CACHE)
    assert [p.location.member for p in inv.problems if p.location] == ["c/lib/a.so"]
    assert [Path(b.path).name for b in inv.binaries] == ["b.so"]


# ---- folders: distributions, RECORD ownership, symlinks, cache ------------------------------------------


def make_site(root: Path, dist: str, files: dict[str, Path], requires: tuple[str, ...] = ()) -> None:
    """A site-packages layout: copied binaries plus a dist-info with METADATA and RECORD."""
    info = root / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    lines = []
    for rel, source in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, target)
        lines.append(f"{rel},,")
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n" + "".join(f"Requires-Dist: {r}\n" for r in requires))
    (info / "RECORD").write_text("\n".join(lines) + "\n")


def test_folder_maps_binaries_to_distributions_and_g1_fails(tmp_path: Path) -> None:
    make_site(tmp_path, "cuda12-ext", {"cuda12_ext/libext_cuda12.so": BIN / "libext_cuda12.so"}, ("numpy",))
    make_site(tmp_path, "cuda13-ext", {"cuda13_ext/libext_cuda13.so": BIN / "libext_cuda13.so"})
    inv = scan_folder(tmp_path, NO_CACHE)
    assert inv.context == "installed"
    assert {(p.name, p.version, p.installed, p.role, p.requires) for p in inv.packages} == {
        ("cuda12-ext", "1.0", True, "installed", ("numpy",)), ("cuda13-ext", "1.0", True, "installed", ())}
    owners = {Path(b.path).name: b.distribution for b in inv.binaries}
    assert owners == {"libext_cuda12.so": "cuda12-ext", "libext_cuda13.so": "cuda13-ext"}
    g1 = [f for f in findings(inv) if f.rule == "G1-binary-soname" and f.status is Status.FAIL]
    [fail] = g1  # one finding per binary, naming the binary, every CUDA 12 library and the distribution
    for part in ("libext_cuda12.so", "libcudart.so.12", "libcublas.so.12", "cuda12-ext"):
        assert part in fail.message
    assert "libnccl" not in fail.message  # says nothing about the CUDA major
    assert fail.evidence["distribution"] == "cuda12-ext"


def test_cuda13_only_folder_is_clean_for_g1(tmp_path: Path) -> None:
    make_site(tmp_path, "cuda13-ext", {"cuda13_ext/libext_cuda13.so": BIN / "libext_cuda13.so",
                                       "cuda13_ext/gpu_sm121.so": BIN / "gpu_sm121.so"})
    result = findings(scan_folder(tmp_path, NO_CACHE))
    g1 = [f for f in result if f.gotcha == "G1"]
    assert g1 and all(f.status in (Status.PASS, Status.INFO) for f in g1)
    assert any(f.rule == "G7-binary-no-sm121" and f.status is Status.PASS for f in result)


def test_multi_variant_package_is_judged_by_its_cuda13_variant(tmp_path: Path) -> None:
    make_site(tmp_path, "multi", {"multi/libmulti_cuda121.so": BIN / "libext_cuda12.so",
                                  "multi/libmulti_cuda130.so": BIN / "libext_cuda13.so"})
    g1 = [f for f in findings(scan_folder(tmp_path, NO_CACHE)) if f.rule == "G1-binary-soname"]
    assert [f.status for f in g1 if "cuda121" in f.message] == [Status.INFO]
    (tmp_path / "multi" / "libmulti_cuda130.so").unlink()
    g1 = [f for f in findings(scan_folder(tmp_path, NO_CACHE)) if f.rule == "G1-binary-soname"]
    assert [f.status for f in g1 if "cuda121" in f.message] == [Status.FAIL]


def test_g7_statuses(tmp_path: Path) -> None:
    for name in GPU_FIXTURES:
        shutil.copy(BIN / name, tmp_path / name)
    result = findings(scan_folder(tmp_path, NO_CACHE))
    by_file = {}
    for f in result:
        if f.rule in ("G7-binary-no-sm121", "G7-binary-ptx-only") and f.location:
            by_file[Path(f.location.path).name] = f.status
    assert by_file == {"gpu_sm80.so": Status.FAIL, "gpu_sm120a.so": Status.FAIL,
                       "gpu_sm80_ptx.so": Status.WARN, "gpu_rdc_sm80_ptx.so": Status.WARN}
    sm121a = [f for f in result if f.rule == "G7-binary-sm121a"]
    assert [f.status for f in sm121a] == [Status.INFO] and "1 binaries" in sm121a[0].message
    (tmp_path / "gpu_sm120_121a.so").unlink()
    nvfp4 = [f for f in findings(scan_folder(tmp_path, NO_CACHE), nvfp4=True) if f.rule == "G7-binary-sm121a"]
    assert [f.status for f in nvfp4] == [Status.WARN]


def test_arch_rule_on_elf_machine(tmp_path: Path) -> None:
    shutil.copy(BIN / "libext_cuda13.so", tmp_path / "x86.so")
    data = bytearray((BIN / "libext_cuda13.so").read_bytes())
    struct.pack_into("<H", data, 18, 183)  # e_machine = EM_AARCH64
    (tmp_path / "arm.so").write_bytes(bytes(data))
    inv = scan_folder(tmp_path, NO_CACHE)
    assert {Path(b.path).name: b.machine for b in inv.binaries} == {"x86.so": "x86_64", "arm.so": "aarch64"}
    arch = [f for f in findings(inv) if f.rule == "ARCH-elf-machine"]
    assert [(f.status, Path(f.location.path).name) for f in arch if f.location] == [(Status.FAIL, "x86.so")]
    (tmp_path / "x86.so").unlink()
    arch = [f for f in findings(scan_folder(tmp_path, NO_CACHE)) if f.rule == "ARCH-elf-machine"]
    assert [f.status for f in arch] == [Status.PASS]


def test_symlinks_followed_once_and_loops_end(tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    shutil.copy(BIN / "gpu_sm121.so", lib / "libk.so.1")
    (lib / "libk.so").symlink_to("libk.so.1")
    (lib / "loop").symlink_to("..")
    (tmp_path / "dangling").symlink_to("nowhere")
    inv = scan_folder(tmp_path, NO_CACHE)
    assert len(inv.binaries) == 1
    assert inv.problems == []


def test_unreadable_file_is_reported_and_skipped() -> None:
    # As root every file is readable, so the scan then runs without the capabilities that bypass file
    # permissions (a real permission error, from the kernel).
    folder = Path(tempfile.mkdtemp(prefix="envcheck-unreadable-"))
    try:
        folder.chmod(0o755)
        shutil.copy(BIN / "gpu_sm121.so", folder / "a.so")
        shutil.copy(BIN / "gpu_sm121.so", folder / "b.so")
        (folder / "b.so").chmod(0o644)
        (folder / "a.so").chmod(0)
        code = ("import json, sys; from pathlib import Path; from envcheck.sources.folder import scan_folder; "
                "from envcheck.sources import ReadOptions; inv = scan_folder(Path(sys.argv[1]), ReadOptions(use_cache=False)); "
                "print(json.dumps([[Path(b.path).name for b in inv.binaries], [Path(p.location.path).name for p in inv.problems]]))")
        prefix: list[str] = []
        if os.geteuid() == 0:
            require(shutil.which("setpriv") is not None, "setpriv (util-linux) to drop root's file capabilities")
            drop = "-dac_override,-dac_read_search"
            prefix = ["setpriv", "--bounding-set", drop, "--inh-caps", drop, "--"]
        proc = subprocess.run([*prefix, sys.executable, "-c", code, str(folder)], capture_output=True, text=True,
                              timeout=60, env=dict(os.environ, PYTHONPATH=str(REPO)))
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout) == [["b.so"], ["a.so"]]
    finally:
        shutil.rmtree(folder)


def test_cache_hits_and_misses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENVCHECK_CACHE_DIR", str(tmp_path / "cache"))
    site = tmp_path / "site"
    make_site(site, "cuda13-ext", {"x/gpu_sm121.so": BIN / "gpu_sm121.so", "x/gpu_sm80.so": BIN / "gpu_sm80.so"})
    first = scan_folder(site, ReadOptions())
    assert list((tmp_path / "cache").iterdir())
    second = scan_folder(site, ReadOptions())
    assert [facts(b) for b in first.binaries] == [facts(b) for b in second.binaries]
    assert [b.distribution for b in first.binaries] == [b.distribution for b in second.binaries]
    # a changed file misses the cache: replace gpu_sm80.so by another build under the same name
    target = site / "x" / "gpu_sm80.so"
    shutil.copy(BIN / "gpu_sm120_121a.so", target)
    third = scan_folder(site, ReadOptions())
    assert {Path(b.path).name: b.sass for b in third.binaries}["gpu_sm80.so"] == ("sm_120", "sm_121a")


def test_concurrent_scans_share_the_cache_safely(tmp_path: Path) -> None:
    site = tmp_path / "site"
    make_site(site, "many", {f"x/lib{i}.so": BIN / GPU_FIXTURES[i % len(GPU_FIXTURES)] for i in range(40)})
    env = dict(os.environ, ENVCHECK_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(REPO))
    code = ("import json, sys; from pathlib import Path; from envcheck.sources.folder import scan_folder; "
            "from envcheck.sources import ReadOptions; inv = scan_folder(Path(sys.argv[1]), ReadOptions()); "
            "print(json.dumps(sorted([b.path, list(b.sass)] for b in inv.binaries)))")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(site)], stdout=subprocess.PIPE, env=env, text=True) for _ in range(4)]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert len(set(outs)) == 1 and len(json.loads(outs[0])) == 40
    for cache_file in (tmp_path / "cache").iterdir():  # never torn (a folder snapshot is one JSON document a line)
        for line in cache_file.read_text().splitlines():
            json.loads(line)


def test_site_packages_of_this_interpreter() -> None:
    paths = site_packages_of(sys.executable)
    assert paths
    assert any((p / "pytest").is_dir() or (p / "_pytest").is_dir() for p in paths)


def test_cli_on_a_folder(tmp_path: Path) -> None:
    make_site(tmp_path / "site", "cuda12-ext", {"cuda12_ext/libext_cuda12.so": BIN / "libext_cuda12.so"})
    proc = run_envcheck(str(tmp_path / "site"), "--format", "json", env={"ENVCHECK_CACHE_DIR": str(tmp_path / "cache")})
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    text = json.dumps(report)
    assert "G1-binary-soname" in text and "libcudart.so.12" in text and "cuda12-ext" in text


def test_config_default_has_no_binary_options() -> None:
    # the engine runs the binary checks with default options (no --nvfp4): INFO, not WARN
    inv = scan_folder(BIN, NO_CACHE)
    report = engine.judge(engine.Target("fixtures", "folder", lambda: inv), inv, load_profile("dgx-spark"), Config())
    assert any(f.rule == "G7-binary-sm121a" and f.status is Status.INFO for f in report.findings)


@pytest.mark.parametrize("chunk", [1, 7, 64, 1000, 4096, 1 << 20])
@pytest.mark.parametrize("name", GPU_FIXTURES)
def test_stream_scanner_finds_the_same_containers_at_any_chunk_size(name: str, chunk: int) -> None:
    from envcheck.inspect import fatbin
    from envcheck.sources.binaries import standard_containers

    data = (BIN / name).read_bytes()
    if chunk == 1:
        data = data[:200_000]  # byte by byte is slow: the first 200 KB (and the containers inside them)
        data_chunks = [data[i : i + 1] for i in range(len(data))]
    else:
        data_chunks = [data[i : i + chunk] for i in range(0, len(data), chunk)]
    scanner = fatbin.StreamScanner()
    pos = 0
    for piece in data_chunks:
        scanner.feed(piece, pos)
        pos += len(piece)
    found = [(c.offset, c.size, c.entries) for c in scanner.finish()]
    whole = (BIN / name).read_bytes()
    walked = [(c.offset, c.size, c.entries) for c in standard_containers(FileSource(io.BytesIO(whole), len(whole)))  # type: ignore[arg-type]
              if c.offset + c.size <= len(data)]
    assert found == walked
    assert walked or chunk == 1


def test_cli_on_a_wheel(tmp_path: Path) -> None:
    whl = make_wheel(tmp_path, "cuda12-ext", {"cuda12_ext/libext_cuda12.so": (BIN / "libext_cuda12.so").read_bytes()})
    proc = run_envcheck(str(whl), "--format", "json", env={"ENVCHECK_CACHE_DIR": str(tmp_path / "cache")})
    assert proc.returncode == 1, proc.stderr
    [target] = json.loads(proc.stdout)["targets"]
    assert target["kind"] == "wheel"
    by_rule = {(f["rule"], f["status"]) for f in target["findings"]}
    assert ("G1-binary-soname", "FAIL") in by_rule
    assert ("ARCH-wheel-platform", "FAIL") in by_rule and ("ARCH-elf-machine", "FAIL") in by_rule
    [b] = target["inventory"]["binaries"]
    assert b["path"] == "cuda12_ext/libext_cuda12.so" and b["location"]["member"] == b["path"]


# ---- fuzz: random damage anywhere in a real library never escapes as an exception ----------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_FUZZ_BASE = (BIN / "gpu_rdc_sm80_ptx.so").read_bytes()


def _hot_offsets() -> list[int]:
    """Bytes worth damaging: the ELF header, the section table, the dynamic table and the fatbin headers."""
    elf = ELFFile(io.BytesIO(_FUZZ_BASE))
    spots = list(range(64))
    spots += range(elf["e_shoff"], len(_FUZZ_BASE))
    for s in elf.iter_sections():
        if s.name in (".nv_fatbin", "__nv_relfatbin", ".dynamic"):
            spots += range(s["sh_offset"], s["sh_offset"] + min(s["sh_size"], 256))
    return spots


_HOT = _hot_offsets()


@settings(max_examples=int(os.environ.get("ENVCHECK_FUZZ_EXAMPLES", "300")), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.one_of(st.integers(0, len(_FUZZ_BASE) - 1), st.sampled_from(_HOT)), st.integers(0, 255)), min_size=1, max_size=12),
       st.integers(64, len(_FUZZ_BASE)), st.booleans())
def test_fuzzed_library_reads_or_reports(edits: list[tuple[int, int]], cut: int, deep: bool) -> None:
    data = bytearray(_FUZZ_BASE)
    for at, value in edits:
        data[at] = value
    data = data[:cut]
    start = time.perf_counter()
    reading = read_binary(FileSource(io.BytesIO(bytes(data)), len(data)), "fuzzed.so", deep_fatbin=deep)  # type: ignore[arg-type]
    assert time.perf_counter() - start < 2
    for problem in reading.problems:
        assert problem.location is not None and problem.location.path == "fuzzed.so"
    # the same bytes through the forward-only stream reader of wheels
    streamed = wheel_source.read_streamed_bytes(bytes(data), "fuzzed.so", deep)
    assert (streamed.binary is None) == (reading.binary is None) or streamed.problems or reading.problems


@pytest.mark.parametrize("chunk", [1000, 4096, 1 << 20])
@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_stream_reader_equals_file_reader(name: str, chunk: int) -> None:
    data = (BIN / name).read_bytes()
    streamed = wheel_source.read_streamed_bytes(data, name, chunk=chunk)
    on_disk = read_path(BIN / name)
    assert streamed.problems == [] and on_disk.problems == []
    assert streamed.binary is not None and on_disk.binary is not None
    assert facts(streamed.binary) == facts(on_disk.binary)
    if not name.endswith(".a"):
        assert streamed.binary.bytes_read == len(data)  # one pass, never a second one for these


# ---- a one-pass stream read never turns a valid file into an ERROR (issue 12) ----------------------------


def _section(data: bytes, name: str) -> tuple[int, int]:
    elf = ELFFile(io.BytesIO(data))
    s = elf.get_section_by_name(name)
    assert s is not None
    return s["sh_offset"], s["sh_size"]


@pytest.mark.parametrize("name", ["gpu_sm121.so", "gpu_rdc_sm80_ptx.so", "libext_cuda13.so", "gpu_static_sm121f.a"])
def test_headers_out_of_one_pass_reach_are_read_in_another(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from envcheck.inspect import wheelzip

    # Capture only the ELF and program headers up front and nothing before the section table: the name
    # table must come from a later pass, and the range asked for runs past the end of the file (it must
    # be clipped, not wanted forever).
    monkeypatch.setattr(wheelzip.StreamedElf, "HEAD", 2048)
    monkeypatch.setattr(wheelzip.StreamedElf, "TAIL", 0)
    data = (BIN / name).read_bytes()
    streamed = wheel_source.read_streamed_bytes(data, name, chunk=4096)
    assert streamed.problems == [] and streamed.binary is not None
    assert facts(streamed.binary) == facts(read_path(BIN / name).binary)  # type: ignore[arg-type]
    if not name.endswith(".a"):
        assert streamed.binary.bytes_read > len(data)  # a second pass happened


@pytest.mark.parametrize("name", ["gpu_sm121.so", "gpu_static_sm121f.a"])
def test_when_passes_run_out_the_member_is_read_from_a_temporary_file(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from envcheck.inspect import wheelzip

    monkeypatch.setattr(wheelzip.StreamedElf, "HEAD", 2048)
    monkeypatch.setattr(wheelzip.StreamedElf, "TAIL", 0)
    monkeypatch.setattr(wheel_source, "MAX_PASSES", 1)
    streamed = wheel_source.read_streamed_bytes((BIN / name).read_bytes(), name, chunk=4096)
    assert streamed.problems == [] and streamed.binary is not None
    assert facts(streamed.binary) == facts(read_path(BIN / name).binary)  # type: ignore[arg-type]


def _stray_fatbin(entry_header_size: int) -> bytes:
    """A fatbin container header and a first entry whose header size is ``entry_header_size``."""
    entry = struct.pack("<HHIQ", 2, 0x101, entry_header_size, 0) + bytes(48)
    return fatbin.MAGIC_V1 + struct.pack("<Q", len(entry)) + entry


@pytest.mark.parametrize("name", ["gpu_sm121.so", "gpu_sm80.so"])
def test_a_stray_fatbin_magic_outside_fatbin_sections_is_not_a_fatbin(name: str) -> None:
    # A magic followed by a header that does not parse, in code (libcudnn_engines_tensor_ir.so.9 has one):
    # not an error for either reader, and the facts do not change.
    data = bytearray((BIN / name).read_bytes())
    text, size = _section(bytes(data), ".text")
    at = text + (-text) % 8
    stray = _stray_fatbin(604277065)
    assert at + len(stray) <= text + size
    data[at : at + len(stray)] = stray
    on_disk = read_binary(BytesSource(bytes(data)), name)
    streamed = wheel_source.read_streamed_bytes(bytes(data), name, chunk=4096)
    assert on_disk.problems == [] and streamed.problems == []
    assert on_disk.binary is not None and streamed.binary is not None
    assert facts(streamed.binary) == facts(on_disk.binary) == facts(read_path(BIN / name).binary)  # type: ignore[arg-type]


def test_a_broken_entry_inside_nv_fatbin_is_reported_by_both_readers() -> None:
    name = "gpu_sm121.so"
    data = bytearray((BIN / name).read_bytes())
    start, _size = _section(bytes(data), ".nv_fatbin")
    struct.pack_into("<I", data, start + 16 + 4, 604277065)  # first entry's header size
    on_disk = read_binary(BytesSource(bytes(data)), name)
    streamed = wheel_source.read_streamed_bytes(bytes(data), name, chunk=4096)
    assert [p.message for p in streamed.problems] == [p.message for p in on_disk.problems]
    assert len(on_disk.problems) == 1 and "header size 604277065 is impossible" in on_disk.problems[0].message
    assert streamed.problems[0].location is not None and streamed.problems[0].location.offset == start + 16 + 4


# ---- what a folder scan opens, and its cached walk (issue 18) ---------------------------------------------


def _scan_paths(root: Path, cache: bool = False) -> list[str]:
    inv = folder_source.scan_folder(root, ReadOptions(use_cache=cache))
    assert [p for p in inv.problems if not p.note] == []
    return sorted(os.path.relpath(b.path, root) for b in inv.binaries)


def test_a_folder_scan_opens_binary_names_and_executables_only(tmp_path: Path) -> None:
    elf = (BIN / "libext_cuda12.so").read_bytes()
    for name in ("libx.so", "liby.so.12", "libz.5f3a9c1d.so.13", "ext.cpython-312-aarch64-linux-gnu.so", "k.o",
                 "k.cubin", "data.bin", "tool", "script.py", "blob.dat"):
        (tmp_path / name).write_bytes(elf)
    (tmp_path / "tool").chmod(0o755)  # an executable without an extension: read
    (tmp_path / "script.py").chmod(0o755)  # a text name stays unopened whatever its mode
    (tmp_path / "libs.a").write_bytes((BIN / "gpu_static_sm121f.a").read_bytes())
    assert _scan_paths(tmp_path) == sorted(["libx.so", "liby.so.12", "libz.5f3a9c1d.so.13", "ext.cpython-312-aarch64-linux-gnu.so",
                                            "k.o", "k.cubin", "tool", "libs.a"])
    assert walk_source.may_be_binary("libcudart.so.13") and not walk_source.may_be_binary("model.safetensors", 0o644)


def test_a_cached_walk_sees_every_change_that_touches_a_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENVCHECK_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "site-packages"
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "pkg" / "liba.so").write_bytes((BIN / "libext_cuda12.so").read_bytes())
    assert _scan_paths(root, cache=True) == ["pkg/liba.so"]
    assert _scan_paths(root, cache=True) == ["pkg/liba.so"]  # from the cache
    (root / "pkg" / "sub" / "libb.so").write_bytes((BIN / "libext_cuda13.so").read_bytes())  # new file, deeper
    assert _scan_paths(root, cache=True) == ["pkg/liba.so", "pkg/sub/libb.so"]
    (root / "pkg" / "liba.so").write_bytes((BIN / "gpu_sm121.so").read_bytes())  # replaced in place
    inv = folder_source.scan_folder(root, ReadOptions(use_cache=True))
    assert {Path(b.path).name: b.sass for b in inv.binaries}["liba.so"] == ("sm_121",)
    (root / "pkg" / "sub" / "libb.so").unlink()
    assert _scan_paths(root, cache=True) == ["pkg/liba.so"]
    assert _scan_paths(root, cache=False) == ["pkg/liba.so"]


def test_g7_judges_a_multi_variant_package_by_the_variant_it_loads(tmp_path: Path) -> None:
    """bitsandbytes-style wheels ship libX_cuda118.so ... libX_cuda130.so and load the one for the CUDA they
    run under: a PTX-only CUDA 12 variant next to a CUDA 13 variant with sm_121 SASS is not a G7 warning."""
    cuda12_ptx = tmp_path / "src" / "libvariant_cuda12.so"  # a real nvcc build whose DT_NEEDED names CUDA 12
    cuda12_ptx.parent.mkdir()
    cuda12_ptx.write_bytes((BIN / "gpu_sm80_ptx.so").read_bytes().replace(b"libcudart.so.13\0", b"libcudart.so.12\0"))
    site = tmp_path / "site"
    make_site(site, "multi", {"multi/libmulti_cuda120.so": cuda12_ptx, "multi/libmulti_cuda130.so": BIN / "gpu_sm121.so"})

    def g7_of_cuda120() -> list[Status]:
        return [f.status for f in findings(scan_folder(site, NO_CACHE))
                if f.gotcha == "G7" and f.location is not None and "cuda120" in f.location.path]

    assert g7_of_cuda120() == [Status.INFO]
    (site / "multi" / "libmulti_cuda130.so").unlink()
    assert g7_of_cuda120() == [Status.WARN]  # no CUDA 13 variant: the CUDA 12 one is what would load


def test_nvidia_cuda13_ptx_library_reads_the_same_in_a_wheel_and_a_folder(tmp_path: Path) -> None:
    """NVIDIA's CUDA 13 wheels (cuFile) carry PTX for newer GPUs: an INFO reading in an installed folder, and
    the same in the wheel (member paths are relative there: 'nvidia/cu13/lib/...'; it was a WARN)."""
    data = (BIN / "gpu_sm80_ptx.so").read_bytes()
    wheel = make_wheel(tmp_path, "nvidia_cufake", {"nvidia/cu13/lib/libcufake.so.0": data})
    g7 = [f for f in findings(wheel_source.read(wheel, NO_CACHE), kind="wheel") if f.rule == "G7-binary-ptx-only"]
    assert [f.status for f in g7] == [Status.INFO], [f.message for f in g7]
    site = tmp_path / "site"
    make_site(site, "nvidia-cufake", {"nvidia/cu13/lib/libcufake.so.0": BIN / "gpu_sm80_ptx.so"})
    g7 = [f for f in findings(scan_folder(site, NO_CACHE)) if f.rule == "G7-binary-ptx-only"]
    assert [f.status for f in g7] == [Status.INFO], [f.message for f in g7]


def test_a_package_of_ptx_only_binaries_names_only_the_ptx_it_jit_compiles(tmp_path: Path) -> None:
    """The grouped G7-binary-ptx-only finding (cupy-cuda12x's wheel: SASS sm_50..sm_89 and PTX compute_90) said
    they "run only by JIT-compiling compute_90, sm_50, ...": SASS is never JIT-compiled; only the PTX is."""
    site = tmp_path / "site-packages"
    make_site(site, "ptx-pkg", {"ptx_pkg/a.so": BIN / "gpu_sm80_ptx.so", "ptx_pkg/b.so": BIN / "gpu_sm80_ptx.so"})
    done = run_envcheck("-f", "json", "--no-cache", str(site))
    (found,) = [f for t in json.loads(done.stdout)["targets"] for f in t["findings"]
                if f["rule"] == "G7-binary-ptx-only" and f["status"] == "WARN"]
    assert "2 binaries have no SASS" in found["message"], found["message"]
    jit = found["message"].split("JIT-compiling ", 1)[1].split(", e.g.", 1)[0]
    assert jit and "sm_" not in jit and "compute_" in jit, found["message"]
