"""The collector and the host source on real interpreters, real venvs, real /proc and real processes."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import require

from envcheck.readings import NvidiaSmiReading, TorchReading
from envcheck.sources import host
from envcheck.sources.host import HostOptions, inventory_from_probe, read_host

PROBE = Path(host.PROBE_PATH)


def run_probe(python: Path | str, *args: str) -> dict:  # type: ignore[type-arg]
    done = subprocess.run([str(python), str(PROBE), *args], capture_output=True, text=True, timeout=60, cwd="/")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_probe_reads_a_real_venv(preflight_envs: dict[str, Path]) -> None:
    doc = run_probe(preflight_envs["good"], "--timeout", "20")
    assert doc["probe_schema"] == 1
    assert Path(doc["python"]["executable"]) == preflight_envs["good"]
    assert doc["python"]["in_venv"] is True
    dists = {d["name"]: d for d in doc["distributions"]}
    assert set(dists) == {"torch", "flash-attn"}
    assert dists["torch"]["version"] == "2.11.0+cu130"
    assert dists["flash-attn"]["requires"] == ["torch", "einops"]
    assert dists["torch"]["installer"] == "pip"
    assert doc["torch"]["status"] == "ok" and doc["torch"]["cuda"] == "13.0"
    assert doc["flash_attn"]["status"] == "ok"
    assert doc["flash_attn"]["extension"] == "error" and "flash_attn_2_cuda" in doc["flash_attn"]["extension_error"]
    assert doc["unsloth"] == {"present": False, "version": None}
    assert doc["meminfo"]["status"] == "ok"


def test_probe_records_a_segfaulting_import(preflight_envs: dict[str, Path]) -> None:
    torch = run_probe(preflight_envs["crash"])["torch"]
    assert torch["status"] == "crashed" and torch["signal"] == "SIGSEGV" and torch["stage"] == "import"


def test_probe_kills_a_hanging_import(preflight_envs: dict[str, Path]) -> None:
    torch = run_probe(preflight_envs["hang"], "--timeout", "1")["torch"]
    assert torch["status"] == "timeout" and torch["stage"] == "import"
    with pytest.raises(ProcessLookupError):  # the child (its whole session) is gone
        os.killpg(torch["pid"], 0)


@pytest.mark.parametrize(("env", "expected"), [
    ("good", {"status": "ok", "cuda": "13.0", "stage": "cuda-init"}),
    ("crash", {"status": "crashed", "signal": "SIGSEGV", "stage": "import"}),
    ("hang", {"status": "timeout", "stage": "import"}),
    ("empty", {"status": "absent"}),
])
def test_read_host_runs_the_torch_child_itself(preflight_envs: dict[str, Path], env: str, expected: dict[str, str]) -> None:
    """envcheck starts the target's torch import before the collector (the longest reading goes first); the
    record is the one the collector itself would write: a crash, a hang (killed, with its whole session) and
    a missing torch are told apart as before."""
    inv = read_host(HostOptions(python=str(preflight_envs[env]), sample_seconds=0, probe_timeout=2, nvidia_smi="/nonexistent"))
    torch = (inv.host.torch or TorchReading()).to_json()
    assert {k: torch.get(k) for k in expected} == expected, torch
    assert not [p for p in inv.problems if "collector" in p.message]
    if env == "hang":
        with pytest.raises(ProcessLookupError):
            os.killpg(torch["pid"], 0)


def test_probe_without_torch_leaves_it_to_the_caller(preflight_envs: dict[str, Path]) -> None:
    doc = run_probe(preflight_envs["good"], "--no-torch", "--no-nvidia-smi")
    assert doc["torch"] == {"status": "not-run"} and doc["flash_attn"]["status"] == "ok"


def test_probe_runs_as_a_module_with_envcheck_on_the_path(preflight_envs: dict[str, Path], tmp_path: Path) -> None:
    """How the container source runs it: python3 -m envcheck.collect.probe with the envcheck package copied in."""
    shutil.copytree(PROBE.parent.parent, tmp_path / "envcheck", ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run([str(preflight_envs["empty"]), "-m", "envcheck.collect.probe", "--no-nvidia-smi"],
                          capture_output=True, text=True, timeout=60, env=env, cwd="/")
    doc = json.loads(done.stdout)
    assert doc["distributions"] == [] and doc["torch"] == {"status": "absent"}
    assert doc["nvidia_smi"] == {"status": "not-run"}


def test_container_detection_follows_the_original_test() -> None:
    """The original: [ -f /.dockerenv -o -f /run/.containerenv ] || grep -qE 'docker|containerd' /proc/1/cgroup."""
    from envcheck.collect.probe import container_facts

    facts = container_facts()
    original = os.path.exists("/.dockerenv") or os.path.exists("/run/.containerenv")
    with contextlib.suppress(OSError):
        original = original or any(w in Path("/proc/1/cgroup").read_text() for w in ("docker", "containerd"))
    if original:
        assert facts["kind"] is not None and facts["evidence"]
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        assert facts["kind"] is not None


def test_inventory_from_probe_document(preflight_envs: dict[str, Path]) -> None:
    inv = inventory_from_probe(run_probe(preflight_envs["cu12"]), "cu12-python")
    assert inv.problems == []
    assert inv.context == "installed"
    pkg = inv.package("spark-demo-lib")
    assert pkg is not None and pkg.installed and pkg.requires == ("torch==2.10.0",)
    assert inv.package("torch").version == "2.8.0+cu128"  # type: ignore[union-attr]
    assert inv.host.torch is not None and inv.host.torch.cuda == "12.8"
    assert inv.host.meminfo is not None and (inv.host.meminfo.bytes or {})["MemTotal"] > 0


@pytest.mark.parametrize(("document", "fragment"), [
    ([1, 2], "not a JSON object"),
    ({"probe_schema": 2}, "probe_schema 2"),
    ({"probe_schema": 1}, "no python facts"),
    ({"probe_schema": 1, "python": {"version": "3.12.3"}, "distributions": "torch"}, "no distributions list"),
    ({"probe_schema": 1, "python": {"version": "3.12.3"}, "distributions": [{"name": "torch"}]}, "without a name and version"),
    ({"probe_schema": 1, "python": {"version": "3.12.3"}, "distributions": [], "torch": "crashed"}, "torch is malformed"),
    ({"probe_schema": 1, "python": {"version": "3.12.3"}, "distributions": [],
      "torch": {"status": "ok", "cuda": 13.0}}, "torch is malformed: host.torch.cuda: expected text"),
    ({"probe_schema": 1, "python": {"version": "3.12.3"}, "distributions": [],
      "nvidia_smi": {"status": "ok", "gpu_fields": ["index", "name"], "gpu_csv": "0\n"}}, None),
])
def test_corrupted_documents_become_problems(document: object, fragment: str | None) -> None:
    inv = inventory_from_probe(document, "probe.json")
    if fragment is None:  # a malformed nvidia-smi reading is a reading with an error, not a crash
        assert inv.host.nvidia_smi is not None and inv.host.nvidia_smi.status == "error" and "line 1" in (inv.host.nvidia_smi.error or "")
        return
    assert any(fragment in p.message for p in inv.problems), [p.message for p in inv.problems]
    assert all(p.location is not None and p.location.path == "probe.json" for p in inv.problems)


def test_partial_document_keeps_what_it_can() -> None:
    doc = {"probe_schema": 1, "python": {"version": "3.10.12", "executable": "/usr/bin/python3"},
           "distributions": [{"name": "Torch", "version": "2.9.0"}, {"version": "1"}, {"name": "numpy", "version": "2.1.0"}],
           "env": {"CUDA_VERSION": "13.0.2.006", "BAD": 1}}
    inv = inventory_from_probe(doc, "x")
    assert [p.name for p in inv.packages] == ["torch", "numpy"]
    assert [p.location.member for p in inv.problems] == ["distributions[1]"]  # type: ignore[union-attr]
    assert inv.env_value("CUDA_VERSION") == "13.0.2.006" and inv.env_value("BAD") is None


def test_read_host_without_nvidia_smi_for_real(preflight_envs: dict[str, Path], tmp_path: Path) -> None:
    inv = read_host(HostOptions(python=str(preflight_envs["good"]), sample_seconds=1, nvidia_smi=None))
    if shutil.which("nvidia-smi") is None:
        assert inv.host.nvidia_smi == NvidiaSmiReading(status="absent")
    assert inv.host.python is not None and inv.host.python.executable == str(preflight_envs["good"])
    assert inv.host.meminfo is not None and inv.host.meminfo.status == "ok"
    assert inv.host.playbooks is not None and inv.host.playbooks.status == "offline"
    assert inv.host.launch == ()


def test_missing_python_is_a_problem_but_the_rest_is_read(tmp_path: Path) -> None:
    inv = read_host(HostOptions(python=str(tmp_path / "no-such-python"), sample_seconds=0))
    assert [p.message for p in inv.problems] == [f"--python {tmp_path / 'no-such-python'}: no such file; --python takes a Python interpreter (e.g. .venv/bin/python)"]
    assert inv.host.meminfo is not None and inv.host.meminfo.status == "ok"


def test_an_interpreter_that_prints_no_json(tmp_path: Path) -> None:
    inv = read_host(HostOptions(python="/bin/echo", sample_seconds=0))
    assert any("not JSON" in p.message for p in inv.problems)
    inv = read_host(HostOptions(python="/bin/false", sample_seconds=0))
    assert any("collector failed under /bin/false" in p.message for p in inv.problems)


def test_nvidia_smi_that_cannot_reach_the_driver(tmp_path: Path) -> None:
    """An installed nvidia-smi without a working driver exits 9 with this message (a real failure mode)."""
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
                   " Make sure that the latest NVIDIA driver is installed and running.\"\nexit 9\n")
    smi.chmod(0o755)
    reading = host.sample_nvidia_smi(1.0, str(smi))
    assert reading["status"] == "error" and "couldn't communicate with the NVIDIA driver" in reading["error"]


def test_sampling_replays_an_old_driver_that_rejects_compute_cap(tmp_path: Path) -> None:
    """nvidia-smi 418 (the P100 capture) has no compute_cap field: the basic query is used instead."""
    p100 = (Path(__file__).resolve().parent.parent / "fixtures" / "nvidia-smi" / "p100x4-power.csv").read_text().splitlines()[1]
    cells = [c.strip() for c in p100.split(",")]
    # index,uuid,name,driver_version,temperature.gpu,power.draw,power.limit,memory.total,memory.used,utilization.gpu,clocks.sm
    row = f"{cells[3]}, GPU-0, {cells[0]}, {cells[1]}, {cells[9]}, 24.80, 250.00, 16280, 1628, 10, 405"
    smi = tmp_path / "nvidia-smi"
    smi.write_text(
        "#!/bin/sh\n"
        "case \"$1\" in\n"
        "  *compute_cap*) echo 'Field \"compute_cap\" is not a valid field to query.'; exit 2;;\n"
        f"  --query-gpu=*) echo '{row}';;\n"
        "  --query-compute-apps=*) ;;\n"
        "esac\n")
    smi.chmod(0o755)
    reading = host.sample_nvidia_smi(1.0, str(smi))
    assert reading["status"] == "ok", reading
    assert reading["fields"] == list(host.nvidia_smi.GPU_FIELDS_BASIC)
    assert len(reading["samples"]) >= 2
    gpu = reading["samples"][0]["gpus"][0]
    assert (gpu["name"], gpu["temperature_c"], gpu["power_limit_w"]) == ("Tesla P100-PCIE-16GB", 25.0, 250.0)
    assert reading["processes"] == []


def test_process_command_reads_real_proc() -> None:
    """G6 reads a neighbour's options from /proc/PID/cmdline (here: a real process with vLLM-style args)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "vllm", "serve", "m",
                             "--gpu-memory-utilization", "0.9"])
    try:
        deadline = time.monotonic() + 10
        while not host.process_command(proc.pid).get("cmdline") and time.monotonic() < deadline:
            time.sleep(0.05)  # /proc/PID/cmdline is empty until the child has exec'ed
        facts = host.process_command(proc.pid)
        assert facts["cmdline"][-4:] == ["serve", "m", "--gpu-memory-utilization", "0.9"]
        assert facts.get("ours") is True  # its parent is this test process
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait()
    assert host.process_command(proc.pid) == {}


