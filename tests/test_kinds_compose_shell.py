"""Compose files and shell scripts as input kinds (issue 28): detection, the Dockerfile rules on their facts,
the launch-command rules, exact lines, compose's interpolation, extends, include, profiles and build."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import run_envcheck


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def _report(*args: str, cwd: Path | None = None) -> tuple[int, list[dict[str, Any]]]:
    proc = run_envcheck("--format", "json", "--fail-on", "fail", *args, cwd=cwd)
    assert proc.returncode in (0, 1, 2), proc.stderr
    return proc.returncode, json.loads(proc.stdout)["targets"]


def _hits(target: dict[str, Any], rule: str) -> list[dict[str, Any]]:
    return [f for f in target["findings"] if f["rule"] == rule and f["status"] not in ("PASS", "INFO", "SKIP")]


SPARK_SERVING = """
    # vLLM for a chat UI on the Spark
    x-gpu: &gpu
      deploy:
        resources:
          reservations:
            devices:
              - driver: nvidia
                count: all
                capabilities: [gpu]

    services:
      vllm:
        <<: *gpu
        image: nvcr.io/nvidia/vllm:${VLLM_RELEASE:-25.11}-py3
        command: >
          vllm serve Qwen/Qwen3-8B
          --gpu-memory-utilization ${GPU_SHARE:-0.5}
          --max-model-len 32768
        environment:
          HF_HOME: /models
          VLLM_ATTENTION_BACKEND: FLASHINFER
        ipc: host
      webui:
        image: ghcr.io/open-webui/open-webui:v0.6.5
        environment:
          - OPENAI_API_BASE_URL=http://vllm:8000/v1
