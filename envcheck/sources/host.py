"""The live host: the target Python environment (the collector, run by *its* interpreter), GPU readings,
memory and launch plans. ``inventory_from_probe`` is shared with the container source."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

from envcheck import kinds
from envcheck.collect import probe
from envcheck.errors import InputError
from envcheck.inspect import launch as launch_reader
from envcheck.inspect import meminfo as meminfo_reader
from envcheck.inspect import nvidia_smi
from envcheck.model import (
    Binary,
    EnvVar,
    HostReadings,
    Inventory,
    Location,
    Origin,
    Package,
    ReadProblem,
    Role,
)
from envcheck.readings import (
    BinariesReading,
    MeminfoReading,
    NvidiaSmiReading,
    PlaybooksReading,
    PythonReading,
    launches_from_json,
)
from envcheck.services.github import PLAYBOOKS_URL, fetch_playbook_issues

KIND = "host"
PROBE_PATH = Path(__file__).resolve().parent.parent / "collect" / "probe.py"
_NVIDIA_SMI_TIMEOUT = 10.0
# /proc/meminfo fields kept in the inventory (G3 reads these; the rest is kernel detail).
_MEMINFO_KEPT = frozenset({
    "MemTotal", "MemFree", "MemAvailable", "Buffers", "Cached", "Dirty", "Writeback", "SwapTotal", "SwapFree",
    "Shmem", "Mapped", "AnonPages", "HugePages_Total", "Hugepagesize",
})


@dataclass(frozen=True)
class HostOptions:
    python: str | None = None  # interpreter of the environment to check; None: python3 on PATH
    sample_seconds: float = 3.0
    online: bool = False
    launch: tuple[str, ...] = ()  # --launch "CMD"
    launch_configs: tuple[str, ...] = ()  # --launch-config FILE
    expect_bandwidth: float | None = None  # GB/s the user plans with
    binaries: bool = False  # scan site-packages ELF files (envcheck's folder source)
    probe_timeout: float = 20.0  # seconds for the torch / flash-attn imports in the target env
    nvidia_smi: str | None = None  # nvidia-smi executable; None: look it up on PATH
    proc: str = "/proc"


def read_host(options: HostOptions) -> Inventory:
    """Never raises for missing tools or GPUs."""
    started = time.monotonic()
    problems: list[ReadProblem] = []
    python, python_problem = _resolve_python(options.python)
    probe_proc: subprocess.Popen[str] | None = None
    torch_proc: subprocess.Popen[str] | None = None
    if python is not None:
        try:
            # The target's `import torch` is the longest reading (seconds): it starts first, in its own
            # child, not behind the collector's interpreter start.
            torch_proc = probe.start_child(probe.TORCH_CODE, python)
            probe_proc = subprocess.Popen(
                [python, str(PROBE_PATH), "--timeout", f"{options.probe_timeout:g}", "--no-nvidia-smi", "--no-torch"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
            )
        except OSError as exc:
            python_problem = ReadProblem(f"cannot run {python}: {exc}", Location(python))
            _stop_child(torch_proc)
            torch_proc = None
    if python_problem is not None:
        problems.append(python_problem)

    playbooks: dict[str, Any] = {"status": "offline", "url": PLAYBOOKS_URL}
    fetcher: threading.Thread | None = None
    if options.online:
        fetcher = threading.Thread(target=lambda: playbooks.update(fetch_playbook_issues()), daemon=True)
        fetcher.start()

    smi = sample_nvidia_smi(options.sample_seconds, options.nvidia_smi, options.proc)

    if probe_proc is not None:
        inventory = _finish_probe(probe_proc, python or "python3", options.probe_timeout, torch_proc, started)
    else:
        inventory = Inventory(context="installed")
        absent = PythonReading(status="absent", requested=options.python or "python3")
        inventory.host = replace(inventory.host, python=absent)
    inventory.problems[:0] = problems

    children = (probe_proc, inventory.host.torch, inventory.host.flash_attn)
    ours = {os.getpid(), *(c.pid for c in children if c is not None and c.pid is not None)}
    for process in smi.get("processes", []):
        if process.get("pid") in ours:
            process["ours"] = True
    meminfo = MeminfoReading.from_json(read_meminfo(Path(options.proc) / "meminfo"))
    launches, launch_problems = read_launches(options.launch, options.launch_configs)
    inventory.host = replace(inventory.host, nvidia_smi=NvidiaSmiReading.from_json(smi, "nvidia_smi"),
                             meminfo=meminfo, launch=launches_from_json(launches),
                             expected_bandwidth_gbs=options.expect_bandwidth)
    inventory.problems.extend(launch_problems)
    if options.binaries:
        _scan_binaries(inventory)
    if fetcher is not None:
        fetcher.join(timeout=10.0)
        if playbooks.get("status") == "error":
            where = Location(str(playbooks.get("api")))
            inventory.problems.append(ReadProblem(f"G8: {playbooks.get('error')}", where, service=True))
    try:
        reading = PlaybooksReading.from_json(playbooks, "playbooks", lenient=True)
    except InputError as exc:  # the answer is a service's: an odd one is an error reading, not a crash
        reading = PlaybooksReading(status="error", url=PLAYBOOKS_URL, error=exc.message)
    inventory.host = replace(inventory.host, playbooks=reading, sample_seconds=options.sample_seconds,
                             read_seconds=round(time.monotonic() - started, 3))
    return inventory


def _resolve_python(requested: str | None) -> tuple[str | None, ReadProblem | None]:
    """The interpreter to probe. A missing default is a SKIP reason, a missing ``--python`` an error."""
    if requested is None:
        return shutil.which("python3"), None
    from envcheck.sources import interpreter
    try:
        return interpreter(requested), None
    except InputError as exc:
        return None, ReadProblem(exc.message, Location(requested))


def _stop_child(proc: subprocess.Popen[str] | None) -> None:
    """Kill a collector child (and what it started: it leads its own session) and reap it."""
    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()
    proc.communicate()


def _finish_probe(proc: subprocess.Popen[str], python: str, timeout: float,
                  torch_proc: subprocess.Popen[str] | None, started: float) -> Inventory:
    """The collector's document, with the torch child's record (same ``timeout``) where it belongs."""
    try:
        stdout, stderr = proc.communicate(timeout=timeout + 15.0)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        _stop_child(torch_proc)
        return Inventory(context="installed", problems=[ReadProblem(
            f"the collector run by {python} did not finish within {timeout + 15.0:g} s", Location(python))])
    torch_record: dict[str, Any] | None = None
    if torch_proc is not None:
        torch_record = probe.finish_child(torch_proc, started + timeout)
        torch_record["timeout_s"] = timeout
    if proc.returncode != 0 or not stdout.strip():
        last = [line for line in stderr.strip().splitlines() if line.strip()]
        detail = last[-1] if last else f"exit status {proc.returncode}"
        if "SyntaxError" in stderr or "invalid syntax" in stderr:
            detail = f"{python} is too old for the collector (needs Python >= 3.10): {detail}"
        return Inventory(context="installed", problems=[ReadProblem(f"collector failed under {python}: {detail}", Location(python))])
    try:
        data = json.loads(stdout)
    except json.JSONDecodeError as exc:
        return Inventory(context="installed", problems=[ReadProblem(
            f"collector output is not JSON: {exc.msg}", Location(python, line=exc.lineno, offset=exc.pos))])
    if torch_record is not None and isinstance(data, dict):
        data["torch"] = torch_record
    return inventory_from_probe(data, python)


_CHILD_STATUSES = ("ok", "absent", "import-error", "error", "crashed", "timeout")


def inventory_from_probe(data: Any, origin: str) -> Inventory:
    """A collector document as an Inventory: what is malformed is a ReadProblem at ``origin`` (the JSON key
    as ``member``), the rest is kept. Never raises for bad data."""
    inventory = Inventory(context="installed")
    problems = inventory.problems

    def problem(message: str, member: str | None = None) -> None:
        problems.append(ReadProblem(message, Location(origin, member=member)))

    if not isinstance(data, dict):
        problem(f"collector document is a {type(data).__name__}, not a JSON object")
        return inventory
    schema = data.get("probe_schema")
    if schema != 1:
        problem(f"collector document has probe_schema {schema!r}; this envcheck reads schema 1", "probe_schema")
        return inventory
    host: dict[str, Any] = {}
    python = data.get("python")
    if isinstance(python, dict) and isinstance(python.get("version"), str):
        host["python"] = {"status": "ok", **{k: v for k, v in python.items() if k != "path"}}
    else:
        problem("collector document has no python facts", "python")
    _read_distributions(data.get("distributions"), inventory, origin, problem)
    for message in data.get("distribution_errors", []) or []:
        problem(f"unreadable distribution metadata: {message}", "distributions")
    for child in ("torch", "flash_attn"):
        value = data.get(child)
        if isinstance(value, dict) and value.get("status") in _CHILD_STATUSES:
            host[child] = value
        elif child in data:
            problem(f"collector field {child} is malformed", child)
    unsloth = data.get("unsloth")
    if isinstance(unsloth, dict) and isinstance(unsloth.get("present"), bool):
        host["unsloth"] = unsloth
    for key in ("ldconfig", "container"):
        value = data.get(key)
        if isinstance(value, dict):
            host[key] = value
        elif key in data:
            problem(f"collector field {key} is malformed", key)
    env = data.get("env")
    if isinstance(env, dict):
        for name, value in env.items():
            if isinstance(name, str) and isinstance(value, str):
                inventory.env.append(EnvVar(name, value, origin=Origin.LIVE, location=Location(origin, member="env")))
    elif "env" in data:
        problem("collector field env is malformed", "env")
    mem = data.get("meminfo")
    if isinstance(mem, dict) and mem.get("status") == "ok" and isinstance(mem.get("text"), str):
        host["meminfo"] = _parse_meminfo(mem["text"], str(mem.get("path", "/proc/meminfo")))
    elif isinstance(mem, dict):
        host["meminfo"] = {"status": str(mem.get("status", "absent"))}
    smi = data.get("nvidia_smi")
    if isinstance(smi, dict):
        host["nvidia_smi"] = _smi_from_probe(smi)
    binaries = data.get("binaries")
    if isinstance(binaries, dict) and binaries.get("status") == "ok":
        for index, item in enumerate(binaries.get("items", [])):
            binary = _binary(item)
            if binary is None:
                problem(f"collector binary entry {index} is malformed", f"binaries[{index}]")
            else:
                inventory.binaries.append(binary)
        # Files the collector could not read are reported, not dropped (a damaged .so inside an image).
        for text in binaries.get("problems", []) or []:
            if isinstance(text, str) and text:
                inventory.problems.append(ReadProblem(text[:500], Location(origin, member="binaries")))
    elif isinstance(binaries, dict):
        host["binaries"] = {"status": binaries.get("status"), "error": binaries.get("error")}
    host["probe"] = {"origin": origin, "duration_s": data.get("duration_s"), "pid": data.get("pid")}
    for key, value in host.items():  # each reading typed on its own: a malformed one is a problem, the rest is kept
        try:
            inventory.host = inventory.host.merged(HostReadings.from_json({key: value}))
        except InputError as exc:
            problem(f"collector field {key} is malformed: {exc.message}", key)
    return inventory


def _read_distributions(value: Any, inventory: Inventory, origin: str, problem: Any) -> None:
    if not isinstance(value, list):
        problem("collector document has no distributions list", "distributions")
        return
    for index, item in enumerate(value):
        member = f"distributions[{index}]"
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not isinstance(item.get("version"), str):
            problem("distribution entry without a name and version", member)
            continue
        requires = item.get("requires", [])
        if not isinstance(requires, list) or not all(isinstance(r, str) for r in requires):
            problem(f"distribution {item['name']}: Requires-Dist is malformed", member)
            requires = []
        where = item.get("metadata_path") or item.get("location") or origin
        url = item.get("direct_url") if isinstance(item.get("direct_url"), str) else None
        inventory.packages.append(Package(
            name=canonicalize_name(item["name"]), version=item["version"], installed=True,
            requires=tuple(requires), editable=bool(item.get("editable")), url=url, role=Role.INSTALLED,
            location=Location(str(where))))


def _binary(item: Any) -> Binary | None:
    if not isinstance(item, dict) or not isinstance(item.get("path"), str) or not isinstance(item.get("machine"), str):
        return None
    values: dict[str, Any] = {}
    for key, value in item.items():
        if key not in Binary.__dataclass_fields__:
            continue
        if key == "location" and isinstance(value, dict):
            value = Location(**{k: v for k, v in value.items() if k in Location.__dataclass_fields__})
        elif isinstance(value, list):
            value = tuple(value)
        values[key] = value
    try:
        return Binary(**values)
    except TypeError:
        return None


def _smi_from_probe(smi: Mapping[str, Any]) -> dict[str, Any]:
    """One nvidia-smi reading taken by the collector, in the same shape as ``sample_nvidia_smi``."""
    status = smi.get("status")
    if status != "ok":
        return {"status": str(status or "absent"), **({"error": str(smi["error"])} if smi.get("error") else {})}
    out: dict[str, Any] = {"status": "ok", "path": smi.get("path"), "samples": [], "processes": []}
    try:
        table = nvidia_smi.parse_csv(str(smi.get("gpu_csv", "")), [str(f) for f in smi.get("gpu_fields", [])])
        out["samples"].append({"t": 0.0, "gpus": [nvidia_smi.gpu_row(r) for r in table.rows]})
    except nvidia_smi.NvidiaSmiFormatError as exc:
        return {"status": "error", "error": f"--query-gpu output line {exc.line}: {exc.message}"}
    if isinstance(smi.get("apps_csv"), str):
        try:
            apps = nvidia_smi.parse_csv(smi["apps_csv"], [str(f) for f in smi.get("app_fields", [])])
            out["processes"] = [nvidia_smi.app_row(r) for r in apps.rows]
        except nvidia_smi.NvidiaSmiFormatError as exc:
            out["apps_error"] = f"--query-compute-apps output line {exc.line}: {exc.message}"
    elif smi.get("apps_error"):
        out["apps_error"] = str(smi["apps_error"])
    return out


def _parse_meminfo(text: str, path: str) -> dict[str, Any]:
    try:
        parsed = meminfo_reader.parse(text)
    except meminfo_reader.MeminfoFormatError as exc:
        return {"status": "error", "path": path, "error": f"line {exc.line}: {exc.message}", "line": exc.line}
    kept = {name: value for name, value in parsed.values.items() if name in _MEMINFO_KEPT}
    return {"status": "ok", "path": path, "bytes": kept}


def read_meminfo(path: Path) -> dict[str, Any]:
    """``/proc/meminfo`` as ``{"status": "ok", "bytes": {...}}`` (or the reason it could not be read)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return {"status": "absent", "path": str(path), "error": str(exc)}
    return _parse_meminfo(text, str(path))


