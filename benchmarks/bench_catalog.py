"""Benchmark: `envcheck catalog --deep` over tags that share layers costs their distinct layers, not their tags.

A loopback registry (tests/registry_fixtures.py, filesystem storage) holds N tags (default 24) of one repository. Each tag's
arm64 image has three layers: a base layer all tags share (``--base-mb`` of incompressible data), a layer
its family shares (``--family-mb``; two families, as CUDA 12 and CUDA 13 builds) and a small layer of its
own: 3 x N layer references, N + 3 distinct layers. A counting proxy in front of the registry counts the
layer blobs fetched and their bytes. Runs, each a fresh `envcheck` process (or three at once):

1. ``--no-cache``: nothing shared, every tag reads its three layers;
2. a cold cache: each distinct layer read once (the layer lock makes tags that need one wait for its scan);
3. the same cache again (warm): no layer read;
4. three concurrent ``--shard k/3`` processes on one cold cache folder: still each distinct layer once.

Usage: python3 benchmarks/bench_catalog.py [--tags 24] [--base-mb 64] [--family-mb 16] [--jobs 4]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

import registry_fixtures as rf  # noqa: E402

NAME = "bench/catalog"


def push(host: str, tags: int, base_mb: int, family_mb: int) -> tuple[dict[str, int], int]:
    """Push the tags (each distinct blob once); (size of each distinct layer by digest, layer references)."""
    pusher = rf.Pusher(host)
    pushed: dict[str, dict[str, object]] = {}

    def layer(files: dict[str, bytes | None]) -> tuple[bytes, dict[str, object]]:
        tar = rf.tar_of(files)
        blob = rf.Layer(tar, "gzip").blob()
        digest = rf.digest_of(blob)
        if digest not in pushed:
            pushed[digest] = {"mediaType": rf.LAYER_TYPES[("oci", "gzip")], **pusher.blob(NAME, blob)}
        return tar, pushed[digest]

    base = layer({"opt/base/blob": os.urandom(base_mb << 20)})
    families = {f: layer({f"opt/{f}/blob": os.urandom(family_mb << 20)}) for f in ("cuda13", "cuda12")}
    for index in range(tags):
        tag = f"t{index:02d}"
        family = "cuda13" if index % 2 == 0 else "cuda12"
        layers = [base, families[family], layer({f"opt/app/{tag}.txt": f"built for {tag}\n".encode()})]
        arch = "arm64" if family == "cuda13" else "amd64"
        config = {**rf.config_for(arch, ["CUDA_VERSION=13.0.2" if family == "cuda13" else "CUDA_VERSION=12.6.2"]),
                  "rootfs": {"type": "layers", "diff_ids": [rf.digest_of(tar) for tar, _ in layers]}}
        config_desc = pusher.blob(NAME, json.dumps(config).encode())
        pusher.manifest(NAME, tag, {"schemaVersion": 2, "mediaType": rf.OCI_MANIFEST,
                                    "config": {"mediaType": rf.OCI_CONFIG, **config_desc}, "layers": [d for _, d in layers]})
    return {d: int(str(desc["size"])) for d, desc in pushed.items()}, 3 * tags


def layer_gets(proxy: rf.FaultProxy, since: int, sizes: dict[str, int]) -> tuple[int, int]:
    """(layer blobs fetched, their bytes) since the ``since``-th request the proxy saw."""
    digests = [path.rsplit("/blobs/", 1)[1] for method, path in proxy.seen[since:] if method == "GET" and "/blobs/" in path]
    layers = [d for d in digests if d in sizes]
    return len(layers), sum(sizes[d] for d in layers)


def run(args: list[str], cache: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "ENVCHECK_CACHE_DIR": str(cache), "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "envcheck", "catalog", *args], env=env, cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def layers_fetched(proxy: rf.FaultProxy, processes: list[list[str]], cache: Path,
                   sizes: dict[str, int]) -> tuple[int, int, float, int]:
    """(layer blobs fetched, their bytes, wall seconds, layers the reports say were scanned) of processes run at once."""
    since = len(proxy.seen)
    start = time.perf_counter()
    running = [run(p, cache) for p in processes]
    scanned = 0
    for proc in running:
        out, err = proc.communicate(timeout=1800)
        if proc.returncode not in (0, 1):
            raise SystemExit(f"envcheck failed ({proc.returncode}): {err[-2000:]}")
        report = json.loads(out)
        scanned += sum(t["inventory"]["host"]["image"].get("deep", {}).get("layers_scanned", 0) for t in report["targets"])
    seconds = time.perf_counter() - start
    fetched, size = layer_gets(proxy, since, sizes)
    return fetched, size, seconds, scanned


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tags", type=int, default=24)
    parser.add_argument("--base-mb", type=int, default=64)
    parser.add_argument("--family-mb", type=int, default=16)
    parser.add_argument("--jobs", type=int, default=4)
    opts = parser.parse_args()
    store = Path(tempfile.mkdtemp(prefix="bench-catalog-registry-"))
    host = rf._start_registry("bench-catalog", storage_dir=store)  # filesystem storage: in-memory is slow with large blobs
    sizes, references = push(host, opts.tags, opts.base_mb, opts.family_mb)
    distinct = len(sizes)
    proxy = rf.FaultProxy(host, [])
    repository = f"{proxy.host}/{NAME}"
    common = [repository, "--tags", "t[0-9][0-9]", "--deep", "--jobs", str(opts.jobs), "-f", "json", "--no-progress"]
    shared_mb = opts.base_mb + opts.family_mb
    print(f"# envcheck catalog --deep, {opts.tags} tags, {references} layer references, {distinct} distinct layers "
          f"(base {opts.base_mb} MiB shared by all, family {opts.family_mb} MiB shared by half; each tag {shared_mb} MiB)")
    print(f"# {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, --jobs {opts.jobs}")
    print("| run | layer blobs fetched | MiB fetched | layers scanned | wall s |")
    print("|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory(prefix="bench-catalog-") as tmp:
        rows = [
            ("--no-cache (nothing shared)", [[*common, "--no-cache"]], Path(tmp) / "none"),
            ("cold cache", [common], Path(tmp) / "one"),
            ("warm cache (same folder again)", [common], Path(tmp) / "one"),
            ("3 concurrent --shard k/3, one cold cache", [[*common, "--shard", f"{k}/3"] for k in (1, 2, 3)], Path(tmp) / "shards"),
        ]
        for label, processes, cache in rows:
            fetched, size, seconds, scanned = layers_fetched(proxy, processes, cache, sizes)
            print(f"| {label} | {fetched} | {size / (1 << 20):.1f} | {scanned} | {seconds:.2f} |")
    proxy.close()
    shutil.rmtree(store, ignore_errors=True)


if __name__ == "__main__":
    main()