def test_read_launches_records_problems_with_locations(fixtures_dir: Path) -> None:
    launches, problems = host.read_launches(
        ("vllm serve m -tp 2",),
        (str(fixtures_dir / "launch" / "broken.json"), str(fixtures_dir / "launch" / "missing.yaml")),
    )
    assert [item["tp"] for item in launches] == [2]
    assert problems[0].location is not None and problems[0].location.line == 3
    assert "--launch-config " in problems[1].message and "No such file" in problems[1].message


@pytest.fixture(scope="module")
def elf_env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv whose one distribution carries a real shared object built here with gcc."""
    from preflight_envs import make_env, write_wheel

    gcc = shutil.which("gcc")
    require(gcc is not None, "gcc is needed to build a real shared object")
    assert gcc is not None
    root = tmp_path_factory.mktemp("elf-env")
    (root / "ext.c").write_text("int answer(void) { return 42; }\n")
    subprocess.run([gcc, "-shared", "-fPIC", "-o", str(root / "_ext.so"), str(root / "ext.c")], check=True)
    wheel = write_wheel(root, "spark-ext", "0.1", {"spark_ext/__init__.py": "", "spark_ext/_ext.so": (root / "_ext.so").read_bytes()})
    return make_env(root, "env", [wheel])


def test_read_host_scans_the_environment_binaries(elf_env: Path) -> None:
    inv = read_host(HostOptions(python=str(elf_env), sample_seconds=0, binaries=True))
    assert inv.host.binaries is not None and inv.host.binaries.status == "ok"
    found = [b for b in inv.binaries if b.path.endswith("spark_ext/_ext.so")]
    assert len(found) == 1 and found[0].machine == os.uname().machine


def test_probe_binaries_round_trip(elf_env: Path) -> None:
    """The collector's --binaries output (envcheck importable there) becomes Binary objects again."""
    from envcheck.collect.probe import binaries

    site = next(elf_env.parent.parent.glob("lib/python*/site-packages"))
    doc = {"probe_schema": 1, "python": {"version": "3.11"}, "distributions": [], "binaries": binaries([str(site)])}
    assert doc["binaries"]["status"] == "ok"
    inv = inventory_from_probe(doc, "probe")
    assert inv.problems == []
    assert [b.path.rsplit("/", 1)[-1] for b in inv.binaries] == ["_ext.so"]
    bad = inventory_from_probe({**doc, "binaries": {"status": "ok", "items": [{"path": 3}]}}, "probe")
    assert [p.location.member for p in bad.problems] == ["binaries[0]"]  # type: ignore[union-attr]


