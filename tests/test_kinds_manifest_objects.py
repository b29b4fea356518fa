"""Kubernetes objects that run no pod (a ConfigMap, Cilium's BGP resources, several in one file) are manifests
all the same: named on the command line they are read as Kubernetes and say there is nothing to check; a
folder run passes them by; neither is ever an ERROR (issue 32)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from conftest import run_envcheck

CONFIGMAP = """
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: aws-auth
      namespace: kube-system
    data:
      mapRoles: |
        - username: system:node:{{SessionName}}
"""
BGP = """
    ---
    apiVersion: cilium.io/v2
    kind: CiliumBGPClusterConfig
    metadata:
      name: bgp
    ---
    apiVersion: cilium.io/v2
    kind: CiliumBGPPeerConfig  # timers only
    metadata:
      name: peer
"""


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def test_a_manifest_without_a_workload_is_read_as_kubernetes_with_nothing_to_check(tmp_path: Path) -> None:
    for name, text in (("aws-auth.yaml", CONFIGMAP), ("bgp.yml", BGP)):
        done = run_envcheck("-f", "json", str(_write(tmp_path / name, text)))
        assert done.returncode == 0, done.stdout + done.stderr
        (target,) = json.loads(done.stdout)["targets"]
        assert target["kind"] == "kubernetes"
        assert [f["status"] for f in target["findings"]] == ["INFO"]
        assert "nothing to check" in target["findings"][0]["message"]
    # in a folder it is passed by: only the workload beside it is a target
    _write(tmp_path / "deploy" / "configmap.yaml", CONFIGMAP)
    _write(tmp_path / "deploy" / "pod.yaml", """
        apiVersion: v1
        kind: Pod
        metadata:
          name: smoke
        spec:
          containers:
            - name: smoke
              image: nvcr.io/nvidia/pytorch:25.11-py3
              command: ["nvidia-smi"]
    """)
    done = run_envcheck("-f", "json", str(tmp_path / "deploy"))
    assert done.returncode == 0, done.stdout + done.stderr
    targets = json.loads(done.stdout)["targets"]
    assert [Path(t["target"]).name for t in targets] == ["pod.yaml"]
    assert not [f for t in targets for f in t["findings"] if f["status"] == "ERROR"]
