"""Describe the Python environment this interpreter belongs to, as one JSON document on stdout.

torch and flash-attn are imported in child processes with a timeout, so an import that segfaults (G1's
symptom) or hangs is recorded, not fatal. The keys are in ``docs/inventory.md``; the probe never judges."""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

PROBE_SCHEMA = 1
STAGE_MARK = "@@envcheck-stage "
RESULT_MARK = "@@envcheck-result "

# Environment variables worth reporting: CUDA/NGC/container identity and what changes library loading.
ENV_NAMES = (
    "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "CUDA_VERSION",
    "CUDA_DRIVER_VERSION", "CUDNN_VERSION", "NCCL_VERSION", "LD_LIBRARY_PATH", "LD_PRELOAD",
    "TORCH_CUDA_ARCH_LIST", "CUDA_ARCH_LIST", "MAXSMVER", "NVIDIA_PYTORCH_VERSION", "PYTORCH_VERSION",
    "PYTORCH_BUILD_VERSION", "NVIDIA_PRODUCT_NAME", "NVIDIA_BUILD_ID", "NVIDIA_VLLM_VERSION", "VLLM_VERSION",
    "TRANSFORMER_ENGINE_VERSION", "PIP_CONSTRAINT", "TRITON_PTXAS_PATH", "PYTORCH_CUDA_ALLOC_CONF",
    "VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONPATH", "KUBERNETES_SERVICE_HOST", "container",
)

# Sonames that say which CUDA major the dynamic loader can hand out.
CUDA_SONAME = re.compile(r"^lib(cudart|cublas|cublasLt|cudnn|nccl|nvrtc|cufft|curand|cusparse|cusolver"
                         r"|nvJitLink|cupti|cuda|nvidia-ml)\.so(\.\d+)*$")

GPU_FIELDS = ("index", "uuid", "name", "driver_version", "temperature.gpu", "power.draw", "power.limit",
              "memory.total", "memory.used", "utilization.gpu", "clocks.sm", "clocks_throttle_reasons.active",
              "compute_cap")
# Older drivers reject compute_cap and the throttle bitmask; nvidia-smi then prints nothing at all.
GPU_FIELDS_BASIC = GPU_FIELDS[:11]
APP_FIELDS = ("pid", "process_name", "used_memory", "gpu_uuid")

DRIVER_MARK = "@@envcheck-driver "
ABSENT_MARK = "@@envcheck-absent"
TORCH_CODE = r"""
import json, sys, threading
def stage(name):
    sys.stdout.write("@@envcheck-stage " + name + "\n"); sys.stdout.flush()
try:
    import importlib.util
    present = importlib.util.find_spec("torch") is not None
except (ImportError, ValueError):
    present = False
if not present:
    sys.stdout.write("@@envcheck-absent\n"); sys.stdout.flush()
    raise SystemExit(0)
def start_driver():
    # cuInit (most of torch.cuda.is_available()'s time) beside `import torch`: ctypes lets go of the GIL.
    # Nothing is decided here: a missing or failing driver is left to torch's check.
    sys.stdout.write("@@envcheck-driver start\n"); sys.stdout.flush()
    try:
        import ctypes
        ctypes.CDLL("libcuda.so.1").cuInit(0)
    except BaseException:
        pass
    sys.stdout.write("@@envcheck-driver done\n"); sys.stdout.flush()
if sys.platform.startswith("linux"):
    threading.Thread(target=start_driver, daemon=True).start()
stage("import")
import torch
out = {"version": str(torch.__version__), "cuda": torch.version.cuda, "file": getattr(torch, "__file__", None)}
out["hip"] = getattr(torch.version, "hip", None)
stage("cuda-init")
out["cuda_available"] = bool(torch.cuda.is_available())
out["arch_list"] = list(torch.cuda.get_arch_list()) if out["cuda_available"] else []
if out["cuda_available"]:
    out["device_count"] = torch.cuda.device_count()
    out["devices"] = []
    for i in range(out["device_count"]):
        major, minor = torch.cuda.get_device_capability(i)
        out["devices"].append({"index": i, "name": torch.cuda.get_device_name(i), "capability": [major, minor]})
    out["capability"] = out["devices"][0]["capability"] if out["devices"] else None
sys.stdout.write("@@envcheck-result " + json.dumps(out) + "\n"); sys.stdout.flush()
"""

