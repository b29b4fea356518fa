"""The oracle of corpus/wheels, independent of envcheck: unzip a wheel, readelf and cuobjdump every ELF file,
write the facts as JSON. Usage: oracle.py WHEEL OUT.json [EXTRACT_DIR]. cuobjdump: $CUOBJDUMP or PATH
(pip install nvidia-cuda-cuobjdump puts it under site-packages/nvidia/cu13/bin)."""

import email.parser
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections import Counter

CUOBJ = os.environ.get("CUOBJDUMP") or shutil.which("cuobjdump") or "cuobjdump"
CUDA_LIB = re.compile(
    r"^lib(cudart|cublas|cublasLt|nvrtc|nvrtc-builtins|nvJitLink|cupti|cufft|cufftw|cusparse|cusparseLt|cusolver|curand|cudnn\w*|nccl|nvshmem\w*|cuda|nvidia-ml|nvjpeg|cufile|npp\w*|nvToolsExt|nvperf\w*|nvblas)(\.[0-9a-f]{8})?\.so"
)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, errors="replace", **kw)


def runs_sass(a):
    m = re.fullmatch(r"sm_(\d+)([af]?)", a)
    if not m:
        return False
    n, s = int(m[1]), m[2]
    return (n in (120, 121) and s != "a") or (n == 121 and s == "a")


def runs_ptx(a):
    m = re.fullmatch(r"(?:sm|compute)_(\d+)([af]?)", a)
    if not m:
        return False
    n, s = int(m[1]), m[2]
    if s == "":
        return n <= 121
    if s == "f":
        return n in (120, 121)
    return n == 121


def main(whl, out, root=None):
    h = hashlib.sha256(open(whl, "rb").read()).hexdigest()
    name = os.path.basename(whl)
    dest = os.path.join(root or tempfile.mkdtemp(), name[:-4])
    os.makedirs(dest, exist_ok=True)
    with zipfile.ZipFile(whl) as z:
        z.extractall(dest)
        meta = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
        wheelf = [n for n in z.namelist() if n.endswith(".dist-info/WHEEL")]
        md = email.parser.Parser().parsestr(z.read(meta[0]).decode()) if meta else {}
        tags = (
            [
                l.split(":", 1)[1].strip()
                for l in z.read(wheelf[0]).decode().splitlines()
                if l.startswith("Tag:")
            ]
            if wheelf
            else []
        )
    res = {
        "file": name,
        "sha256": h,
        "size": os.path.getsize(whl),
        "tags": tags,
        "requires_dist": md.get_all("Requires-Dist") or [] if meta else [],
        "elfs": [],
    }
    for root, _, files in os.walk(dest):
        for f in files:
            p = os.path.join(root, f)
            if os.path.islink(p):
                continue
            with open(p, "rb") as fh:
                if fh.read(4) != b"\x7fELF":
                    continue
            rel = os.path.relpath(p, dest)
            hdr = run(["readelf", "-h", p]).stdout
            mach = re.search(r"Machine:\s+(.*)", hdr)
            typ = re.search(r"Type:\s+(\S+)", hdr)
            dyn = run(["readelf", "-d", "-W", p]).stdout
            needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.*?)\]", dyn)
            soname = re.findall(r"\(SONAME\)\s+Library soname: \[(.*?)\]", dyn)
            secs = run(["readelf", "-S", "-W", p]).stdout
            has_fat = any(s in secs for s in (".nv_fatbin", "__nv_relfatbin"))
            e = {
                "path": rel,
                "machine": mach[1].strip() if mach else None,
                "type": typ[1] if typ else None,
                "cuda_needed": [n for n in needed if CUDA_LIB.match(n)],
                "soname": soname[0] if soname else None,
                "fatbin_sections": has_fat,
                "sass": [],
                "ptx": [],
            }
            if has_fat or (mach and "NVIDIA" in mach[1]):
                r = run([CUOBJ, "-all", "--list-elf", "--list-ptx", p], timeout=900)
                e["cuobjdump_rc"] = r.returncode
                if r.returncode:
                    e["cuobjdump_err"] = r.stderr[-300:]
                sass = re.findall(r"ELF file\s+\d+:.*?\.(sm_\d+[af]?)\.cubin", r.stdout)
                ptx = re.findall(r"PTX file\s+\d+:.*?\.(sm_\d+[af]?|compute_\d+[af]?)\.ptx", r.stdout)
                e["sass"] = dict(Counter(sass))
                e["ptx"] = dict(Counter(ptx))
                if sass or ptx:
                    e["verdict"] = (
                        "native"
                        if any(runs_sass(a) for a in sass)
                        else "ptx-jit"
                        if any(runs_ptx(a) for a in ptx)
                        else "none"
                    )
                    e["sm121a"] = "sm_121a" in sass
            res["elfs"].append(e)
    json.dump(res, open(out, "w"), indent=1)


if __name__ == "__main__":
    main(*sys.argv[1:4])