"""


def test_sound_compose_file_is_clean(tmp_path: Path) -> None:
    compose = _write(tmp_path / "compose.yaml", SPARK_SERVING)
    proc = run_envcheck("--format", "json", str(compose))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (target,) = json.loads(proc.stdout)["targets"]
    assert target["kind"] == "compose"
    assert not [f for f in target["findings"] if f["status"] in ("ERROR", "FAIL", "WARN")], target["findings"]
    passed = {f["rule"] for f in target["findings"] if f["status"] == "PASS"}
    assert {"G1-cuda12-base", "G3-memory-fraction"} <= passed  # the image and the launch were judged, not missed


def test_compose_memory_share_cuda12_image_and_source_build_at_their_lines(tmp_path: Path) -> None:
    compose = _write(tmp_path / "docker-compose.yml", """
        services:
          vllm:
            image: nvcr.io/nvidia/vllm:25.11-py3
            command: ["vllm", "serve", "Qwen/Qwen3-8B", "--gpu-memory-utilization", "0.95"]
          trainer:
            image: nvidia/cuda:12.4.1-runtime-ubuntu22.04
            command: bash -c "pip install flash-attn --no-build-isolation && python train.py"
            environment:
              TORCH_CUDA_ARCH_LIST: "8.0;9.0"
    """)
    code, (target,) = _report(str(compose))
    assert code == 1
    (memory,) = _hits(target, "G3-memory-fraction")
    assert memory["status"] in ("WARN", "FAIL") and memory["location"]["line"] == 4 and "0.95" in memory["message"]
    (cuda,) = _hits(target, "G1-cuda12-base")
    assert cuda["status"] == "FAIL" and cuda["location"]["line"] == 6
    (build,) = _hits(target, "G2-flash-attn-build")
    assert build["location"]["line"] == 7
    (arch_list,) = _hits(target, "G7-torch-cuda-arch-list")
    assert arch_list["location"]["line"] == 9


def test_compose_interpolation_dotenv_and_required_variable(tmp_path: Path) -> None:
    """`.env` beside the file gives values; `${VAR:?msg}` unset is a note at its line (compose stops there, but such
    variables are mostly secrets kept in an uncommitted .env)."""
    _write(tmp_path / ".env", "CUDA_TAG=12.6.3-devel-ubuntu24.04\n# comment\nexport SHARE='0.3'\n")
    compose = _write(tmp_path / "compose.yaml", """
        services:
          dev:
            image: nvidia/cuda:${CUDA_TAG}
            command: vllm serve m --gpu-memory-utilization ${SHARE:-0.99}
          api:
            image: ${REGISTRY:?set REGISTRY to your registry}/api:1.0
    """)
    _code, (target,) = _report(str(compose))
    (cuda,) = _hits(target, "G1-cuda12-base")
    assert "12.6.3" in cuda["message"]
    memory = [f for f in target["findings"] if f["rule"] == "G3-memory-fraction"]
    assert [f["status"] for f in memory] == ["PASS"] and "0.3" in memory[0]["message"]  # .env wins over the default
    # usually a secret kept in an uncommitted .env: a note at its line, not an error
    (note,) = [f for f in target["findings"] if f["rule"] == "input-skipped"]
    assert note["status"] == "INFO" and note["location"]["line"] == 6 and "REGISTRY" in note["message"]


def test_compose_extends_include_and_profiles(tmp_path: Path) -> None:
    _write(tmp_path / "common.yaml", """
        services:
          base:
            image: nvcr.io/nvidia/pytorch:24.05-py3
            environment:
              NCCL_DEBUG: INFO
    """)
    _write(tmp_path / "monitoring" / "compose.yaml", """
        services:
          exporter:
            image: nvcr.io/nvidia/k8s/dcgm-exporter:latest
    """)
    compose = _write(tmp_path / "compose.yaml", """
        include:
          - monitoring/compose.yaml
        services:
          train:
            extends:
              file: common.yaml
              service: base
            command: torchrun --nnodes 2 train.py --tp 2
          chat:
            image: vllm/vllm-openai:v0.11.0
            profiles: [chat]
            command: --model Qwen/Qwen3-8B --gpu-memory-utilization 0.96
    """)
    _code, (target,) = _report(str(compose))
    (cuda,) = _hits(target, "G1-cuda12-base")
    assert cuda["location"]["path"].endswith("common.yaml") and cuda["location"]["line"] == 3  # the image where it is written
    (floating,) = _hits(target, "G9-floating-base-tag")
    assert floating["location"]["path"].endswith("monitoring/compose.yaml")  # from the included file
    (tp,) = _hits(target, "G10-tp-across-nodes")
    assert tp["status"] == "WARN" and tp["location"]["line"] == 8
    # options only: the image's own `vllm serve` runs them; behind a profile it starts only when asked for: one level lower
    (memory,) = [f for f in target["findings"] if f["rule"] == "G3-memory-fraction" and f["status"] == "INFO"]
    assert memory["location"]["line"] == 12 and "profile chat" in memory["location"]["branch"]
    assert memory["location"]["on_request"] is True and not _hits(target, "G3-memory-fraction")


def test_compose_build_reads_the_dockerfile_with_args_and_target(tmp_path: Path) -> None:
    _write(tmp_path / "docker" / "Dockerfile.spark", """
        ARG BASE=nvcr.io/nvidia/pytorch:25.11-py3
        FROM ${BASE} AS runtime
        RUN pip install vllm==0.11.0
        FROM runtime AS dev
        RUN pip install flash-attn
    """)
    compose = _write(tmp_path / "compose.yaml", """
        services:
          app:
            image: myorg/app:dev
            build:
              context: ./docker
              dockerfile: Dockerfile.spark
              target: runtime
              args:
                BASE: nvidia/cuda:12.8.1-devel-ubuntu24.04
    """)
    _code, (target,) = _report(str(compose))
    (cuda,) = _hits(target, "G1-cuda12-base")  # the build arg replaced the default base
    assert cuda["location"]["path"].endswith("Dockerfile.spark") and cuda["location"]["line"] == 2
    assert not _hits(target, "G9-floating-base-tag")  # `image:` names what is built, not a base


def test_two_servers_past_the_pool_are_one_g6_finding(tmp_path: Path) -> None:
    compose = _write(tmp_path / "compose.yaml", """
        services:
          chat:
            image: nvcr.io/nvidia/vllm:25.11-py3
            command: vllm serve Qwen/Qwen3-8B --gpu-memory-utilization 0.6
          code:
            image: lmsysorg/sglang:v0.5.4-cu130
            command: python3 -m sglang.launch_server --model-path Qwen/Qwen3-Coder --mem-fraction-static 0.6
    """)
    _code, (target,) = _report(str(compose))
    (g6,) = _hits(target, "G6-pool-overcommit")
    assert g6["status"] == "FAIL" and "1.20" in g6["message"]


INSTALL_SH = """
    #!/usr/bin/env bash
    # Install the training stack into a virtualenv.
    set -euo pipefail
    python3 -m venv .venv
    source .venv/bin/activate
    pip install --upgrade pip
    pip install torch==2.5.1 torchvision==0.20.1 --index-url https://download.pytorch.org/whl/cu121
    if [ "$(uname -m)" = "x86_64" ]; then
      pip install xformers==0.0.28.post3
    fi
    pip install -r requirements.txt