FLASH_ATTN_CODE = r"""
import json, sys
def stage(name):
    sys.stdout.write("@@envcheck-stage " + name + "\n"); sys.stdout.flush()
stage("import")
import flash_attn
out = {"version": str(getattr(flash_attn, "__version__", "")) or None, "file": getattr(flash_attn, "__file__", None)}
stage("extension")
try:
    import flash_attn.flash_attn_interface as fai
    ext = getattr(fai, "flash_attn_gpu", None) or getattr(fai, "flash_attn_cuda", None)
    if ext is None:
        import flash_attn_2_cuda as ext
    out["extension"] = "ok"
    out["extension_file"] = getattr(ext, "__file__", None)
except BaseException as exc:
    out["extension"] = "error"
    out["extension_error"] = (type(exc).__name__ + ": " + str(exc)).splitlines()[0][:500] if str(exc) else type(exc).__name__
sys.stdout.write("@@envcheck-result " + json.dumps(out) + "\n"); sys.stdout.flush()
"""


def python_facts() -> dict[str, Any]:
    return {
        "executable": sys.executable,
        "version": platform.python_version(),
        "implementation": sys.implementation.name,
        "prefix": sys.prefix,
        "base_prefix": sys.base_prefix,
        "in_venv": sys.prefix != sys.base_prefix,
        "machine": platform.machine(),
        "platform": sys.platform,
        # the probe's own folder is on sys.path when it runs as a script: not the environment's
        "path": [p for p in sys.path if p and os.path.abspath(p) != os.path.dirname(os.path.abspath(__file__))],
    }


def distributions() -> tuple[list[dict[str, Any]], list[str]]:
    from importlib import metadata
    found: list[dict[str, Any]] = []
    errors: list[str] = []
    seen: set[str] = set()
    for dist in metadata.distributions():
        try:
            name = dist.metadata["Name"]
            version = dist.version
        except Exception as exc:  # a broken METADATA must not hide every other distribution
            errors.append(f"{getattr(dist, '_path', '?')}: {type(exc).__name__}: {exc}")
            continue
        if not name:
            errors.append(f"{getattr(dist, '_path', '?')}: METADATA has no Name")
            continue
        location = str(dist.locate_file(""))
        key = f"{name.lower()}@{location}"
        if key in seen:  # the same directory reachable twice through sys.path
            continue
        seen.add(key)
        entry: dict[str, Any] = {"name": name, "version": version, "location": location,
                                 "requires": list(dist.requires or [])}
        installer = _read_text(dist, "INSTALLER")
        if installer:
            entry["installer"] = installer.strip()
        direct = _read_text(dist, "direct_url.json")
        if direct:
            try:
                info = json.loads(direct)
                entry["direct_url"] = info.get("url")
                if info.get("dir_info", {}).get("editable"):
                    entry["editable"] = True
            except (ValueError, AttributeError):
                errors.append(f"{name}: direct_url.json is not valid JSON")
        path = getattr(dist, "_path", None)
        if path is not None:
            entry["metadata_path"] = str(path)
        found.append(entry)
    found.sort(key=lambda d: (d["name"].lower(), d["location"]))
    return found, errors


def _read_text(dist: Any, name: str) -> str | None:
    try:
        text = dist.read_text(name)
    except Exception:
        return None
    return text if isinstance(text, str) else None


