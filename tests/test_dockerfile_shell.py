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
    assert ("flash-attn", None, "build", 8) in pkgs  # `pip wheel`: built into /w, not installed
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
    assert "--build-arg TAG" in inv.problems[0].message and inv.problems[0].note  # given at build time: a note
    assert [p.name for p in inv.packages] == ["x"]  # the stage is still read
    (tmp_path / "Dockerfile").write_text("FROM a AS s\nARG TAG=25.11\nFROM nvcr.io/nvidia/pytorch:${TAG}-py3\n")
    inv = read(tmp_path / "Dockerfile", ReadOptions())
    assert len(inv.problems) == 1 and not inv.problems[0].note and "not declared" in inv.problems[0].message
    (tmp_path / "Dockerfile").write_text("ARG TAG\nFROM nvcr.io/nvidia/pytorch:${TAG}-py3\nRUN pip install x==1\n")
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


def _runs(text: str, values: dict[str, str] | None = None) -> list[tuple[tuple[str, ...], str]]:
    """(argv, branch in words or '') of every command that can run, tests and probes left out."""
    return [(c.argv, c.branch.describe() if c.branch else "") for c in split_commands(text, values)
            if c.argv[0] not in ("[", "[[", "test", "ls", "true")]


def _runs_on(arch: str, text: str, values: dict[str, str]) -> list[tuple[tuple[str, ...], str]]:
    return [(c.argv, c.branch.describe() if c.branch else "") for c in split_commands(text, values, arch=arch)
            if c.argv[0] not in ("[", "[[", "test", "ls", "true")]


def test_conditions_decided_by_known_values_drop_dead_branches() -> None:
    values = {"FLASHINFER_VERSION": "", "PRE": "0", "N": "3"}
    text = ('if [ -n "$FLASHINFER_VERSION" ]; then pip install "flashinfer-python==$FLASHINFER_VERSION"; fi; '
            'if [ "$PRE" = "1" ]; then pip install -U transformers; elif test "$PRE" == 2; then pip install a; '
            'else pip install transformers==4.57.1; fi; '
            '[[ -z "$FLASHINFER_VERSION" && $N -ge 2 ]] && pip install b; '
            '[ ! "$PRE" != 0 -a -n x ] || pip install dead; '
            '[ "$(uname -m)" = x86_64 ] && pip install torch==2.9.0+cu128 || pip install c')
    assert _runs_on("arm64", text, values) == [
        (("pip", "install", "transformers==4.57.1"), ""), (("pip", "install", "b"), ""), (("pip", "install", "c"), "")]
    # the same script with the switches on runs the other branches
    on = {**values, "FLASHINFER_VERSION": "0.5.2", "PRE": "2"}
    assert [argv for argv, _ in _runs_on("amd64", text, on)] == [
        ("pip", "install", "flashinfer-python==0.5.2"), ("pip", "install", "a"), ("pip", "install", "dead"),
        ("pip", "install", "torch==2.9.0+cu128"), ("pip", "install", "c")]  # c: now a fallback of the torch install


def test_undecidable_conditions_mark_the_branch() -> None:
    text = ('if [ "$USE_X" = 1 ]; then pip install xformers; else pip install y; fi; '
            'case "$MODE" in dev|test) pip install pytest;; *) pip install z;; esac')
    assert _runs(text) == [
        (("pip", "install", "xformers"), 'in a conditional branch (if `[ "$USE_X" = 1 ]`)'),
        (("pip", "install", "y"), 'in a conditional branch (unless `[ "$USE_X" = 1 ]`)'),
        (("pip", "install", "pytest"), "in a conditional branch (if `case ... in dev|test)`)"),
        (("pip", "install", "z"), "in a conditional branch (if `case ... in *)`)"),
    ]


def test_fallbacks_are_marked_as_such() -> None:
    text = ("pip install /w/fa.whl || TORCH_CUDA_ARCH_LIST=12.1 pip install flash-attn; "
            "if ls /w/x*.whl; then pip install /w/x*.whl; else pip install xformers; fi; "
            "if ! pip download --only-binary :all: -d /w vllm; then pip install vllm; fi; "
            "[ -f /w/t.whl ] || pip install triton")
    cmds = [c for c in split_commands(text) if c.branch is not None and c.argv[:2] == ("pip", "install")]
    assert [(c.argv[-1], c.branch.fallback if c.branch else None) for c in cmds] == [
        ("flash-attn", True), ("xformers", True), ("vllm", True), ("triton", True)]
    assert cmds[0].branch is not None and cmds[0].branch.describe() == "in a fallback that runs only when `pip install /w/fa.whl` fails"
    assert cmds[0].env["TORCH_CUDA_ARCH_LIST"] == "12.1"


