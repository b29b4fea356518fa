"""Build lines that edit installed sources: a sed/python edit that switches off vLLM's start-up free-memory check
(`self.init_snapshot.free_memory < self.requested_memory` in vllm/v1/worker/gpu_worker.py) is G6, at its line,
in a Dockerfile and a shell script alike; other edits stay silent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import run_envcheck

RULE = "G6-vllm-free-memory-check-off"
WORKER = "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_worker.py"


def _findings(path: Path) -> list[dict[str, Any]]:
    proc = run_envcheck("--format", "json", "--fail-on", "never", str(path))
    assert proc.returncode == 0, proc.stderr
    return [f for t in json.loads(proc.stdout)["targets"] for f in t["findings"] if f["rule"] == RULE]


def test_an_edit_of_vllms_free_memory_check_is_g6_at_its_line_and_other_edits_are_not(tmp_path: Path) -> None:
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text(
        "FROM nvcr.io/nvidia/vllm:25.11-py3\n"
        "RUN sed -i 's/^# *en_US.UTF-8/en_US.UTF-8/' /etc/locale.gen\n"
        f"RUN sed -e 's/self.requested_memory/0/' {WORKER} > /tmp/worker.py\n"  # prints a copy: the file is unchanged
        "RUN apt-get update && \\\n"
        f"    sed -i 's/if self.init_snapshot.free_memory < self.requested_memory:/if False:/' {WORKER}\n",
        encoding="utf-8")
    (found,) = _findings(dockerfile)
    assert found["status"] == "WARN" and found["location"]["line"] == 5 and "sed -i" in found["message"]

    script = tmp_path / "serve.sh"
    script.write_text(
        "#!/bin/bash\nset -e\n"
        "sed -i 's/--max-model-len 8192/--max-model-len 32768/' run.conf\n"
        f"python3 -c \"import sys; p=sys.argv[1]; s=open(p).read(); open(p, 'w').write(s.replace("
        f"'raise ValueError(f\\\"Free memory on device', 'print(f\\\"Free memory on device'))\" {WORKER}\n"
        "vllm serve Qwen/Qwen3-8B --gpu-memory-utilization 0.5\n", encoding="utf-8")
    (found,) = _findings(script)
    assert found["location"]["line"] == 4

    script.write_text("#!/bin/bash\nsed -i 's/--max-model-len 8192/--max-model-len 32768/' run.conf\n"
                      "vllm serve Qwen/Qwen3-8B --gpu-memory-utilization 0.5\n", encoding="utf-8")
    assert _findings(script) == []