"""


def test_install_script_with_cu121_index_is_g1_fail_at_its_line(tmp_path: Path) -> None:
    script = _write(tmp_path / "install.sh", INSTALL_SH)
    _write(tmp_path / "requirements.txt", "transformers==4.57.1\nflash-attn==2.7.4.post1\n")
    code, (target,) = _report(str(script))
    assert code == 1 and target["kind"] == "shell"
    index = _hits(target, "G1-cuda12-index")
    assert index and index[0]["status"] == "FAIL" and index[0]["location"] == {"path": str(script), "line": 7}
    flash = _hits(target, "G2-flash-attn-build")  # from the requirements file the script installs, at its own line
    assert flash and flash[0]["location"]["path"].endswith("requirements.txt") and flash[0]["location"]["line"] == 2
    assert not [f for f in target["findings"] if "xformers" in f["message"]]  # the x86_64 branch does not run on a Spark


def test_script_without_extension_is_known_by_its_shebang(tmp_path: Path) -> None:
    script = _write(tmp_path / "bootstrap", "#!/bin/sh\nset -e\npip install 'torch==2.4.0+cu121' -f https://download.pytorch.org/whl/torch_stable.html\n")
    code, (target,) = _report(str(script))
    assert target["kind"] == "shell" and code == 1
    assert all(f["location"]["line"] == 3 for f in _hits(target, "G1-cuda12-local-version"))


def test_sound_script_is_clean(tmp_path: Path) -> None:
    script = _write(tmp_path / "setup.sh", """
        #!/usr/bin/env bash
        set -euo pipefail
        # envcheck: ignore=G9-unpinned the lock below pins the rest
        pip install "torch==2.9.1+cu130" --index-url https://download.pytorch.org/whl/cu130
        vllm serve Qwen/Qwen3-8B --gpu-memory-utilization 0.7 &
    """)
    proc = run_envcheck(str(script))
    assert proc.returncode == 0, proc.stdout
    assert "ERROR" not in proc.stdout


def test_secrets_in_commands_and_environment_never_reach_an_output(tmp_path: Path) -> None:
    compose = _write(tmp_path / "compose.yaml", """
        services:
          vllm:
            image: nvcr.io/nvidia/vllm:25.11-py3
            command: vllm serve m --api-key sk-SECRETa1b2 --gpu-memory-utilization 0.5 --hf-token=hf_SECRETc3d4
            environment:
              HF_TOKEN: hf_SECRETe5f6
              PIP_EXTRA_INDEX_URL: https://user:SECRETg7h8@pypi.example.com/simple
              NOTE: "a\\u001b[31m::error::b"
    """)
    for form in ("json", "text", "sarif", "github", "html"):
        proc = run_envcheck("-v", "--format", form, str(compose))
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "SECRET" not in proc.stdout and "\x1b" not in proc.stdout, form
        assert "\n::error::" not in proc.stdout, form


def test_compose_platform_amd64_is_arch(tmp_path: Path) -> None:
    compose = _write(tmp_path / "compose.yaml", """
        services:
          tgi:
            image: ghcr.io/huggingface/text-generation-inference:3.3.4
            platform: linux/amd64
          ok:
            image: nvcr.io/nvidia/vllm:25.11-py3
            platform: linux/arm64
    """)
    _code, (target,) = _report(str(compose))
    (arch,) = _hits(target, "ARCH-base-platform")
    assert arch["status"] == "FAIL" and arch["location"]["line"] == 3 and "platform:" in arch["message"]


def test_interpolation_follows_compose() -> None:
    """The forms of compose's interpolation reference, with VAR set, EMPTY set to "" and UNSET not set."""
    from envcheck.sources.compose import interpolate

    values = {"VAR": "v", "EMPTY": ""}
    cases = {
        "${VAR}": "v", "$VAR/x": "v/x", "$$VAR": "$VAR", "${UNSET}": "", "${UNSET:-d}": "d", "${EMPTY:-d}": "d",
        "${EMPTY-d}": "", "${UNSET-d}": "d", "${VAR:+alt}": "alt", "${EMPTY:+alt}": "", "${EMPTY+alt}": "alt",
        "${UNSET:-${VAR}-x}": "v-x", "a${UNSET:-b${UNSET:-c}d}e": "abcde", "${VAR": "${VAR",
    }
    for text, want in cases.items():
        errors: list[str] = []
        assert interpolate(text, values, errors) == want, text
        assert not errors, text
    errors = []
    interpolate("${UNSET:?needs a value} ${EMPTY?fine} ${EMPTY:?empty}", values, errors)
    assert errors == ["UNSET is not set or empty: needs a value", "EMPTY is not set or empty: empty"]


