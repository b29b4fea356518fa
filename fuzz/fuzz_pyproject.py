"""Fuzz the pyproject.toml reader ([project] dependencies, dependency groups, [tool.uv] indexes)."""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import main, scratch_dir, write_input

with atheris.instrument_imports(include=["envcheck"]):
    from envcheck.errors import EnvcheckError
    from envcheck.model import Inventory
    from envcheck.sources import ReadOptions, pyproject

FOLDER = scratch_dir()
SEEDS = ["examples/**/pyproject.toml", "pyproject.toml"]


def target(data: bytes) -> None:
    path = write_input(FOLDER, "pyproject.toml", data)
    inventory = pyproject.read(path, ReadOptions())
    assert isinstance(inventory, Inventory)
    assert all(p.location is not None for p in inventory.problems)


if __name__ == "__main__":
    main("pyproject", target, (EnvcheckError,), SEEDS)
