"""Fuzz the Dockerfile reader: syntax (continuations, heredocs, escapes, directives), ARG/ENV expansion,
stages, and what the RUN lines install (through the shell splitter and pip argument reader)."""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import main, scratch_dir, write_input
from seed_builders import hostile_dockerfile_seeds

with atheris.instrument_imports(include=["envcheck"]):
    from envcheck.errors import EnvcheckError
    from envcheck.inspect.dockerfile import DockerfileSyntaxError, parse
    from envcheck.model import Inventory
    from envcheck.sources import ReadOptions
    from envcheck.sources import dockerfile as dockerfile_source

FOLDER = scratch_dir()
SEEDS = ["dockerfiles/**/Dockerfile", "dockerfiles/**/*.Dockerfile"]
OPTIONS = ReadOptions(build_args={"BASE_TAG": "25.09-py3", "TORCH_CUDA_ARCH_LIST": "12.1"})


def target(data: bytes) -> None:
    text = data.decode("utf-8", errors="replace")
    try:
        parse(text, OPTIONS.build_args)
    except DockerfileSyntaxError as exc:
        assert isinstance(exc.line, int) and exc.line >= 1, exc.line
    path = write_input(FOLDER, "Dockerfile", data)
    inventory = dockerfile_source.read(path, OPTIONS)
    assert isinstance(inventory, Inventory)
    for problem in inventory.problems:
        assert problem.location is not None and problem.location.path == str(path), problem
    dockerfile_source.sniff(path, data[:4096])


if __name__ == "__main__":
    main("dockerfile", target, (EnvcheckError,), SEEDS, hostile_dockerfile_seeds(), max_len=8192)