def _module_present(name: str) -> bool:
    import importlib.util
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def start_child(code: str, python: str | None = None) -> subprocess.Popen[str]:
    # its own session, so a timeout can kill whatever the import started, too
    return subprocess.Popen([python or sys.executable, "-c", code], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def finish_child(proc: subprocess.Popen[str], deadline: float) -> dict[str, Any]:
    timed_out = False
    try:
        stdout, stderr = proc.communicate(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            proc.kill()
        stdout, stderr = proc.communicate()
    record: dict[str, Any] = {"pid": proc.pid}
    stage = None
    driver = None  # "start" while the child's early driver start (cuInit) had not returned
    for line in stdout.splitlines():
        if line.startswith(STAGE_MARK):
            stage = line[len(STAGE_MARK):].strip()
        elif line.startswith(DRIVER_MARK):
            driver = line[len(DRIVER_MARK):].strip()
        elif line.strip() == ABSENT_MARK and not timed_out and proc.returncode == 0:
            return {"status": "absent"}
        elif line.startswith(RESULT_MARK):
            try:
                record.update(json.loads(line[len(RESULT_MARK):]))
                record["status"] = "ok"
            except ValueError:
                record["status"] = "error"
                record["error"] = "child printed an unreadable result"
    if timed_out:
        record["status"] = "timeout"
    elif record.get("status") != "ok":
        code = proc.returncode
        record["returncode"] = code
        if code is not None and code < 0:
            record["status"] = "crashed"
            if driver == "start" and stage == "import":
                # the early driver start had not returned either: say so, the stage stays the import's
                record["driver_start"] = "unfinished"
            try:
                record["signal"] = signal.Signals(-code).name
            except ValueError:
                record["signal"] = f"signal {-code}"
        else:
            record["status"] = "import-error" if stage == "import" else "error"
        record["error"] = _last_error_line(stderr)
    record["stage"] = stage
    return record


def _last_error_line(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in reversed(lines):
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b", line):
            return line[:500]
    return lines[-1][:500] if lines else ""


def ldconfig_sonames(timeout: float) -> dict[str, Any]:
    exe = shutil.which("ldconfig") or next((p for p in ("/sbin/ldconfig", "/usr/sbin/ldconfig")
                                            if os.access(p, os.X_OK)), None)
    if exe is None:
        return {"status": "absent"}
    try:
        done = subprocess.run([exe, "-p"], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"status": "error", "error": f"{type(exc).__name__}: {exc}"}
    if done.returncode != 0:
        return {"status": "error", "error": _last_error_line(done.stderr)}
    sonames: dict[str, list[str]] = {}
    for line in done.stdout.splitlines():
        left, _, target = line.partition("=>")
        soname = left.strip().split(" ", 1)[0]
        if CUDA_SONAME.match(soname):
            sonames.setdefault(soname, []).append(target.strip())
    return {"status": "ok", "cuda_sonames": sonames}


def container_facts(root: str = "/") -> dict[str, Any]:
    evidence: list[str] = []
    kind: str | None = None

    def note(found: str, what: str) -> None:
        nonlocal kind
        evidence.append(what)
        kind = kind or found

    if os.path.exists(os.path.join(root, ".dockerenv")):
        note("docker", "/.dockerenv exists")
    if os.path.exists(os.path.join(root, "run/.containerenv")):
        note("podman", "/run/.containerenv exists")
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        note("kubernetes", "KUBERNETES_SERVICE_HOST is set")
    cgroup = _read_file(os.path.join(root, "proc/1/cgroup"))
    for word, found in (("kubepods", "kubernetes"), ("libpod", "podman"), ("docker", "docker"), ("containerd", "containerd")):
        if cgroup and word in cgroup:
            note(found, f"/proc/1/cgroup mentions {word}")
            break
    mounts = _read_file(os.path.join(root, "proc/self/mountinfo"))
    if mounts:
        for marker, found in (("/docker/containers/", "docker"), ("/containers/storage/", "podman"), ("/kubelet/pods/", "kubernetes")):
            if marker in mounts:
                note(found, f"mountinfo mentions {marker}")
                break
    runtime = os.environ.get("container")  # noqa: SIM112  (systemd-nspawn/podman set it lowercase)
    if runtime and not kind:
        note(runtime, f"container={runtime} is set")
    return {"kind": kind, "evidence": evidence}


def _read_file(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return None


def meminfo(path: str = "/proc/meminfo") -> dict[str, Any]:
    text = _read_file(path)
    if text is None:
        return {"status": "absent", "path": path}
    return {"status": "ok", "path": path, "text": text}


def nvidia_smi_reading(timeout: float) -> dict[str, Any]:
    """The GPU and compute-app queries, raw CSV (parsed by envcheck.inspect.nvidia_smi)."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return {"status": "absent"}
    out: dict[str, Any] = {"status": "ok", "path": exe}
    for fields in (GPU_FIELDS, GPU_FIELDS_BASIC):
        done = _run([exe, f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"], timeout)
        if isinstance(done, str):
            return {"status": "error", "path": exe, "error": done}
        if done.returncode == 0:
            out["gpu_fields"] = list(fields)
            out["gpu_csv"] = done.stdout
            break
        out["error"] = (done.stdout + done.stderr).strip()[:500]
    else:
        out["status"] = "error"
        return out
    out.pop("error", None)
    done = _run([exe, f"--query-compute-apps={','.join(APP_FIELDS)}", "--format=csv,noheader,nounits"], timeout)
    if isinstance(done, str):
        out["apps_error"] = done
    elif done.returncode != 0:
        out["apps_error"] = (done.stdout + done.stderr).strip()[:500]
    else:
        out["app_fields"] = list(APP_FIELDS)
        out["apps_csv"] = done.stdout
    return out


def _run(cmd: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str] | str:
    try:
        return subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"{cmd[0]} did not answer within {timeout:g} s"
    except OSError as exc:
        return f"{type(exc).__name__}: {exc}"


def binaries(locations: Sequence[str]) -> dict[str, Any]:
    """ELF facts of the site-packages folders, through envcheck's folder scanner when importable here."""
    try:
        from pathlib import Path

        from envcheck.sources import ReadOptions
        from envcheck.sources.folder import scan_folder
    except Exception as exc:  # the target environment need not have envcheck's dependencies
        return {"status": "unavailable", "error": f"{type(exc).__name__}: {exc}"}
    found: list[Any] = []
    problems: list[str] = []
    for location in locations:
        try:
            inventory = scan_folder(Path(location), ReadOptions(kind="folder"))
        except Exception as exc:
            problems.append(f"{location}: {type(exc).__name__}: {exc}")
            continue
        found.extend(b.to_json() for b in inventory.binaries)
        problems.extend(f"{p.location or location}: {p.message}" for p in inventory.problems)
    return {"status": "ok", "items": found, "problems": problems}


def probe(timeout: float = 30.0, with_binaries: bool = False, with_nvidia_smi: bool = True,
          with_torch: bool = True) -> dict[str, Any]:
    """Collect everything, the torch and flash-attn children beside the other readings (``with_torch=False``:
    the caller started the torch child itself, earlier, as it is the longest reading)."""
    started = time.monotonic()
    deadline = started + timeout
    doc: dict[str, Any] = {"probe_schema": PROBE_SCHEMA, "pid": os.getpid(), "python": python_facts()}
    children: dict[str, subprocess.Popen[str]] = {}
    for module, code in (("torch", TORCH_CODE), ("flash_attn", FLASH_ATTN_CODE)):
        if module == "torch" and not with_torch:
            doc[module] = {"status": "not-run"}
        elif _module_present(module):
            try:
                children[module] = start_child(code)
            except OSError as exc:
                doc[module] = {"status": "error", "error": f"{type(exc).__name__}: {exc}"}
        else:
            doc[module] = {"status": "absent"}
    dists, errors = distributions()
    doc["distributions"] = dists
    if errors:
        doc["distribution_errors"] = errors
    unsloth = next((d for d in dists if d["name"].lower() == "unsloth"), None)
    doc["unsloth"] = {"present": unsloth is not None or _module_present("unsloth"),
                      "version": unsloth["version"] if unsloth else None}
    doc["ldconfig"] = ldconfig_sonames(timeout=min(10.0, timeout))
    doc["container"] = container_facts()
    doc["env"] = {name: os.environ[name] for name in ENV_NAMES if name in os.environ}
    doc["meminfo"] = meminfo()
    doc["nvidia_smi"] = nvidia_smi_reading(timeout=min(10.0, timeout)) if with_nvidia_smi else {"status": "not-run"}
    if with_binaries:
        doc["binaries"] = binaries(sorted({d["location"] for d in dists}))
    for module, proc in children.items():
        doc[module] = finish_child(proc, deadline)
        doc[module]["timeout_s"] = timeout
    doc["duration_s"] = round(time.monotonic() - started, 3)
    return doc


def main(argv: Sequence[str] | None = None) -> int:
    import argparse
    parser = argparse.ArgumentParser(prog="envcheck.collect.probe", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds for the torch/flash-attn imports (default 30)")
    parser.add_argument("--binaries", action="store_true", help="scan site-packages ELF files (needs envcheck importable)")
    parser.add_argument("--no-nvidia-smi", action="store_true", help="do not run nvidia-smi")
    parser.add_argument("--no-torch", action="store_true", help="do not import torch (the caller runs TORCH_CODE itself)")
    args = parser.parse_args(argv)
    doc = probe(timeout=args.timeout, with_binaries=args.binaries, with_nvidia_smi=not args.no_nvidia_smi,
                with_torch=not args.no_torch)
    sys.stdout.write(json.dumps(doc, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
