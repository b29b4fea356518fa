"""The Dockerfile parser against BuildKit's rules: continuations, directives, heredocs, stages, ARG/ENV."""

from __future__ import annotations

import pytest

from envcheck.inspect.dockerfile import DockerfileSyntaxError, expand, parse, read_instructions
from envcheck.inspect.dockerfile_env import walk_stage


def test_continuations_skip_comments_and_blank_lines_and_keep_line_numbers() -> None:
    text = (
        "FROM ubuntu:24.04\n"
        "RUN apt-get update && \\\n"
        "    # a comment inside the continuation\n"
        "\n"
        "    pip install a \\  \n"
        "        b\n"
        "CMD [\"bash\"]\n"
    )
    _, _, insts = read_instructions(text)
    run = insts[1]
    assert run.keyword == "RUN" and (run.line, run.end_line) == (2, 6)
    assert run.args == "apt-get update &&     pip install a         b"
    assert run.line_of(run.args.index("pip")) == 5
    assert run.line_of(run.args.index("b", run.args.index("pip"))) == 6
    assert insts[2].json_args == ("bash",)


def test_escape_directive_backtick() -> None:
    text = "# escape=`\nFROM mcr.microsoft.com/windows:ltsc2022\nRUN pip install `\n    flash-attn\nCOPY C:\\src C:\\dst\n"
    directives, escape, insts = read_instructions(text)
    assert directives == {"escape": "`"} and escape == "`"
    assert insts[1].args == "pip install     flash-attn" and insts[1].end_line == 4
    assert insts[2].args == "C:\\src C:\\dst"


def test_directive_after_comment_is_a_comment() -> None:
    directives, escape, _ = read_instructions("# hello\n# escape=`\nFROM a\n")
    assert directives == {} and escape == "\\"


def test_heredocs_plain_dash_quoted_and_several() -> None:
    text = (
        "FROM python:3.12\n"
        "RUN <<EOF\n"
        "pip install a\n"
        "EOF\n"
        "RUN <<-'END' bash\n"
        "\tpip install $NOT_EXPANDED\n"
        "\tEND\n"
        "COPY <<A <<B /app/\n"
        "one\n"
        "A\n"
        "two\n"
        "B\n"
        "RUN echo 'not <<HEREDOC' && echo x <<< here\n"
    )
    df = parse(text)
    runs = [i for i in df.instructions if i.keyword in ("RUN", "COPY")]
    assert runs[0].heredocs[0].body == "pip install a\n" and runs[0].heredocs[0].line == 3
    dash = runs[1].heredocs[0]
    assert (dash.name, dash.strip_tabs, dash.expand, dash.body) == ("END", True, False, "pip install $NOT_EXPANDED\n")
    assert [h.name for h in runs[2].heredocs] == ["A", "B"] and runs[2].heredocs[1].body == "two\n"
    assert runs[2].end_line == 12
    assert runs[3].heredocs == () and runs[3].line == 13


def test_unterminated_heredoc_is_an_error_at_its_instruction() -> None:
    with pytest.raises(DockerfileSyntaxError) as info:
        parse("FROM a\nRUN echo hi\nRUN <<EOF\npip install x\n")
    assert info.value.line == 3 and "EOF" in info.value.message


def test_global_args_in_from_with_defaults_alternatives_and_build_args() -> None:
    text = (
        "ARG REG=nvcr.io/nvidia\n"
        "ARG TAG\n"
        "ARG SUFFIX=py3\n"
        "ARG EXTRA\n"
        "FROM ${REG}/pytorch:${TAG:-25.11}-${SUFFIX}${EXTRA:+-$EXTRA} AS a\n"
        "FROM $REG/vllm:${TAG-26.01}-py3 AS b\n"
    )
    df = parse(text)
    assert [s.base for s in df.stages] == ["nvcr.io/nvidia/pytorch:25.11-py3", "nvcr.io/nvidia/vllm:26.01-py3"]
    df = parse(text, build_args={"TAG": "26.02", "EXTRA": "igpu"})
    assert [s.base for s in df.stages] == ["nvcr.io/nvidia/pytorch:26.02-py3-igpu", "nvcr.io/nvidia/vllm:26.02-py3"]
    df = parse(text, build_args={"TAG": ""})
    # ${TAG:-x} treats empty as unset; ${TAG-x} only unset
    assert [s.base for s in df.stages] == ["nvcr.io/nvidia/pytorch:25.11-py3", "nvcr.io/nvidia/vllm:-py3"]


