"""`envcheck --resolve` reads in parallel and in few requests (issue 29) without changing what it learns.

The index is the suite's loopback index (tests/package_index.py); the wheels are real zip files of real ELF
fixtures, the facts tables real files written by `envcheck cache update-facts`.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import run_envcheck
from package_index import BINARIES, Dist, PackageIndex, build_wheel, serve, standard_index
from test_resolve import _env, _findings, _pylock, _resolved, _status

LIBS = ("libext_cuda12.so", "gpu_sm80.so", "aarch64_libtorch_global_deps.so")


def _many_libs() -> Dist:
    """A wheel of 24 small deflated libraries, each next to a Python file envcheck does not read (48 KB that do not
    compress: far enough apart that a reader going member by member asks for each library on its own), and one
    stored library."""
    members: dict[str, Path | bytes] = {}
    for n in range(24):
        members[f"manylibs/lib{n:02d}/{LIBS[n % 3]}"] = BINARIES / LIBS[n % 3]
        members[f"manylibs/lib{n:02d}/wrapper.py"] = random.Random(n).randbytes(48 << 10)
    members["manylibs/stored/libclean.so"] = BINARIES / "aarch64_libtorch_global_deps.so"
    return build_wheel("manylibs", "1.0", (), members, stored=("manylibs/stored/libclean.so",))


@pytest.fixture(scope="module")
def index() -> Iterator[PackageIndex]:
    served = standard_index()
    served.add("manylibs", _many_libs())
    yield from serve(served)


def _run(tmp_path: Path, index: PackageIndex, lock: Path, **extra: str) -> tuple[int, dict[str, Any]]:
    proc = run_envcheck("--resolve", "-f", "json", "--fail-on", "never", "--no-cache", str(lock),
                        env=_env(tmp_path, tmp_path / "uv", **extra))
    assert proc.stdout, proc.stderr
    return proc.returncode, json.loads(proc.stdout)["targets"][0]


def _comparable(target: dict[str, Any]) -> dict[str, Any]:
    """A target without what depends on how it was read (bytes and timings)."""
    inventory = dict(target["inventory"])
    inventory["resolved"] = [{k: v for k, v in r.items() if k != "bytes_read"} for r in inventory.get("resolved", [])]
    inventory["binaries"] = [{k: v for k, v in b.items() if k != "bytes_read"} for b in inventory.get("binaries", [])]
    inventory.pop("host", None)
    return {"inventory": inventory, "findings": target["findings"]}


FILES = ("manylibs-1.0-py3-none-manylinux_2_28_aarch64.whl", "cleanext-1.0-py3-none-manylinux_2_28_aarch64.whl",
         "cuda12ext-1.0-py3-none-manylinux_2_28_aarch64.whl", "sm80ext-1.0-py3-none-manylinux_2_28_aarch64.whl")


def test_parallel_coalesced_reads_give_the_serial_inventory_in_fewer_requests(tmp_path: Path, index: PackageIndex) -> None:
    lock = tmp_path / "pylock.toml"
    lock.write_text(_pylock(index, *FILES))
    index.requests.clear()
    code, serial = _run(tmp_path, index, lock, ENVCHECK_RESOLVE_JOBS="1")
    serial_requests = [r for r in index.requests if "manylibs" in r]
    index.requests.clear()
    parallel_code, parallel = _run(tmp_path, index, lock)
    assert code == parallel_code == 0
    assert _comparable(parallel) == _comparable(serial)
    # every library of the wheel was read, and judged as in the local wheel
    binaries = [b for b in parallel["inventory"]["binaries"] if "manylibs" in b["location"]["path"]]
    assert len(binaries) == 25
    local = tmp_path / FILES[0]
    dist = index.file(FILES[0])
    assert dist is not None
    local.write_bytes(dist.data)
    proc = run_envcheck("-f", "json", "--fail-on", "never", "--no-cache", str(local))
    local_binaries = json.loads(proc.stdout)["targets"][0]["inventory"]["binaries"]

    def facts(items: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        return sorted((b["location"].get("member") or b["path"], b["machine"], tuple(b.get("needed") or ()), b.get("cuda_major"),
                       json.dumps(b.get("fatbins") or b.get("gpu") or [], sort_keys=True)) for b in items)

    assert facts(binaries) == facts(local_binaries)
    assert "FAIL" in _status(parallel, "G1-binary-soname")
    # the 24 deflated libraries came in a few coalesced range requests, not one or more each
    file_requests = [r for r in serial_requests if r.startswith("GET /files/")]
    assert 0 < len(file_requests) <= 8, file_requests


def test_a_users_facts_table_answers_without_the_index_and_never_overrides_the_shipped_one(
        tmp_path: Path, index: PackageIndex) -> None:
    from envcheck.resolution import facts_table

    cache = tmp_path / "cache"
    proc = run_envcheck("cache", "update-facts", "--index-url", index.url, "cuda12ext==1.0", "winonly",
                        env=_env(tmp_path, tmp_path / "uv"))
    assert proc.returncode == 0, proc.stderr
    assert "winonly: no wheel for aarch64 (not added)" in proc.stdout and "1 rows added" in proc.stdout
    # an index that does not answer is exit code 3, as for every unreachable service, with the lines still said
    down = run_envcheck("cache", "update-facts", "--index-url", "http://127.0.0.1:9/simple", "cuda12ext",
                        env=_env(tmp_path, tmp_path / "uv"))
    assert down.returncode == 3 and "cuda12ext: " in down.stdout and "0 rows added" in down.stdout, down.stdout + down.stderr
    assert "did not answer for 1 packages (cuda12ext)" in down.stderr and "Traceback" not in down.stderr
    table = cache / "wheel_facts.json"
    # a row for a shipped file that says otherwise: the shipped row wins
    shipped_sha, shipped_row = next(iter(facts_table().items()))
    data = json.loads(table.read_text())
    (row,) = data["files"].values()
    assert row["updated"] and row["source"].startswith(row["url"]) and row["binaries"][0]["cuda_major"] == 12
    data["files"][shipped_sha] = {**shipped_row, "requires": ["poisoned"], "binaries": []}
    table.write_text(json.dumps(data))
    shipped_name = shipped_row["filename"]
    lock = tmp_path / "pylock.toml"
    lock.write_text(_pylock(index, "cuda12ext-1.0-py3-none-manylinux_2_28_aarch64.whl")
                    + f'\n[[packages]]\nname = "{shipped_name.split("-")[0]}"\nversion = "{shipped_name.split("-")[1]}"\n'
                    f'wheels = [{{ url = "{index.file_url(shipped_name)}", size = 1, hashes = {{ sha256 = "{shipped_sha}" }} }}]\n')
    index.missing.add("cuda12ext-1.0-py3-none-manylinux_2_28_aarch64.whl")  # the index cannot answer for it
    try:
        index.requests.clear()
        _, target = _run(tmp_path, index, lock)
        # a table named by ENVCHECK_WHEEL_FACTS is read instead of the cache folder's (here: none)
        _, without = _run(tmp_path, index, lock, ENVCHECK_WHEEL_FACTS=str(tmp_path / "none.json"))
    finally:
        index.missing.clear()
    assert "facts table" in _resolved(target)["cuda12ext"]["sources"]
    assert "FAIL" in _status(target, "G1-binary-soname") and not _findings(target, "input-error")
    shipped = next(p for p in target["inventory"]["packages"] if p.get("role") == "resolved" and p["name"] != "cuda12ext")
    assert "poisoned" not in (shipped.get("requires") or [])
    assert "facts table" not in _resolved(without)["cuda12ext"]["sources"]
    assert [f for f in _findings(without, "input-error") if "404" in f["message"]]


def test_a_user_table_that_is_not_a_table_is_ignored(tmp_path: Path, index: PackageIndex) -> None:
    table = tmp_path / "wheel_facts.json"
    dist = index.file("cuda12ext-1.0-py3-none-manylinux_2_28_aarch64.whl")
    assert dist is not None
    clean = index.file("cleanext-1.0-py3-none-manylinux_2_28_aarch64.whl")
    assert dist is not None and clean is not None
    table.write_text(json.dumps({"files": {dist.sha256: {"source": "x", "binaries": [{"path": "a", "machine": 7, "evil": True}]},
                                           clean.sha256: {"source": "x", "tags": 5, "requires": "y"}, "../../etc": {"source": "x"}}}))
    lock = tmp_path / "pylock.toml"
    lock.write_text(_pylock(index, dist.filename, clean.filename))
    code, target = _run(tmp_path, index, lock, ENVCHECK_WHEEL_FACTS=str(table))
    assert code == 0 and not {"facts table"} & {s for r in _resolved(target).values() for s in r["sources"]}, target["findings"]
    assert "FAIL" in _status(target, "G1-binary-soname")
