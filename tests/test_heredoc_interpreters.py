"""A here-document another language's interpreter reads (``python3 - "$F" <<'PY'``, ``X="$(python3 - <<'PY'``,
``docker exec -i C python3 <<EOF``) is that language's program, not shell commands; and a program whose name
merely starts like a serving tool's (``vllm_use_aot_compile:``, ``./vllm-serve.sh``) is not that tool. A
pre-launch gate's Python table of vLLM manifest keys was read as eight vLLM servers: a false G6 FAIL."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import run_envcheck

GATE = """
    #!/usr/bin/env bash
    set -uo pipefail
    ARGV_FILE="$(mktemp)"
    printf '%s\\n' "$@" > "$ARGV_FILE"
    {head} <<'PYEOF'
    import sys
    SPEC = {{
        "gpu_memory_utilization":      ("flag", "--gpu-memory-utilization"),
        "vllm_disable_compile_cache":  ("env", "VLLM_DISABLE_COMPILE_CACHE"),
        "vllm_use_aot_compile":        ("env", "VLLM_USE_AOT_COMPILE"),
        "vllm_use_flashinfer_sampler": ("env", "VLLM_USE_FLASHINFER_SAMPLER"),
    }}
    vllm serve big/model --gpu-memory-utilization 0.95
    PYEOF
    {tail}
"""


def _findings(path: Path) -> list[dict[str, Any]]:
    done = run_envcheck("--format", "json", "-v", str(path))
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)["targets"][0]["findings"]


def _write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def _memory(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [f for f in findings if f["rule"] in ("G6-pool-overcommit", "G3-memory-fraction") and f["status"] in ("WARN", "FAIL")]


@pytest.mark.parametrize("head, tail", [
    ('python3 - "$ARGV_FILE" "${PROFILE:-}"', ""),
    ('RESULT="$(python3 - "$ARGV_FILE"', ')"\necho "$RESULT"'),
    ('docker exec -i "$CONTAINER" /usr/bin/python3.12 -', ""),
    ('sudo -u svc perl -', ""),
])
def test_a_here_document_an_interpreter_reads_is_not_shell(tmp_path: Path, head: str, tail: str) -> None:
    findings = _findings(_write(tmp_path / "gate.sh", GATE.format(head=head, tail=tail)))
    assert _memory(findings) == [], _memory(findings)


def test_a_here_document_a_shell_reads_is_still_read(tmp_path: Path) -> None:
    """The same body fed to bash is a script: its `vllm serve ... 0.95` is a launch (G3 WARN above 0.9)."""
    findings = _findings(_write(tmp_path / "remote.sh", GATE.format(head='ssh node1 bash -s', tail="")))
    assert [f["location"]["line"] for f in _memory(findings) if f["rule"] == "G3-memory-fraction"] == [13], findings


def test_a_program_named_like_a_tool_is_not_that_tool(tmp_path: Path) -> None:
    """``./vllm-serve.sh`` and ``vllm_env_check`` are not vLLM servers at vLLM's default 0.9: one server at 0.5."""
    script = _write(tmp_path / "start.sh", """
        #!/usr/bin/env bash
        vllm serve Qwen/Qwen2.5-0.5B-Instruct --gpu-memory-utilization 0.5 &
        ./vllm-serve.sh ./models/qwen3-30b-a3b-awq 8001 &
        vllm_env_check --quiet
        python3.12 -m vllm.entrypoints.openai.api_server --model Qwen/Qwen3-0.6B --gpu-memory-utilization 0.3 &
        wait
    """)
    (pool,) = [f for f in _findings(script) if f["rule"] == "G6-pool-overcommit"]
    assert pool["status"] == "PASS" and "0.80" in pool["message"], pool
