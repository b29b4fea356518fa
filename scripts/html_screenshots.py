"""Render the screenshots of docs/html.md: real reports opened in headless Chromium (Debian's chromium).

    python3 scripts/html_screenshots.py SITE_PACKAGES [OUT_DIR]

SITE_PACKAGES: a CUDA 13 torch environment's site-packages (``pip install torch --index-url
https://download.pytorch.org/whl/cu130`` into a venv). The CUDA 12 image is built here: an OCI layout whose
history installs a cu121 torch and whose layer holds the CUDA 12 and sm_80 ELF fixtures (fixtures/binaries),
read with ``envcheck image --deep``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "fuzz"))

from seed_builders import digest, oci_index, oci_manifest, tar_of, write_oci_layout  # noqa: E402

BINARIES = REPO / "fixtures" / "binaries"
DIST = "usr/local/lib/python3.10/dist-packages"


def cuda12_image(folder: Path) -> str:
    """An OCI layout of a CUDA 12 image: its history and one layer with CUDA 12 / sm_80 ELF files."""
    members: list[tuple[str, bytes]] = []
    for name, files in {"oldext": {"oldext/_C.so": "libext_cuda12.so"},
                        "nvidia-cuda-runtime-cu12": {"nvidia/cuda_runtime/lib/libcudart.so.12": "libcudart.so.12"},
                        "sm80kernels": {"sm80kernels/_k.so": "gpu_sm80.so"},
                        "ptxkernels": {"ptxkernels/_k.so": "gpu_sm80_ptx.so"}}.items():
        info = f"{name.replace('-', '_')}-1.0.dist-info"
        members.append((f"{DIST}/{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n".encode()))
        members.append((f"{DIST}/{info}/RECORD", "".join(f"{k},,\n" for k in files).encode()))
        members += [(f"{DIST}/{k}", (BINARIES / v).read_bytes()) for k, v in files.items()]
    layer = tar_of(members)
    history = [
        {"created_by": "/bin/sh -c #(nop) ADD file:5f1c in / "},
        {"created_by": "ENV CUDA_VERSION=12.4.1", "empty_layer": True},
        {"created_by": "ENV TORCH_CUDA_ARCH_LIST=8.0;8.6;9.0", "empty_layer": True},
        {"created_by": "RUN /bin/sh -c pip install torch==2.5.1 --extra-index-url https://download.pytorch.org/whl/cu121 # buildkit"},
        {"created_by": "RUN /bin/sh -c pip install flash-attn --no-build-isolation # buildkit"},
    ]
    config = json.dumps({"architecture": "arm64", "os": "linux", "history": history,
                         "config": {"Env": ["PATH=/usr/local/bin:/usr/bin", "CUDA_VERSION=12.4.1", "TORCH_CUDA_ARCH_LIST=8.0;8.6;9.0"]},
                         "rootfs": {"type": "layers", "diff_ids": [digest(layer)]}}).encode()
    manifest = json.dumps(oci_manifest(config, [layer])).encode()
    write_oci_layout(folder, json.dumps(oci_index(manifest)).encode(), [config, layer, manifest])
    return f"oci-layout:{folder}"


def shoot(args: list[str], html: Path, png: Path, height: int) -> None:
    """Render a report with envcheck and take a screenshot of it."""
    subprocess.run([sys.executable, "-m", "envcheck", *args, "--format", "html", "-o", str(html), "-q"], cwd=REPO, check=False)
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", f"--user-data-dir={profile}",
                        f"--screenshot={png}", f"--window-size=1280,{height}", html.as_uri()],
                       check=True, capture_output=True, timeout=180)


def main() -> None:
    site = Path(sys.argv[1])
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else REPO / "docs"
    with tempfile.TemporaryDirectory() as tmp:
        shoot([str(site)], Path(tmp) / "torch.html", out / "html-cuda13-torch.png", 1300)
        image = cuda12_image(Path(tmp) / "cuda12-image")
        shoot(["image", "--deep", image], Path(tmp) / "image.html", out / "html-cuda12-image.png", 1500)


if __name__ == "__main__":
    main()
