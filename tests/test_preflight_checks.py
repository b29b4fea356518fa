"""Live gotcha checks (G1, G3-G10) on inventories built from real readings and real captures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from envcheck import engine
from envcheck.checks.g07_gpu_arch import _runs_on
from envcheck.config import RunOptions
from envcheck.inspect import nvidia_smi
from envcheck.model import Finding, HostReadings, Inventory, Status
from envcheck.profile import load_profile
from envcheck.readings import GpuProcess, ImageFacts
from envcheck.sources.host import inventory_from_probe, read_meminfo

SMI = Path(__file__).resolve().parent.parent / "fixtures" / "nvidia-smi"
GIB = 2**30


def findings(inv: Inventory, gotcha: str) -> list[Finding]:
    return [f for f in engine.evaluate(inv, load_profile("dgx-spark"), "host") if f.gotcha == gotcha]


def statuses(inv: Inventory, gotcha: str) -> list[Status]:
    return [f.status for f in findings(inv, gotcha)]


def worst(inv: Inventory, gotcha: str) -> Status:
    return Status.worst(statuses(inv, gotcha))


def smi_from(gpu_file: str, apps: list[dict[str, Any]] | None = None, fields: list[str] | None = None) -> dict[str, Any]:
    table = nvidia_smi.parse_csv((SMI / gpu_file).read_text(), fields)
    return {"status": "ok", "samples": [{"t": 0.0, "gpus": [nvidia_smi.gpu_row(r) for r in table.rows]}], "processes": apps or []}


def host(**readings: Any) -> Inventory:
    return Inventory(context="installed", host=HostReadings.from_json(readings))


def meminfo(total_gib: float, cached_gib: float) -> dict[str, Any]:
    return {"status": "ok", "path": "/proc/meminfo", "bytes": {
        "MemTotal": int(total_gib * GIB), "MemAvailable": int((total_gib - 4) * GIB), "Cached": int(cached_gib * GIB),
        "Dirty": 0, "SwapTotal": 0}}


# --- G3 -------------------------------------------------------------------------------------------

def test_g3_reads_this_machine() -> None:
    inv = host(meminfo=read_meminfo(Path("/proc/meminfo")))
    found = findings(inv, "G3")
    assert [f.status for f in found if f.rule == "G3-memory-readings"] == [Status.INFO]
    assert "MemTotal" in found[0].message
    assert {f.status for f in found if f.rule == "G3-page-cache"} <= {Status.PASS, Status.WARN}


def test_g3_large_page_cache_on_unified_memory_warns() -> None:
    gb10 = smi_from("gb10-name-memory-driver.noheader.csv", fields=["name", "memory.total", "driver_version"])
    warn = [f for f in findings(host(meminfo=meminfo(121.7, 40), nvidia_smi=gb10), "G3") if f.status is Status.WARN]
    assert len(warn) == 1 and "drop_caches" in warn[0].message and "33%" in warn[0].message
    assert worst(host(meminfo=meminfo(121.7, 10), nvidia_smi=gb10), "G3") is Status.PASS


def test_g3_page_cache_does_not_compete_with_discrete_gpu_memory() -> None:
    h200 = smi_from("h200x8-memory.csv")
    assert worst(host(meminfo=meminfo(2000, 1500), nvidia_smi=h200), "G3") is Status.PASS


def test_g3_unreadable_meminfo_is_skip() -> None:
    assert statuses(host(meminfo={"status": "absent", "error": "No such file"}), "G3") == [Status.SKIP]


# --- G4 -------------------------------------------------------------------------------------------

def gb10_samples(temps: list[float], powers: list[float], reasons: list[str] | None = None) -> dict[str, Any]:
    """Samples of the GB10 capture (idle 50 C / 15.57 W, power limit [N/A]) with the given trend."""
    row = nvidia_smi.gpu_row(nvidia_smi.parse_csv((SMI / "gb10-clocks-power.csv").read_text()).rows[0])
    samples = []
    for i, (t, p) in enumerate(zip(temps, powers, strict=True)):
        samples.append({"t": float(i), "gpus": [{**row, "index": 0, "temperature_c": t, "power_w": p,
                                                  "throttle_reasons": reasons or []}]})
    return {"status": "ok", "samples": samples, "processes": []}


def test_g4_flat_power_and_rising_temperature_is_the_throttling_signature() -> None:
    found = findings(host(nvidia_smi=gb10_samples([71, 73, 75, 77], [98, 99, 100, 99])), "G4")
    assert [f.status for f in found] == [Status.INFO, Status.WARN]
    assert "limit N/A, rated 240 W" in found[0].message
    assert "71->77 C" in found[1].message


def test_g4_idle_capture_passes_and_thermal_reason_warns() -> None:
    assert worst(host(nvidia_smi=gb10_samples([50, 50, 51], [15.57, 15.6, 15.5])), "G4") is Status.PASS
    hot = gb10_samples([80, 80], [60, 61], reasons=["hw_thermal_slowdown"])
    assert [f.message for f in findings(host(nvidia_smi=hot), "G4") if f.status is Status.WARN] == [
        "GPU0 NVIDIA GB10: clocks slowed by hw_thermal_slowdown"]


def test_g4_rising_load_is_not_throttling() -> None:
    """Temperature rising with power rising is a GPU being loaded, not throttled."""
    assert worst(host(nvidia_smi=gb10_samples([40, 45, 52], [20, 60, 95])), "G4") is Status.PASS


def test_g4_skips_without_nvidia_smi_or_with_one_sample() -> None:
    assert statuses(host(nvidia_smi={"status": "absent"}), "G4") == [Status.SKIP]
    one = smi_from("gb10-clocks-power.csv")
    assert statuses(host(nvidia_smi=one), "G4") == [Status.INFO, Status.SKIP]


# --- G5 -------------------------------------------------------------------------------------------

def test_g5_planning_figure_and_expected_bandwidth() -> None:
    assert statuses(host(meminfo=meminfo(1, 0)), "G5") == [Status.INFO]
    assert statuses(host(expected_bandwidth_gbs=273.0), "G5") == [Status.INFO, Status.WARN]
    assert statuses(host(expected_bandwidth_gbs=185.0), "G5") == [Status.INFO, Status.PASS]
    # a static target with expect-bandwidth from the config: no live INFO, still judged
    static = engine.evaluate(Inventory(), load_profile("dgx-spark"), "requirements", RunOptions(expect_bandwidth=301))
    assert [f.status for f in static if f.gotcha == "G5"] == [Status.WARN]


# --- G6 -------------------------------------------------------------------------------------------

def test_g6_gb10_capture_with_an_uncapped_sglang_and_a_small_python() -> None:
    apps = [nvidia_smi.app_row(r) for r in nvidia_smi.parse_csv(
        (SMI / "gb10-compute-apps.noheader.nounits.csv").read_text(), ["pid", "process_name", "used_memory"]).rows]
    gb10 = smi_from("gb10-name-memory-driver.noheader.csv", apps, ["name", "memory.total", "driver_version"])
    found = findings(host(nvidia_smi=gb10, meminfo=meminfo(121.7, 1)), "G6")
    by_status = {f.status: f.message for f in found}
    assert "SGLang" in by_status[Status.WARN] and "uncapped (default 0.88)" in by_status[Status.WARN]
    assert "python3" in by_status[Status.INFO]


def test_g6_vllm_cap_read_from_the_parent_command_line() -> None:
    engines = [nvidia_smi.app_row(r) for r in nvidia_smi.parse_csv((SMI / "vllm-two-engines-compute-apps.csv").read_text()).rows]
    engines[0]["ancestors"] = [["/usr/bin/python3", "-m", "vllm.entrypoints.openai.api_server", "--gpu-memory-utilization", "0.4"]]
    engines[1]["ancestors"] = [["vllm", "serve", "Qwen/Qwen3-8B", "--gpu-memory-utilization=0.85"]]
    smi = smi_from("l40s-memory.csv", engines)
    found = findings(host(nvidia_smi=smi), "G6")
    assert [(f.status, f.evidence["cap"]) for f in found] == [(Status.INFO, 0.4), (Status.WARN, 0.85)]


def test_g6_heavy_unknown_processes_on_h200_and_own_processes_ignored() -> None:
    apps = [nvidia_smi.app_row(r) for r in nvidia_smi.parse_csv((SMI / "h200x8-compute-apps.csv").read_text()).rows]
    smi = smi_from("h200x8-memory.csv", apps)
    found = findings(host(nvidia_smi=smi), "G6")
    assert sum(f.status is Status.WARN for f in found) == 7  # 105842..130044 of 143771 MiB; 58060 MiB is 40%
    for app in apps:
        app["ours"] = True
    assert statuses(host(nvidia_smi=smi), "G6") == [Status.PASS]


def test_g6_skips_without_process_list() -> None:
    assert statuses(host(nvidia_smi={"status": "absent"}), "G6") == [Status.SKIP]
    smi = {**smi_from("l40s-memory.csv"), "apps_error": "nvidia-smi failed: Unknown Error"}
    assert statuses(host(nvidia_smi=smi), "G6") == [Status.SKIP]


# --- G7 -------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("label", "sm", "runs"), [
    ("sm_120", 121, True), ("sm_121", 121, True), ("sm_121a", 121, True), ("sm_120a", 121, False),
    ("sm_120f", 121, True), ("sm_100", 121, False), ("compute_120", 121, True), ("compute_90", 121, True),
    ("compute_121a", 121, True), ("compute_120a", 121, False), ("sm_90", 90, True), ("sm_89", 90, False), ("bogus", 121, False),
])
def test_g7_which_code_runs_on_which_sm(label: str, sm: int, runs: bool) -> None:
    assert _runs_on(label, sm) is runs


def torch_ok(capability: list[int] | None, arch_list: list[str], name: str = "NVIDIA GB10") -> dict[str, Any]:
    out: dict[str, Any] = {"status": "ok", "version": "2.11.0+cu130", "cuda": "13.0", "cuda_available": capability is not None,
                           "arch_list": arch_list}
    if capability:
        out["capability"] = capability
        out["devices"] = [{"index": 0, "name": name, "capability": capability}]
    return out


def test_g7_gb10_with_cu130_kernels_passes_and_mentions_fp8() -> None:
    cu130 = ["sm_80", "sm_90", "sm_100", "sm_110", "sm_120", "compute_120"]
    found = findings(host(torch=torch_ok([12, 1], cu130)), "G7")
    assert [f.status for f in found] == [Status.PASS]
    assert "sm_120 compute_120" in found[0].message and "stay on FP8" in found[0].message
    assert "stay on FP8" not in findings(host(torch=torch_ok([12, 1], [*cu130, "sm_121a"])), "G7")[0].message


def test_g7_gb10_without_usable_kernels_fails() -> None:
    assert statuses(host(torch=torch_ok([12, 1], ["sm_90a", "sm_100"])), "G7") == [Status.FAIL]


def test_g7_h200_is_info_never_fail() -> None:
    found = findings(host(torch=torch_ok([9, 0], ["sm_90", "sm_100", "sm_120", "compute_120"], "NVIDIA H200")), "G7")
    assert [f.status for f in found] == [Status.INFO] and "not a GB10" in found[0].message
    # without torch the capability comes from nvidia-smi
    h100 = smi_from("h100-name-driver-cap.csv")
    assert statuses(host(nvidia_smi=h100, torch={"status": "absent"}), "G7") == [Status.INFO]


def test_g7_skips_without_gpu_or_torch() -> None:
    assert statuses(host(torch=torch_ok(None, []), nvidia_smi={"status": "absent"}), "G7") == [Status.SKIP]


# --- G1 / G9 live sections --------------------------------------------------------------------------

@pytest.mark.parametrize(("torch", "expected"), [
    ({"status": "ok", "version": "2.10.0a0+b558c986e8.nv25.11", "cuda": "13.0"}, Status.PASS),
    ({"status": "ok", "version": "2.8.0+cu128", "cuda": "12.8"}, Status.FAIL),
    ({"status": "ok", "version": "2.9.0+cpu", "cuda": None}, Status.FAIL),
    ({"status": "crashed", "signal": "SIGSEGV", "stage": "import"}, Status.FAIL),
    ({"status": "import-error", "stage": "import", "error": "ImportError: libcudart.so.12: cannot open shared object file"}, Status.FAIL),
    ({"status": "timeout", "stage": "import", "timeout_s": 20}, Status.WARN),
    ({"status": "absent"}, Status.SKIP),
])
def test_g1_live_torch(torch: dict[str, Any], expected: Status) -> None:
    found = [f for f in findings(host(torch=torch), "G1") if f.rule == "G1-live-torch"]
    assert [f.status for f in found] == [expected]


def test_g1_no_python_is_skip() -> None:
    found = [f for f in findings(host(python={"status": "absent"}), "G1") if f.rule == "G1-live-torch"]
    assert [f.status for f in found] == [Status.SKIP]


def test_g9_container_or_bare_pip() -> None:
    inside = findings(host(container={"kind": "podman", "evidence": ["/run/.containerenv exists"]}), "G9")
    assert [f.status for f in inside if f.rule == "G9-bare-pip"] == [Status.PASS]
    bare = findings(host(container={"kind": None, "evidence": []}), "G9")
    assert [f.status for f in bare if f.rule == "G9-bare-pip"] == [Status.INFO]


def test_g9_pins_of_the_probed_environment_are_judged(preflight_envs: dict[str, Path]) -> None:
    """The package rules of G9 fire on what the probe found installed (spark-demo-lib pins torch==2.10.0)."""
    import json
    import subprocess

    from envcheck.sources.host import PROBE_PATH

    out = subprocess.run([str(preflight_envs["cu12"]), str(PROBE_PATH)], capture_output=True, text=True, check=True).stdout
    inv = inventory_from_probe(json.loads(out), "cu12")
    conflicts = [f for f in findings(inv, "G9") if f.rule == "G9-pin-conflict"]
    assert conflicts and conflicts[0].status is Status.FAIL and "torch" in conflicts[0].message


# --- G8 / G10 -------------------------------------------------------------------------------------

def test_g8_offline_online_and_error() -> None:
    offline = findings(host(playbooks={"status": "offline", "url": "https://github.com/NVIDIA/dgx-spark-playbooks/issues"}), "G8")
    assert [f.status for f in offline] == [Status.SKIP] and "github.com/NVIDIA/dgx-spark-playbooks" in offline[0].message
    online = findings(host(playbooks={"status": "ok", "url": "u", "issues": [
        {"number": 120, "title": "vLLM playbook\nfails on 25.11", "created_at": "2026-11-30T10:00:00Z"}]}), "G8")
    assert [(f.status, f.message) for f in online] == [(Status.INFO, "#120 vLLM playbook fails on 25.11 (2026-11-30)")]
    assert statuses(host(playbooks={"status": "error", "error": "HTTP 403", "url": "u"}), "G8") == [Status.SKIP]


def test_g10_launches() -> None:
    tp_two_nodes = {"origin": "cfg.yaml", "nodes": 2, "tp": 2, "settings": [{"key": "megatron_lm_tp_degree", "value": "2", "line": 16}]}
    found = findings(host(launch=[tp_two_nodes]), "G10")
    assert [f.status for f in found] == [Status.WARN] and found[0].location is not None and found[0].location.line == 16
    assert statuses(host(launch=[{"origin": "--launch", "nodes": 2, "tp": None, "settings": []}]), "G10") == [Status.PASS]
    # tp=8 with no node count: a Spark has one GPU, so the ranks must run on other machines (or cannot start)
    assert statuses(host(launch=[{"origin": "--launch", "nodes": None, "tp": 8, "settings": []}]), "G10") == [Status.WARN]
    assert statuses(host(launch=[]), "G10") == [Status.SKIP]
    # a hostfile with two nodes plus a DeepSpeed config with AutoTP 2, given separately, add up
    split = [{"origin": "hostfile", "nodes": 2, "tp": None, "settings": []},
             {"origin": "ds.json", "nodes": None, "tp": 2, "settings": []}]
    assert statuses(host(launch=split), "G10") == [Status.PASS, Status.PASS, Status.WARN]


LIVE_RULES = ("G3-", "G4-", "G5-planning", "G6-", "G8-", "G10-", "G7-live", "G1-live", "G9-bare")


def test_static_targets_get_no_live_findings() -> None:
    found = engine.evaluate(Inventory(), load_profile("dgx-spark"), "requirements")
    assert not [f for f in found if f.rule.startswith(LIVE_RULES)]
    image = Inventory(host=HostReadings(image=ImageFacts(ref="nvcr.io/nvidia/pytorch:25.11-py3")))
    assert not [f.rule for f in engine.evaluate(image, load_profile("dgx-spark"), "image") if f.rule.startswith(LIVE_RULES)]


def test_a_collector_document_gets_live_findings() -> None:
    """A collector run read back (as envcheck container does) is live, whatever the target kind."""
    doc = {"probe_schema": 1, "python": {"version": "3.12.3"}, "distributions": [],
           "meminfo": {"status": "ok", "text": Path("/proc/meminfo").read_text()}, "nvidia_smi": {"status": "absent"}}
    found = engine.evaluate(inventory_from_probe(doc, "probe.json"), load_profile("dgx-spark"), "probe")
    assert {f.rule for f in found} >= {"G3-memory-readings", "G4-throttling", "G6-gpu-neighbour", "G5-planning-figure"}


def test_the_real_h200_probe_document() -> None:
    """The collector's output on the lent H200 (torch 2.11.0+cu130): G1 passes, G7 says 'not a GB10'."""
    import json

    doc = json.loads((SMI.parent / "device" / "h200" / "probe.json").read_text())
    inv = inventory_from_probe(doc, "h200")
    assert inv.problems == []
    assert inv.host.torch is not None and inv.host.torch.capability == (9, 0) and inv.host.torch.cuda == "13.0"
    assert [f.status for f in findings(inv, "G1") if f.rule == "G1-live-torch"] == [Status.PASS]
    g7 = findings(inv, "G7")
    assert [f.status for f in g7 if f.rule == "G7-live-capability"] == [Status.INFO]
    assert Status.FAIL not in [f.status for f in g7]
    assert inv.package("torch") is not None and inv.package("nvidia-cudnn-cu13") is not None


