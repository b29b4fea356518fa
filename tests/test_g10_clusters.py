"""G10 on the shapes two-Spark projects use: tensor parallelism over a Ray or MPI cluster, where the number of
nodes is never written (a Spark has one GPU, so tp=2 over the cluster is tp across two Sparks)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import run_envcheck

RAY_SERVE = """\
    #!/bin/bash
    MODEL="Qwen/Qwen3-32B-AWQ"
    {setting}
    CONTAINER=$(docker ps --format '{{{{.Names}}}}' | grep -E '^node-[0-9]+$' | head -1)
    GPUS=$(docker exec "$CONTAINER" ray status | grep -c GPU)
    docker exec -d "$CONTAINER" /bin/bash -c "vllm serve $MODEL \\
        {flag} \\
        --gpu-memory-utilization 0.8 \\
        --port 8000"
    """


def _g10(path: Path) -> list[dict[str, Any]]:
    done = run_envcheck("--format", "json", str(path))
    assert done.returncode in (0, 1), done.stderr
    findings = json.loads(done.stdout)["targets"][0]["findings"]
    return [f for f in findings if f["rule"] == "G10-tp-across-nodes" and f["status"] not in ("PASS", "INFO", "SKIP")]


@pytest.mark.parametrize(("setting", "flag", "warned"), [
    ("TENSOR_PARALLEL_SIZE=2", "--tensor-parallel-size $TENSOR_PARALLEL_SIZE", True),
    ("PIPELINE_PARALLEL_SIZE=2", "--pipeline-parallel-size $PIPELINE_PARALLEL_SIZE", False),  # PP across nodes is fine
    ("TENSOR_PARALLEL_SIZE=1", "--tensor-parallel-size $TENSOR_PARALLEL_SIZE", False),
])
def test_tensor_parallelism_over_a_ray_cluster_in_a_script(tmp_path: Path, setting: str, flag: str, warned: bool) -> None:
    script = tmp_path / "serve.sh"
    script.write_text(textwrap.dedent(RAY_SERVE.format(setting=setting, flag=flag)), encoding="utf-8")
    found = _g10(script)
    if not warned:
        assert found == []
        return
    (finding,) = found
    assert finding["status"] == "WARN" and finding["location"]["line"] == 7  # the flag's line
    assert "tp=2" in finding["message"] and "Ray cluster" in finding["message"]


EXEC_SERVE = """\
    #!/bin/bash
    export VLLM_CONTAINER=$(docker ps --format '{{{{.Names}}}}' | grep -E 'node-')
    # vllm serve Qwen/Qwen3-8B --tensor-parallel-size 4
    docker exec -it $VLLM_CONTAINER /bin/bash -c "
      export NCCL_SOCKET_IFNAME=enp1s0f1np1
      vllm serve 'Qwen/Qwen3-30B-A3B-Thinking-2507' \\
        {flag} \\
        --gpu-memory-utilization 0.7 \\
        --port 8888
    "
    """


@pytest.mark.parametrize(("flag", "warned"), [
    ("--tensor-parallel-size 2", True),
    ("-tp 2 --pipeline-parallel-size 2", True),
    ("--pipeline-parallel-size 2", False),  # pipeline stages across Sparks: fine
    ("-pp 2", False),
    ("--data-parallel-size 2", False),  # replicas, one per Spark: fine
    ("--tensor-parallel-size 1 --data-parallel-size 2", False),
])
def test_tensor_parallelism_above_one_gpu_with_no_node_count(tmp_path: Path, flag: str, warned: bool) -> None:
    """`docker exec` into a Ray container another script started: no node count, no cluster in the file, yet a Spark
    has one GPU, so tp=2 runs across Sparks (or cannot start); the commented tp=4 line says nothing."""
    script = tmp_path / "serve.sh"
    script.write_text(textwrap.dedent(EXEC_SERVE.format(flag=flag)), encoding="utf-8")
    found = _g10(script)
    if not warned:
        assert found == []
        return
    (finding,) = found
    assert finding["status"] == "WARN" and finding["location"]["line"] == 7  # the flag's line
    assert "tp=2" in finding["message"] and "1 GPU per node" in finding["message"]


def test_tensor_parallelism_within_a_profile_with_more_gpus_per_node(tmp_path: Path) -> None:
    """tp=2 with no node count on a profile with 4 GPUs a node stays within one node; one node said, tp=2 on a Spark
    is no pass (and not across nodes)."""
    script = tmp_path / "serve.sh"
    script.write_text("#!/bin/bash\nvllm serve Qwen/Qwen3-8B --tensor-parallel-size 2 --gpu-memory-utilization 0.8\n",
                      encoding="utf-8")
    spark = (Path(__file__).parents[1] / "envcheck" / "profiles" / "dgx-spark.toml").read_text(encoding="utf-8")
    profile = tmp_path / "four-gpus.toml"
    profile.write_text(spark.replace("gpus_per_node = 1", "gpus_per_node = 4"), encoding="utf-8")
    done = run_envcheck("--format", "json", "--profile", str(profile), str(script))
    assert done.returncode in (0, 1), done.stderr
    g10 = [f for f in json.loads(done.stdout)["targets"][0]["findings"] if f["rule"] == "G10-tp-across-nodes"]
    assert [f["status"] for f in g10] == ["PASS"]
    assert len(_g10(script)) == 1  # the same script on the Spark profile
    torchrun = tmp_path / "train.sh"
    torchrun.write_text("#!/bin/bash\ntorchrun --nnodes 1 --nproc-per-node 2 train.py --tensor-model-parallel-size 2\n",
                        encoding="utf-8")
    done = run_envcheck("--format", "json", "-v", str(torchrun))
    g10 = [f for f in json.loads(done.stdout)["targets"][0]["findings"] if f["rule"] == "G10-tp-across-nodes"]
    assert [f["status"] for f in g10] == ["INFO"] and "on one node" in g10[0]["message"]


HEAD = """\
    services:
      vllm-ray-head:
        image: nvcr.io/nvidia/vllm:25.11-py3
        network_mode: host
        entrypoint: ["/bin/bash", "-c"]
        command:
          - >-
            ray start --head --port=6379 && sleep 60 && vllm serve Qwen/Qwen3-235B-A22B-AWQ
            --tensor-parallel-size 2
            --distributed-executor-backend ray
            --gpu-memory-utilization 0.75
        deploy:
          resources:
            reservations:
              devices:
                - driver: nvidia
                  count: all
                  capabilities: [gpu]
    """


def test_compose_ray_head_with_tensor_parallelism(tmp_path: Path) -> None:
    compose = tmp_path / "docker-compose.head.yaml"
    compose.write_text(textwrap.dedent(HEAD), encoding="utf-8")
    (finding,) = _g10(compose)
    assert finding["status"] == "WARN" and finding["location"]["line"] == 9
    pipeline = tmp_path / "pp" / "docker-compose.head.yaml"
    pipeline.parent.mkdir()
    pipeline.write_text(textwrap.dedent(HEAD).replace("--tensor-parallel-size", "--pipeline-parallel-size"), encoding="utf-8")
    assert _g10(pipeline) == []


STACKED = """\
    #!/bin/bash
    readonly DEFAULT_TP_SIZE="2"

    serve_model() {
        local tp_size="${TP_SIZE:-$DEFAULT_TP_SIZE}"
        ssh -o ConnectTimeout=10 "$USER@spark-a.local" "
            docker exec -it trtllm bash -c '
                mpirun -x HF_TOKEN trtllm-llmapi-launch trtllm-serve nvidia/Qwen3-235B-A22B-FP4 \\\\
                  --tp_size $tp_size \\\\
                  --backend pytorch'
        "
    }

    case "$1" in
        -t|--tp-size) TP_SIZE="$2" ;;
    esac
    serve_model
    """


def test_trtllm_over_mpi_through_ssh_with_a_readonly_default(tmp_path: Path) -> None:
    """`readonly`/`local` defaults reach an ssh'd `docker exec ... mpirun trtllm-serve --tp_size`; the finding
    is on the --tp_size line, not on a later --tp-size of the option parsing."""
    script = tmp_path / "stacked.sh"
    script.write_text(textwrap.dedent(STACKED), encoding="utf-8")
    (finding,) = _g10(script)
    assert finding["status"] == "WARN" and finding["location"]["line"] == 9 and "MPI" in finding["message"]
    single = tmp_path / "single.sh"
    single.write_text(textwrap.dedent(STACKED).replace('DEFAULT_TP_SIZE="2"', 'DEFAULT_TP_SIZE="1"'), encoding="utf-8")
    assert _g10(single) == []


def test_a_tensor_parallel_size_in_a_gpu_services_environment_is_read(tmp_path: Path) -> None:
    """An image whose own entrypoint serves (no command envcheck can read) takes its TP size from the environment:
    TENSOR_PARALLEL_SIZE=2 on a one-GPU Spark puts ranks on other Sparks; 1 does not; a readable command wins."""
    def compose(tp: str, command: str = "serve") -> Path:
        path = tmp_path / "docker-compose.yml"
        path.write_text(textwrap.dedent(f"""\
            services:
              server:
                image: myorg/llm-server:1.0
                environment:
                  - MODEL=some/model
                  - TENSOR_PARALLEL_SIZE={tp}
                deploy:
                  resources:
                    reservations:
                      devices:
                        - driver: nvidia
                          count: all
                          capabilities: [gpu]
                command: {command}
            """), encoding="utf-8")
        return path

    warned = [(f["status"], f["location"]["line"]) for f in _g10(compose("2")) if f["status"] in ("WARN", "FAIL")]
    assert warned == [("WARN", 6)]
    assert not [f for f in _g10(compose("1")) if f["status"] in ("WARN", "FAIL")]
    assert not [f for f in _g10(compose("2", "vllm serve some/model --tensor-parallel-size 1")) if f["status"] in ("WARN", "FAIL")]
