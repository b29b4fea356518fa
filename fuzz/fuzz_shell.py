"""Fuzz the RUN-line shell splitter (quotes, operators, ${VAR:-default}, nested sh -c scripts) and the
Dockerfile word expansion ($VAR, ${VAR:-x}, ${VAR#pat}, escapes)."""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import main

with atheris.instrument_imports(include=["envcheck"]):
    from envcheck.inspect.dockerfile import DockerfileSyntaxError, expand, split_words
    from envcheck.inspect.shell import SimpleCommand, split_commands

VALUES = {"TORCH": "2.9.0", "INDEX": "https://download.pytorch.org/whl/cu130", "EMPTY": ""}
EXTRA = [
    b"pip install --no-cache-dir torch==${TORCH} --index-url $INDEX && pip install 'flash-attn>=2' || true",
    b"bash -c \"pip install -r /tmp/req.txt; uv pip install --system unsloth\"",
    b"if [ -n \"$X\" ]; then pip install \"xformers==0.0.28\"; fi",
    b"export PIP_INDEX_URL=${INDEX:-https://pypi.org/simple} && python -m pip install ${PKG:+$PKG} torch\\\n  vllm",
    b"sh -c 'sh -c \"pip install a && sh -c \\\"pip install b\\\"\"'",
    b"echo ${TORCH%.*} ${TORCH#2.} ${INDEX/cu130/cu128} ${#TORCH} $${EMPTY}",
]


def target(data: bytes) -> None:
    text = data.decode("utf-8", errors="replace")
    commands = split_commands(text, VALUES)
    assert isinstance(commands, list)
    for command in commands:
        assert isinstance(command, SimpleCommand) and all(isinstance(w, str) for w in command.argv)
        assert command.offset >= 0
    escape = "`" if data[:1] == b"`" else "\\"
    try:
        expanded = expand(text, VALUES, escape)
        assert isinstance(expanded.value, str)
        split_words(text, escape)
    except DockerfileSyntaxError:
        pass


if __name__ == "__main__":
    main("shell", target, (), ["dockerfiles/vllm-ngc/serve.sh"], EXTRA, max_len=2048)