def test_g1_torch_that_cannot_see_the_listed_gpu_warns() -> None:
    torch = {"status": "ok", "version": "2.11.0+cu130", "cuda": "13.0", "cuda_available": False, "arch_list": []}
    smi = smi_from("h100-name-driver-cap.csv")
    found = [f for f in findings(host(torch=torch, nvidia_smi=smi), "G1") if f.rule == "G1-live-torch"]
    assert [f.status for f in found] == [Status.WARN] and "nvidia-smi lists 1 GPU(s)" in found[0].message
    # no GPU listed: nothing to contradict
    alone = [f for f in findings(host(torch=torch, nvidia_smi={"status": "absent"}), "G1") if f.rule == "G1-live-torch"]
    assert [f.status for f in alone] == [Status.PASS]


@pytest.mark.parametrize(("words", "name", "server"), [
    (["python3", "-m", "sglang.launch_server", "--model-path", "m"], "python3", "SGLang"),
    (["python3", "train_sglang_rl.py"], "python3", None),
    (["/usr/local/bin/ollama", "runner", "--model", "x"], "ollama", "Ollama"),
    (["python3", "/home/u/vllm_bench/train.py"], "python3", None),
    (["/usr/local/bin/vllm", "serve", "m"], "vllm", "vLLM"),
    (["/app/llama-server", "-m", "x.gguf"], "/app/llama-server", "llama.cpp server"),
])
def test_g6_recognises_servers_not_scripts_named_after_them(words: list[str], name: str, server: str | None) -> None:
    from envcheck.checks.g06_shared_memory import _describe

    assert _describe(GpuProcess(cmdline=tuple(words), process_name=name))[0] == server