def test_helper_services_and_a_missing_dockerfile_raise_no_alarm(tmp_path: Path) -> None:
    """Services without a GPU on images envcheck knows nothing about (a database, curl) are not the Spark's
    concern; a Dockerfile the file names but that is not there is a note, not an error (it was not checked)."""
    compose = _write(tmp_path / "deploy" / "compose" / "docker-compose.yml", """
        services:
          vllm:
            build:
              context: ../services/vllm
            runtime: nvidia
          qdrant:
            image: qdrant/qdrant:latest
          qdrant-init:
            image: curlimages/curl:latest
            entrypoint: /bin/sh
            command: ["-c", "sleep 5; curl -X PUT http://qdrant:6333/collections/x || true"]
          ollama:
            image: ollama/ollama:latest
            gpus: all
    """)
    proc = run_envcheck("--format", "json", str(compose))
    assert proc.returncode == 0, proc.stdout
    (target,) = json.loads(proc.stdout)["targets"]
    (floating,) = _hits(target, "G9-floating-base-tag")  # only the GPU service's moving tag
    assert "ollama" in floating["message"]
    (note,) = [f for f in target["findings"] if f["rule"] == "input-skipped"]
    assert note["status"] == "INFO" and "services/vllm/Dockerfile" in note["message"] and ".." not in note["message"]


def test_two_built_dockerfiles_keep_their_stages_apart(tmp_path: Path) -> None:
    _write(tmp_path / "frontend" / "Dockerfile", "FROM node:20-alpine\nRUN npm ci\n")
    _write(tmp_path / "backend" / "Dockerfile", """
        FROM nvcr.io/nvidia/pytorch:25.11-py3
        RUN pip install flash-attn
    """)
    compose = _write(tmp_path / "compose.yaml", """
        services:
          frontend:
            build: ./frontend
          backend:
            build: ./backend
            runtime: nvidia
    """)
    _code, (target,) = _report("-v", str(compose))
    flash = [f for f in target["findings"] if f["rule"] == "G2-flash-attn-build"]
    # NGC's shipped flash-attn is seen in the backend's stage, not confused with the frontend's stage 0
    assert flash and all(f["status"] == "PASS" for f in flash), flash
    assert sorted(i["stage"] for i in target["inventory"]["images"]) == ["backend/0", "frontend/0"]
    assert not _hits(target, "G9-unpinned")  # installs on NGC's container are not bare pip, as for the Dockerfile alone


