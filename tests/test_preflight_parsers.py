"""Readers behind preflight: nvidia-smi CSV (real captures), /proc/meminfo (this machine's), launch lines/configs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from envcheck.collect import probe
from envcheck.inspect import launch, meminfo, nvidia_smi

SMI = Path(__file__).resolve().parent.parent / "fixtures" / "nvidia-smi"
LAUNCH = Path(__file__).resolve().parent.parent / "fixtures" / "launch"


def read(name: str) -> str:
    return (SMI / name).read_text(encoding="utf-8")


# --- nvidia-smi -----------------------------------------------------------------------------------

def test_gb10_memory_is_na_not_zero() -> None:
    table = nvidia_smi.parse_csv(read("gb10-name-memory-driver.noheader.csv"), ["name", "memory.total", "driver_version"])
    assert table.rows == ({"name": "NVIDIA GB10", "memory.total": None, "driver_version": "580.126.09"},)
    row = nvidia_smi.gpu_row(table.rows[0])
    assert row["memory_total_mib"] is None and row["name"] == "NVIDIA GB10"


def test_header_with_units_names_the_fields_and_units_are_stripped() -> None:
    table = nvidia_smi.parse_csv(read("gb10-clocks-power.csv"))
    assert table.fields == ("name", "clocks.current.graphics", "clocks.max.graphics", "temperature.gpu", "power.draw")
    row = nvidia_smi.gpu_row(table.rows[0])
    assert (row["temperature_c"], row["power_w"]) == (50.0, 15.57)
    assert table.rows[0]["clocks.current.graphics"] == "2522"


def test_gb10_compute_apps_noheader_nounits() -> None:
    table = nvidia_smi.parse_csv(read("gb10-compute-apps.noheader.nounits.csv"), ["pid", "process_name", "used_memory"])
    apps = [nvidia_smi.app_row(r) for r in table.rows]
    assert [(a["pid"], a["process_name"], a["used_memory_mib"]) for a in apps] == [
        (3150, "python3", 218.0), (6330, "sglang::scheduler", 96073.0)]


def test_h200_eight_gpus_and_processes_with_not_found_name() -> None:
    gpus = nvidia_smi.parse_csv(read("h200x8-memory.csv"))
    assert len(gpus.rows) == 8
    assert {nvidia_smi.gpu_row(r)["memory_total_mib"] for r in gpus.rows} == {143771.0}
    apps = [nvidia_smi.app_row(r) for r in nvidia_smi.parse_csv(read("h200x8-compute-apps.csv")).rows]
    assert len(apps) == 8
    assert apps[-1] == {"pid": 1758887, "process_name": None, "used_memory_mib": 58060.0,
                        "gpu_uuid": "GPU-28780eb0-24d5-1f13-59b8-ae5c23617a72"}


def test_other_gpus_and_drivers() -> None:
    h100 = nvidia_smi.parse_csv(read("h100-name-driver-cap.csv")).rows[0]
    assert nvidia_smi.gpu_row(h100)["compute_cap"] == "9.0"
    a100 = nvidia_smi.parse_csv(read("a100-name-driver-memory.noheader.csv"), ["name", "driver_version", "memory.total"]).rows[0]
    assert nvidia_smi.gpu_row(a100)["memory_total_mib"] == 81920.0  # noheader output that still has units
    p100 = nvidia_smi.parse_csv(read("p100x4-power.csv"))
    assert [r["fan.speed"] for r in p100.rows] == [None] * 4  # [Not Supported]
    assert [nvidia_smi.gpu_row(r)["power_limit_w"] for r in p100.rows] == [250.0] * 4
    assert nvidia_smi.gpu_row(nvidia_smi.parse_csv(read("hgx-temperature-power.csv")).rows[0])["power_w"] == 892.33


def test_processes_no_processes_and_throttle_mask() -> None:
    assert nvidia_smi.parse_csv(read("rtxpro6000-no-compute-apps.csv")).rows == ()
    assert len(nvidia_smi.parse_csv(read("l40s-compute-apps.csv")).rows) == 3
    engines = nvidia_smi.parse_csv(read("vllm-two-engines-compute-apps.csv")).rows
    assert [r["process_name"] for r in engines] == ["VLLM::EngineCore", "VLLM::EngineCore"]
    row = nvidia_smi.gpu_row(nvidia_smi.parse_csv(read("rtxpro6000-throttle-mask.csv")).rows[0])
    assert row["throttle_reasons"] == [] and row["memory_total_mib"] == 97887.0
    assert nvidia_smi.throttle_reasons("0x0000000000000044") == ["sw_power_cap", "hw_thermal_slowdown"]
    assert nvidia_smi.throttle_reasons("[N/A]") == [] and nvidia_smi.throttle_reasons(None) == []


def test_process_name_with_comma_is_kept_whole() -> None:
    table = nvidia_smi.parse_csv("42, python3 train.py --a 1,2, 512\n", ["pid", "process_name", "used_memory"])
    assert table.rows[0]["process_name"] == "python3 train.py --a 1, 2"
    assert table.rows[0]["used_memory"] == "512"


def test_short_row_is_an_error_with_its_line() -> None:
    with pytest.raises(nvidia_smi.NvidiaSmiFormatError) as info:
        nvidia_smi.parse_csv("0, GPU-a, NVIDIA GB10\n1, GPU-b\n", ["index", "uuid", "name"])
    assert info.value.line == 2
    with pytest.raises(nvidia_smi.NvidiaSmiFormatError):
        nvidia_smi.parse_csv("", None)


def test_probe_queries_the_fields_the_parser_reads() -> None:
    """The collector is standard-library only and keeps its own copy of the query lists."""
    assert probe.GPU_FIELDS == nvidia_smi.GPU_FIELDS
    assert probe.GPU_FIELDS_BASIC == nvidia_smi.GPU_FIELDS_BASIC
    assert probe.APP_FIELDS == nvidia_smi.APP_FIELDS


# --- /proc/meminfo --------------------------------------------------------------------------------

def test_meminfo_of_this_machine() -> None:
    parsed = meminfo.parse(Path("/proc/meminfo").read_text())
    # MemTotal is sysinfo's totalram, which is what sysconf reports as physical pages.
    assert parsed.values["MemTotal"] == os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    for name in meminfo.G3_FIELDS:
        assert name in parsed.values
    assert 0 < parsed.values["MemAvailable"] <= parsed.values["MemTotal"]


def test_meminfo_bad_line_names_its_line() -> None:
    with pytest.raises(meminfo.MeminfoFormatError) as info:
        meminfo.parse("MemTotal:       1000 kB\nMemFree oops\n")
    assert info.value.line == 2
    with pytest.raises(meminfo.MeminfoFormatError):
        meminfo.parse("MemFree: 1 kB\n")


# --- launch commands and configs ------------------------------------------------------------------

@pytest.mark.parametrize(("command", "tool", "nodes", "tp"), [
    ("torchrun --nnodes=1:2 --nproc-per-node 8 train.py", "torchrun", 2, None),
    ("python -m torch.distributed.run --nnodes 2 train.py --tp 2", "torch.distributed.run", 2, 2),
    ("vllm serve Qwen/Qwen3-8B -tp 2", "vllm", None, 2),
    ("vllm serve m --tensor-parallel-size=2 --nnodes 2 --node-rank 0", "vllm", 2, 2),
    ("python3 -m sglang.launch_server --model-path m --tp 4 --nnodes 2", "sglang", 2, 4),
    ("NNODES=2 NODE_RANK=0 NPROC_PER_NODE=1 swift sft --tensor_model_parallel_size 2", "swift", 2, 2),
    ("accelerate launch --num_machines 2 --num_processes 2 train.py", "accelerate", 2, None),
    ("deepspeed --num_nodes 2 train.py --deepspeed ds.json", "deepspeed", 2, None),
    ("torchrun --nproc-per-node 1 train.py  # single node", "torchrun", None, None),
])
def test_launch_commands(command: str, tool: str, nodes: int | None, tp: int | None) -> None:
    found = launch.parse_command(command)
    assert (found.tool, found.nodes, found.tp) == (tool, nodes, tp)


def test_launch_command_errors() -> None:
    with pytest.raises(launch.LaunchFormatError):
        launch.parse_command("torchrun --nnodes 'unterminated")
    with pytest.raises(launch.LaunchFormatError):
        launch.parse_command("   ")


@pytest.mark.parametrize(("name", "tool", "nodes", "tp"), [
    ("accelerate-two-nodes-megatron-tp.yaml", "accelerate", 2, 2),
    ("accelerate-two-nodes-fsdp.yaml", "accelerate", 2, None),
    ("deepspeed-autotp.json", "deepspeed", None, 2),
    ("hostfile-two-sparks", "deepspeed", 2, None),
])
def test_launch_configs(name: str, tool: str, nodes: int | None, tp: int | None) -> None:
    found = launch.parse_config((LAUNCH / name).read_text(), name)
    assert (found.tool, found.nodes, found.tp) == (tool, nodes, tp)


def test_yaml_settings_carry_their_line() -> None:
    found = launch.parse_config((LAUNCH / "accelerate-two-nodes-megatron-tp.yaml").read_text(), "x")
    lines = {s.key: s.line for s in found.settings}
    assert lines["megatron_lm_tp_degree"] == 16
    assert lines["num_machines"] == 19


def test_broken_json_config_names_the_line() -> None:
    with pytest.raises(launch.LaunchFormatError) as info:
        launch.parse_config((LAUNCH / "broken.json").read_text(), "broken.json")
    assert info.value.line == 3


# --- the H200 of the lent GPU machine (fixtures/device/preflight.sh, driver 580.159.04) ---------------

def test_h200_capture_with_the_exact_queries_envcheck_runs() -> None:
    row = nvidia_smi.parse_csv(read("h200-gpu.noheader.nounits.csv"), nvidia_smi.GPU_FIELDS).rows[0]
    gpu = nvidia_smi.gpu_row(row)
    assert (gpu["name"], gpu["compute_cap"], gpu["memory_total_mib"], gpu["power_limit_w"]) == ("NVIDIA H200", "9.0", 143771.0, 700.0)
    assert gpu["throttle_reasons"] == []  # 0x1 is "GPU idle", not a slowdown
    basic = nvidia_smi.gpu_row(nvidia_smi.parse_csv(read("h200-gpu-basic.noheader.nounits.csv"), nvidia_smi.GPU_FIELDS_BASIC).rows[0])
    assert basic["compute_cap"] is None and basic["temperature_c"] == 36.0
    # the header names the long forms of the fields asked for; the reader takes both
    header = nvidia_smi.parse_csv(read("h200-gpu.csv"))
    assert "clocks.current.sm" in header.fields and "clocks_event_reasons.active" in header.fields
    assert nvidia_smi.gpu_row(header.rows[0])["clock_sm_mhz"] == 345.0
    assert nvidia_smi.parse_csv(read("h200-no-compute-apps.csv")).rows == ()
    assert read("h200-bad-field.txt").strip() == 'Field "no.such.field" is not a valid field to query.'
