"""G10 for launches a script wraps: a positional parameter's default (``TP_SIZE="${3:-2}"``) is the tensor-parallel
size the script runs with when its caller gives none; a launch printed by an unquoted here-document (lines ending in
``\\\\``, piped to ``ssh HOST bash``) is one continued command; ``docker run --entrypoint /bin/bash IMAGE -lc '...'``
runs the script it is given, also after a variable of collected options (``$MOUNT_ARGS -e ...``)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from conftest import run_envcheck

MPI = """
    #!/usr/bin/env bash
    set -euo pipefail
    MODEL="$1"
    TP_SIZE="${3:-2}"
    CID="$(docker ps -q -f name=trtllm-multinode)"
    docker exec -it "$CID" bash -lc "
        mpirun trtllm-llmapi-launch trtllm-serve \\"$MODEL\\" \\
          --tp_size ${TP_SIZE} \\
          --backend pytorch
    "
"""

HEREDOC = """
    #!/usr/bin/env bash
    set -uo pipefail
    TP="${TP:-4}"
    IMAGE=example/vllm-gb10:1.0
    NODES=(10.0.0.1 10.0.0.2 10.0.0.3 10.0.0.4)
    MOUNT_ARGS=""
    while read -r f rel; do
      MOUNT_ARGS="$MOUNT_ARGS -v /patches/$f:/vllm/$rel:ro"
    done < /patches/mounts.txt
    runscript() {
      local r="$1"
      cat <<EOF
    docker run -d --name vllm --network host --gpus all \\\\
     --device /dev/infiniband:/dev/infiniband \\\\
    $MOUNT_ARGS \\\\
     -e VLLM_HOST_IP=${NODES[$r]} \\\\
     --entrypoint /bin/bash $IMAGE -lc '
     exec vllm serve /models/big \\\\
     --tensor-parallel-size $TP \\\\
     --gpu-memory-utilization 0.80 \\\\
     --nnodes $TP --node-rank $r --master-addr ${NODES[0]}
     '
    EOF
    }
    for r in 3 2 1 0; do
      runscript "$r" | ssh "${NODES[$r]}" 'cat > /tmp/launch.sh && bash /tmp/launch.sh'
    done
"""


def _g10(path: Path) -> list[dict[str, Any]]:
    done = run_envcheck("--format", "json", "-v", str(path))
    assert done.returncode in (0, 1), done.stderr
    findings = json.loads(done.stdout)["targets"][0]["findings"]
    return [f for f in findings if f["rule"] == "G10-tp-across-nodes"]


def _write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def test_a_positional_parameters_default_is_the_tensor_parallel_size_the_script_runs_with(tmp_path: Path) -> None:
    (finding,) = _g10(_write(tmp_path / "serve.sh", MPI))
    assert finding["status"] == "WARN" and finding["location"]["line"] == 8, finding
    assert "tp=2" in finding["message"]
    # a default of 1: one Spark, nothing to say
    (one,) = _g10(_write(tmp_path / "one.sh", MPI.replace("${3:-2}", "${3:-1}")))
    assert one["status"] == "PASS", one


def test_a_launch_printed_by_a_here_document_and_piped_to_ssh_is_read_whole(tmp_path: Path) -> None:
    (finding,) = _g10(_write(tmp_path / "tp4.sh", HEREDOC))
    assert finding["status"] == "WARN" and finding["location"]["line"] == 19, finding
    assert "tp=4" in finding["message"] and "4 nodes" in finding["message"]
    # the same launcher on one node with TP 1 stays clean
    (single,) = _g10(_write(tmp_path / "tp1.sh", HEREDOC.replace('"${TP:-4}"', '"${TP:-1}"')))
    assert single["status"] == "PASS", single
    # a quoted delimiter prints the body as written: `\\\\` stays a backslash, no continued command, no launch read
    quoted = _g10(_write(tmp_path / "quoted.sh", HEREDOC.replace("cat <<EOF", "cat <<'EOF'")))
    assert all(f["status"] != "WARN" for f in quoted), quoted


ARRAYS = """
    #!/usr/bin/env bash
    set -euo pipefail
    CHAT=(
      --port 8000
      --gpu-memory-utilization 0.45
    )
    EMBED=(
      --port 8001
      --gpu-memory-utilization 0.3
    )
    nohup vllm serve Qwen/Qwen3-8B "${CHAT[@]}" > chat.log 2>&1 &
    nohup vllm serve Qwen/Qwen3-Embedding-0.6B "${EMBED[@]}" > embed.log 2>&1 &
    wait