def test_docker_run_in_a_script_is_judged_like_a_from_line(tmp_path: Path) -> None:
    """Spark scripts wrap containers: the image `docker run` starts is a base image, its command a launch."""
    script = _write(tmp_path / "run.sh", """
        #!/usr/bin/env bash
        set -e
        docker run -d --name vllm --gpus all --ipc host -p 8000:8000 -v "$HOME/.cache:/root/.cache" \\
          -e HF_HUB_OFFLINE=1 vllm/vllm-openai:v0.11.0 \\
          --model Qwen/Qwen3-8B --gpu-memory-utilization 0.95
        docker run --rm -it --gpus=all nvcr.io/nvidia/pytorch:24.05-py3 python train.py
        docker run --rm --platform linux/amd64 ubuntu:22.04 echo hi
        docker run -d -p 6333:6333 qdrant/qdrant:latest
    """)
    _code, (target,) = _report(str(script))
    (cuda,) = _hits(target, "G1-cuda12-base")
    assert cuda["location"]["line"] == 6
    (arch,) = _hits(target, "ARCH-base-platform")
    assert arch["location"]["line"] == 7 and "docker run --platform" in arch["message"]
    (memory,) = _hits(target, "G3-memory-fraction")  # options only: the image's `vllm serve` runs them
    assert memory["location"]["line"] == 5  # the flag's own line in the continued command
    assert not _hits(target, "G9-floating-base-tag")  # a database without a GPU is not the Spark's concern


def test_each_service_is_a_stage_judged_on_its_own_image(tmp_path: Path) -> None:
    """A service is reported as a stage named after it: pip installs on a bare python image are bare pip (G9),
    the same installs on NGC's PyTorch container are not, and each finding names its own service's image."""
    compose = _write(tmp_path / "compose.yaml", """
        services:
          bare:
            image: python:3.12-slim
            runtime: nvidia
            command: sh -c "pip install torch==2.9.1 transformers && python train.py"
          ngc:
            image: nvcr.io/nvidia/pytorch:25.11-py3
            runtime: nvidia
            command: sh -c "pip install xformers && python train.py"
    """)
    _code, (target,) = _report(str(compose))
    (bare,) = _hits(target, "G9-bare-pip-base")
    assert bare["location"]["stage"] == "bare" and "python:3.12-slim" in bare["message"] and "pytorch" not in bare["message"]
    assert not [f for f in _hits(target, "G9-unpinned") if f["location"]["stage"] == "ngc"]