def test_an_arg_empty_by_default_stays_unknown_in_commands() -> None:
    # `pip install x==` would be an invalid requirement; the ARG is meant to be given with --build-arg
    cmds = split_commands('python${PY_SUFFIX} -m pip install "flashinfer-python==${FLASHINFER_VERSION}" $EXTRA',
                          {"FLASHINFER_VERSION": "", "EXTRA": "", "PY_SUFFIX": ""})
    # an empty value after a version operator, or as a whole word, stays unknown; inside a word it is empty
    assert [c.argv for c in cmds] == [("python", "-m", "pip", "install", "flashinfer-python==${FLASHINFER_VERSION}", "$EXTRA")]


def test_malformed_and_deeply_nested_scripts_are_read_without_recursion_errors() -> None:
    assert _argvs("fi; then pip install a; done; ) pip install b") == [("pip", "install", "a"), ("pip", "install", "b")]
    assert _argvs("if true; then pip install a") == [("true",), ("pip", "install", "a")]
    deep = split_commands("(" * 5000 + "pip install a" + ")" * 5000)
    assert deep.truncated
    nested_ifs = split_commands("if true; then " * 3000 + "pip install a" + "; fi" * 3000)
    assert nested_ifs.truncated


def test_dockerfile_findings_name_the_branch(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text(
        "FROM python:3.12\nARG FLASHINFER_VERSION=\"\"\nARG WITH_X\n"
        "RUN pip install flashinfer-python==${FLASHINFER_VERSION}\n"
        "RUN if [ -n \"$WITH_X\" ]; then pip install -r /r.txt; fi\n"
    )
    inv = read(tmp_path / "Dockerfile", ReadOptions())
    assert inv.problems == []  # no invalid-requirement ERROR for the empty default
    assert [(p.name, p.version) for p in inv.packages] == [("flashinfer-python", None)]
    install = inv.installs[-1]
    assert install.location is not None and install.location.branch == 'in a conditional branch (if `[ -n "$WITH_X" ]`)'
    assert inv.packages[0].location is not None and inv.packages[0].location.branch is None


def test_cmake_cuda_architectures_are_read_from_every_place_they_are_set(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text(
        "FROM nvidia/cuda:13.0.1-devel-ubuntu24.04\nENV CUDAARCHS=native\nARG ARCHS=121\n"
        "RUN cmake -S a -B b -DCMAKE_CUDA_ARCHITECTURES=\"89;90\" && cmake -S c -B d -D CMAKE_CUDA_ARCHITECTURES:STRING=120-real\n"
        "RUN cmake -S e -B f -DCMAKE_CUDA_ARCHITECTURES=${ARCHS} && CUDAARCHS=all-major make\n"
        "RUN CMAKE_ARGS='-DGGML_CUDA=on -DCMAKE_CUDA_ARCHITECTURES=121a' pip install llama-cpp-python==0.3.16\n"
        "RUN echo -DCMAKE_CUDA_ARCHITECTURES=70\n"  # not a build command
    )
    inv = read(tmp_path / "Dockerfile", ReadOptions())
    got = [(v.name, v.value, str(v.origin), v.location.line if v.location else None) for v in inv.env]
    assert got == [
        ("CUDAARCHS", "native", "env", 2), ("ARCHS", "121", "arg", 3),
        ("CMAKE_CUDA_ARCHITECTURES", "89;90", "run", 4), ("CMAKE_CUDA_ARCHITECTURES", "120-real", "run", 4),
        ("CMAKE_CUDA_ARCHITECTURES", "121", "run", 5), ("CUDAARCHS", "all-major", "run", 5),
        ("CMAKE_CUDA_ARCHITECTURES", "121a", "run", 6),
    ]


def test_cmake_architecture_lists_are_judged_for_sm121() -> None:
    from envcheck.checks.g07_gpu_arch import cmake_arch_coverage

    cases = {"121": "native", "121-real": "native", "120f": "native", "80;90-real;121a-real": "native",
             "121-virtual": "jit-same-major", "120-virtual": "jit-same-major", "90": "jit-older", "86;89-virtual": "jit-older",
             "122-real": "none", "90a-real": "none", "OFF": "none", "all": "all", "all-major": "all", "native": "undecidable"}
    assert {value: cmake_arch_coverage(value, 121)[0] for value in cases} == cases
    assert cmake_arch_coverage("120;121a-real", 121)[1:] == (["sm_120+compute_120", "sm_121a"], True)
    assert cmake_arch_coverage("121-virtual", 121)[1] == ["compute_121"]


def test_uv_and_pip_index_variables_are_package_indexes_wherever_they_are_set(tmp_path: Path) -> None:
    from envcheck.inspect.pip_args import index_entries

    assert index_entries("UV_INDEX", "pt=https://download.pytorch.org/whl/cu128 https://pypi.org/simple") == [
        "https://download.pytorch.org/whl/cu128", "https://pypi.org/simple"]
    assert index_entries("UV_TORCH_BACKEND", "cu126") == ["uv-torch-backend:cu126"]
    (tmp_path / "Dockerfile").write_text(
        "FROM python:3.12\nARG UV_DEFAULT_INDEX=https://mirror.example/simple\n"
        "RUN UV_INDEX_URL=https://download.pytorch.org/whl/cu128 uv pip install torch==2.9.1\n"
        "RUN export PIP_EXTRA_INDEX_URL='https://download.pytorch.org/whl/cu126 https://x.example/simple' && pip install a==1\n"
        "RUN uv pip install --index pt=https://download.pytorch.org/whl/cu130 --default-index=https://y.example/simple b==1\n"
        "RUN PIP_INDEX_URL=https://z.example/simple echo no install here\n"
    )
    inv = read(tmp_path / "Dockerfile", ReadOptions())
    got = [(i.url, str(i.option), i.location.line if i.location else None) for i in inv.indexes]
    assert got == [
        ("https://mirror.example/simple", "index-url", 2),
        ("https://download.pytorch.org/whl/cu128", "index-url", 3),
        ("https://download.pytorch.org/whl/cu126", "extra-index-url", 4), ("https://x.example/simple", "extra-index-url", 4),
        ("https://download.pytorch.org/whl/cu130", "extra-index-url", 5), ("https://y.example/simple", "index-url", 5),
    ]


def test_pip_wheel_builds_and_pip_download_installs_nothing(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text(
        "FROM python:3.12\nRUN pip wheel --no-deps -w /wheels flash-attn==2.8.3 && pip download -d /d vllm==0.11.0\n"
        "RUN pip install torch torch\n"
    )
    inv = read(tmp_path / "Dockerfile", ReadOptions())
    assert [(p.name, str(p.role)) for p in inv.packages] == [("flash-attn", "build"), ("torch", "requirement"), ("torch", "requirement")]
    from conftest import run_envcheck

    out = run_envcheck("--fail-on", "never", str(tmp_path / "Dockerfile")).stdout
    # bare pip on python:3.12: the unpinned torch is named once, in the stage's one policy finding
    assert "not pinned to an exact version: torch\n" in out and "torch, torch" not in out
    assert "G2-flash-attn-build" in out  # building it from source is still the problem
    assert "flash-attn, torch installed" not in out and "vllm" not in out
    verbose = run_envcheck("-v", "--fail-on", "never", str(tmp_path / "Dockerfile")).stdout
    assert verbose.count("G1-torch-build") == 1, verbose  # the same torch twice on one line: one finding


def test_a_file_a_dockerfile_copies_is_judged_once(tmp_path: Path) -> None:
    import json

    from conftest import run_envcheck

    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "demo"\nversion = "0.1"\ndependencies = ["torch>=2.9.1", "transformers>=4.57"]\n')
    (tmp_path / "Dockerfile").write_text("FROM python:3.12\nWORKDIR /app\nCOPY pyproject.toml .\nRUN pip install .\n")
    data = json.loads(run_envcheck("-f", "json", "--fail-on", "never", str(tmp_path)).stdout)
    seen = [(f["rule"], f["status"], f["message"], f["location"]["line"]) for t in data["targets"] for f in t["findings"]
            if f.get("location", {}).get("path", "").endswith("pyproject.toml")]
    assert len(seen) == len(set(seen)), seen  # each finding about the file once, in the file's own target
    assert [rule for rule, status, _, _ in seen if status == "WARN"].count("G9-unpinned") == 1
    # the Dockerfile alone still reports what it installs from the file
    alone = json.loads(run_envcheck("-f", "json", "--fail-on", "never", str(tmp_path / "Dockerfile")).stdout)
    bare = [f for f in alone["targets"][0]["findings"] if f["rule"] == "G9-bare-pip-base" and f["status"] == "WARN"]
    assert [f["evidence"]["unpinned"] for f in bare] == [["torch", "transformers"]]


def test_case_runs_the_first_clause_that_matches_a_known_word() -> None:
    text = ('case "$TARGETARCH" in amd64|x86_64) pip install a ;; arm64) pip install b ;; *) pip install c ;; esac; '
            'case "$(uname -m)" in aarch64) pip install d ;; esac; case $UNKNOWN in x) pip install e ;; esac')
    assert _runs_on("arm64", text, {"TARGETARCH": "arm64"}) == [
        (("pip", "install", "b"), ""), (("pip", "install", "d"), ""),
        (("pip", "install", "e"), "in a conditional branch (if `case ... in x)`)")]
    assert [argv for argv, _ in _runs_on("amd64", text, {"TARGETARCH": "amd64"})][:1] == [("pip", "install", "a")]


def test_branch_and_fallback_reach_every_format() -> None:
    import json
    from importlib import resources

    import jsonschema
    from conftest import REPO, run_envcheck

    recipe = REPO / "dockerfiles" / "flash-attn-fallback" / "Dockerfile"
    report = json.loads(run_envcheck("-f", "json", "--fail-on", "never", str(recipe)).stdout)
    jsonschema.validate(report, json.loads(resources.files("envcheck.formats").joinpath("report.schema.json").read_text()))
    fallback = [f for t in report["targets"] for f in t["findings"] if f["rule"] == "G2-flash-attn-build" and f["status"] != "PASS"]
    assert [f["status"] for f in fallback] == ["WARN"]
    assert fallback[0]["location"]["fallback"] is True and "fallback" in fallback[0]["message"]
    sarif = json.loads(run_envcheck("-f", "sarif", "--fail-on", "never", str(recipe)).stdout)
    assert all(r["level"] != "error" for r in sarif["runs"][0]["results"])


def test_a_variable_set_from_a_command_is_unknown_and_a_probe() -> None:
    text = ('WHEEL=$(ls /wheels/flash_attn*aarch64*.whl 2>/dev/null || true); '
            'if [ -n "$WHEEL" ]; then pip install "$WHEEL"; else TORCH_CUDA_ARCH_LIST=12.1 pip install flash-attn==2.8.3; fi; '
            'MODE=$(cat /mode); [ "$MODE" = gpu ] && pip install a; X=${EMPTY}; [ -z "$X" ] && pip install b')
    got = {c.argv[-1]: c.branch for c in split_commands(text, {"EMPTY": ""}) if c.argv[:2] == ("pip", "install")}
    assert got["$WHEEL"] is not None and not got["$WHEEL"].fallback  # runs only if the wheel is there
    build = got["flash-attn==2.8.3"]
    assert build is not None and build.fallback  # the source build when no wheel was found
    assert got["a"] is not None and not got["a"].fallback  # undecidable, on the main side of its test
    assert got["b"] is None  # X is known to be empty


def test_split_gives_shlex_words_and_errors() -> None:
    """The launch-command, compose and option-line splitter is shlex.split (linear in a word's length)."""
    import shlex

    from envcheck.inspect.shell_words import split
    texts = ["vllm serve m --tp 2 # a comment", "a#b c\nd", "'a b'\"c\\\"d\\x\"e\\ f", "''", '""', "a\\\nb", "x 'open",
             'x "open', "x \\", '"a\\', "\t\r\n", "#only", "a'#'b", "é 'ü' \"日本\"", "a\\#b", '"\\\\" \\\\']
    for text in texts:
        for comments in (False, True):
            try:
                expected: object = shlex.split(text, comments=comments)
            except ValueError:
                expected = ValueError
            try:
                got: object = split(text, comments=comments)
            except ValueError:
                got = ValueError
            assert got == expected, (text, comments)


def test_a_backquoted_substitution_is_one_unknown_word(tmp_path: Path) -> None:
    """`cmd` is POSIX command substitution, like $(cmd): one word kept as written, not split at its spaces
    into words read as requirements (an ERROR on a valid file)."""
    assert _argvs("pip install `echo torch==2.5.1+cu121` vllm && X=`cat a b` pip install y") == [
        ("pip", "install", "`echo torch==2.5.1+cu121`", "vllm"), ("pip", "install", "y")]
    docker = tmp_path / "Dockerfile"
    docker.write_text("FROM ubuntu:24.04\nRUN pip install `cat /tmp/pins.txt` \"`echo a b`\" flash-attn\n", encoding="utf-8")
    inventory = read(docker, ReadOptions())
    assert inventory.problems == [], inventory.problems
    assert [p.name for p in inventory.packages] == ["flash-attn"]
