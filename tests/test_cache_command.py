"""`envcheck cache`: what the cache holds, and removing it (all, or what was not used for N days)."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import time
from pathlib import Path

from conftest import FIXTURES, run_envcheck
from seed_builders import tar_of
from test_hardening_inputs import _oci_layout

from envcheck.services.registry.cache import BlobCache

DAY = 86400


def _layer() -> bytes:
    data = (FIXTURES / "binaries" / "libext_cuda13.so").read_bytes()
    return gzip.compress(tar_of([("usr/local/lib/python3.12/site-packages/ext/libext.so", data)]), mtime=0)


def _info(env: dict[str, str]) -> dict[str, dict[str, int]]:
    done = run_envcheck("cache", "info", "-f", "json", env=env)
    assert done.returncode == 0, done.stderr
    entries: dict[str, dict[str, int]] = json.loads(done.stdout)["entries"]
    return entries


def test_info_and_clean(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    env = {"ENVCHECK_CACHE_DIR": str(root)}
    assert run_envcheck(str(FIXTURES / "binaries"), "-f", "json", env=env).returncode in (0, 1)
    image = _oci_layout(tmp_path / "image", _layer())
    assert run_envcheck("image", "--deep", "--no-progress", "-f", "json", f"oci-layout:{image}", env=env).returncode in (0, 1)
    blob = b'{"schemaVersion": 2}'
    BlobCache(root).put_blob("sha256:" + hashlib.sha256(blob).hexdigest(), blob)
    foreign = root / "notes" / "mine.txt"  # the folder may be shared: not envcheck's, never touched
    foreign.parent.mkdir(parents=True)
    foreign.write_text("keep")

    entries = _info(env)
    assert {k: v["files"] for k, v in entries.items()} == {
        "binary scans": 1, "folder inventories": 1, "registry manifests and configs": 1, "image layer scans": 1,
        "package file facts (--resolve)": 0, "resolutions (--resolve)": 0}
    on_disk = sum(f.stat().st_size for f in root.rglob("*") if f.is_file() and f != foreign)
    assert sum(v["bytes"] for v in entries.values()) == on_disk

    # Age everything by 10 days, then use the binary scan again: its entries are marked as used (the folder
    # inventory answers, and the per-file entries it would fall back to are kept with it).
    for path in root.rglob("*"):
        if path.is_file():
            os.utime(path, (time.time() - 10 * DAY, time.time() - 10 * DAY))
    assert run_envcheck(str(FIXTURES / "binaries"), "-f", "json", env=env).returncode in (0, 1)
    done = run_envcheck("cache", "clean", "--older-than", "5", env=env)
    assert done.returncode == 0 and "removed 2 cache files not used for 5 days" in done.stdout, done.stdout
    assert {k: v["files"] for k, v in _info(env).items()} == {
        "binary scans": 1, "folder inventories": 1, "registry manifests and configs": 0, "image layer scans": 0,
        "package file facts (--resolve)": 0, "resolutions (--resolve)": 0}

    done = run_envcheck("cache", "clean", "-f", "json", env=env)
    assert json.loads(done.stdout)["removed_files"] == 2
    assert all(v == {"files": 0, "bytes": 0} for v in _info(env).values())
    assert foreign.read_text() == "keep" and [p for p in root.iterdir()] == [foreign.parent]


def test_older_than_only_with_clean(tmp_path: Path) -> None:
    done = run_envcheck("cache", "info", "--older-than", "3", env={"ENVCHECK_CACHE_DIR": str(tmp_path)})
    assert done.returncode == 2 and "--older-than" in done.stderr and "Traceback" not in done.stderr


def test_info_lists_the_users_own_facts_table_and_clean_keeps_it(tmp_path: Path) -> None:
    """`cache update-facts` writes the user's wheel facts table into the cache folder: `cache info` names it
    (where, rows, bytes; none yet before), in text and JSON, and `cache clean` never removes it."""
    root = tmp_path / "cache"
    env = {"ENVCHECK_CACHE_DIR": str(root)}
    table = root / "wheel_facts.json"
    done = run_envcheck("cache", "info", env=env)
    said = "your wheel facts table (--resolve reads it; clean keeps it)"
    assert f"{said}: {table}: none yet (update-facts writes it)" in done.stdout
    table.parent.mkdir(parents=True)
    rows = {f"{i:064x}": {"source": "pypi on 2026-12-01", "tags": [], "binaries": [], "notes": []} for i in range(3)}
    table.write_text(json.dumps({"files": rows}))
    assert run_envcheck("cache", "clean", env=env).returncode == 0 and table.is_file()
    done = run_envcheck("cache", "info", env=env)
    assert f"{said}: {table}: 3 rows, " in done.stdout, done.stdout
    elsewhere = tmp_path / "mine.json"  # ENVCHECK_WHEEL_FACTS names it outside the cache folder
    elsewhere.write_text(json.dumps({"files": dict(list(rows.items())[:1])}))
    done = run_envcheck("cache", "info", "-f", "json", env={**env, "ENVCHECK_WHEEL_FACTS": str(elsewhere)})
    assert json.loads(done.stdout)["facts_table"] == {"path": str(elsewhere), "exists": True, "rows": 1,
                                                      "bytes": elsewhere.stat().st_size}
