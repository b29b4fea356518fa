"""G10 when the tensor-parallel size is a shell variable or positional parameter the script does not set
(``--tensor-parallel-size "$3"``, ``-tp $TP``): unknown, never read as 1; over a multi-node Ray cluster the
script builds itself (a head here, a worker that joins it over ssh) it is a WARN that depends on the value."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from conftest import run_envcheck

LAUNCH = """
    #!/usr/bin/env bash
    set -euo pipefail
    source ./cluster.env
    docker run -d --name head --gpus all --network host "$IMAGE" \\
        bash -lc 'exec ray start --head --port=6379 --block'
    {worker}
    docker exec -d head bash -lc \\
        'exec vllm serve "$1" --tensor-parallel-size "$2" --distributed-executor-backend ray' \\
        serve "$MODEL" "$TENSOR_PARALLEL"
"""
WORKER = """ssh "$WORKER_HOST" "docker run -d --gpus all --network host $IMAGE bash -lc 'ray start --address=$HEAD_IP:6379 --block'" """


def _g10(path: Path) -> list[dict[str, Any]]:
    done = run_envcheck("--format", "json", "-v", str(path))
    assert done.returncode in (0, 1), done.stderr
    findings = json.loads(done.stdout)["targets"][0]["findings"]
    return [f for f in findings if f["rule"] == "G10-tp-across-nodes"]


def _script(path: Path, worker: str) -> Path:
    path.write_text(textwrap.dedent(LAUNCH).lstrip("\n").replace("{worker}", worker), encoding="utf-8")
    return path


def test_an_unknown_tensor_parallel_size_over_a_two_node_ray_cluster_depends_on_it(tmp_path: Path) -> None:
    (finding,) = _g10(_script(tmp_path / "cluster.sh", WORKER))
    assert finding["status"] == "WARN" and finding["location"]["line"] == 8
    # bash -lc's "$2" is the second word after its $0 ("serve"): the variable the caller passes
    assert "$TENSOR_PARALLEL" in finding["message"] and "depends on the value" in finding["message"]
    # no worker joins the head: a one-node Ray, and the size is unknown: said, but not a warning, and never "tp=1"
    (alone,) = _g10(_script(tmp_path / "single.sh", "echo 'one node'"))
    assert alone["status"] == "INFO" and "unknown here" in alone["message"] and "tp=1" not in alone["message"]


DEFAULTED = """
    #!/usr/bin/env bash
    set -euo pipefail
    start() {
      docker run -d --name head --gpus all --network host "$IMAGE" bash -lc 'exec ray start --head --port=6379 --block'
      ssh "$WORKER_HOST" "docker run -d --gpus all --network host $IMAGE bash -lc 'ray start --address=$HEAD_IP:6379 --block'"
    }
    serve() {
      local model="${1:-Qwen/Qwen3-8B}" tp="${2:-2}"
      exec docker exec head vllm serve "$model" --tensor-parallel-size "$tp" --distributed-executor-backend ray
    }
    case "${1:-}" in
      start) start ;;
      serve) shift; serve "$@" ;;
    esac
"""


def test_a_positional_parameter_with_a_default_is_read_as_its_default(tmp_path: Path) -> None:
    # `tp="${2:-2}"`: the size the script runs with when it is not given is 2, over a two-Spark Ray cluster
    script = tmp_path / "run_cluster.sh"
    script.write_text(textwrap.dedent(DEFAULTED).lstrip("\n"), encoding="utf-8")
    (finding,) = _g10(script)
    assert finding["status"] == "WARN" and finding["location"]["line"] == 9 and "tp=2" in finding["message"]
    # without a default the parameter stays unknown: never read as 1, never as its own text
    script.write_text(textwrap.dedent(DEFAULTED).lstrip("\n").replace('"${2:-2}"', '"${2}"'), encoding="utf-8")
    (unknown,) = _g10(script)
    assert "unknown" in unknown["message"] and "tp=" not in unknown["message"]
