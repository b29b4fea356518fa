"""An environment that turns the driver's PTX JIT off (CUDA_DISABLE_PTX_JIT=1) or forces it (CUDA_FORCE_PTX_JIT=1)
breaks every kernel that reaches sm_121 only one way: WARN G7-ptx-jit-off where an image, a service or a launch
sets it; a RUN's own assignment at build time and a value of 0 are not reported (issue 32, corpus seventh batch)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import run_envcheck


def _findings(path: Path, text: str) -> list[dict[str, Any]]:
    path.write_text(text, encoding="utf-8")
    done = run_envcheck("-f", "json", "--fail-on", "never", str(path))
    return [f for f in json.loads(done.stdout)["targets"][0]["findings"] if f["rule"] == "G7-ptx-jit-off"]


@pytest.mark.parametrize(("name", "text", "line"), [
    ("Dockerfile", "FROM nvcr.io/nvidia/pytorch:25.11-py3\nENV PYTHONUNBUFFERED=1 \\\n    CUDA_DISABLE_PTX_JIT=1\n", 3),
    ("compose.yaml", "services:\n  app:\n    image: nvcr.io/nvidia/pytorch:25.11-py3\n    environment:\n"
                     "      CUDA_FORCE_PTX_JIT: \"1\"\n", 5),
    ("serve.sh", "#!/bin/bash\ndocker run --gpus all \\\n  -e CUDA_DISABLE_PTX_JIT=1 \\\n"
                 "  nvcr.io/nvidia/pytorch:25.11-py3 python serve.py\n", 3),
    ("launch.sh", "#!/bin/bash\nset -e\nexport HF_HOME=/data CUDA_DISABLE_PTX_JIT=1\nvllm serve Qwen/Qwen3-8B\n", 3),
    ("train.sh", "#!/bin/bash\nCUDA_FORCE_PTX_JIT=1 python train.py --epochs 1\n", 2),
    ("notebook.sh", "#!/bin/sh\nCUDA_DISABLE_PTX_JIT=1\nexport CUDA_DISABLE_PTX_JIT\ntorchrun train.py\n", 2),
    ("compose.yaml", "services:\n  app:\n    image: nvcr.io/nvidia/vllm:25.11-py3\n"
                     "    command: sh -c 'export CUDA_DISABLE_PTX_JIT=1 && vllm serve m'\n", 4),
    ("pod.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n"
                 "    image: nvcr.io/nvidia/pytorch:25.11-py3\n    env:\n    - name: CUDA_DISABLE_PTX_JIT\n      value: \"1\"\n", 10),
])
def test_a_ptx_jit_setting_that_reaches_the_workload_warns(tmp_path: Path, name: str, text: str, line: int) -> None:
    (finding,) = _findings(tmp_path / name, text)
    assert finding["status"] == "WARN" and finding["gotcha"] == "G7" and finding["location"]["line"] == line
    assert "no kernel image" in finding["message"]


@pytest.mark.parametrize("text", [
    "FROM nvcr.io/nvidia/pytorch:25.11-py3\nENV CUDA_DISABLE_PTX_JIT=0\n",
    "FROM nvcr.io/nvidia/pytorch:25.11-py3\nRUN CUDA_DISABLE_PTX_JIT=1 python -c 'print(1)'\n",
])
def test_zero_and_a_build_step_of_its_own_stay_quiet(tmp_path: Path, text: str) -> None:
    assert _findings(tmp_path / "Dockerfile", text) == []


@pytest.mark.parametrize("text", [
    "#!/bin/bash\nCUDA_DISABLE_PTX_JIT=1\npython train.py\n",  # set, never exported: the program does not see it
    "#!/bin/bash\nexport CUDA_DISABLE_PTX_JIT=1\nssh spark-b python train.py\n",  # ssh does not carry it
    "#!/bin/bash\nexport CUDA_DISABLE_PTX_JIT=1\ndocker run --gpus all nvcr.io/nvidia/pytorch:25.11-py3 python t.py\n",
    "#!/bin/bash\nexport CUDA_DISABLE_PTX_JIT=0\nvllm serve m\n",
])
def test_a_script_setting_that_never_reaches_a_program_stays_quiet(tmp_path: Path, text: str) -> None:
    assert _findings(tmp_path / "run.sh", text) == []