def test_from_platform_automatic_args_and_unresolved_names() -> None:
    df = parse("FROM --platform=$BUILDPLATFORM golang:1.22 AS build\nFROM --platform=linux/amd64 ubuntu\nFROM nvcr.io/nvidia/pytorch:${TAG}-py3\n")
    assert df.stages[0].platform == "linux/arm64"
    assert df.stages[1].platform == "linux/amd64"
    assert df.stages[2].unresolved == ("TAG",) and df.stages[2].base == "nvcr.io/nvidia/pytorch:-py3"


def test_stage_args_env_and_their_scope() -> None:
    text = (
        "ARG VERSION=1.0\n"
        "FROM alpine AS base\n"
        "ENV A=1 B=\"two words\" C=${A}x\n"
        "ENV D=${A}y\n"
        "ENV LEGACY value with spaces\n"
        "ARG VERSION\n"
        "ARG LOCAL=${VERSION}-local\n"
        "ENV A=override\n"
        "ARG A=from-arg\n"
        "RUN true\n"
        "FROM base AS child\n"
        "RUN true\n"
    )
    df = parse(text)
    base, child = df.stages
    seen = {inst.line: dict(values) for inst, values, _ in walk_stage(df, base, {})}
    # C=${A}x sees A as it was before its own ENV line (Docker's rule): unset here, so it stays as written
    # (the base image's environment, which we cannot see, may define it); D on the next line sees A=1
    want = {"A": "override", "B": "two words", "C": "${A}x", "D": "1y", "LEGACY": "value with spaces", "VERSION": "1.0", "LOCAL": "1.0-local"}
    assert seen[10] == want
    child_values = {inst.line: dict(values) for inst, values, _ in walk_stage(df, child, {})}
    # ENV crosses FROM <stage>; ARG does not
    assert child_values[12] == {k: v for k, v in want.items() if k not in ("VERSION", "LOCAL")}
    assert child.parent == base.index and base.final and child.final


def test_final_stage_chain_and_target() -> None:
    text = "FROM a AS one\nFROM b AS two\nFROM two AS three\nFROM c AS unused\n"
    df = parse(text)
    assert [s.final for s in df.stages] == [False, False, False, True]
    df = parse(text, target="three")  # a stage after the target is never built: not part of the parse
    assert [s.final for s in df.stages] == [False, True, True]


def test_run_flags_and_json_form() -> None:
    df = parse('FROM a\nRUN --mount=type=cache,target=/root/.cache --mount=type=bind,source=r.txt,target=/r.txt --network=none pip install -r /r.txt\nRUN ["pip", "install", "x"]\n')
    run = df.instructions[1]
    assert run.flag_values("mount") == ["type=cache,target=/root/.cache", "type=bind,source=r.txt,target=/r.txt"]
    assert run.flag("network") == "none" and run.args == "pip install -r /r.txt"
    assert df.instructions[2].json_args == ("pip", "install", "x")


@pytest.mark.parametrize(("text", "line", "words"), [
    ("FROM a\nPIP install x\n", 2, "unknown instruction"),
    ("RUN pip install x\nFROM a\n", 1, "before the first FROM"),
    ("# only a comment\n", 1, "no FROM"),
    ("FROM a\nENV NAME\n", 2, "has no value"),
    ("FROM a\nENV A=1 B\n", 2, "can't find ="),
    ("FROM a AS s\nARG BASE=b\nFROM ${BASE}\n", 3, "not declared before the first FROM"),
    ("FROM a b c d\n", 1, "FROM requires"),
    ("FROM a\nSHELL /bin/bash -c\n", 2, "JSON"),
    ("FROM --chown=x a\n", 1, "unknown flag"),
])
def test_syntax_errors_carry_the_line(text: str, line: int, words: str) -> None:
    with pytest.raises(DockerfileSyntaxError) as info:
        parse(text)
    assert info.value.line == line and words in info.value.message


def test_expand_pattern_forms() -> None:
    values = {"V": "nvcr.io/nvidia/pytorch:25.11-py3", "E": ""}
    assert expand("${V#*:}", values).value == "25.11-py3"
    assert expand("${V%-py3}", values).value == "nvcr.io/nvidia/pytorch:25.11"
    assert expand("${V%%:*}", values).value == "nvcr.io/nvidia/pytorch"
    assert expand("${V/25.11/26.01}", values).value == "nvcr.io/nvidia/pytorch:26.01-py3"
    assert expand("${E:-d} ${E-d} ${E:+x} ${E+x}", values).value == "d   x"
    assert expand("'$V' \\$V", values).value == "$V $V"
    out = expand("a${MISSING}b", values)
    assert out.value == "ab" and out.missing == ["MISSING"]
    assert expand("$MISSING/x", values, keep_unknown=True).value == "$MISSING/x"


def test_crlf_and_trailing_whitespace() -> None:
    df = parse("FROM a\r\nRUN pip install \\\r\n  x\r\n")
    assert df.instructions[1].args == "pip install   x"
