"""Fuzz the requirements/constraints/freeze reader (pip's file syntax, includes, pragmas) end to end."""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import main, scratch_dir, write_input

with atheris.instrument_imports(include=["envcheck"]):
    from envcheck.errors import EnvcheckError
    from envcheck.model import Inventory, Package, ReadProblem
    from envcheck.sources import ReadOptions, requirements

FOLDER = scratch_dir()
SEEDS = ["examples/*.txt", "examples/**/*.in", "fixtures/rules/**/*.txt", "dockerfiles/**/requirements.txt"]


def target(data: bytes) -> None:
    path = write_input(FOLDER, "requirements.txt", data)
    inventory = requirements.read(path, ReadOptions())
    assert isinstance(inventory, Inventory)
    for pkg in inventory.packages:
        assert isinstance(pkg, Package) and pkg.name and pkg.name == pkg.name.lower(), pkg
    for problem in inventory.problems:
        assert isinstance(problem, ReadProblem) and problem.location is not None and problem.location.path, problem
    requirements.sniff(path, data[:4096])


if __name__ == "__main__":
    main("requirements", target, (EnvcheckError,), SEEDS)