def test_the_documented_compose_example_prints_what_docs_inputs_shows(tmp_path: Path) -> None:
    """docs/inputs.md's compose example, run: the output is the one the page shows."""
    import re

    from conftest import REPO

    page = (REPO / "docs" / "inputs.md").read_text(encoding="utf-8")
    example = re.search(r"For example, `compose.yaml`:\n\n```yaml\n(.*?)```\n\n```\n\$ envcheck compose.yaml\n(.*?)```", page, re.S)
    assert example is not None
    (tmp_path / "compose.yaml").write_text(example.group(1), encoding="utf-8")
    proc = run_envcheck("compose.yaml", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout == example.group(2)


_NEIGHBOURS = """services:
  vllm:
    image: vllm/vllm-openai:v0.12.0-cu130
    command: >
      --model nvidia/Llama-3.1-8B-Instruct-FP8
      --max-model-len 32768
      --gpu-memory-utilization 0.85
    deploy:
      resources:
        reservations:
          devices:
            - driver: nvidia
              count: all
              capabilities: [gpu]
  NEIGHBOUR
  db:
    image: postgres:16.4
"""

_OLLAMA = """ollama:
    image: ollama/ollama:0.13.1
    deploy:
      resources:
        reservations:
          devices:
            - driver: nvidia
              count: all
              capabilities: [gpu]"""


def test_a_capped_server_beside_an_uncapped_gpu_service_is_g6(tmp_path: Path) -> None:
    """vLLM pre-reserves 0.85 of the one pool while Ollama, a GPU service with no cap envcheck can read, starts
    beside it: a G6 WARN on the line of the cap. A service without a GPU (a database) is no neighbour."""
    (tmp_path / "compose.yaml").write_text(_NEIGHBOURS.replace("NEIGHBOUR", _OLLAMA))
    done = run_envcheck("-f", "json", "compose.yaml", cwd=tmp_path)
    g6 = [f for f in json.loads(done.stdout)["targets"][0]["findings"] if f["gotcha"] == "G6" and f["status"] != "PASS"]
    assert [(f["status"], f["location"]["line"]) for f in g6] == [("WARN", 7)], g6
    assert "ollama" in g6[0]["message"]
    # capped at 0.3, vLLM leaves most of the pool to its uncapped neighbour: small capped work coexists
    (tmp_path / "compose.yaml").write_text(_NEIGHBOURS.replace("NEIGHBOUR", _OLLAMA).replace("0.85", "0.3"))
    small = run_envcheck("-f", "json", "compose.yaml", cwd=tmp_path)
    assert not [f for f in json.loads(small.stdout)["targets"][0]["findings"] if f["gotcha"] == "G6" and f["status"] != "PASS"]
    (tmp_path / "compose.yaml").write_text(_NEIGHBOURS.replace("  NEIGHBOUR\n", ""))
    alone = run_envcheck("-f", "json", "compose.yaml", cwd=tmp_path)
    assert not [f for f in json.loads(alone.stdout)["targets"][0]["findings"] if f["gotcha"] == "G6" and f["status"] != "PASS"]


def test_a_dockerfile_read_directly_and_through_compose_build_is_one_finding(tmp_path: Path) -> None:
    dockerfile = _write(tmp_path / "server" / "Dockerfile", """
        FROM nvidia/cuda:12.8.1-devel-ubuntu24.04 AS builder
        RUN pip install torch==2.9.1+cu130 --index-url https://download.pytorch.org/whl/cu130
        FROM nvidia/cuda:12.8.1-runtime-ubuntu24.04
        COPY --from=builder /usr/local /usr/local
    """)
    compose = _write(tmp_path / "stack" / "compose.yaml", """
        services:
          inference:
            build:
              context: ../server
          patched:
            build:
              context: ../server
              args:
                UNUSED: "1"
    """)

    def cuda12(targets: list[dict[str, Any]]) -> list[tuple[str, int]]:
        return sorted((t["kind"], f["location"]["line"]) for t in targets for f in _hits(t, "G1-cuda12-base"))

    # each target alone reports the Dockerfile's two CUDA 12 stages
    assert cuda12(_report(str(compose))[1]) == [("compose", 1), ("compose", 1), ("compose", 3), ("compose", 3)]
    # together (given by name or found in a folder), the Dockerfile's own target reports each once; the
    # compose target says where they went
    for args in ((str(compose), str(dockerfile)), (str(tmp_path),)):
        code, targets = _report(*args)
        assert code == 1 and cuda12(targets) == [("dockerfile", 1), ("dockerfile", 3)], args
        (note,) = [f for t in targets if t["kind"] == "compose" for f in t["findings"] if f["rule"] == "input-skipped"]
        assert note["status"] == "INFO" and "judged as its own target" in note["message"]
    sarif = json.loads(run_envcheck("-f", "sarif", "--fail-on", "never", str(compose), str(dockerfile)).stdout)
    assert sorted(r["ruleId"] for r in sarif["runs"][0]["results"] if r["ruleId"] == "G1-cuda12-base") == [
        "G1-cuda12-base"] * 2
    # a build argument that changes what a line says is another cause: the compose view keeps it
    _write(tmp_path / "stack" / "compose.yaml", """
        services:
          inference:
            build:
              context: ../server
              dockerfile: Dockerfile.args
              args:
                BASE: nvidia/cuda:12.4.1-devel-ubuntu22.04
    """)
    _write(tmp_path / "server" / "Dockerfile.args", "ARG BASE=nvidia/cuda:12.8.1-devel-ubuntu24.04\nFROM ${BASE}\n")
    _code, targets = _report(str(compose), str(tmp_path / "server" / "Dockerfile.args"))
    assert cuda12(targets) == [("compose", 2), ("dockerfile", 2)]


def test_a_file_reached_through_dotdot_is_named_without_it(tmp_path: Path) -> None:
    # a compose build context, its dockerfile, a -r/-c include and a conda pip list name files with `..`:
    # the report names each file once, as the folder scan does, and still says once what it holds
    _write(tmp_path / "b" / "requirements.txt", "torch\n")
    _write(tmp_path / "b" / "constraints.txt", "--extra-index-url https://download.pytorch.org/whl/cu121\ntorch==2.4.0+cu121\n")
    _write(tmp_path / "a" / "requirements.txt", "-r ../b/requirements.txt\n-c ./../b/constraints.txt\n")
    _write(tmp_path / "env" / "environment.yml", "name: x\ndependencies:\n  - pip\n  - pip:\n    - -r ../b/requirements.txt\n")
    _write(tmp_path / "services" / "api" / "Dockerfile", """
        FROM nvcr.io/nvidia/pytorch:24.01-py3
        COPY requirements.txt .
        RUN pip install -r requirements.txt
    """)
    _write(tmp_path / "services" / "api" / "requirements.txt", "flash-attn==2.5.0\n")
    _write(tmp_path / "deploy" / "compose" / "compose.yaml", """
        services:
          api:
            build:
              context: ../../services/api
              dockerfile: ../api/Dockerfile
    """)
    named = ("a/requirements.txt", "env/environment.yml", "deploy/compose/compose.yaml")
    _code, targets = _report(*named, cwd=tmp_path)
    paths = {f["location"]["path"] for t in targets for f in t["findings"] if f.get("location")}
    assert paths == {"b/requirements.txt", "b/constraints.txt", "services/api/Dockerfile", "services/api/requirements.txt"}, paths
    text = run_envcheck("-v", *named, cwd=tmp_path).stdout
    assert "../" not in text, text
    # with the files' own targets in the run, what the compose file reaches is reported there, once
    _code, targets = _report(*named, "services/api/Dockerfile", "services/api/requirements.txt", cwd=tmp_path)
    base = [(t["target"], f["location"]["path"]) for t in targets for f in _hits(t, "G1-cuda12-base")]
    assert base == [("services/api/Dockerfile", "services/api/Dockerfile")], base
    flash = [(t["target"], f["location"]["path"]) for t in targets for f in _hits(t, "G2-flash-attn-build")]
    assert flash == [("services/api/requirements.txt", "services/api/requirements.txt")], flash
    notes = sorted(f["message"].split(" is judged")[0] for t in targets if t["kind"] == "compose" for f in t["findings"]
                   if f["rule"] == "input-skipped")
    assert notes == ["services/api/Dockerfile", "services/api/requirements.txt"], notes


def test_a_dotdot_after_a_symlink_keeps_the_file_it_names(tmp_path: Path) -> None:
    # `lnk/../other.txt` is deep/other.txt when lnk points into deep/: spelled as `other.txt` it would name
    # another file (and --fix would edit that one), so the reference keeps its spelling
    _write(tmp_path / "deep" / "inner" / "keep.txt", "\n")
    _write(tmp_path / "deep" / "other.txt", "flash-attn==2.5.0\n")
    _write(tmp_path / "other.txt", "numpy==2.1.0\n")
    (tmp_path / "lnk").symlink_to(tmp_path / "deep" / "inner", target_is_directory=True)
    _write(tmp_path / "c" / "requirements.txt", "-r ../lnk/../other.txt\n")
    _code, targets = _report("c/requirements.txt", cwd=tmp_path)
    (hit,) = _hits(targets[0], "G2-flash-attn-build")
    assert (tmp_path / hit["location"]["path"]).resolve() == tmp_path / "deep" / "other.txt", hit


def test_flags_of_a_command_far_below_an_empty_entrypoint_are_at_their_lines(tmp_path: Path) -> None:
    # `entrypoint: []` only clears the image's entrypoint: the flags are looked for below `command:`, however
    # long the environment written between the two keys
    env = "".join(f"          NCCL_KNOB_{n}: \"1\"\n" for n in range(230))
    compose = tmp_path / "docker-compose.yml"
    compose.write_text(
        "services:\n"
        "  vllm:\n"
        "    image: nvcr.io/nvidia/vllm:25.11-py3\n"
        "    entrypoint: []\n"
        "    environment:\n" + env.replace("          ", "      ") +
        "    command:\n"
        "      - bash\n"
        "      - -lc\n"
        "      - >\n"
        "        exec vllm serve Qwen/Qwen3-8B\n"
        "        --tensor-parallel-size 2\n"
        "        --nnodes 2\n"
        "        --node-rank ${NODE_RANK:-0}\n", encoding="utf-8")
    flag = compose.read_text().splitlines().index("        --tensor-parallel-size 2") + 1
    _code, (target,) = _report(str(compose))
    (tp,) = _hits(target, "G10-tp-across-nodes")
    assert tp["status"] == "WARN" and tp["location"]["line"] == flag == 241


def test_a_command_passed_to_an_entrypoint_script_is_its_arguments(tmp_path: Path) -> None:
    # entrypoint: [bash, -c, '... exec vllm serve "$@"', --] makes `command:` the script's "$@": the server's flags
    compose = _write(tmp_path / "docker-compose.yml", """
        services:
          vllm:
            image: vllm/vllm-openai:v0.27.1
            entrypoint:
              - bash
              - -c
              - |
                pip install -q transformers==5.14.1
                exec vllm serve "$@"
              - --
            command:
              - "Qwen/Qwen3-8B"
              - "--gpu-memory-utilization"
              - "0.95"
    """)
    _code, (target,) = _report(str(compose))
    (memory,) = _hits(target, "G3-memory-fraction")
    assert memory["status"] == "WARN" and memory["location"]["line"] == 13 and "0.95" in memory["message"]


@pytest.mark.parametrize(("cap", "status"), [
    ("    mem_limit: 6g\n", None),  # 0.85 + 6 GB of 128: within the pool
    ("    deploy:\n      resources:\n        limits:\n          memory: 8G\n", None),
    ("    mem_limit: 40g\n", "FAIL"),  # 0.85 + 40 GB of 128: past the pool
])
def test_a_gpu_service_with_a_memory_cap_claims_its_cap(tmp_path: Path, cap: str, status: str | None) -> None:
    # a container memory cap (mem_limit) is the GPU service's share of the one pool, not "no cap"
    neighbour = _OLLAMA.replace("    deploy:\n      resources:\n", cap if "deploy" in cap else cap + "    deploy:\n      resources:\n")
    (tmp_path / "compose.yaml").write_text(_NEIGHBOURS.replace("NEIGHBOUR", neighbour))
    done = run_envcheck("-f", "json", "compose.yaml", cwd=tmp_path)
    g6 = [f for f in json.loads(done.stdout)["targets"][0]["findings"] if f["rule"] == "G6-pool-overcommit"]
    assert [f["status"] for f in g6 if f["status"] != "PASS"] == ([status] if status else []), g6


def test_a_compose_file_whose_first_service_lies_past_its_head_is_read(tmp_path: Path) -> None:
    # a model file an include: pulls in, named like no compose file, whose services are commented out for the first
    # several KiB: its kind is told from the whole file, named or found in a folder
    commented = "".join(f"#  old-{i}:\n#    image: example/old-{i}:1.0\n#    command: [serve, --port, '8000']\n"
                        for i in range(80))
    text = ("x-common: &common\n  restart: 'no'\n\nservices:\n" + commented
            + "  vllm-old:\n    <<: *common\n    image: nvidia/cuda:12.4.1-runtime-ubuntu22.04\n")
    model_file = tmp_path / "compose" / "models-old.yml"
    model_file.parent.mkdir()
    model_file.write_text(text, encoding="utf-8")
    assert len(text.encode()) > 4096 and text.encode()[:4096].count(b"\n    image:") == 0
    line = text.splitlines().index("    image: nvidia/cuda:12.4.1-runtime-ubuntu22.04") + 1
    for args in ((str(model_file),), (str(tmp_path),)):
        _code, targets = _report(*args)
        (target,) = [t for t in targets if t["target"].endswith("models-old.yml")]
        assert target["kind"] == "compose"
        (g1,) = _hits(target, "G1-cuda12-base")
        assert g1["status"] == "FAIL" and g1["location"]["line"] == line
    # a YAML file with a top-level services: list and no image anywhere stays unrecognised (a CI file)
    ci = _write(tmp_path / "ci" / "pipeline.yml", "services:\n  - docker:dind\n" + "# step\n" * 1200)
    proc = run_envcheck("--format", "json", str(ci))
    assert proc.returncode == 2 and "cannot tell what kind of input this is" in proc.stdout + proc.stderr