def test_files_named_by_a_launch_command_are_read(fixtures_dir: Path) -> None:
    ds = fixtures_dir / "launch" / "deepspeed-autotp.json"
    hosts = fixtures_dir / "launch" / "hostfile-two-sparks"
    launches, problems = host.read_launches((f"deepspeed --hostfile {hosts} train.py --deepspeed {ds} --gone missing.json",), ())
    assert problems == []
    assert [(item["origin"], item["nodes"], item["tp"]) for item in launches] == [
        ("--launch", None, None), (str(hosts), 2, None), (str(ds), None, 2)]


@pytest.mark.parametrize(("files", "kind", "evidence"), [
    ({".dockerenv": ""}, "docker", "/.dockerenv exists"),
    ({"run/.containerenv": "engine=\"podman-4.9.3\"\n"}, "podman", "/run/.containerenv exists"),
    ({"proc/1/cgroup": "0::/kubepods.slice/kubepods-burstable.slice/cri-containerd-1a2b.scope\n"}, "kubernetes", "/proc/1/cgroup mentions kubepods"),
    ({"proc/1/cgroup": "12:pids:/docker/3f1e\n"}, "docker", "/proc/1/cgroup mentions docker"),
    ({"proc/1/cgroup": "0::/init.scope\n", "proc/self/mountinfo": "1 0 0:1 / / rw - overlay overlay rw\n"}, None, None),
])
def test_container_markers_in_a_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str],
                                     kind: str | None, evidence: str | None) -> None:
    from envcheck.collect.probe import container_facts

    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("container", raising=False)
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    facts = container_facts(str(tmp_path))
    assert facts["kind"] == kind
    assert (facts["evidence"][0] if facts["evidence"] else None) == evidence


