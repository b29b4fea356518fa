"""`envcheck image --deep` of a realistic CUDA 13 layer, side by side with plain decompression of the same blob.

The layer holds the real files of CUDA 13 wheels (NCCL, cuSPARSELt, NVSHMEM by default: about 540 MiB of
shared objects with GPU code, as `pip install` lays them under dist-packages, with their dist-info), as a
gzip (level 6, what `docker push` writes) and as a zstd layer, in one OCI layout. For each compression, in
the same run: the best wall time of a fresh `envcheck image oci-layout:... --deep --no-cache` process and
its peak RSS, against the best time of the standard library's zlib (or zstandard's stream reader)
inflating the blob alone, read 1 MiB at a time from the same file. The ratio is the peer's time over
envcheck's: at least 1.0 means envcheck reads and judges the layer as fast as the peer only inflates it.

Usage: python3 benchmarks/bench_deep.py [--wheels DIR | --tree SITE/nvidia/nccl ...] [--runs 3]
(without --wheels it downloads the wheels for this machine's architecture with pip into a cache folder).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import platform
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WHEELS = ("nvidia-nccl-cu13==2.30.7", "nvidia-cusparselt-cu13==0.8.1", "nvidia-nvshmem-cu13==3.4.5")
SITE = "usr/local/lib/python3.12/dist-packages"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"

# Peak RSS from VmHWM (ru_maxrss of a child also counts the parent's address space at exec time).
RSS_WRAPPER = """
import sys
from envcheck.cli import main
code = main(sys.argv[1:])
hwm = next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:"))
sys.stderr.write(f"\\nMAXRSS_KB={hwm}\\n")
sys.exit(code)
"""


def wheels(folder: Path | None) -> list[Path]:
    """The wheels to lay out: those in ``folder``, else the default CUDA 13 wheels downloaded once."""
    if folder is None:
        folder = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "envcheck-bench" / "cuda13-wheels"
        if not list(folder.glob("*.whl")):
            folder.mkdir(parents=True, exist_ok=True)
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                            "-d", str(folder), *WHEELS], check=True)
    found = sorted(folder.glob("*.whl"))
    if not found:
        raise SystemExit(f"no wheels in {folder}")
    return found


def _tree_name(path: Path) -> str:
    """Where an installed file goes in the layer: its path below site-packages, under dist-packages."""
    parts = path.parts
    below = parts[parts.index("site-packages") + 1:] if "site-packages" in parts else parts[-2:]
    return f"{SITE}/{'/'.join(below)}"


def layer_tar(out: io.RawIOBase | io.BufferedIOBase, wheel_files: list[Path], trees: list[Path] | None = None) -> tuple[int, int]:
    """Write the uncompressed layer (every wheel's files, and the files of installed ``trees``, under
    dist-packages) to ``out``; (bytes, members)."""
    written = members = 0
    with tarfile.open(fileobj=out, mode="w|", format=tarfile.PAX_FORMAT) as tar:  # type: ignore[arg-type]
        for tree in trees or []:
            for folder, _dirs, files in sorted(os.walk(tree)):
                for name in sorted(files):
                    path = Path(folder) / name
                    if path.is_symlink() or not path.is_file():
                        continue
                    info = tarfile.TarInfo(_tree_name(path))
                    info.size = path.stat().st_size
                    info.mode = 0o755 if name.endswith(".so") or ".so." in name else 0o644
                    with path.open("rb") as member:
                        tar.addfile(info, member)
                    written += info.size
                    members += 1
        for wheel in wheel_files:
            with zipfile.ZipFile(wheel) as zf:
                for entry in zf.infolist():
                    if entry.is_dir():
                        continue
                    info = tarfile.TarInfo(f"{SITE}/{entry.filename}")
                    info.size = entry.file_size
                    info.mode = 0o755 if entry.filename.endswith(".so") or ".so." in entry.filename else 0o644
                    with zf.open(entry) as member:
                        tar.addfile(info, member)
                    written += entry.file_size
                    members += 1
    return written, members


class _Compressing(io.RawIOBase):
    """A writable file that compresses into ``target`` and hashes the compressed bytes."""

    def __init__(self, target: io.BufferedWriter, kind: str) -> None:
        self.target = target
        self.hash = hashlib.sha256()
        self.diff = hashlib.sha256()
        self.size = 0
        if kind == "gzip":
            self.compressor = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        else:
            import zstandard

            self.compressor = zstandard.ZstdCompressor(level=3).compressobj()

    def writable(self) -> bool:
        return True

    def write(self, data: bytes) -> int:  # type: ignore[override]
        self.diff.update(data)
        self._out(self.compressor.compress(bytes(data)))
        return len(data)

    def _out(self, chunk: bytes) -> None:
        self.hash.update(chunk)
        self.size += len(chunk)
        self.target.write(chunk)

    def finish(self) -> None:
        self._out(self.compressor.flush())


def build_layout(folder: Path, wheel_files: list[Path], trees: list[Path] | None = None) -> dict[str, dict[str, object]]:
    """An OCI layout with one image per compression (tags ``gzip`` and ``zstd``); facts per tag."""
    blobs = folder / "blobs" / "sha256"
    blobs.mkdir(parents=True)

    def put(data: bytes) -> dict[str, object]:
        digest = hashlib.sha256(data).hexdigest()
        (blobs / digest).write_bytes(data)
        return {"size": len(data), "digest": f"sha256:{digest}"}

    facts: dict[str, dict[str, object]] = {}
    manifests = []
    for kind, media in (("gzip", "application/vnd.oci.image.layer.v1.tar+gzip"),
                        ("zstd", "application/vnd.oci.image.layer.v1.tar+zstd")):
        partial = folder / f"layer.{kind}.partial"
        with partial.open("wb") as raw:
            sink = _Compressing(raw, kind)  # type: ignore[arg-type]
            uncompressed, members = layer_tar(sink, wheel_files, trees)
            sink.finish()
        blob = blobs / sink.hash.hexdigest()
        partial.rename(blob)
        arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
        config = {"architecture": arch, "os": "linux", "config": {"Env": ["CUDA_VERSION=13.0.2"]},
                  "rootfs": {"type": "layers", "diff_ids": [f"sha256:{sink.diff.hexdigest()}"]}}
        config_desc = put(json.dumps(config).encode())
        manifest = {"schemaVersion": 2, "mediaType": OCI_MANIFEST,
                    "config": {"mediaType": "application/vnd.oci.image.config.v1+json", **config_desc},
                    "layers": [{"mediaType": media, "size": sink.size, "digest": f"sha256:{blob.name}"}]}
        manifests.append({"mediaType": OCI_MANIFEST, **put(json.dumps(manifest).encode()),
                          "annotations": {"org.opencontainers.image.ref.name": kind}})
        facts[kind] = {"blob": blob, "compressed": sink.size, "uncompressed": uncompressed, "members": members,
                       "platform": f"linux/{arch}"}
    (folder / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
    (folder / "index.json").write_text(json.dumps({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": manifests}))
    return facts


def inflate_alone(blob: Path, kind: str, library: str = "zlib") -> tuple[float, float]:
    """(seconds, CPU seconds) to read ``blob`` 1 MiB at a time and decompress it, discarding the output."""
    start, cpu = time.perf_counter(), time.process_time()
    with blob.open("rb") as fh:
        if kind == "zstd":
            import zstandard

            reader = zstandard.ZstdDecompressor().stream_reader(fh, read_across_frames=True)
            while reader.read(1 << 20):
                pass
        else:
            module = __import__({"zlib": "zlib", "isal": "isal.isal_zlib", "zlib-ng": "zlib_ng.zlib_ng"}[library],
                                fromlist=["decompressobj"])
            inflater = module.decompressobj(16 + zlib.MAX_WBITS)
            while chunk := fh.read(1 << 20):
                inflater.decompress(chunk)
    return time.perf_counter() - start, time.process_time() - cpu


def run_deep(layout: Path, tag: str, target: str, cache: Path) -> tuple[float, dict[str, object], int, str, float]:
    """(seconds, inventory, peak RSS in KiB, stderr, CPU seconds) of one `envcheck image --deep -v` process."""
    env = {**os.environ, "ENVCHECK_CACHE_DIR": str(cache),
           "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", RSS_WRAPPER, "image", f"oci-layout:{layout}:{tag}", "--deep", "--no-cache",
                           "--no-progress", "--platform", target, "-f", "json", "-v"],
                          capture_output=True, text=True, env=env, cwd=REPO, check=False)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    if "MAXRSS_KB=" not in done.stderr:
        raise SystemExit(f"envcheck failed: {done.stderr[-2000:]}")
    rss = int(done.stderr.rsplit("MAXRSS_KB=", 1)[1].split()[0])
    inventory = json.loads(done.stdout)["targets"][0]["inventory"]
    return seconds, inventory, rss, done.stderr, cpu


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--wheels", type=Path, default=None, help="folder of wheels to build the layer from")
    parser.add_argument("--tree", type=Path, action="append", default=[],
                        help="an installed folder (under some site-packages) to lay out instead of wheels (repeatable)")
    parser.add_argument("--runs", type=int, default=3, help="runs of each side; the best is shown")
    parser.add_argument("--keep", type=Path, default=None, help="build the layout here and keep it (reused when present)")
    args = parser.parse_args()
    wheel_files = [] if args.tree and args.wheels is None else wheels(args.wheels)
    with tempfile.TemporaryDirectory(prefix="envcheck-bench-deep-") as tmp:
        layout = args.keep or Path(tmp) / "layout"
        facts_file = layout / "bench-facts.json"
        if facts_file.exists():
            facts = json.loads(facts_file.read_text())
            for kind in facts:
                facts[kind]["blob"] = Path(facts[kind]["blob"])
        else:
            start = time.perf_counter()
            facts = build_layout(layout, wheel_files, args.tree)
            facts_file.write_text(json.dumps({k: {**v, "blob": str(v["blob"])} for k, v in facts.items()}))
            print(f"layout built in {time.perf_counter() - start:.0f} s", file=sys.stderr)
        print(f"{time.strftime('%Y-%m-%d')}, {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
              f"layer: {', '.join(w.name.split('-py3')[0] for w in wheel_files)}\n")
        print("| layer | `envcheck image --deep` (CPU) | inflate alone (peer, CPU) | ratio (peer / envcheck) | peak RSS |\n"
              "|---|---|---|---|---|")
        for kind, fact in facts.items():
            blob = Path(str(fact["blob"]))
            mib = int(str(fact["uncompressed"])) / (1 << 20)
            peer_name = "zstandard" if kind == "zstd" else "zlib"
            peer, peer_cpu = min(inflate_alone(blob, kind) for _ in range(args.runs))
            runs = [run_deep(layout, kind, str(fact["platform"]), Path(tmp) / "cache") for _ in range(args.runs)]
            seconds, inventory, rss, stderr, cpu = min(runs, key=lambda r: r[0])
            rss = max(r[2] for r in runs)
            rate_line = next((line for line in stderr.splitlines() if "MB/s" in line), "")
            print(f"| {kind}: {mib:,.0f} MiB ({int(str(fact['compressed'])) / (1 << 20):,.0f} MiB compressed), "
                  f"{fact['members']} files, {len(inventory.get('binaries', []))} ELF | {seconds:.2f} s ({cpu:.2f} s) | "
                  f"{peer_name}: {peer:.2f} s ({peer_cpu:.2f} s) | {peer / seconds:.2f} | {rss / 1024:.0f} MiB |")
            if rate_line:
                print(f"  ({rate_line.strip()})", file=sys.stderr)
            if kind == "gzip":
                for library in ("isal", "zlib-ng"):
                    try:
                        other, other_cpu = min(inflate_alone(blob, kind, library) for _ in range(args.runs))
                    except ImportError:
                        continue
                    print(f"|   (for reference: {library} inflating the gzip blob alone) | | {other:.2f} s ({other_cpu:.2f} s) | | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
