"""The folder snapshot (envcheck.cache.FolderSnapshot): an unchanged folder is answered from its finished
inventory after stat-ing what it was built from; every change falls back to the per-file cache and gives what
a scan without any cache gives; a broken or hostile snapshot file is ignored (issue 18)."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import FIXTURES

from envcheck import cache
from envcheck.model import Inventory
from envcheck.sources import ReadOptions
from envcheck.sources.folder import scan_folder

BIN = FIXTURES / "binaries"
SETTLE = 0.06  # seconds: older than the test's racy window (below), so a later change has another timestamp


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ENVCHECK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(cache, "RACY_NS", 50_000_000)  # 50 ms instead of 2 s, so the tests need not wait
    return tmp_path / "cache"


def build_site(root: Path) -> Path:
    """A small site-packages: two distributions with RECORDs, a deep folder, a link, a text file."""
    for dist, files in (("cuda13-ext", {"ext/libext.so": "libext_cuda13.so", "ext/deep/er/gpu.so": "gpu_sm121.so"}),
                        ("other", {"other/libother.so": "gpu_sm80.so", "other/bin/tool": "plain_exe"})):
        info = root / f"{dist.replace('-', '_')}-1.0.dist-info"
        info.mkdir(parents=True)
        for rel, fixture in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(BIN / fixture, root / rel)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\nRequires-Dist: numpy\n")
        (info / "RECORD").write_text("".join(f"{rel},,\n" for rel in files))
    (root / "real").mkdir()
    shutil.copy(BIN / "libext_cuda12.so", root / "real" / "a.bin")  # not a binary name: read only through the link
    shutil.copy(BIN / "libext_cuda13.so", root / "real" / "b.bin")
    for name in ("a.bin", "b.bin"):
        (root / "real" / name).chmod(0o644)
    (root / "lib").mkdir()
    (root / "lib" / "libk.so").symlink_to("../real/a.bin")
    (root / "ext" / "README.txt").write_text("hello")
    time.sleep(SETTLE)
    return root


def parts(inv: Inventory) -> tuple[object, ...]:
    return (inv.packages, inv.binaries, inv.problems)


def snapshot_of(root: Path) -> cache.FolderSnapshot:
    return cache.FolderSnapshot(f"folder:{os.path.abspath(root)}:deep=False")


def cached_scan(root: Path) -> Inventory:
    return scan_folder(root, ReadOptions())


def cold_scan(root: Path) -> Inventory:
    return scan_folder(root, ReadOptions(use_cache=False))


def test_an_unchanged_folder_comes_from_its_snapshot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = build_site(tmp_path / "site")
    cold = cold_scan(root)
    assert {b.distribution for b in cold.binaries} == {"cuda13-ext", "other", None}  # libk.so: no RECORD names it
    assert snapshot_of(root).load(str(root)) is None
    first = cached_scan(root)  # fills the per-file cache and writes the snapshot
    assert parts(first) == parts(cold)
    assert snapshot_of(root).load(str(root)) == parts(cold)
    assert parts(cached_scan(root)) == parts(cold)
    # the per-file cache is not read on a hit: the snapshot alone answers, even with the per-file cache gone
    for path in (tmp_path / "cache").glob("scan-*.json"):
        path.unlink()
    assert parts(cached_scan(root)) == parts(cold)
    # a relative root names other paths: not answered by the absolute root's snapshot
    monkeypatch.chdir(tmp_path)
    assert snapshot_of(Path("site")).load("site") is None
    assert parts(cached_scan(Path("site"))) == parts(cold_scan(Path("site")))


def _rewrite_in_place(path: Path, data: bytes) -> None:
    with open(path, "r+b") as fh:  # same inode, same size
        fh.write(data)


CHANGES: dict[str, Callable[[Path], None]] = {
    "new .so in a deep folder": lambda root: shutil.copy(BIN / "gpu_sm80.so", root / "ext" / "deep" / "er" / "new.so"),
    "new folder with a .so": lambda root: (root / "ext" / "deep" / "n").mkdir() or shutil.copy(BIN / "gpu_sm80.so", root / "ext" / "deep" / "n" / "x.so"),
    ".so rewritten in place, same size": lambda root: _rewrite_in_place(root / "ext" / "libext.so", (BIN / "libext_cuda12.so").read_bytes()),
    ".so removed": lambda root: (root / "other" / "libother.so").unlink(),
    "executable bit removed": lambda root: (root / "other" / "bin" / "tool").chmod(0o644),
    "dist-info removed": lambda root: shutil.rmtree(root / "other-1.0.dist-info"),
    "METADATA changed in place": lambda root: _rewrite_in_place(root / "other-1.0.dist-info" / "METADATA",
                                                                b"Metadata-Version: 2.1\nName: other\nVersion: 2.0\n"),
    "RECORD changed": lambda root: (root / "other-1.0.dist-info" / "RECORD").write_text("other/bin/tool,,\n"),
    "RECORD removed": lambda root: (root / "cuda13_ext-1.0.dist-info" / "RECORD").unlink(),
    "symlink retargeted": lambda root: ((root / "lib" / "libk.so").unlink(), (root / "lib" / "libk.so").symlink_to("../real/b.bin")),
    "linked file rewritten": lambda root: _rewrite_in_place(root / "real" / "a.bin", (BIN / "libext_cuda13.so").read_bytes()),
    "folder made unreadable": lambda root: (root / "ext" / "deep").chmod(0),
    "root replaced": lambda root: (root.rename(root.with_name("old")), shutil.copytree(root.with_name("old"), root, symlinks=True)),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_every_change_is_seen(tmp_path: Path, change: str) -> None:
    root = build_site(tmp_path / "site")
    cached_scan(root)
    before = parts(cached_scan(root))
    assert snapshot_of(root).load(str(root)) == before
    try:
        CHANGES[change](root)
        assert snapshot_of(root).load(str(root)) is None, "the snapshot still answers after the change"
        after = cached_scan(root)
        assert parts(after) == parts(cold_scan(root))
        if change not in ("folder made unreadable", "root replaced"):  # as root an unreadable folder is still read
            assert parts(after) != before
        time.sleep(SETTLE)
        assert parts(cached_scan(root)) == parts(cold_scan(root))  # and the new snapshot is right
        assert snapshot_of(root).load(str(root)) == parts(cold_scan(root))
    finally:
        if (root / "ext" / "deep").exists():
            (root / "ext" / "deep").chmod(0o755)


@pytest.mark.parametrize("where", [0.0, 0.3, 0.7, 1.0])
def test_a_key_changed_deep_in_a_big_list_is_seen(tmp_path: Path, where: float) -> None:
    """One path's ctime changed (a chmod to the same mode), first, in the middle or last of 700 paths: the
    snapshot no longer answers; unchanged, it does."""
    root = build_site(tmp_path / "site")
    for n in range(650):
        (root / "pkg" / f"d{n // 26}" / f"e{n}").mkdir(parents=True)
    time.sleep(SETTLE)
    cached_scan(root)
    paths = json.loads(_lines(snapshot_of(root).path)[1])
    assert len(paths) > 650
    assert snapshot_of(root).load(str(root)) is not None
    changed = root / paths[max(1, round(where * (len(paths) - 1)))]
    changed.chmod(changed.stat().st_mode & 0o7777)  # the ctime only: same mode, size, mtime, inode
    assert snapshot_of(root).load(str(root)) is None


def test_a_folder_changed_just_before_the_scan_gets_no_snapshot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache, "RACY_NS", 2_000_000_000)
    root = build_site(tmp_path / "site")
    cached_scan(root)
    assert not snapshot_of(root).path.exists()  # a change within the same timestamp could not be seen
    monkeypatch.setattr(cache, "RACY_NS", 50_000_000)
    cached_scan(root)
    assert snapshot_of(root).path.exists()
    shutil.copy(BIN / "gpu_sm80.so", root / "ext" / "new.so")
    monkeypatch.setattr(cache, "RACY_NS", 2_000_000_000)
    assert parts(cached_scan(root)) == parts(cold_scan(root))
    assert not snapshot_of(root).path.exists()  # the stale one is removed, not left to be stat'ed in vain


def test_files_dated_in_the_future_still_get_a_snapshot(tmp_path: Path) -> None:
    root = build_site(tmp_path / "site")
    future = time.time() + 86400
    os.utime(root / "ext" / "libext.so", (future, future))  # as an archive may set it; the ctime is now
    time.sleep(SETTLE)
    cached_scan(root)
    assert snapshot_of(root).load(str(root)) == parts(cold_scan(root))
    _rewrite_in_place(root / "ext" / "libext.so", (BIN / "libext_cuda12.so").read_bytes())
    os.utime(root / "ext" / "libext.so", (future, future))  # same size, same mtime: the ctime tells
    assert snapshot_of(root).load(str(root)) is None
    assert parts(cached_scan(root)) == parts(cold_scan(root))  # the per-file entry misses too


def test_a_scan_with_errors_gets_no_snapshot(tmp_path: Path) -> None:
    root = build_site(tmp_path / "site")
    (root / "ext" / "broken.so").write_bytes((BIN / "gpu_sm80.so").read_bytes()[:200])
    time.sleep(SETTLE)
    inv = cached_scan(root)
    assert [p for p in inv.problems if not p.note]
    assert not snapshot_of(root).path.exists()
    assert parts(cached_scan(root)) == parts(cold_scan(root))


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().split(b"\n", 3)


def _with_body(path: Path, edit: Callable[[dict[str, object]], None]) -> bytes:
    head, names, keys, body = _lines(path)
    data = json.loads(body)
    edit(data)
    return b"\n".join((head, names, keys, json.dumps(data).encode()))


def _with_head(path: Path, **changes: object) -> bytes:
    head, names, keys, body = _lines(path)
    return b"\n".join((json.dumps({**json.loads(head), **changes}).encode(), names, keys, body))


HOSTILE: dict[str, Callable[[Path], bytes]] = {
    "empty": lambda p: b"",
    "truncated": lambda p: p.read_bytes()[: len(p.read_bytes()) // 2],
    "truncated at the body": lambda p: b"\n".join(_lines(p)[:3]) + b"\n",
    "garbage": lambda p: os.urandom(5000),
    "not UTF-8": lambda p: p.read_bytes().replace(b'"', b"\xff", 3),
    "other format": lambda p: _with_head(p, format=1),
    "other root": lambda p: _with_head(p, root="/"),
    "files count a string": lambda p: _with_head(p, files="9"),
    "keys shifted": lambda p: b"\n".join((_lines(p)[0], _lines(p)[1], b"[0," + _lines(p)[2][1:-1] + b"]", _lines(p)[3])),
    "paths not strings": lambda p: b"\n".join((_lines(p)[0], b'["", 1]', b"[" + b",".join([b"0"] * 10) + b"]", _lines(p)[3])),
    "deep nesting": lambda p: b"\n".join((*_lines(p)[:3], b"[" * 100000 + b"]" * 100000)),
    "needed a string": lambda p: _with_body(p, lambda d: d["binaries"][0].__setitem__("needed", "libc.so.6")),  # type: ignore[index]
    "sass with a number": lambda p: _with_body(p, lambda d: d["binaries"][0].__setitem__("sass", [121])),  # type: ignore[index]
    "a binary without its path": lambda p: _with_body(p, lambda d: d["binaries"][0].pop("path")),  # type: ignore[index]
    "an unknown field": lambda p: _with_body(p, lambda d: d["binaries"][0].__setitem__("evil", [])),  # type: ignore[index]
    "size a bool": lambda p: _with_body(p, lambda d: d["binaries"][0].__setitem__("size", True)),  # type: ignore[index]
    "location with an unknown key": lambda p: _with_body(p, lambda d: d["binaries"][0].__setitem__("location", {"path": "x", "evil": 1})),  # type: ignore[index]
    "package with a number": lambda p: _with_body(p, lambda d: d["packages"][0].__setitem__("name", 7)),  # type: ignore[index]
    "package a list": lambda p: _with_body(p, lambda d: d["packages"].__setitem__(0, ["demo", "1.0"])),  # type: ignore[index]
    "problem with an unknown key": lambda p: _with_body(p, lambda d: d.__setitem__("problems", [{"message": "x", "evil": 1}])),
    "role not a word": lambda p: _with_body(p, lambda d: d["packages"][0].__setitem__("role", "evil")),  # type: ignore[index]
    "body over its limit": lambda p: _with_body(p, lambda d: d.__setitem__("pad", "x" * (4 << 20))),
}


@pytest.mark.parametrize("hostile", sorted(HOSTILE))
def test_a_broken_or_hostile_snapshot_is_ignored(tmp_path: Path, hostile: str) -> None:
    root = build_site(tmp_path / "site")
    cold = parts(cold_scan(root))
    cached_scan(root)
    path = snapshot_of(root).path
    assert snapshot_of(root).load(str(root)) == cold
    path.write_bytes(HOSTILE[hostile](path))
    assert snapshot_of(root).load(str(root)) is None
    assert parts(cached_scan(root)) == cold


@pytest.mark.parametrize("kind", ["fifo", "link to /dev/zero", "folder", "over the size limit"])
def test_a_snapshot_that_is_no_regular_file_is_not_read(tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    root = build_site(tmp_path / "site")
    cached_scan(root)
    path = snapshot_of(root).path
    if kind == "over the size limit":
        monkeypatch.setattr(cache, "SNAPSHOT_LIMIT", path.stat().st_size - 1)
    else:
        path.unlink()
        {"fifo": lambda: os.mkfifo(path), "link to /dev/zero": lambda: path.symlink_to("/dev/zero"), "folder": path.mkdir}[kind]()
    assert snapshot_of(root).load(str(root)) is None
    assert parts(cached_scan(root)) == parts(cold_scan(root))


def test_the_cache_folder_is_private(tmp_path: Path, private_cache: Path) -> None:
    root = build_site(tmp_path / "site")
    cached_scan(root)
    assert private_cache.stat().st_mode & 0o777 == 0o700
    assert snapshot_of(root).path.exists()


# ---- the per-file cache (scan-*.json) is untrusted too: what the snapshot falls back to ----------------------


def _edit_entries(path: Path, edit: Callable[[str, list[object]], None]) -> None:
    data = json.loads(path.read_text())
    for name, entry in data["files"].items():
        edit(name, entry)
    path.write_text(json.dumps(data))


def _walk_entry(edit: Callable[[dict[str, list[str]]], None]) -> Callable[[str, list[object]], None]:
    def apply(name: str, entry: list[object]) -> None:
        if name.startswith("\0walk:") and isinstance(entry[1], dict):
            edit(entry[1])  # type: ignore[arg-type]
    return apply


def _file_entry(edit: Callable[[dict[str, object]], None]) -> Callable[[str, list[object]], None]:
    def apply(name: str, entry: list[object]) -> None:
        if not name.startswith("\0walk:") and isinstance(entry[1], dict):
            edit(entry[1])  # type: ignore[arg-type]
    return apply


PER_FILE_HOSTILE: dict[str, Callable[[Path], None]] = {
    "garbage": lambda p: p.write_bytes(os.urandom(3000)),
    "truncated": lambda p: p.write_bytes(p.read_bytes()[:-100]),
    "deep nesting": lambda p: p.write_text('{"format": 6, "files": ' + "[" * 100000 + "]" * 100000 + "}"),
    "entries not lists": lambda p: _edit_entries(p, lambda name, entry: entry.__setitem__(0, 5)),
    "a listing leading out of the folder": lambda p: _edit_entries(p, _walk_entry(lambda v: v["f"].append("../../../bin/ls"))),
    "a listing of numbers": lambda p: _edit_entries(p, _walk_entry(lambda v: v.__setitem__("d", [1, 2]))),
    "a listing without its kinds": lambda p: _edit_entries(p, _walk_entry(lambda v: v.pop("l"))),
    "a binary with an unknown field": lambda p: _edit_entries(p, _file_entry(lambda v: v["binary"].__setitem__("evil", 1))),  # type: ignore[index]
    "needed a string": lambda p: _edit_entries(p, _file_entry(lambda v: v["binary"].__setitem__("needed", "libc.so.6"))),  # type: ignore[index]
    "a binary without its path": lambda p: _edit_entries(p, _file_entry(lambda v: v["binary"].pop("path"))),  # type: ignore[attr-defined]
    "a problem not an object": lambda p: _edit_entries(p, _file_entry(lambda v: v.__setitem__("problems", ["x"]))),
    "a location of the wrong type": lambda p: _edit_entries(p, _file_entry(lambda v: v["binary"].__setitem__("location", {"path": 3}))),  # type: ignore[index]
}


@pytest.mark.parametrize("hostile", sorted(PER_FILE_HOSTILE))
def test_a_broken_or_hostile_per_file_cache_is_ignored(tmp_path: Path, hostile: str) -> None:
    root = build_site(tmp_path / "site")
    cold = parts(cold_scan(root))
    cached_scan(root)
    snapshot_of(root).path.unlink()
    [per_file] = (tmp_path / "cache").glob("scan-*.json")
    PER_FILE_HOSTILE[hostile](per_file)
    assert parts(cached_scan(root)) == cold


def test_a_per_file_cache_over_its_limit_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = build_site(tmp_path / "site")
    cached_scan(root)
    snapshot_of(root).path.unlink()
    [per_file] = (tmp_path / "cache").glob("scan-*.json")
    assert cache.ScanCache(f"folder:{os.path.abspath(root)}:deep=False").get(str(root / "ext" / "libext.so"), (0,)) is None
    monkeypatch.setattr(cache, "SCAN_CACHE_LIMIT", per_file.stat().st_size - 1)
    assert cache.ScanCache(f"folder:{os.path.abspath(root)}:deep=False")._old == {}
    assert parts(cached_scan(root)) == parts(cold_scan(root))