def test_slow_nvidia_smi_readings_stay_inside_the_window(tmp_path: Path) -> None:
    """A driver without persistence mode answers in ~0.5 s: readings are scheduled to end inside the
    window, and the compute-process query runs beside them rather than after (issue 18: preflight within
    the sample time + 1 s)."""
    log = tmp_path / "calls.log"
    smi = tmp_path / "nvidia-smi"
    row = "0, GPU-0, NVIDIA GB10, 580.95.05, 41, 11.20, [N/A], [N/A], [N/A], 3, 2405, 0x0000000000000000, 12.1"
    smi.write_text(
        "#!/bin/sh\n"
        f"echo \"start $1 $(date +%s.%N)\" >> {log}\n"
        "sleep 0.5\n"
        "case \"$1\" in\n"
        f"  --query-gpu=*) echo '{row}';;\n"
        "  --query-compute-apps=*) ;;\n"
        "esac\n"
        f"echo \"end $1 $(date +%s.%N)\" >> {log}\n")
    smi.chmod(0o755)
    reading = host.sample_nvidia_smi(2.0, str(smi))
    assert reading["status"] == "ok", reading
    times = [s["t"] for s in reading["samples"]]
    assert len(times) >= 2
    assert times[-1] < 2.0  # every reading started inside the window; the last one learned the call time
    events = [line.split() for line in log.read_text().splitlines()]
    apps_start = next(float(e[2]) for e in events if e[0] == "start" and e[1].startswith("--query-compute-apps"))
    last_gpu_end = max(float(e[2]) for e in events if e[0] == "end" and e[1].startswith("--query-gpu"))
    assert apps_start < last_gpu_end  # the process query overlapped the readings
