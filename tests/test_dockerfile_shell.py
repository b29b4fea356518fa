"""Splitting RUN shell text into simple commands, and the Dockerfile source's reading of installs."""

from __future__ import annotations

from pathlib import Path

from envcheck.inspect.shell import split_commands
from envcheck.sources import ReadOptions
from envcheck.sources.dockerfile import inventory_from_history, read, sniff


def _argvs(text: str, values: dict[str, str] | None = None) -> list[tuple[str, ...]]:
    return [c.argv for c in split_commands(text, values)]


def test_operators_subshells_keywords_and_comments() -> None:
    text = ("apt-get update && apt-get install -y git || true; (cd /x && pip install .) | tee log & "
            "if [ -f r.txt ]; then pip install -r r.txt; fi; for p in a b; do pip install $p; done  # pip install hidden")
    assert _argvs(text) == [
        ("apt-get", "update"), ("apt-get", "install", "-y", "git"), ("true",), ("cd", "/x"), ("pip", "install", "."),
        ("tee", "log"), ("[", "-f", "r.txt", "]"), ("pip", "install", "-r", "r.txt"), ("pip", "install", "$p"),
    ]


def test_quotes_redirections_and_continuations() -> None:
    text = 'pip install "torch>=2.9" \'x==1\' 2>&1 >/dev/null \\\n  --no-deps < in.txt; echo "a;b" && pip install torch>=2.0'
    assert _argvs(text) == [
        ("pip", "install", "torch>=2.9", "x==1", "--no-deps"),
        ("echo", "a;b"),
        ("pip", "install", "torch"),  # unquoted > is a redirection, exactly as the shell reads it
    ]


def test_assignments_exports_wrappers_and_variables() -> None:
    text = ('export TORCH_CUDA_ARCH_LIST="12.1" && V=2.9.0; MAX_JOBS=4 sudo -E env A=1 python3 -m pip install torch==$V '
            '"tv==${TV:-0.24.0}" ${EXTRA:+extra}')
    cmds = split_commands(text, {"BASE": "x"})
    assert [c.argv for c in cmds] == [("python3", "-m", "pip", "install", "torch==2.9.0", "tv==0.24.0")]
    cmd = cmds[0]
    assert cmd.assignments == (("MAX_JOBS", "4"), ("A", "1"))
    assert cmd.env["TORCH_CUDA_ARCH_LIST"] == "12.1" and cmd.env["BASE"] == "x"


def test_nested_sh_c_scripts() -> None:
    text = "bash -lc 'pip install a && uv pip install --system b' && sh -ec \"conda install -y c\""
    assert _argvs(text) == [("pip", "install", "a"), ("uv", "pip", "install", "--system", "b"), ("conda", "install", "-y", "c")]


def test_heredoc_marker_is_not_a_command_and_offsets_point_at_lines() -> None:
    assert _argvs("<<EOF") == []
    text = "set -e\n\npip install a \\\n  b\npython - <<PY\n"
    cmds = split_commands(text)
    assert [c.argv for c in cmds] == [("set", "-e"), ("pip", "install", "a", "b"), ("python", "-")]
    assert [text.count("\n", 0, c.offset) for c in cmds] == [0, 2, 4]


def test_sniff_and_reading_installs(tmp_path: Path) -> None:
    assert sniff(tmp_path / "x", b"# syntax=docker/dockerfile:1\nARG X=1\nFROM ubuntu\n")
    assert not sniff(tmp_path / "x", b"torch==2.9.0\nnumpy\n")
    assert not sniff(tmp_path / "x", b"ARG X=1\n")
    (tmp_path / "constraints.txt").write_text("transformers==4.57.1\n")
    (tmp_path / "Containerfile").write_text(
        "FROM python:3.12 AS base\n"
        "WORKDIR /src\n"
        "COPY constraints.txt ./c/\n"
        "ARG TORCH=2.11.0\n"
        "RUN pip install -c c/constraints.txt \"torch==${TORCH}\" git+https://github.com/huggingface/peft@v0.17.1 \\\n"
        "    -e ./local --extra-index-url https://download.pytorch.org/whl/cu130 && \\\n"
        "    conda install -y -c nvidia cuda-version=13.0 && \\\n"
        "    pip wheel flash-attn -w /w && pip install $UNKNOWN_PKGS\n"
    )
    inv = read(tmp_path / "Containerfile", ReadOptions())
    assert inv.problems == []
    pkgs = {(p.name, p.version, p.role, p.location.line if p.location else None) for p in inv.packages}
    assert ("torch", "2.11.0", "requirement", 5) in pkgs
    assert ("peft", None, "requirement", 5) in pkgs
    assert ("transformers", "4.57.1", "constraint", 1) in pkgs
    assert ("cuda-version", "13.0", "conda", 7) in pkgs
    assert ("flash-attn", None, "requirement", 8) in pkgs
    assert [i.url for i in inv.indexes] == ["https://download.pytorch.org/whl/cu130", "nvidia"]
    # an option is located at the line its command starts on
    assert inv.indexes[0].location is not None and inv.indexes[0].location.line == 5
    assert [(v.name, v.value, v.origin) for v in inv.env] == [("TORCH", "2.11.0", "arg")]
    assert all(p.location is not None and p.location.stage == "base" for p in inv.packages)