"""


def _findings(path: Path, *rules: str) -> list[dict[str, Any]]:
    done = run_envcheck("--format", "json", "-v", str(path))
    assert done.returncode in (0, 1), done.stderr
    return [f for f in json.loads(done.stdout)["targets"][0]["findings"] if f["rule"] in rules]


def test_launch_arguments_held_in_a_bash_array_belong_to_the_command_that_expands_it(tmp_path: Path) -> None:
    """``ARGS=( ... )`` then ``vllm serve "${ARGS[@]}"``: one server with the array's settings, located in the array
    (its lines were read as flag-only commands, and each server counted at vLLM's default 0.9: a false FAIL)."""
    found = _findings(_write(tmp_path / "two.sh", ARRAYS), "G3-memory-fraction", "G6-pool-overcommit")
    (pool,) = [f for f in found if f["rule"] == "G6-pool-overcommit"]
    assert pool["status"] == "PASS" and "0.75" in pool["message"], pool
    assert sorted(f["location"]["line"] for f in found if f["rule"] == "G3-memory-fraction") == [5, 9]
    over = _findings(_write(tmp_path / "over.sh", ARRAYS.replace("0.45", "0.6").replace("0.3", "0.5")), "G6-pool-overcommit")
    assert [f["status"] for f in over] != ["PASS"] and "1.10" in over[0]["message"], over
    # tensor parallelism in the array of a launch over a Ray cluster: reported at the array's flag
    ray = ARRAYS.replace("--port 8000", "--port 8000\n  --tensor-parallel-size 2\n  --distributed-executor-backend ray")
    (tp,) = [f for f in _g10(_write(tmp_path / "ray.sh", ray)) if f["status"] == "WARN"]
    assert tp["location"]["line"] == 5, tp


APPENDED = """
    #!/usr/bin/env bash
    serve() {
      local -a args=(--port 8000)
      args+=(--gpu-memory-utilization 0.45)
      vllm serve Qwen/Qwen3-8B "${args[@]}" &
    }
    serve
    declare -a EMB=(--port 8001 --gpu-memory-utilization 0.3)
    vllm serve Qwen/Qwen3-Embedding-0.6B "${EMB[@]}" &
    wait
"""


def test_arrays_declared_local_or_appended_to_are_read_too(tmp_path: Path) -> None:
    found = _findings(_write(tmp_path / "plus.sh", APPENDED), "G3-memory-fraction", "G6-pool-overcommit")
    (pool,) = [f for f in found if f["rule"] == "G6-pool-overcommit"]
    assert pool["status"] == "PASS" and "0.75" in pool["message"], pool
    # each share at the array line that sets it: the += line, not the later array's flag
    assert sorted(f["location"]["line"] for f in found if f["rule"] == "G3-memory-fraction") == [4, 8]


def test_a_default_that_falls_back_to_a_positional_parameter_is_expanded(tmp_path: Path) -> None:
    """``TP="${TP:-${3:-2}}"``: the variable, else the script's third argument, else 2 (config > argument > default)."""
    nested = MPI.replace('TP_SIZE="${3:-2}"', 'DEFAULT_TP=2\n    TP_SIZE="${TP_SIZE:-${3:-$DEFAULT_TP}}"')
    (finding,) = _g10(_write(tmp_path / "nested.sh", nested))
    assert finding["status"] == "WARN" and "tp=2" in finding["message"], finding


USAGE = """
    #!/usr/bin/env bash
    usage() {
      cat <<EOF
    Usage: $0 MODEL

    Runs one server on this Spark. To spread a model over two Sparks instead, see docs/cluster.md:
      vllm serve MODEL --tensor-parallel-size 2 --distributed-executor-backend ray
    EOF
    }
    [ $# -ge 1 ] || { usage; exit 1; }
    exec vllm serve "$1" --gpu-memory-utilization 0.8
"""


def test_example_commands_in_a_usage_message_are_not_launches(tmp_path: Path) -> None:
    """``cat <<EOF`` that only shows text (a usage message) runs none of its lines: no second server (a false
    G6 FAIL at 1.70), no tensor parallelism over Ray (a false G10 WARN)."""
    found = _findings(_write(tmp_path / "serve.sh", USAGE), "G6-pool-overcommit", "G10-tp-across-nodes")
    assert [f["status"] for f in found if f["status"] in ("WARN", "FAIL")] == [], found
    # the same text piped into a shell on another Spark is a launch
    piped = USAGE.replace("  cat <<EOF\n", "  cat <<EOF | ssh spark2 bash\n")
    assert any(f["status"] == "WARN" for f in _g10(_write(tmp_path / "piped.sh", piped)))


def test_a_command_held_in_a_variable_runs_through_eval_or_its_expansion(tmp_path: Path) -> None:
    """``CMD="vllm serve ..."`` then ``eval "$CMD"`` or a bare ``$CMD``: the command the variable holds runs."""
    held = 'CMD="vllm serve Qwen/Qwen3-32B --tensor-parallel-size 2 --distributed-executor-backend ray"\n'
    (by_eval,) = _g10(_write(tmp_path / "eval.sh", "#!/usr/bin/env bash\n" + held + 'eval "$CMD"\n'))
    assert by_eval["status"] == "WARN" and "tp=2" in by_eval["message"], by_eval
    share = 'CMD="vllm serve Qwen/Qwen3-32B --gpu-memory-utilization 0.97"\n'
    found = _findings(_write(tmp_path / "bare.sh", "#!/usr/bin/env bash\n" + share + "$CMD\n"), "G3-memory-fraction")
    assert [f["status"] for f in found] == ["WARN"], found
    # quoted, "$CMD" is one word (a program named that): nothing runs as a server
    assert _findings(_write(tmp_path / "quoted.sh", "#!/usr/bin/env bash\n" + share + '"$CMD"\n'), "G3-memory-fraction") == []


def test_a_launch_run_by_kubectl_exec_is_read(tmp_path: Path) -> None:
    """``kubectl exec POD -- bash -c '...'`` runs its command in the pod, as ``docker exec`` does in a container."""
    script = ('#!/usr/bin/env bash\nkubectl exec -n llm deploy/vllm-head -- bash -c '
              '"vllm serve Qwen/Qwen3-32B --tensor-parallel-size 2 --distributed-executor-backend ray"\n')
    (finding,) = _g10(_write(tmp_path / "exec.sh", script))
    assert finding["status"] == "WARN" and finding["location"]["line"] == 2, finding


NESTED = """
    #!/usr/bin/env bash
    set -euo pipefail
    vllm_args=(
      serve /model
      --tensor-parallel-size 2
      --nnodes 2
      --master-addr 10.0.0.1
    )
    common=(--gpus all --network host)
    head_docker=(docker run -d --name head)
    worker_docker=(docker run -d --name worker)
    head_docker+=(
      "${common[@]}"
      example/vllm:1.0 "${vllm_args[@]}"
      --node-rank 0
    )
    worker_docker+=(
      "${common[@]}"
      example/vllm:1.0 "${vllm_args[@]}"
      --node-rank 1 --headless
    )
    ssh worker "${worker_docker[@]}"
    "${head_docker[@]}"
"""


def test_a_flag_in_an_array_another_array_expands_is_located_at_the_flag(tmp_path: Path) -> None:
    """``head_docker+=(... "${vllm_args[@]}")`` run as ``"${head_docker[@]}"``: the tensor-parallel size is written
    in ``vllm_args``, so the head and the worker launch are one cause at that line, not two at their run lines."""
    path = tmp_path / "up.sh"
    path.write_text(textwrap.dedent(NESTED).lstrip())
    found = [f for f in _g10(path) if f["status"] == "WARN"]
    assert [f["location"]["line"] for f in found] == [5]


QUOTED = """
    #!/usr/bin/env bash
    set -uo pipefail
    NODES=(192.168.200.12 192.168.200.13 192.168.200.14 192.168.200.15)
    NNODES="${#NODES[@]}"
    HEAD="${NODES[0]}"
    SERVE=(
      vllm serve /models/glm
      --tensor-parallel-size 4 --pipeline-parallel-size 1
      --gpu-memory-utilization 0.93
    )
    docker_run_cmd() {
      local rank="$1"
      local cmd=(docker run -d --gpus all --network host example/vllm:1.0 "${SERVE[@]}"
                 --nnodes "$NNODES" --node-rank "$rank" --master-addr "$HEAD")
      local out="" t
      for t in "${cmd[@]}"; do out+=" $(printf '%q' "$t")"; done
      printf '%s' "${out# }"
    }
    for ((rank=1; rank<NNODES; rank++)); do
      ssh "${NODES[$rank]}" "$(docker_run_cmd "$rank")"
    done
    bash -c "$(docker_run_cmd 0)"
"""


def test_a_command_array_quoted_word_by_word_for_ssh_is_read_as_the_launch(tmp_path: Path) -> None:
    """``for t in "${cmd[@]}"; do out+=" $(printf %q "$t")"; done``: a function prints the ``docker run`` it
    builds for ``ssh``/``bash -c``; it is the launch (TP=4 over ``${#NODES[@]}`` = 4 nodes, and a 0.93 share),
    located at the flags (the script said "nothing checked")."""
    path = _write(tmp_path / "launch.sh", QUOTED)
    (g10,) = _g10(path)
    assert g10["status"] == "WARN" and g10["location"]["line"] == 8 and "across 4 nodes" in g10["message"], g10
    done = run_envcheck("--format", "json", str(path))
    findings = json.loads(done.stdout)["targets"][0]["findings"]
    (g3,) = [f for f in findings if f["rule"] == "G3-memory-fraction"]
    assert g3["status"] == "WARN" and g3["location"]["line"] == 9, g3
    # the same array run by the script itself is that launch once, not a second one
    direct = QUOTED.replace('      for t in "${cmd[@]}"; do out+=" $(printf \'%q\' "$t")"; done\n',
                            '      for t in "${cmd[@]}"; do out+=" $(printf \'%q\' "$t")"; done\n      "${cmd[@]}"\n')
    assert len(_g10(_write(tmp_path / "direct.sh", direct))) == 1


RANK = """
    #!/usr/bin/env bash
    set -euo pipefail
    required=(RANK NNODES MASTER_ADDR IMAGE)
    for n in "${required[@]}"; do [[ -z "${!n:-}" ]] && { echo "missing $n" >&2; exit 1; }; done
    serve_args=(
        /model --host 0.0.0.0 --port 8000
        --tensor-parallel-size 4 --pipeline-parallel-size 1
        --gpu-memory-utilization 0.85
        --nnodes "$NNODES" --node-rank "$RANK" --master-addr "$MASTER_ADDR"
    )
    docker run -d --name vllm --gpus all --network host \\
      --device /dev/infiniband -e NCCL_NET=IB \\
      --entrypoint /bin/bash "$IMAGE" -lc '
        export PATH="/usr/local/cuda/bin:${PATH:-}"  # the CUDA of the image
        exec vllm serve "$@"' bash "${serve_args[@]}"
"""


def test_a_node_count_from_the_environment_is_a_node_count_and_the_flag_is_in_the_array(tmp_path: Path) -> None:
    """``--nnodes "$NNODES"`` in an array a ``bash -lc '...'`` container script runs: the launch spans nodes (the
    count is unknown, not missing), and the finding is at the tensor-parallel flag in the array, not at
    ``docker run`` (the command's quoted multi-line script hid the array from the flag's lookup)."""
    (finding,) = _g10(_write(tmp_path / "rank.sh", RANK))
    assert finding["status"] == "WARN" and finding["location"]["line"] == 7, finding
    assert "$NNODES" in finding["message"] and "no node count" not in finding["message"], finding
    # one rank of tensor parallelism per node is no tensor parallelism across nodes
    (one,) = _g10(_write(tmp_path / "tp1.sh", RANK.replace("--tensor-parallel-size 4", "--tensor-parallel-size 1")))
    assert one["status"] != "WARN", one
