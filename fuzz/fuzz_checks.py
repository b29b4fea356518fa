"""Fuzz the checks through the real sources: a mutated requirements file, freeze, Dockerfile, pyproject,
lock or conda environment file is read, then every registered check runs over the inventory with ``debug=True`` (so a check that
breaks on odd but readable facts raises here instead of becoming an internal-error finding)."""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import REPO, main, scratch_dir, write_input

with atheris.instrument_imports(include=["envcheck"]):
    from envcheck import engine
    from envcheck.errors import EnvcheckError
    from envcheck.options import RunOptions
    from envcheck.profile import load_profile
    from envcheck.rules import load_all
    from envcheck.sources import ReadOptions, dockerfile, locks, module_for, pyproject, requirements  # noqa: F401

    load_all()  # the check modules, imported here so that they are instrumented too

FOLDER = scratch_dir()
PROFILE = load_profile("dgx-spark")
KINDS = (("requirements", "requirements.txt"), ("requirements", "freeze.txt"), ("dockerfile", "Dockerfile"),
         ("pyproject", "pyproject.toml"), ("uv-lock", "uv.lock"), ("pylock", "pylock.toml"), ("conda", "environment.yml"))
OPTIONS = ReadOptions()


def target(data: bytes) -> None:
    if not data:
        return
    kind, name = KINDS[data[0] % len(KINDS)]
    path = write_input(FOLDER, name, data[1:])
    inventory = module_for(kind).read(path, OPTIONS)
    for nvfp4 in (False, True):
        findings = engine.evaluate(inventory, PROFILE, kind, RunOptions(nvfp4=nvfp4), debug=True)
        assert all(f.rule and f.gotcha and f.message for f in findings)


def seeds() -> list[bytes]:
    out = []
    for index, (_kind, name) in enumerate(KINDS):
        pattern = {"requirements.txt": "examples/requirements-*.txt", "freeze.txt": "examples/freeze-*.txt",
                   "Dockerfile": "dockerfiles/*/Dockerfile", "pyproject.toml": "examples/*/pyproject.toml",
                   "uv.lock": "examples/*/uv.lock", "pylock.toml": "examples/*/pylock.toml",
                   "environment.yml": "fixtures/rules/*/*/environment.yml"}[name]
        out += [bytes([index]) + p.read_bytes()[:16 << 10] for p in sorted(REPO.glob(pattern))]
    out += [b"\x00" + p.read_bytes() for p in sorted(REPO.glob("fixtures/rules/*/*/requirements.txt"))]
    return out


if __name__ == "__main__":
    main("checks", target, (EnvcheckError,), [], seeds(), max_len=16 << 10)