def test_packages_of_stages_outside_the_image_are_marked_build(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text(
        "FROM python:3.12 AS tools\nRUN pip install ruff==0.5.0\n"
        "FROM python:3.12 AS deps\nRUN pip install --target /opt/venv/lib numpy==2.1.0\n"
        "FROM python:3.12-slim\nCOPY --from=deps /opt/venv /opt/venv\n"
    )
    inv = read(tmp_path / "Dockerfile", ReadOptions())
    roles = {p.name: (p.role, p.location.stage if p.location else None) for p in inv.packages}
    assert roles == {"ruff": ("build", "tools"), "numpy": ("requirement", "deps")}
    assert [(i.stage, i.final) for i in inv.images] == [("tools", False), ("deps", True), ("2", True)]


def test_pragmas_cover_the_whole_next_instruction(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text(
        "FROM nvcr.io/nvidia/pytorch:25.11-py3\n"
        "# envcheck: ignore=G2,G9-unpinned reason given\n"
        "RUN pip install a && \\\n    pip install unsloth\n"
    )
    inv = read(tmp_path / "Dockerfile", ReadOptions())
    assert [(p.rules, p.reason, p.location.line) for p in inv.pragmas] == [
        (("G2", "G9-unpinned"), "reason given", 3), (("G2", "G9-unpinned"), "reason given", 4)]


def test_unresolved_from_arg_is_a_problem_with_its_line(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text("ARG TAG\nFROM nvcr.io/nvidia/pytorch:${TAG}-py3\nRUN pip install x==1\n")
    inv = read(tmp_path / "Dockerfile", ReadOptions())
    assert len(inv.problems) == 1 and inv.problems[0].location is not None and inv.problems[0].location.line == 2
    assert "--build-arg TAG" in inv.problems[0].message
    inv = read(tmp_path / "Dockerfile", ReadOptions(build_args={"TAG": "25.11"}))
    assert inv.problems == [] and inv.images[0].ref == "nvcr.io/nvidia/pytorch:25.11-py3"


def test_history_created_by_strings() -> None:
    history = [
        "/bin/sh -c #(nop) ADD file:abc in / ",
        "/bin/sh -c #(nop)  ENV TORCH_CUDA_ARCH_LIST=8.0 9.0",
        "/bin/sh -c #(nop)  CMD [\"bash\"]",
        "|1 TORCH=2.9.0 /bin/sh -c pip install torch==${TORCH} --index-url https://download.pytorch.org/whl/cu128",
        "ENV PIP_CONSTRAINT=/etc/pip/constraint.txt",
        "ARG VLLM=0.11.0",
        "RUN |1 VLLM=0.11.0 /bin/sh -c pip install vllm==${VLLM} && pip install --no-deps unsloth # buildkit",
        "COPY requirements.txt /tmp/ # buildkit",
        "/bin/bash -o pipefail -c TORCH_CUDA_ARCH_LIST=12.1 pip install xformers==0.0.33",
    ]
    inv = inventory_from_history(history, "nvcr.io/x/y:1")
    assert [(p.name, p.version, p.no_deps) for p in inv.packages] == [
        ("torch", "2.9.0", False), ("vllm", "0.11.0", False), ("unsloth", None, True), ("xformers", "0.0.33", False)]
    assert [(v.name, v.value, v.origin) for v in inv.env] == [
        ("TORCH_CUDA_ARCH_LIST", "8.0 9.0", "env"), ("PIP_CONSTRAINT", "/etc/pip/constraint.txt", "env"),
        ("VLLM", "0.11.0", "arg"), ("TORCH_CUDA_ARCH_LIST", "12.1", "run")]
    assert [i.url for i in inv.indexes] == ["https://download.pytorch.org/whl/cu128"]
    assert inv.packages[0].location is not None and inv.packages[0].location.member == "history[3]"


def test_an_empty_arg_that_still_names_an_image_is_not_an_error(tmp_path: Path) -> None:
    # docker builds this (the unset ARG expands to nothing); only a reference that breaks is an error
    (tmp_path / "Dockerfile").write_text("ARG SUFFIX\nFROM nvcr.io/nvidia/pytorch:25.11-py3${SUFFIX}\n")
    inv = read(tmp_path / "Dockerfile", ReadOptions())
    assert inv.problems == [] and inv.images[0].ref == "nvcr.io/nvidia/pytorch:25.11-py3"
