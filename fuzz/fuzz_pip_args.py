"""Fuzz the installer command-line reader (pip / uv / conda argv) and PEP 508 requirement text."""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import main

with atheris.instrument_imports(include=["envcheck"]):
    from envcheck.inspect.pip_args import InstallParse, parse_install_command, parse_requirement_text
    from envcheck.model import Location, Package, ReadProblem

WHERE = Location("Dockerfile", line=1)
SEEDS = ["examples/*.txt", "fixtures/rules/**/*.txt"]
EXTRA = [
    b"pip\0install\0--no-deps\0unsloth\0-i\0https://download.pytorch.org/whl/cu130\0torch==2.9.0",
    b"python3\0-m\0pip\0install\0-r\0requirements.txt\0-c\0c.txt\0flash-attn==2.8.3\0--no-build-isolation",
    b"uv\0pip\0install\0--torch-backend=cu126\0torch",
    b"conda\0install\0-c\0pytorch\0pytorch=2.1.0\0pytorch-cuda=12.1",
    b"pip3\0install\0-e\0git+https://github.com/Dao-AILab/flash-attention.git@v2.8.3#egg=flash_attn",
    b"uv\0add\0torch>=2.9;platform_machine=='aarch64'",
]


def target(data: bytes) -> None:
    text = data.decode("utf-8", errors="replace")
    argv = text.split("\0") if "\0" in text else text.split()
    result = parse_install_command(argv, WHERE)
    assert result is None or isinstance(result, InstallParse)
    if result is not None:
        assert all(isinstance(p, Package) and p.name for p in result.packages)
        assert all(isinstance(p, ReadProblem) for p in result.problems)
    for word in argv[:8]:
        one = parse_requirement_text(word, WHERE)
        assert one is None or isinstance(one, (Package, ReadProblem))
    whole = parse_requirement_text(text.replace("\0", " "), WHERE)
    assert whole is None or isinstance(whole, (Package, ReadProblem))


if __name__ == "__main__":
    main("pip_args", target, (), SEEDS, EXTRA)
