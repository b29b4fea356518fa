"""Kubernetes workloads whose pods are described elsewhere than a pod template (NVIDIA Dynamo's
DynamoGraphDeployment: a main container per service, the service's resources and node count beside it), and
what any pod asks the scheduler for: more GPUs than a Spark node has (G10), more memory than its unified pool (G3)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from conftest import run_envcheck


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def _target(path: Path) -> dict[str, Any]:
    proc = run_envcheck("--format", "json", "--fail-on", "never", str(path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (target,) = json.loads(proc.stdout)["targets"]
    assert target["kind"] == "kubernetes"
    return target  # type: ignore[no-any-return]


def _hits(target: dict[str, Any], rule: str) -> list[dict[str, Any]]:
    return [f for f in target["findings"] if f["rule"] == rule and f["status"] not in ("PASS", "INFO", "SKIP")]


def _line(text: str, needle: str, after: int = 0) -> int:
    """The 1-based line of ``text`` that holds ``needle`` after line ``after`` (the test's own count)."""
    return next(i for i, line in enumerate(text.splitlines(), 1) if i > after and needle in line)


DYNAMO = """
    apiVersion: nvidia.com/v1alpha1
    kind: DynamoGraphDeployment
    metadata:
      name: llm
    spec:
      services:
        Frontend:
          componentType: frontend
          extraPodSpec:
            mainContainer:
              image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.6.1
              command: [/bin/sh, -c]
              args:
                - "python3 -m dynamo.frontend --http-port 8000"
        Decode:
          componentType: worker
          multinode:
            nodeCount: 2
          resources:
            limits:
              gpu: "1"
          extraPodSpec:
            mainContainer:
              image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.6.1
              command: [/bin/sh, -c]
              args:
                - python3 -m dynamo.vllm --model Qwen/Qwen3-0.6B --tensor-parallel-size 2
        Prefill:
          componentType: worker
          multinode:
            nodeCount: 2
          resources:
            limits:
              gpu: "1"
          extraPodSpec:
            mainContainer:
              image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.6.1
              command:
              - python3
              - -m
              - dynamo.vllm
              args:
                - --model
                - Qwen/Qwen3-0.6B
                - --is-prefill-worker
                - --tensor-parallel-size
                - "2"
        Single:
          componentType: worker
          multinode:
            nodeCount: 2
          resources:
            limits:
              gpu: "1"
          extraPodSpec:
            mainContainer:
              image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.6.1
              command: [python3, -m, dynamo.vllm]
              args: [--model, Qwen/Qwen3-0.6B, --pipeline-parallel-size, "2"]
"""


def test_dynamo_services_are_read_with_their_node_count(tmp_path: Path) -> None:
    """Each service's main container is read (image, command); multinode.nodeCount spans its launch over nodes, so
    tensor parallel 2 over two one-GPU Sparks is G10 at the flag, in a ``-c`` string or a list item alike."""
    manifest = _write(tmp_path / "agg.yaml", DYNAMO)
    target = _target(manifest)
    text = manifest.read_text(encoding="utf-8")
    assert not [f for f in target["findings"] if "nothing to check" in f["message"]]
    lines = sorted(f["location"]["line"] for f in _hits(target, "G10-tp-across-nodes"))
    prefill = _line(text, "Prefill:")
    assert lines == [_line(text, "dynamo.vllm --model Qwen/Qwen3-0.6B --tensor"), _line(text, "- --tensor-parallel-size", prefill)]
    assert {f["status"] for f in _hits(target, "G10-tp-across-nodes")} == {"WARN"}
    # pipeline parallelism across the two nodes is fine: nothing after the Single service's line
    assert max(lines) < _line(text, "Single:")


GPUS = """
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: tp2}
    spec:
      template:
        spec:
          containers:
            - name: vllm
              image: nvcr.io/nvidia/vllm:25.11-py3
              command: ["vllm", "serve", "Qwen/Qwen3-8B"]
              args:
                - --tensor-parallel-size
                - "2"
              resources:
                requests:
                  nvidia.com/gpu: "2"
                limits:
                  nvidia.com/gpu: "2"
            - name: one
              image: nvcr.io/nvidia/vllm:25.11-py3
              command: ["vllm", "serve", "Qwen/Qwen3-0.6B"]
              resources:
                limits:
                  nvidia.com/gpu: 1
            - name: slices
              image: nvcr.io/nvidia/vllm:25.11-py3
              command: ["vllm", "serve", "Qwen/Qwen3-0.6B"]
              resources:
                limits:
                  nvidia.com/mig-1g.10gb: "2"
                  nvidia.com/gpu.shared: "4"
                claims:
                  - name: gpus
    ---
    apiVersion: nvidia.com/v1alpha1
    kind: DynamoComponentDeployment
    metadata: {name: worker}
    spec:
      resources:
        requests:
          gpu: "4"
    ---
    apiVersion: v1
    kind: Pod
    metadata: {name: two-nodes}
    spec:
      containers:
        - name: sglang
          image: lmsysorg/sglang:v0.5.5
          command: [python3, -m, sglang.launch_server, --tensor-parallel-size, "16", --nnodes, "2"]
          resources:
            limits:
              nvidia.com/gpu: "8"
"""


def test_a_pod_asking_for_more_gpus_than_a_spark_has_is_g10_fail_at_the_request(tmp_path: Path) -> None:
    """nvidia.com/gpu (or Dynamo's gpu) above one GPU a node: never scheduled on a Spark, one FAIL at the limit
    (the request and the TP flag as its other lines), with or without a launch, unless its launch spans nodes
    (then the tensor parallelism across nodes is the one finding); one GPU, MIG slices, shared
    resources and DRA claims are not counted. Tensor parallelism inside such a pod is not across nodes."""
    manifest = _write(tmp_path / "gpus.yaml", GPUS)
    target = _target(manifest)
    text = manifest.read_text(encoding="utf-8")
    hits = _hits(target, "G10-pod-gpus-over-node")
    assert [(f["status"], f["location"]["line"]) for f in hits] == [
        ("FAIL", _line(text, 'nvidia.com/gpu: "2"', _line(text, "limits:"))), ("FAIL", _line(text, 'gpu: "4"'))]
    assert hits[0]["evidence"]["lines"] == sorted([_line(text, 'nvidia.com/gpu: "2"'), _line(text, "- --tensor-parallel-size")])
    assert "2 GPUs" in hits[0]["message"] and "tp=2" in hits[0]["message"]
    assert "4 GPUs" in hits[1]["message"] and "DynamoComponentDeployment/worker" in hits[1]["message"]
    # a pod holding all its ranks is not across nodes; one spanning nodes is said by the TP rule alone
    spanning = [f for f in target["findings"] if f["rule"] == "G10-pod-gpus-over-node" and f["status"] == "INFO"]
    assert len(spanning) == 1 and "over 2 nodes, reported there" in spanning[0]["message"]
    assert [f["location"]["line"] for f in _hits(target, "G10-tp-across-nodes")] == [_line(text, "sglang.launch_server")]
    assert not [f for f in target["findings"] if f["rule"] == "G10-tp-across-nodes"
                and f.get("location", {}).get("line") == _line(text, "- --tensor-parallel-size")]


MEMORY = """
    apiVersion: nvidia.com/v1alpha1
    kind: DynamoGraphDeployment
    metadata: {name: kv}
    spec:
      services:
        Prefill:
          resources:
            requests:
              gpu: "1"
              memory: "200Gi"
            limits:
              gpu: "1"
              memory: "250Gi"
          extraPodSpec:
            mainContainer:
              image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.6.1
              command: [python3, -m, dynamo.vllm]
              args: [--model, Qwen/Qwen3-8B, --gpu-memory-utilization, "0.23"]
    ---
    apiVersion: v1
    kind: Pod
    metadata: {name: mem}
    spec:
      containers:
        - name: limit-only
          image: nvcr.io/nvidia/pytorch:25.11-py3
          resources:
            limits: {memory: 140G, nvidia.com/gpu: "1"}
        - name: loose-limit
          image: nvcr.io/nvidia/pytorch:25.11-py3
          resources:
            requests: {memory: 64Gi, nvidia.com/gpu: "1"}
            limits: {memory: 1Ti, nvidia.com/gpu: "1"}
        - name: fits
          image: nvcr.io/nvidia/pytorch:25.11-py3
          resources:
            requests: {memory: 100Gi}
            limits: {memory: 128G}
        - name: unreadable
          image: nvcr.io/nvidia/pytorch:25.11-py3
          resources:
            requests: {memory: 1e400Gi}
"""


def test_a_container_asking_for_more_memory_than_the_pool_is_g3(tmp_path: Path) -> None:
    """A memory request above the Spark's 128 GB (or a limit that is its request) is never scheduled: FAIL at the
    request; a limit above it over a request inside it is never enforced: WARN; within the pool: silent."""
    manifest = _write(tmp_path / "memory.yaml", MEMORY)
    target = _target(manifest)
    text = manifest.read_text(encoding="utf-8")
    hits = _hits(target, "G3-pod-memory-over-pool")
    assert [(f["status"], f["location"]["line"]) for f in hits] == [
        ("FAIL", _line(text, 'memory: "200Gi"')), ("FAIL", _line(text, "memory: 140G")), ("WARN", _line(text, "memory: 1Ti"))]
    assert hits[0]["evidence"]["lines"] == [_line(text, 'memory: "250Gi"')]
    assert "200Gi" in hits[0]["message"] and "never scheduled" in hits[0]["message"]
    # the small --gpu-memory-utilization share stays silent
    assert not _hits(target, "G3-memory-fraction")
