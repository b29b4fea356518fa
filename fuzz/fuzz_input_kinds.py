"""Fuzz the readers of compose files, Kubernetes manifests, shell scripts and notebooks: the bounded YAML
reader (anchors, aliases, merge keys, documents), compose interpolation/extends/include/build, pod specs,
shell scripts read as a RUN, notebook cells and their file lines, conda environment files. The first byte
picks the kind."""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import main, scratch_dir, seed_files, write_input

with atheris.instrument_imports(include=["envcheck"]):
    from envcheck.errors import EnvcheckError
    from envcheck.inspect.yaml_tree import YamlError, load_all
    from envcheck.model import Inventory
    from envcheck.sources import ReadOptions, compose, conda, kubernetes, notebook, shell

FOLDER = scratch_dir()
KINDS = ((compose, "compose.yaml"), (kubernetes, "manifest.yaml"), (shell, "install.sh"), (notebook, "setup.ipynb"),
         (conda, "environment.yml"))
# Seed files of each kind, by the kind byte that selects their reader.
SEEDS = {0: ["fixtures/rules/**/*compose*.y*ml", "fixtures/kinds/*compose*.y*ml"], 1: ["fixtures/rules/**/job.yaml", "fixtures/kinds/*job*.yaml"],
         2: ["fixtures/rules/**/*.sh", "fixtures/kinds/*.sh"], 3: ["fixtures/kinds/*.ipynb"], 4: ["fixtures/rules/**/environment.yml"]}
OPTIONS = ReadOptions()


def target(data: bytes) -> None:
    if not data:
        return
    module, name = KINDS[data[0] % len(KINDS)]
    body = data[1:]
    if module in (compose, kubernetes, conda):
        try:
            load_all(body.decode("utf-8", errors="replace"))
        except YamlError as exc:
            assert exc.line is None or exc.line >= 1, exc.line
    path = write_input(FOLDER, name, body)
    inventory = module.read(path, OPTIONS)
    assert isinstance(inventory, Inventory)
    for fact in (*inventory.packages, *inventory.images, *inventory.env, *inventory.problems):
        assert fact.location is None or fact.location.line is None or fact.location.line >= 1, fact
    getattr(module, "sniff", lambda _p, _h: False)(path, body[:4096])


if __name__ == "__main__":
    extra = [bytes([kind]) + path.read_bytes()[:8000] for kind, patterns in SEEDS.items() for path in seed_files(patterns)]
    main("input_kinds", target, (EnvcheckError,), [], extra, max_len=8192)
