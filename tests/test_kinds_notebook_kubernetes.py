"""Jupyter notebooks and Kubernetes manifests as input kinds (issue 28), a folder run that finds all four new
kinds, and hostile YAML (alias bombs, depth, document count, size) ending in a bounded ERROR."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from bounded import run_envcheck_bounded
from conftest import run_envcheck


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def _targets(*args: str, input: str | None = None) -> list[dict[str, Any]]:
    proc = run_envcheck("--format", "json", "--fail-on", "never", *args, input=input)
    assert proc.returncode in (0, 2), proc.stderr
    targets: list[dict[str, Any]] = json.loads(proc.stdout)["targets"]
    return targets


def _hits(target: dict[str, Any], rule: str) -> list[dict[str, Any]]:
    return [f for f in target["findings"] if f["rule"] == rule and f["status"] not in ("PASS", "INFO", "SKIP")]


def _line(text: str, needle: str) -> int:
    """The 1-based line of ``text`` that holds ``needle`` (the test's own count of where a fact is written)."""
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def _notebook(path: Path, cells: list[tuple[str, list[str], list[str]]]) -> Path:
    """A notebook as Jupyter writes it (indent 1, one source line per JSON string); cells: (type, source, output text)."""
    document = {
        "cells": [
            {"cell_type": kind, "metadata": {}, "source": source,
             **({"execution_count": None, "outputs": [{"name": "stdout", "output_type": "stream", "text": outputs}]}
                if kind == "code" else {})}
            for kind, source, outputs in cells
        ],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
        "nbformat": 4, "nbformat_minor": 5,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def test_notebook_pip_magic_flash_attn_is_g2_at_cell_and_file_line(tmp_path: Path) -> None:
    notebook = _notebook(tmp_path / "setup.ipynb", [
        ("markdown", ["# Fine-tune on the Spark\n", "Do not run `!pip install xformers` here.\n"], []),
        ("code", ["import os\n", "os.environ[\"TORCH_CUDA_ARCH_LIST\"] = \"8.0;9.0\"\n", "%env HF_HOME=/data/hf"],
         ["!pip install bitsandbytes==0.41.0\n"]),
        ("code", ["# dependencies\n", "%pip install -q flash-attn --no-build-isolation\n",
                  "!{sys.executable} -m pip install torch --index-url https://download.pytorch.org/whl/cu121"], []),
    ])
    (target,) = _targets(str(notebook))
    assert target["kind"] == "notebook"
    (flash,) = _hits(target, "G2-flash-attn-build")
    lines = notebook.read_text(encoding="utf-8").splitlines()
    assert flash["location"]["member"] == "cell 3, line 2"
    assert "%pip install -q flash-attn" in lines[flash["location"]["line"] - 1]  # the file's own line: a SARIF region
    (arch_list,) = _hits(target, "G7-torch-cuda-arch-list")
    assert arch_list["location"]["member"] == "cell 2, line 2"
    assert _hits(target, "G1-cuda12-index")[0]["location"]["member"] == "cell 3, line 3"
    said = json.dumps(target["findings"])
    assert "xformers" not in said and "bitsandbytes" not in said  # markdown and outputs are never commands
    sarif = json.loads(run_envcheck("--format", "sarif", "--fail-on", "never", str(notebook)).stdout)
    regions = {r["ruleId"]: r["locations"][0] for r in sarif["runs"][0]["results"]}
    g2 = regions["G2-flash-attn-build"]
    assert g2["physicalLocation"]["region"]["startLine"] == flash["location"]["line"]
    assert g2["logicalLocations"][0]["name"] == "cell 3, line 2"
    text = run_envcheck(str(notebook)).stdout
    assert f"setup.ipynb:{flash['location']['line']} (cell 3, line 2)" in text


def test_bash_cell_and_uv_pip_in_a_notebook(tmp_path: Path) -> None:
    notebook = _notebook(tmp_path / "serve.ipynb", [
        ("code", ["%%bash\n", "pip install 'torch==2.9.1+cu130' --index-url https://download.pytorch.org/whl/cu130\n",
                  "nohup vllm serve Qwen/Qwen3-8B --gpu-memory-utilization 0.98 &"], []),
        ("code", ["!uv pip install nvidia-cublas-cu12==12.4.5.8"], []),
    ])
    (target,) = _targets(str(notebook))
    (memory,) = _hits(target, "G3-memory-fraction")
    assert memory["location"]["member"] == "cell 1, line 3"
    assert _hits(target, "G1-cuda12-distribution")[0]["location"]["member"] == "cell 2, line 1"
    assert not _hits(target, "G1-cuda12-index")


JOB = """
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: settings
    data:
      image: nvcr.io/nvidia/pytorch:23.10-py3
    ---
    apiVersion: batch/v1
    kind: Job
    metadata:
      name: finetune
    spec:
      backoffLimit: 0
      template:
        spec:
          restartPolicy: Never
          initContainers:
            - name: deps
              image: nvcr.io/nvidia/pytorch:25.11-py3
              command: ["bash", "-c"]
              args: ["pip install flash-attn --no-build-isolation"]
          containers:
            - name: train
              image: nvcr.io/nvidia/pytorch:24.05-py3
              command: ["python", "train.py"]
              env:
                - name: TORCH_CUDA_ARCH_LIST
                  value: "9.0"
              resources:
                limits:
                  nvidia.com/gpu: "1"
"""


def test_kubernetes_job_on_a_cuda12_ngc_image_is_g1_fail(tmp_path: Path) -> None:
    manifest = _write(tmp_path / "k8s" / "finetune.yaml", JOB)
    (target,) = _targets(str(manifest))
    assert target["kind"] == "kubernetes"
    (cuda,) = _hits(target, "G1-cuda12-base")  # the ConfigMap's string is data, not a container
    text = manifest.read_text(encoding="utf-8")
    assert cuda["status"] == "FAIL" and cuda["location"]["line"] == _line(text, "pytorch:24.05-py3")
    assert _hits(target, "G7-torch-cuda-arch-list")[0]["location"]["line"] == _line(text, "name: TORCH_CUDA_ARCH_LIST")
    # the init container's image is NGC's, which ships flash-attn: pip keeps it and builds nothing (as in a Dockerfile RUN)
    assert not _hits(target, "G2-flash-attn-build")


def test_manifest_from_stdin_and_amd64_scheduling(tmp_path: Path) -> None:
    text = textwrap.dedent("""
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: vllm}
        spec:
          template:
            spec:
              affinity:
                nodeAffinity:
                  requiredDuringSchedulingIgnoredDuringExecution:
                    nodeSelectorTerms:
                      - matchExpressions:
                          - {key: kubernetes.io/arch, operator: In, values: [amd64]}
              containers:
                - name: vllm
                  image: vllm/vllm-openai:v0.11.0
                  args: ["--model", "Qwen/Qwen3-8B", "--tensor-parallel-size", "1"]
    """).lstrip()
    (target,) = _targets("--kind", "kubernetes", "-", input=text)
    (arch,) = _hits(target, "ARCH-base-platform")
    assert arch["status"] == "FAIL" and "amd64" in arch["message"] and arch["location"]["line"] == _line(text, "image: vllm")
    proc = run_envcheck("-", input=text)
    assert proc.returncode == 2 and "--kind" in proc.stderr


def test_manifest_without_workloads_is_clean(tmp_path: Path) -> None:
    manifest = _write(tmp_path / "k8s" / "service.yaml", """
        apiVersion: v1
        kind: Service
        metadata: {name: vllm}
        spec:
          ports: [{port: 8000}]
    """)
    proc = run_envcheck("--kind", "kubernetes", str(manifest))
    assert proc.returncode == 0 and "ERROR" not in proc.stdout


def test_folder_run_finds_all_four_kinds(tmp_path: Path) -> None:
    _write(tmp_path / "compose.yaml", "services:\n  api:\n    image: nvcr.io/nvidia/vllm:25.11-py3\n")
    _write(tmp_path / "deploy" / "job.yaml", JOB)  # a name that says nothing: found by content
    _write(tmp_path / "deploy" / "values.yaml", "replicaCount: 1\nimage: {repository: x}\n")  # YAML, not a manifest
    _write(tmp_path / "deploy" / "stack.yml", "services:\n  api:\n    image: python:3.12\n")  # compose by content
    _write(tmp_path / ".github" / "workflows" / "ci.yml", "on: push\njobs:\n  t:\n    services:\n      db:\n        image: postgres:16\n")
    _write(tmp_path / "scripts" / "install.sh", "#!/bin/bash\npip install torch==2.9.1\n")
    _notebook(tmp_path / "notebooks" / "setup.ipynb", [("code", ["%pip install transformers==4.57.1"], [])])
    kinds = {Path(t["target"]).name: t["kind"] for t in _targets(str(tmp_path))}
    assert kinds == {"compose.yaml": "compose", "job.yaml": "kubernetes", "install.sh": "shell", "setup.ipynb": "notebook",
                     "stack.yml": "compose"}


def _bounded_error(path: Path, kind: str, words: str) -> None:
    run = run_envcheck_bounded("--kind", kind, "--format", "json", str(path), kill_after=60)
    run.assert_within(seconds=10, rss_mb=300)
    assert run.returncode == 2, run.stdout + run.stderr
    (target,) = json.loads(run.stdout)["targets"]
    (error,) = [f for f in target["findings"] if f["status"] == "ERROR"]
    assert words in error["message"] and error["location"].get("line"), error


def test_hostile_yaml_ends_in_a_bounded_error_at_its_line(tmp_path: Path) -> None:
    lol = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    lol += [f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]" for i in range(9)]
    bomb = _write(tmp_path / "compose.yaml", "\n".join(["services:", *("  " + line for line in ["x:", "  image: python:3.12"]), *lol]) + "\n")
    _bounded_error(bomb, "compose", "aliases counted")
    deep = tmp_path / "deep.yaml"
    deep.write_text("apiVersion: v1\nkind: Pod\nspec: " + "[" * 5000 + "]" * 5000 + "\n", encoding="utf-8")
    _bounded_error(deep, "kubernetes", "nested more than")
    many = tmp_path / "many.yaml"
    many.write_text("apiVersion: v1\nkind: Pod\n" + "---\n{}\n" * 5000, encoding="utf-8")
    _bounded_error(many, "kubernetes", "documents")
    nested = tmp_path / "nested" / "compose.yaml"  # was a RecursionError, read as "could not read"
    _write(nested, "services:\n  s:\n    image: vllm/vllm-openai:v0.11.0\n    command: " + "${A:-" * 5000 + "m" + "}" * 5000 + "\n")
    _bounded_error(nested, "compose", "nested more than 64 levels deep")
    big = tmp_path / "big.yaml"
    big.write_text("apiVersion: v1\nkind: Pod\n#" + "x" * (17 << 20) + "\n", encoding="utf-8")
    run = run_envcheck_bounded("--kind", "kubernetes", str(big), kill_after=60)
    run.assert_within(seconds=10, rss_mb=300)
    assert run.returncode == 2 and "limit" in run.stdout


def test_compose_include_and_extends_cycles_end_in_errors(tmp_path: Path) -> None:
    compose = _write(tmp_path / "compose.yaml", """
        include:
          - other.yaml
        services:
          a:
            extends: b
          b:
            extends: a
            image: python:3.12
    """)
    _write(tmp_path / "other.yaml", "include: [compose.yaml, other.yaml]\nservices:\n  c:\n    image: python:3.12\n")
    run = run_envcheck_bounded("--format", "json", str(compose), kill_after=60)
    run.assert_within(seconds=10, rss_mb=300)
    assert run.returncode == 2
    (target,) = json.loads(run.stdout)["targets"]
    errors = [f["message"] for f in target["findings"] if f["status"] == "ERROR"]
    assert sum("cycle" in m for m in errors) == 2 and any("extends" in m for m in errors), errors


def test_hostile_notebooks_end_in_bounded_errors(tmp_path: Path) -> None:
    deep = tmp_path / "deep.ipynb"
    deep.write_text('{"cells": ' + "[" * 200_000 + "]" * 200_000 + "}", encoding="utf-8")
    many = tmp_path / "many.ipynb"
    many.write_text(json.dumps({"cells": [{"cell_type": "code", "source": "!pip install x"}] * 10_001, "nbformat": 4}), encoding="utf-8")
    for path, words in ((deep, "nested too deeply"), (many, "cells")):
        run = run_envcheck_bounded(str(path), kill_after=60)
        run.assert_within(seconds=10, rss_mb=300)
        assert run.returncode == 2 and words in run.stdout, run.stdout


def test_cells_that_are_not_text_are_one_error_and_the_rest_is_read(tmp_path: Path) -> None:
    """adversary: a code cell whose source is a number, a mapping or a list holding non-strings (and a cell
    that is no object) was skipped in silence, so the notebook came out PASS unread; now one ERROR names the
    cells, and the readable cells are still judged."""
    cells: list[Any] = [{"cell_type": "code", "source": 12345}, {"cell_type": "code", "source": ["!pip install ", None]},
                        {"cell_type": "code", "source": {"x": "!pip install torch"}}, 7,
                        {"cell_type": "code", "source": ["!pip install flash-attn\n"]}, {"cell_type": "markdown", "source": 3}]
    path = tmp_path / "odd.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}), encoding="utf-8")
    done = run_envcheck("-f", "json", str(path))
    findings = json.loads(done.stdout)["targets"][0]["findings"]
    (error,) = [f for f in findings if f["status"] == "ERROR"]
    assert error["message"].startswith("cells 1, 2, 3, 4: ") and error["location"]["member"] == "cell 1", error
    assert any(f["rule"].startswith("G2") for f in findings), findings  # cell 5's flash-attn is still read


def test_options_only_container_runs_the_image_server(tmp_path: Path) -> None:
    """A vllm/vllm-openai container with `args` only starts `vllm serve` with them (the image's entrypoint)."""
    manifest = _write(tmp_path / "k8s" / "vllm.yaml", """
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: vllm}
        spec:
          template:
            spec:
              containers:
              - name: vllm
                image: vllm/vllm-openai:v0.8.5
                args: ["--model", "Qwen/Qwen3-8B", "--gpu-memory-utilization", "0.95"]
                resources:
                  limits:
                    nvidia.com/gpu: '1'
    """)
    (target,) = _targets(str(manifest))
    (memory,) = _hits(target, "G3-memory-fraction")
    assert memory["location"]["line"] == 10 and memory["message"].startswith("Deployment/vllm container vllm: vllm asks")


def test_python_values_and_blocks_in_notebook_shell_lines(tmp_path: Path) -> None:
    """`{expr}` in a `!` line is a Python value IPython fills in (unknown here: left out, not an error); a `!` line
    inside an indented Python block may not run, and its findings say so."""
    notebook = _notebook(tmp_path / "colab.ipynb", [
        ("code", ["%%capture\n", "import os\n", "if \"COLAB_\" not in \"\".join(os.environ.keys()):\n",
                  "    !pip install flash-attn\n", "else:\n", "    !uv pip install -qqq --upgrade \\\n",
                  "        unsloth {get_numpy} {get_pil} xformers\n", "!uv pip install --no-deps trl==0.22.2"], []),
    ])
    (target,) = _targets(str(notebook))
    assert not [f for f in target["findings"] if f["status"] == "ERROR"], target["findings"]
    (flash,) = _hits(target, "G2-flash-attn-build")
    assert flash["location"]["member"] == "cell 1, line 4" and "Python block" in flash["message"]


def test_leader_worker_set_spans_its_group_size(tmp_path: Path) -> None:
    """vLLM's multi-node Kubernetes recipe (LeaderWorkerSet, size 2): tensor parallel 2 over a group of two Sparks."""
    manifest = _write(tmp_path / "lws.yaml", """
        apiVersion: leaderworkerset.x-k8s.io/v1
        kind: LeaderWorkerSet
        metadata: {name: vllm}
        spec:
          leaderWorkerTemplate:
            size: 2
            leaderTemplate:
              spec:
                containers:
                  - name: leader
                    image: nvcr.io/nvidia/vllm:25.11-py3
                    command: ["sh", "-c", "ray start --head; vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 2"]
            workerTemplate:
              spec:
                containers:
                  - name: worker
                    image: nvcr.io/nvidia/vllm:24.10-py3
                    command: ["sh", "-c", "ray start --address=$LEADER --block"]
    """)
    (target,) = _targets(str(manifest))
    assert target["kind"] == "kubernetes"
    (tp,) = _hits(target, "G10-tp-across-nodes")
    text = manifest.read_text(encoding="utf-8")
    assert tp["status"] == "WARN" and tp["location"]["line"] == _line(text, "command: [\"sh\", \"-c\", \"ray start --head")
    assert _hits(target, "G1-cuda12-base")[0]["location"]["line"] == _line(text, "vllm:24.10-py3")  # the workers' pod too


def test_amd64_scheduling_is_one_finding_per_pod(tmp_path: Path) -> None:
    manifest = _write(tmp_path / "k8s" / "job.yaml", """
        apiVersion: batch/v1
        kind: Job
        metadata: {name: finetune}
        spec:
          template:
            spec:
              nodeSelector:
                kubernetes.io/arch: amd64
              initContainers:
                - {name: deps, image: python:3.12-slim, command: ["sh", "-c", "pip install -r /src/requirements.txt"]}
              containers:
                - {name: train, image: nvcr.io/nvidia/pytorch:25.11-py3, command: ["torchrun", "train.py"]}
    """)
    (target,) = _targets(str(manifest))
    (arch,) = _hits(target, "ARCH-base-platform")
    assert arch["location"]["line"] == _line(manifest.read_text(encoding="utf-8"), "{name: deps") and "amd64 nodes only" in arch["message"]


_STS = """apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: sglang
spec:
  replicas: 2
  template:
    spec:
      containers:
      - name: server
        image: lmsysorg/sglang:v0.5.6-cu130
        command:
        - /bin/bash
        - -c
        args:
        - |
          python3 -m sglang.launch_server \\
          --model /models/llm \\
          --tensor-parallel-size 16 \\
          --nnodes 2 \\
          --node-rank $POD_INDEX
"""


def test_a_launch_finding_points_at_its_flag_in_a_bash_script(tmp_path: Path) -> None:
    """``bash -c`` with a block-scalar script: the script's lines are the manifest's, and the G10 finding is
    on the line of --tensor-parallel-size, not on the container's command: key."""
    (tmp_path / "sts.yaml").write_text(_STS)
    done = run_envcheck("-f", "json", "sts.yaml", cwd=tmp_path)
    g10 = [f for f in json.loads(done.stdout)["targets"][0]["findings"] if f["rule"] == "G10-tp-across-nodes"]
    assert [(f["status"], f["location"]["line"]) for f in g10] == [("WARN", _STS.splitlines().index(
        "          --tensor-parallel-size 16 \\") + 1)]


def test_a_ray_image_published_for_amd64_only_is_arch_in_a_ray_cluster_for_the_sparks(tmp_path: Path) -> None:
    """Before Ray's multi-platform indexes, rayproject/ray:<ver>-gpu is amd64; arm64 images are the -aarch64 tags
    (knowledge/ngc_tags.toml amd64_only). A KubeRay RayCluster's head and worker groups are read as pods."""
    manifest = _write(tmp_path / "k8s" / "raycluster.yaml", """
        apiVersion: ray.io/v1
        kind: RayCluster
        metadata: {name: sparks}
        spec:
          headGroupSpec:
            rayStartParams: {}
            template:
              spec:
                nodeSelector: {kubernetes.io/arch: arm64}
                containers:
                  - name: head
                    image: rayproject/ray:2.9.0-py310-gpu
                    resources: {limits: {nvidia.com/gpu: 1}}
          workerGroupSpecs:
            - groupName: gpu
              replicas: 1
              template:
                spec:
                  containers:
                    - name: worker
                      image: rayproject/ray:2.9.0-py310-gpu-aarch64
                      resources: {limits: {nvidia.com/gpu: 1}}
    """)
    (target,) = _targets(str(manifest))
    (arch,) = _hits(target, "ARCH-base-platform")
    text = manifest.read_text(encoding="utf-8")
    assert arch["status"] == "FAIL" and arch["location"]["line"] == _line(text, "image: rayproject/ray:2.9.0-py310-gpu")
    assert "rayproject/ray:2.9.0-py310-gpu-aarch64" in arch["message"]
    # the worker group's pod is read too
    manifest.write_text(text.replace("2.9.0-py310-gpu-aarch64", "2.9.0-py310-cu121"), encoding="utf-8")
    (target,) = _targets(str(manifest))
    assert len(_hits(target, "ARCH-base-platform")) == 2
    # a release the table does not place (multi-platform indexes since Ray's 2025 CI change) stays silent
    manifest.write_text(text.replace("2.9.0-py310-gpu\n", "2.52.0-py312-gpu\n"), encoding="utf-8")
    (target,) = _targets(str(manifest))
    assert not _hits(target, "ARCH-base-platform")


def test_a_megabyte_word_in_a_launch_command_is_read_in_bounded_time(tmp_path: Path) -> None:
    """Launch commands were split by shlex, which grows a word one character at a time: a 4 MB word in a
    compose or pod `command:`, a script or a notebook line took many minutes. Each ends (its shell text is
    over the 1 MiB envcheck reads for installs: an ERROR), and the G3 flag after the word is still found."""
    word = "m" * (4 << 20)
    command = f"vllm serve {word} --gpu-memory-utilization 0.99"
    files = [
        _write(tmp_path / "compose.yaml", f"services:\n  s:\n    image: vllm/vllm-openai:v0.11.0\n    command: {command}\n"),
        _write(tmp_path / "pod.yaml", "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: c\n"
               f"    image: vllm/vllm-openai:v0.11.0\n    command: [sh, -c, '{command}']\n"),
        _write(tmp_path / "serve.sh", f"#!/bin/sh\n{command}\n"),
        _notebook(tmp_path / "serve.ipynb", [("code", [f"!{command}\n"], [])]),
    ]
    for path in files:
        run = run_envcheck_bounded("--format", "json", "--fail-on", "never", str(path), kill_after=60)
        assert not run.killed and run.returncode in (0, 2), (path.name, run.describe())
        (target,) = json.loads(run.stdout)["targets"]
        assert _hits(target, "G3-memory-fraction"), (path.name, target["findings"])


def test_notebook_lines_are_found_in_bounded_time(tmp_path: Path) -> None:
    """Each source line's file line was searched from the last one to the end of the file when not found:
    a cell source written as one string of 400,000 lines (valid nbformat), lines written with other
    escapes than Jupyter's, or a `!` line continued 400,000 times were quadratic (hours). Each is read and
    judged; a one-string source's findings are on the file line where the string is."""
    one_string = tmp_path / "one-string.ipynb"
    one_string.write_text(json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "outputs": [],
                                                 "source": "x = 1\n" * 400_000 + "!pip install flash-attn\n"}],
                                      "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1), encoding="utf-8")
    escaped = tmp_path / "escaped.ipynb"  # "\u0078" is "x": valid JSON no writer of notebooks produces
    escaped.write_text('{"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "source": ['
                       + '"\\u0078 = 1\\n", ' * 100_000 + '"!pip install flash-attn\\n"]}], "metadata": {}, '
                       '"nbformat": 4, "nbformat_minor": 5}', encoding="utf-8")
    continued = _notebook(tmp_path / "continued.ipynb", [("code", ["!pip install flash-attn \\\n", *[" \\\n"] * 400_000, "x\n"], [])])
    for path, line in ((one_string, _line(one_string.read_text(), '"source"')), (escaped, None), (continued, None)):
        run = run_envcheck_bounded("--format", "json", "--fail-on", "never", str(path), kill_after=60)
        assert not run.killed and run.returncode == 0, (path.name, run.describe())
        (target,) = json.loads(run.stdout)["targets"]
        (hit,) = _hits(target, "G2-flash-attn-build")
        assert line is None or hit["location"].get("line") == line, (path.name, hit)


def test_a_pod_of_fifteen_thousand_gpu_containers_is_judged_once_each(tmp_path: Path) -> None:
    """Each container's GPU request was found by reading every request and launch of the manifest again
    (containers x containers). 15,000 containers are judged: the one that asks for 2 GPUs, at its line."""
    pod = tmp_path / "pod.yaml"
    pod.write_text("apiVersion: v1\nkind: Pod\nspec:\n  containers:\n" + "".join(
        f"  - name: c{i}\n    image: x\n    resources: {{limits: {{nvidia.com/gpu: {2 if i == 14_999 else 1}}}}}\n"
        for i in range(15_000)), encoding="utf-8")
    run = run_envcheck_bounded("--format", "json", "--fail-on", "never", str(pod), kill_after=60)
    assert not run.killed and run.returncode == 0, run.describe()
    (target,) = json.loads(run.stdout)["targets"]
    (hit,) = _hits(target, "G10-pod-gpus-over-node")
    assert "c14999" in hit["message"] and hit["location"]["line"] == 4 + 3 * 15_000, hit