def _query(exe: str, fields: tuple[str, ...], kind: str) -> tuple[tuple[str, ...], str] | str:
    """Run one CSV query; fall back to the basic GPU fields on drivers that reject a field."""
    choices = (fields, nvidia_smi.GPU_FIELDS_BASIC) if kind == "gpu" else (fields,)
    last = ""
    for chosen in choices:
        try:
            done = subprocess.run([exe, f"--query-{kind if kind == 'gpu' else 'compute-apps'}={','.join(chosen)}",
                                   "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=_NVIDIA_SMI_TIMEOUT)
        except subprocess.TimeoutExpired:
            return f"nvidia-smi did not answer within {_NVIDIA_SMI_TIMEOUT:g} s"
        except OSError as exc:
            return f"cannot run {exe}: {exc}"
        if done.returncode == 0:
            return chosen, done.stdout
        said = (done.stdout + done.stderr).strip().splitlines()
        last = said[0] if said else f"exit status {done.returncode}"
    return f"nvidia-smi failed: {last}"


def sample_nvidia_smi(seconds: float, exe: str | None = None, proc: str = "/proc") -> dict[str, Any]:
    """GPU readings every second (at least two when ``seconds`` > 0) and, beside them, the compute processes.
    A reading starts only when it can end inside the window: a slow nvidia-smi (0.3-0.7 s a call without
    persistence mode) must not push ``preflight`` past it."""
    path = exe or shutil.which("nvidia-smi")
    if path is None:
        return {"status": "absent"}
    apps_box: list[tuple[tuple[str, ...], str] | str] = []
    apps_thread = threading.Thread(target=lambda: apps_box.append(_query(path, nvidia_smi.APP_FIELDS, "apps")), daemon=True)
    apps_thread.start()
    out: dict[str, Any] = {"status": "ok", "path": path, "samples": [], "processes": []}
    start = time.monotonic()
    deadline = start + max(0.0, seconds)
    interval = min(1.0, seconds / 2) if seconds > 0 else 0.0
    due = start
    call_seconds = 0.0
    while True:
        taken = time.monotonic()
        result = _query(path, nvidia_smi.GPU_FIELDS, "gpu")
        call_seconds = max(call_seconds, time.monotonic() - taken)
        if isinstance(result, str):
            if not out["samples"]:
                apps_thread.join(_NVIDIA_SMI_TIMEOUT)
                return {"status": "error", "path": path, "error": result}
            out["sample_error"] = result
            break
        fields, text = result
        try:
            table = nvidia_smi.parse_csv(text, fields)
        except nvidia_smi.NvidiaSmiFormatError as exc:
            apps_thread.join(_NVIDIA_SMI_TIMEOUT)
            return {"status": "error", "path": path, "error": f"--query-gpu output line {exc.line}: {exc.message}"}
        out["fields"] = list(fields)
        out["samples"].append({"t": round(taken - start, 3), "gpus": [nvidia_smi.gpu_row(r) for r in table.rows]})
        # samples on a fixed schedule (0, 1, 2, ... s) so slow nvidia-smi calls do not shrink the window;
        # the last one starts early enough to end inside it (two readings at least, for G4's trend)
        due += interval
        if interval <= 0:
            break
        if len(out["samples"]) >= 2 and due + call_seconds > deadline + 0.05:
            break
        if len(out["samples"]) >= 2 or due + call_seconds <= deadline + 0.05:
            time.sleep(max(0.0, due - time.monotonic()))
        else:  # the second reading cannot fit on schedule: take it as late as still fits
            time.sleep(max(0.0, deadline - call_seconds - time.monotonic()))
    apps_thread.join(_NVIDIA_SMI_TIMEOUT + 1.0)
    apps = apps_box[0] if apps_box else f"nvidia-smi did not answer within {_NVIDIA_SMI_TIMEOUT:g} s"
    if isinstance(apps, str):
        out["apps_error"] = apps
        return out
    try:
        table = nvidia_smi.parse_csv(apps[1], apps[0])
    except nvidia_smi.NvidiaSmiFormatError as exc:
        out["apps_error"] = f"--query-compute-apps output line {exc.line}: {exc.message}"
        return out
    for row in table.rows:
        process = nvidia_smi.app_row(row)
        pid = process.get("pid")
        if isinstance(pid, int):
            process.update(process_command(pid, proc))
        out["processes"].append(process)
    return out


def process_command(pid: int, proc: str = "/proc") -> dict[str, Any]:
    """A process's command line and its ancestors' (a worker such as ``VLLM::EngineCore`` has no options)."""
    out: dict[str, Any] = {}
    cmdline = _cmdline(pid, proc)
    if cmdline is not None:
        out["cmdline"] = cmdline
    parent = _ppid(pid, proc)
    depth = 0
    ancestors: list[list[str]] = []
    while parent and parent > 1 and depth < 4:
        line = _cmdline(parent, proc)
        if line:
            ancestors.append(line)
        if pid == os.getpid() or parent == os.getpid():
            out["ours"] = True
        parent = _ppid(parent, proc)
        depth += 1
    if ancestors:
        out["ancestors"] = ancestors
    return out


def _cmdline(pid: int, proc: str) -> list[str] | None:
    try:
        raw = (Path(proc) / str(pid) / "cmdline").read_bytes()
    except OSError:
        return None
    return [part.decode("utf-8", "replace") for part in raw.split(b"\0") if part]


def _ppid(pid: int, proc: str) -> int | None:
    try:
        stat = (Path(proc) / str(pid) / "stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    # "pid (comm) state ppid ...": comm may contain spaces and parentheses
    try:
        return int(stat.rsplit(")", 1)[1].split()[1])
    except (IndexError, ValueError):
        return None


def read_launches(commands: tuple[str, ...], configs: tuple[str, ...]) -> tuple[list[dict[str, Any]], list[ReadProblem]]:
    """Parallelism of each ``--launch`` command and ``--launch-config`` file."""
    launches: list[dict[str, Any]] = []
    problems: list[ReadProblem] = []
    files = list(configs)
    for command in commands:
        try:
            launches.append(launch_reader.parse_command(command).to_json())
        except launch_reader.LaunchFormatError as exc:
            problems.append(ReadProblem(f"--launch: {exc.message}", Location("--launch")))
            continue
        # accelerate --config_file, deepspeed --deepspeed ds.json / --hostfile: read them too, when they are here
        files.extend(f for f in launch_reader.referenced_files(command) if Path(f).is_file() and f not in files)
    for config in files:
        path = Path(config)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            why = "is a folder" if path.is_dir() else getattr(exc, "strerror", None) or str(exc)
            problems.append(ReadProblem(f"--launch-config {config}: cannot read it: {why}", Location(config)))
            continue
        named = kinds.by_file_name(path.name)
        if named is not None and not path.name.lower().endswith((".yaml", ".yml", ".json")):
            problems.append(ReadProblem(f"--launch-config {config}: not a launch config: its name says {named.what} "
                                        f"(check it with `envcheck {config}`); {_LAUNCH_CONFIGS}", Location(config)))
            continue
        try:
            launches.append(launch_reader.parse_config(text, config).to_json())
        except launch_reader.LaunchFormatError as exc:
            problems.append(ReadProblem(f"--launch-config {config}: not a launch config: {exc.message}; {_LAUNCH_CONFIGS}"
                                        if exc.line is None else f"launch config: {exc.message}", Location(config, line=exc.line)))
    return launches, problems


_LAUNCH_CONFIGS = "--launch-config reads accelerate or DeepSpeed configs (YAML or JSON) and DeepSpeed hostfiles"


def _scan_binaries(inventory: Inventory) -> None:
    """The site-packages folders' binaries, by envcheck's folder scan."""
    from envcheck.sources import ReadOptions
    from envcheck.sources.folder import scan_folder

    folders = sorted({str(Path(p.location.path).parent) for p in inventory.packages
                      if p.location is not None and p.location.path.endswith((".dist-info", ".egg-info"))})
    for folder in folders:
        found = scan_folder(Path(folder), ReadOptions(kind="folder"))
        inventory.binaries.extend(found.binaries)
        inventory.problems.extend(found.problems)
    reading = BinariesReading(status="ok", folders=tuple(folders), count=len(inventory.binaries))
    inventory.host = replace(inventory.host, binaries=reading)
