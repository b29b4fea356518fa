"""Fuzz the config reader (.envcheck.toml and [tool.envcheck] in pyproject.toml): a bad config is a
UsageError naming the file, never a traceback."""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import main, scratch_dir

with atheris.instrument_imports(include=["envcheck"]):
    from envcheck.config import Config, load_config
    from envcheck.errors import EnvcheckError

FOLDER = scratch_dir()
(FOLDER / ".git").mkdir(exist_ok=True)  # stop the upward search here
EXTRA = [
    b'profile = "dgx-spark"\nfail-on = "warn"\nignore = ["G8", {rule = "G2-flash-attn-present", reason = "NGC ships it"}]\n'
    b'[severity]\n"G9-unpinned" = "INFO"\n[options]\nnvfp4 = true\n',
    b'[tool.envcheck]\nignore = ["G10"]\n',
    b'tool = {envcheck = {ignore = ["G8"], fail-on = "fail"}}\n',
]


def target(data: bytes) -> None:
    name = "pyproject.toml" if data[:1] == b"[" and b"tool.envcheck" in data else ".envcheck.toml"
    for old in (".envcheck.toml", "pyproject.toml"):
        (FOLDER / old).unlink(missing_ok=True)
    (FOLDER / name).write_bytes(data)
    config = load_config(None, FOLDER)
    assert isinstance(config, Config)


if __name__ == "__main__":
    main("config", target, (EnvcheckError,), [], EXTRA, max_len=2048)
