"""Hostile binaries, wheels and folders (issue 13), through the real command line with bounds measured.

Each class of input is generated here (fuzz/seed_builders.py: the same generators seed the fuzz harnesses)
and checked next to a good target: the run ends within the issue's bars with the default limits (under
10 s of CPU and 300 MiB peak RSS, tests/bounded.py), the hostile target gets a clear ERROR (or, for what
is harmless, nothing at all) and the good target is still fully judged. docs/limits.md lists the limits.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from bounded import BoundedRun, run_envcheck_bounded
from conftest import FIXTURES
from seed_builders import empty_fatbin_entries, write_elf, write_wheel

GOOD = FIXTURES / "binaries" / "libext_cuda12.so"  # a CUDA 12 library: G1-binary-soname FAIL proves it was judged
MIB = 1 << 20


def check(*targets: str | Path, extra: tuple[str, ...] = (), code: int = 2) -> tuple[dict[str, Any], BoundedRun]:
    """envcheck TARGETS GOOD --no-cache -f json, bounded; the report (exit ``code`` expected)."""
    run = run_envcheck_bounded(*map(str, targets), str(GOOD), "--no-cache", "-f", "json", *extra)
    run.assert_within(seconds=10, rss_mb=300)
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr, run.describe()
    report: dict[str, Any] = json.loads(run.stdout)
    assert run.returncode == code == report["exit_code"], run.describe()
    good = [t for t in report["targets"] if t["target"] == str(GOOD)]
    assert good and ("G1-binary-soname", "FAIL") in {(f["rule"], f["status"]) for f in good[0]["findings"]}, good
    return report, run


def findings(report: dict[str, Any], target: str | Path, status: str = "ERROR") -> list[dict[str, Any]]:
    found = [t for t in report["targets"] if t["target"] == str(target)]
    assert found, [t["target"] for t in report["targets"]]
    return [f for f in found[0]["findings"] if f["status"] == status]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The hostile files, built once: sparse where they are mostly zeros."""
    root = tmp_path_factory.mktemp("hostile")
    out: dict[str, Path] = {}
    # claims a 1.07 GB section table (16384 x 65535 bytes), and the (sparse) file really is that large
    out["huge_table"] = write_elf(root / "huge_table.so", shnum=16384, shentsize=0xFFFF, file_size=1100 * MIB)
    # .nv_fatbin of 2 million empty entries (128 MiB): walked entry by entry, 16 s and 500 MB before the limit
    head, entry = empty_fatbin_entries(2_000_000)
    out["many_entries"] = write_elf(root / "many_entries.so", size=len(head) + 64 * 2_000_000, head=head, pattern=entry)
    # a 1 GiB .nv_fatbin of zeros (sparse): padding, walked 8 bytes per step before
    out["zero_fatbin"] = write_elf(root / "zero_fatbin.so", size=1 << 30)
    # a 320 MiB ELF member claiming a 268 MB section table (4096 x 65535): buffered whole before
    table_member = write_elf(root / "table_member.so", shnum=4096, shentsize=0xFFFF, file_size=320 * MIB)
    out["table_wheel"] = write_wheel(root / "table-1.0-py3-none-manylinux_2_28_aarch64.whl", [("table/_core.so", table_member)], "table")
    out["entries_wheel"] = write_wheel(root / "entries-1.0-py3-none-manylinux_2_28_aarch64.whl",
                                       [("entries/_core.so", out["many_entries"])], "entries")
    # 100 MiB from ~100 KiB: a thousandfold, past the default expansion limit of 100
    bomb = write_elf(root / "bomb.so", file_size=100 * MIB)
    out["bomb_wheel"] = write_wheel(root / "bomb-1.0-py3-none-manylinux_2_28_aarch64.whl", [("bomb/_core.so", bomb)], "bomb")
    # twelve 16 MiB members: each under the 16 MiB floor of its own limit, together past the wheel's
    small = write_elf(root / "small.so", file_size=16 * MIB)
    out["many_members_wheel"] = write_wheel(root / "many-1.0-py3-none-manylinux_2_28_aarch64.whl",
                                            [(f"many/_m{i:02d}.so", small) for i in range(12)], "many")
    return out


# ---- claimed sizes are checked before anything is buffered ---------------------------------------------


def test_a_huge_section_table_claim_in_a_real_sparse_gigabyte_file(hostile: dict[str, Path]) -> None:
    path = hostile["huge_table"]
    report, _run = check(path)
    [error] = findings(report, path)
    assert "section table claims 16384 x 65535 bytes" in error["message"] and error["location"]["path"] == str(path)


def test_a_huge_section_table_claim_in_a_wheel_member(hostile: dict[str, Path]) -> None:
    # --max-expansion 0: past the expansion limit, the claim itself must still not be buffered
    path = hostile["table_wheel"]
    report, _run = check(path, extra=("--max-expansion", "0"))
    [error] = findings(report, path)
    assert "section table claims 4096 x 65535 bytes" in error["message"] and error["location"]["member"] == "table/_core.so"


@pytest.mark.parametrize("as_folder", [False, True], ids=["file", "folder"])
def test_millions_of_empty_fatbin_entries(hostile: dict[str, Path], tmp_path: Path, as_folder: bool) -> None:
    path = hostile["many_entries"]
    target: Path = path
    if as_folder:
        target = tmp_path / "site-packages"
        target.mkdir()
        os.link(path, target / "libmany.so")
    report, _run = check(target)
    [error] = findings(report, target)
    assert "more than 200000 fatbin containers and entries" in error["message"], error


