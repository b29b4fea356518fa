"""Differential test: our parser splits Dockerfiles exactly as BuildKit's own Go parser does.

The oracle is ``dockerfile`` (PyPI, asottile), a binding of moby/buildkit's parser. It cannot be a
runtime dependency (no aarch64 wheels: it would need a Go toolchain on a Spark), but where it is
installed it checks instruction boundaries, line numbers, flags, heredoc bodies and joined arguments.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from conftest import REPO, ci_provides, require

from envcheck.inspect.dockerfile import read_instructions

TRICKY = [
    "FROM a\nRUN apt-get update && \\\n    # comment in a continuation\n\n    pip install x \\\n      y\nCMD [\"python\"]\n",
    "# syntax=docker/dockerfile:1\n# escape=\\\nARG A=1\nFROM --platform=$BUILDPLATFORM b:${A} AS s\nRUN --mount=type=cache,target=/c --network=none pip install z\n",
    "# escape=`\nFROM c\nRUN echo `\n  two\n",
    "FROM d\nRUN <<EOF\npip install a\nEOF\nCOPY <<A <<B /dst/\none\nA\ntwo\nB\nRUN <<-X bash\n\techo hi\n\tX\n",
    "FROM e\nENV A=1 B=\"two words\"\nENV C 3 4\nLABEL x=y\nRUN [\"pip\", \"install\", \"q\"]\n",
    "FROM f\r\nRUN pip install \\\r\n  x\r\n",
]


def _ours(text: str) -> list[tuple[object, ...]]:
    _, _, insts = read_instructions(text)
    out = []
    for inst in insts:
        flags = tuple(f"--{k}={v}" if v is not None else f"--{k}" for k, v in inst.flags)
        docs = tuple((h.name, h.body) for h in inst.heredocs)
        out.append((inst.keyword, inst.line, inst.end_line, flags, docs))
    return out


def _theirs(text: str) -> list[tuple[object, ...]]:
    import dockerfile

    out = []
    for cmd in dockerfile.parse_string(text):
        # the Go parser keeps <<- bodies raw; BuildKit strips their leading tabs when it runs them
        docs = tuple((h.name, "".join(ln.lstrip("\t") for ln in h.content.splitlines(True)) if f"<<-{h.name}" in cmd.original
                      else h.content) for h in cmd.heredocs)
        out.append((cmd.cmd.upper(), cmd.start_line, cmd.end_line, tuple(cmd.flags), docs))
    return out


def _cases() -> list[tuple[str, str]]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib

    cases = tomllib.loads((REPO / "dockerfiles" / "expected.toml").read_text(encoding="utf-8"))["case"]
    # every recipe docker would accept (the syntax-error fixture is not one)
    recipes = sorted({(REPO / "dockerfiles" / c["dockerfile"]).resolve() for c in cases
                      if not any(f["rule"] == "input-error" for f in c["findings"])})
    return [(p.relative_to(REPO).as_posix(), p.read_text(encoding="utf-8")) for p in recipes] + [
        (f"tricky-{i}", t) for i, t in enumerate(TRICKY)]


@pytest.mark.parametrize(("name", "text"), _cases(), ids=[n for n, _ in _cases()])
def test_same_instructions_as_buildkit(name: str, text: str) -> None:
    require(importlib.util.find_spec("dockerfile") is not None,
            "the `dockerfile` package (BuildKit's parser, in the test extras; x86_64 wheels only) is not installed",
            provided=ci_provides("dockerfile"))
    assert _ours(text) == _theirs(text), name


def test_recipes_exist() -> None:
    assert len([p for p in Path(REPO / "dockerfiles").glob("*/Dockerfile")]) >= 15


def test_docs_example_output_is_what_envcheck_prints() -> None:
    import re

    from conftest import run_envcheck

    doc = (REPO / "docs" / "dockerfiles.md").read_text(encoding="utf-8")
    examples = list(re.finditer(r"<!-- example: (\S+) -->\n```\n(.*?)```", doc, re.S))
    assert examples
    for m in examples:
        done = run_envcheck(m.group(1))
        assert done.stdout == m.group(2), f"docs/dockerfiles.md example for {m.group(1)} is stale"
