"""Benchmarks for `envcheck image` against a real registry on loopback (results go to BENCHMARKS.md).

1. Config level: a multi-arch NGC-like image (index -> arm64 manifest -> config): HTTP requests and wall
   time, cold cache and warm cache, in process and as a whole `envcheck image` process.
2. Deep scan: one-layer images of growing size (real CUDA libraries from /usr/local/cuda/lib64 placed under
   site-packages, the interpreter's stdlib as filler, dist-info METADATA), gzip level 1, in a registry with
   filesystem storage. For each: wall time and throughput of `envcheck image --deep --no-cache` (a fresh
   process, its peak RSS), against plain decompression of the same blob fetched from the same registry.

Usage: python3 benchmarks/bench_image.py [--sizes-mb 256,1024,2048]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zlib
from pathlib import Path

import requests

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

import registry_fixtures as rf  # noqa: E402

# Peak RSS from VmHWM: ru_maxrss of a spawned child also counts the parent's RSS at exec time (Linux
# records the old address space's high-water mark on exec), which would make this benchmark measure itself.
RSS_WRAPPER = """
import sys
from envcheck.cli import main
code = main(sys.argv[1:])
hwm = next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:"))
sys.stderr.write(f"\\nMAXRSS_KB={hwm}\\n")
sys.exit(code)
"""


def run_cli(*args: str, cache: Path) -> tuple[float, int, dict[str, object], int]:
    """(seconds, exit code, report, peak RSS in KiB) of one `envcheck` process."""
    env = {**os.environ, "ENVCHECK_CACHE_DIR": str(cache)}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", RSS_WRAPPER, *args], capture_output=True, text=True, env=env, cwd=REPO, check=False)
    seconds = time.perf_counter() - start
    rss = int(done.stderr.rsplit("MAXRSS_KB=", 1)[1].split()[0])
    return seconds, done.returncode, json.loads(done.stdout), rss


def config_level(cache_root: Path) -> list[str]:
    from envcheck.sources.image import ImageOptions, read_image

    images = rf.session_images()
    rows = []
    cache = cache_root / "config"
    for label in ("cold cache", "warm cache"):
        os.environ["ENVCHECK_CACHE_DIR"] = str(cache)
        best = float("inf")
        requests_made = 0
        for _attempt in range(7):
            if label == "cold cache":
                shutil.rmtree(cache, ignore_errors=True)
            start = time.perf_counter()
            inventory = read_image(images.ngc_arm64, ImageOptions())
            best = min(best, time.perf_counter() - start)
            requests_made = int((inventory.host.image.requests if inventory.host.image else None) or 0)
        rows.append(f"| config level, in process, {label} | {requests_made} | {best * 1000:.1f} ms |")
    shutil.rmtree(cache, ignore_errors=True)
    for label in ("cold cache", "warm cache"):
        best = float("inf")
        for _ in range(5):
            if label == "cold cache":
                shutil.rmtree(cache, ignore_errors=True)
            seconds, code, report, _ = run_cli("image", images.ngc_arm64, "-f", "json", cache=cache)
            assert code == 0, report
            best = min(best, seconds)
            requests_made = report["targets"][0]["inventory"]["host"]["image"]["requests"]  # type: ignore[index]
        rows.append(f"| `envcheck image` (whole process), {label} | {requests_made} | {best * 1000:.1f} ms |")
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    rows.append(f"| `python3 -c pass` (floor) | 0 | {(time.perf_counter() - start) * 1000:.1f} ms |")
    return rows


def filler_files() -> list[Path]:
    """Real files to fill layers with: the CUDA libraries (ELF, scanned) and the stdlib (not scanned)."""
    cuda = sorted(p for p in Path("/usr/local/cuda/lib64").glob("*.so*") if p.is_file())
    stdlib = sorted(p for p in Path(sys.base_prefix, "lib", f"python{sys.version_info.major}.{sys.version_info.minor}").rglob("*.py"))
    return cuda + stdlib[:3000]


def build_layer(path: Path, size_mb: int, files: list[Path]) -> tuple[int, int]:
    """Write a gzip (level 1) layer of about ``size_mb`` MiB uncompressed; (uncompressed bytes, members)."""
    target = size_mb << 20
    written = 0
    members = 0
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1, mtime=0) as gz, \
            tarfile.open(fileobj=gz, mode="w|", format=tarfile.PAX_FORMAT) as tar:
        round_no = 0
        while written < target:
            for source in files:
                if written >= target:
                    break
                if source.suffix == ".py":
                    name = f"usr/lib/python3/dist-packages/filler{round_no}/{source.name}"
                else:
                    name = f"usr/local/lib/python3.12/dist-packages/nvidia{round_no}/cu13/lib/{source.name}"
                info = tar.gettarinfo(str(source), arcname=name)
                with source.open("rb") as fh:
                    tar.addfile(info, fh)
                written += info.size
                members += 1
            meta = f"Metadata-Version: 2.1\nName: nvidia{round_no}-cu13\nVersion: 13.0.{round_no}\n\n".encode()
            info = tarfile.TarInfo(f"usr/local/lib/python3.12/dist-packages/nvidia{round_no}_cu13-13.0.{round_no}.dist-info/METADATA")
            info.size = len(meta)
            tar.addfile(info, io.BytesIO(meta))
            written += len(meta)
            members += 1
            round_no += 1
    return written, members


def push_file_blob(host: str, repo: str, path: Path) -> dict[str, object]:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    text = "sha256:" + digest.hexdigest()
    post = requests.post(f"http://{host}/v2/{repo}/blobs/uploads/", timeout=30)
    location = post.headers["Location"]
    url = location if location.startswith("http") else f"http://{host}{location}"
    with path.open("rb") as fh:
        requests.put(url, params={"digest": text}, data=fh, headers={"Content-Length": str(path.stat().st_size)}, timeout=600).raise_for_status()
    return {"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "size": path.stat().st_size, "digest": text}


def plain_decompression(host: str, repo: str, digest: str) -> float:
    """Seconds to fetch the blob over HTTP and gunzip it, discarding the output (the floor for --deep)."""
    start = time.perf_counter()
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    with requests.get(f"http://{host}/v2/{repo}/blobs/{digest}", stream=True, timeout=600) as response:
        for chunk in response.iter_content(1 << 20):
            inflater.decompress(chunk)
    return time.perf_counter() - start


def deep(sizes: list[int], work: Path) -> list[str]:
    store = work / "registry-data"
    host = rf._start_registry("bench", storage_dir=store)
    files = filler_files()
    rows = []
    for size in sizes:
        layer_path = work / f"layer-{size}.tar.gz"
        start = time.perf_counter()
        uncompressed, members = build_layer(layer_path, size, files)
        build_s = time.perf_counter() - start
        repo = f"bench/deep{size}"
        layer = push_file_blob(host, repo, layer_path)
        config = rf.config_for("amd64", ["CUDA_VERSION=13.0.2"])
        config["rootfs"] = {"type": "layers", "diff_ids": []}
        pusher = rf.Pusher(host)
        config_desc = pusher.blob(repo, json.dumps(config).encode())
        pusher.manifest(repo, "1", {"schemaVersion": 2, "mediaType": rf.OCI_MANIFEST,
                                    "config": {"mediaType": rf.OCI_CONFIG, **config_desc}, "layers": [layer]})
        plain = min(plain_decompression(host, repo, str(layer["digest"])) for _ in range(2))
        seconds, _code, report, rss = run_cli("image", f"{host}/{repo}:1", "--deep", "--no-cache", "--platform", "linux/amd64",
                                             "-f", "json", "--no-progress", cache=work / "cache")
        inventory = report["targets"][0]["inventory"]  # type: ignore[index]
        facts = inventory["host"]["image"]["deep"]
        assert facts["bytes"] == uncompressed, facts
        rows.append(f"| {uncompressed / (1 << 20):,.0f} MiB ({layer['size'] / (1 << 20):,.0f} MiB gz), {members:,} files, "  # type: ignore[operator]
                    f"{len(inventory.get('binaries', []))} ELF | {seconds:.1f} s ({uncompressed / (1 << 20) / seconds:.0f} MiB/s) | "
                    f"{plain:.1f} s ({uncompressed / (1 << 20) / plain:.0f} MiB/s) | {seconds / plain:.2f} | {rss / 1024:.0f} MiB |")
        print(rows[-1], f"(layer built in {build_s:.0f} s)", file=sys.stderr)
        layer_path.unlink()
        shutil.rmtree(store / "docker", ignore_errors=True)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes-mb", default="256,1024,2048")
    args = parser.parse_args()
    sizes = [int(x) for x in args.sizes_mb.split(",")]
    with tempfile.TemporaryDirectory(prefix="envcheck-bench-") as tmp:
        work = Path(tmp)
        print(f"{time.strftime('%Y-%m-%d')}, {platform.machine()} {platform.processor() or ''}, {os.cpu_count()} cores, "
              f"Python {platform.python_version()}\n")
        print("| config level | HTTP requests | best wall time |\n|---|---|---|")
        for row in config_level(work):
            print(row)
        print("\n| deep scan (one layer) | `envcheck image --deep` | fetch + gunzip only | ratio | peak RSS |\n|---|---|---|---|---|")
        for row in deep(sizes, work):
            print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