def test_millions_of_empty_fatbin_entries_in_a_wheel(hostile: dict[str, Path]) -> None:
    path = hostile["entries_wheel"]
    report, _run = check(path)  # the default limit: 128 MiB from a few hundred KiB is refused unread
    [error] = findings(report, path)
    assert "more than the expansion limit" in error["message"] and "--max-expansion" in error["message"]
    report, _run = check(path, extra=("--max-expansion", "0"))  # no limit: the entry limit still holds
    [error] = findings(report, path)
    assert "more than 200000 fatbin containers and entries" in error["message"], error


def test_a_gigabyte_of_zeros_in_nv_fatbin_is_padding_skipped_in_blocks(hostile: dict[str, Path]) -> None:
    path = hostile["zero_fatbin"]
    report, _run = check(path, code=1)  # zeros are valid padding: no error, the file is judged
    target = next(t for t in report["targets"] if t["target"] == str(path))
    [binary] = target["inventory"]["binaries"]
    assert not findings(report, path) and not binary.get("sass") and not binary.get("sections")


# ---- compressed inputs have an expansion limit the user can raise ------------------------------------------


def test_a_wheel_member_expanding_a_thousandfold_is_refused_unless_the_limit_is_raised(hostile: dict[str, Path]) -> None:
    path = hostile["bomb_wheel"]
    report, _run = check(path)
    [error] = findings(report, path)
    assert error["location"]["member"] == "bomb/_core.so"
    assert "expand 104857600 bytes from" in error["message"] and "raise the limit with --max-expansion" in error["message"]
    report, _run = check(path, extra=("--max-expansion", "2000"), code=1)
    assert not findings(report, path)


def test_a_wheel_whose_members_together_expand_past_the_limit(hostile: dict[str, Path]) -> None:
    path = hostile["many_members_wheel"]
    report, _run = check(path)
    errors = findings(report, path)
    target = next(t for t in report["targets"] if t["target"] == str(path))
    read = {b["path"] for b in target["inventory"]["binaries"]}
    # the first members in the wheel's order fit in the wheel's budget; every other one is one ERROR
    assert read and len(read) + len(errors) == 12 and all("the wheel's binaries to" in e["message"] for e in errors)
    assert {e["location"]["member"] for e in errors}.isdisjoint(read)


# ---- regular files only ------------------------------------------------------------------------------------


def test_a_wheel_that_is_a_link_to_dev_zero(tmp_path: Path) -> None:
    path = tmp_path / "x-1.0-py3-none-any.whl"
    path.symlink_to("/dev/zero")
    report, _run = check(path)
    [error] = findings(report, path)
    assert "not a regular file (a character device)" in error["message"]


@pytest.mark.parametrize("name", ["x-1.0-py3-none-any.whl", "libx.so"])
def test_a_fifo_named_like_a_binary_input(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    os.mkfifo(path)
    extra = () if name.endswith(".whl") else ("--kind", "elf")
    report, _run = check(path, extra=extra)
    [error] = findings(report, path)
    assert "not a regular file" in error["message"]


def test_an_oci_layout_blob_linked_to_dev_zero(tmp_path: Path) -> None:
    from seed_builders import ARM64, digest, oci_manifest, write_oci_layout

    config = json.dumps({**ARM64, "config": {}, "rootfs": {"type": "layers", "diff_ids": []}}).encode()
    manifest = json.dumps(oci_manifest(config, [])).encode()
    index = json.dumps({"schemaVersion": 2, "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                                                           "digest": digest(manifest), "size": len(manifest)}]}).encode()
    layout = write_oci_layout(tmp_path / "layout", index, [manifest, config])
    blob = layout / "blobs" / "sha256" / digest(config).split(":")[1]
    blob.unlink()
    blob.symlink_to("/dev/zero")
    run = run_envcheck_bounded("image", f"oci-layout:{layout}", "-f", "json", "--no-cache")
    run.assert_within(seconds=10, rss_mb=300)
    assert run.returncode == 2 and "not a regular file" in run.stdout, run.describe()


def test_a_huge_oci_layout_index_is_refused_unread(tmp_path: Path) -> None:
    layout = tmp_path / "layout"
    layout.mkdir()
    (layout / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}', encoding="utf-8")
    with (layout / "index.json").open("wb") as fh:
        fh.write(b'{"schemaVersion": 2, "manifests": []}')
        fh.truncate(1 << 30)  # sparse: a gigabyte of NULs after the object
    run = run_envcheck_bounded("image", f"oci-layout:{layout}", "-f", "json", "--no-cache")
    run.assert_within(seconds=10, rss_mb=300)
    assert run.returncode == 2 and "larger than 16 MiB" in run.stdout, run.describe()


# ---- folder walks never escape ---------------------------------------------------------------------------


def test_a_folder_walk_does_not_follow_links_out_of_the_folder(tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    (site / "pkg").mkdir(parents=True)
    lib = site / "pkg" / "libext_cuda12.so"
    lib.write_bytes(GOOD.read_bytes())
    (site / "escape").symlink_to("/")
    (site / "etc").symlink_to("/etc")
    (site / "zero.so").symlink_to("/dev/zero")
    os.mkfifo(site / "fifo.so")
    (site / "pkg" / "again.so").symlink_to(lib)  # inside the folder: the same real file, read once
    (site / "pkg2").symlink_to(site / "pkg")  # the same folder again: walked once
    report, _run = check(site, code=1)
    target = next(t for t in report["targets"] if t["target"] == str(site))
    assert [b["path"] for b in target["inventory"]["binaries"]] == [str(lib)]
    [note] = [f for f in target["findings"] if f["rule"] == "input-skipped"]
    assert note["status"] == "INFO" and "3 symbolic links lead outside the folder and were not followed" in note["message"]
    assert f"{site / 'escape'} -> /" in note["message"] and f"{site / 'etc'} -> /etc" in note["message"]
    assert not findings(report, site)

