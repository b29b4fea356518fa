"""G3-share-below-weights: a vLLM/SGLang memory share smaller than the served model's weights stops the server at
start-up; it fails only where the weights surely cannot fit (the size read from the model's name and format) and
says nothing where the size is unknown or the weights are split over several GPUs."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from conftest import run_envcheck

RULE = "G3-share-below-weights"


def _targets(tmp_path: Path, files: dict[str, str]) -> dict[str, dict[str, Any]]:
    """envcheck's JSON report over ``files`` (name: text, written under tmp_path), one target per file name."""
    paths = []
    for name, text in files.items():
        path = tmp_path / name
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        paths.append(str(path))
    proc = run_envcheck("--format", "json", "--fail-on", "never", "--no-cache", *paths)
    assert proc.returncode == 0, proc.stderr
    return {Path(t["target"]).name: t for t in json.loads(proc.stdout)["targets"]}


def _rule(target: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in target["findings"] if f["rule"] == RULE]


def _script(command: str) -> str:
    return f"#!/bin/bash\nset -e\nexec {command} \\\n  --host 0.0.0.0 --port 8000\n"


def test_a_share_below_the_weights_fails_at_the_share_line(tmp_path: Path) -> None:
    targets = _targets(tmp_path, {
        # the corpus case: an 8B BF16 embedding model (about 16 GB) given 0.08 of 128 GB (about 10 GB)
        "docker-compose.yml": """
            services:
              vllm-embedding:
                image: vllm/vllm-openai:v0.11.0
                command: >
                  Qwen/Qwen3-Embedding-8B
                  --port 8003
                  --gpu-memory-utilization 0.08
              vllm-chat:
                image: vllm/vllm-openai:v0.11.0
                command: >
                  nvidia/Qwen3-30B-A3B-NVFP4
                  --gpu-memory-utilization 0.4
            """,
        "sglang.sh": _script("python3 -m sglang.launch_server --model-path Qwen/Qwen2.5-32B-Instruct "
                             "--mem-fraction-static 0.3"),
        # a mixture of experts counts all its experts: 30B (60 GB), not the active 3B
        "moe.sh": _script("vllm serve Qwen/Qwen3-30B-A3B --gpu-memory-utilization 0.2"),
    })
    compose = _rule(targets["docker-compose.yml"])
    failed = [f for f in compose if f["status"] == "FAIL"]
    assert len(failed) == 1 and failed[0]["location"]["line"] == 7, compose
    assert "Qwen3-Embedding-8B" in failed[0]["message"] and "vllm-embedding" in failed[0]["message"]
    assert failed[0]["evidence"]["weights_gb"] == 16.0 and failed[0]["evidence"]["share_gb"] < 11
    assert [f["status"] for f in compose if "vllm-chat" in f["message"]] == ["PASS"]  # NVFP4: 15 GB in 51 GB
    (sglang,) = _rule(targets["sglang.sh"])
    assert sglang["status"] == "FAIL" and "--mem-fraction-static 0.3" in sglang["message"]
    (moe,) = _rule(targets["moe.sh"])
    assert moe["status"] == "FAIL" and moe["evidence"]["parameters_billion"] == 30.0


def test_quantised_small_and_big_enough_launches_pass_clean(tmp_path: Path) -> None:
    launches = {
        "awq.sh": "vllm serve Qwen/Qwen2.5-32B-Instruct-AWQ --gpu-memory-utilization 0.3",  # 16 GB in 38 GB
        "fp8-option.sh": "vllm serve Qwen/Qwen3-32B --quantization fp8 --gpu-memory-utilization 0.4",  # 32 in 51
        "moe-fp8.sh": "vllm serve Qwen/Qwen3-30B-A3B-Instruct-2507-FP8 --gpu-memory-utilization 0.3",
        "small.sh": "vllm serve Qwen/Qwen2.5-1.5B-Instruct --gpu-memory-utilization 0.05",  # 3 GB in 6.4 GB
        "gpt-oss.sh": "vllm serve openai/gpt-oss-120b --gpu-memory-utilization 0.6",  # MXFP4: 60 GB in 77 GB
        "enough.sh": "vllm serve meta-llama/Llama-3.1-8B-Instruct --gpu-memory-utilization 0.3",
        # the format option far down a long command line is still read
        "long.sh": "vllm serve Qwen/Qwen3-32B --gpu-memory-utilization 0.4 --max-model-len 32768 "
                   "--max-num-seqs 8 --enable-prefix-caching --enable-chunked-prefill --enable-auto-tool-choice "
                   "--tool-call-parser hermes --reasoning-parser qwen3 --served-model-name qwen3-32b "
                   "--kv-cache-dtype auto --trust-remote-code --quantization fp8",
    }
    targets = _targets(tmp_path, {name: _script(command) for name, command in launches.items()})
    for name in launches:
        target = targets[name]
        assert [f["status"] for f in _rule(target)] == ["PASS"], (name, _rule(target))
        assert not [f for f in target["findings"] if f["status"] in ("FAIL", "WARN", "ERROR")], (name, target["findings"])
    assert _rule(targets["fp8-option.sh"])[0]["evidence"]["bytes_per_parameter"] == 1.0
    assert _rule(targets["small.sh"])[0]["evidence"]["parameters_billion"] == 1.5


def test_split_or_unknown_weights_are_not_judged(tmp_path: Path) -> None:
    launches = {
        "tp2.sh": "vllm serve Qwen/Qwen3-32B --tensor-parallel-size 2 --gpu-memory-utilization 0.2",
        "pp2.sh": "vllm serve Qwen/Qwen3-32B --pipeline-parallel-size 2 --gpu-memory-utilization 0.2",
        "offload.sh": "vllm serve Qwen/Qwen3-32B --cpu-offload-gb 48 --gpu-memory-utilization 0.2",
        "mixtral.sh": "vllm serve mistralai/Mixtral-8x7B-Instruct-v0.1 --gpu-memory-utilization 0.1",
        "local.sh": "vllm serve /models/qwen3-32b --gpu-memory-utilization 0.2",  # any checkpoint may be there
        "gguf.sh": "vllm serve unsloth/Qwen3-32B-GGUF --gpu-memory-utilization 0.1",
        "modelopt.sh": "vllm serve acme/Qwen3-32B-Spark --quantization modelopt --gpu-memory-utilization 0.1",
        "variable.sh": 'vllm serve "$MODEL" --gpu-memory-utilization 0.1',
        "no-count.sh": "vllm serve zai-org/GLM-4.5-Air --gpu-memory-utilization 0.1",
    }
    targets = _targets(tmp_path, {name: _script(command) for name, command in launches.items()})
    for name in launches:
        assert _rule(targets[name]) == [], (name, _rule(targets[name]))
