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
