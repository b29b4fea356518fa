"""Property tests for the text parsers: requirements/freeze, pip command lines, pyproject, uv.lock/pylock,
wheel names and build tags, Dockerfiles and RUN-line shell.

Every input either reads (with problems as data, each located in the file) or raises the documented
``EnvcheckError`` family; nothing else escapes, nothing hangs (hang guard), and the output has the types
and invariants the checks rely on (canonical names, line numbers inside the file).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fuzz_strategies import (
    NASTY_TEXT,
    PROPERTY_SETTINGS,
    hang_guard,
    known_crash,
    lines_of,
    mutated,
    seed_bytes,
    text_file,
)
from hypothesis import example, given
from hypothesis import strategies as st
from packaging.utils import canonicalize_name

from envcheck.errors import EnvcheckError, InputError
from envcheck.inspect.dockerfile import DockerfileSyntaxError, parse
from envcheck.inspect.pip_args import (
    InstallParse,
    installer_of,
    parse_install_command,
    parse_requirement_text,
)
from envcheck.inspect.shell import split_commands
from envcheck.inspect.wheel_tags import parse_wheel_name
from envcheck.model import Inventory, Location, Package, ReadProblem
from envcheck.options import RunOptions
from envcheck.sources import ReadOptions, locks, pyproject, requirements
from envcheck.sources import dockerfile as dockerfile_source

REQ_LINES = [*lines_of("examples/*.txt", "fixtures/rules/**/*.txt", "dockerfiles/**/requirements.txt"),
    "-r other.txt", "-c constraints.txt", "--index-url https://download.pytorch.org/whl/cu130", "-e .",
    "# envcheck: ignore=G2 we build it ourselves", "torch @ https://example.org/torch-2.9.0-cp312-cp312-manylinux_2_28_aarch64.whl",
    "flash-attn==2.8.3 --hash=sha256:" + "0" * 64, "-r requirements.txt",
]
DOCKER_LINES = [*lines_of("dockerfiles/**/Dockerfile", "dockerfiles/**/*.Dockerfile"),
    "# syntax=docker/dockerfile:1", "# escape=`", "ARG TAG=25.09-py3", "FROM nvcr.io/nvidia/pytorch:${TAG} AS base",
    "RUN <<EOF", "pip install flash-attn", "EOF", "ENV A=1 B=\"two words\"", "COPY --from=base /a /b", "FROM base",
]


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz-text")


def _check_problem_locations(inventory: Inventory, allowed_paths: set[str], lines: int) -> None:
    for problem in inventory.problems:
        assert isinstance(problem, ReadProblem) and problem.message
        assert problem.location is not None, problem
        if problem.location.path in allowed_paths and problem.location.line is not None:
            assert 1 <= problem.location.line <= lines + 1, problem


def _canonical(pkg: Package) -> None:
    assert pkg.name and canonicalize_name(pkg.name) == pkg.name, pkg.name


@PROPERTY_SETTINGS
@given(text=text_file(REQ_LINES))
@example(text="name @ http://[\n")  # urlparse raised ValueError (fixed in wheel_tags.parse_wheel_name)
@example(text="-r /dev/zero\ntorch==2.9.0\n")  # an endless include (fixed: bounded read)
@example(text="-r requirements.txt\n")  # includes itself
def test_requirements_reader_answers_every_text(scratch: Path, text: str) -> None:
    path = scratch / "requirements.txt"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        with hang_guard():
            inventory = requirements.read(path, ReadOptions())
    except InputError as exc:
        assert exc.path == str(path)
        return
    assert inventory.context in ("declared", "installed")
    assert inventory.installs and inventory.installs[0].tool == "requirements"
    for pkg in inventory.packages:
        _canonical(pkg)
        assert pkg.location is not None and pkg.location.line is not None
    _check_problem_locations(inventory, {str(path)}, text.count("\n") + text.count("\r") + 1)
    # Reading is deterministic: the same file gives the same facts.
    assert requirements.read(path, ReadOptions()).to_json() == inventory.to_json()


@PROPERTY_SETTINGS
@given(data=mutated(seed_bytes("examples/*.txt", "fixtures/rules/**/*.txt")))
def test_requirements_reader_answers_mutated_bytes(scratch: Path, data: bytes) -> None:
    path = scratch / "freeze.txt"
    path.write_bytes(data)
    try:
        with hang_guard():
            inventory = requirements.read(path, ReadOptions())
    except InputError as exc:
        assert exc.path == str(path) and exc.message
        return
    assert isinstance(inventory, Inventory)
    _check_problem_locations(inventory, {str(path)}, data.count(b"\n") + data.count(b"\r") + 1)


PIP_WORDS = ["pip", "pip3", "python3", "-m", "uv", "conda", "install", "add", "-r", "-c", "-e", "-i", "-f", "--no-deps",
             "--index-url", "--extra-index-url=https://download.pytorch.org/whl/cu128", "--torch-backend=cu126",
             "torch==2.9.0", "flash-attn", "unsloth[cu130]", "git+https://github.com/Dao-AILab/flash-attention.git",
             "pytorch-cuda=12.1", "nvidia::cuda-toolkit", "-rreq.txt", "--", "-", "x; platform_machine=='aarch64'"]


@PROPERTY_SETTINGS
@given(argv=st.lists(st.one_of(st.sampled_from(PIP_WORDS), NASTY_TEXT), max_size=12))
@example(argv=["pip", "install", "-r"])
@example(argv=["conda", "install", "-c"])
def test_install_command_reader_answers_every_argv(argv: list[str]) -> None:
    where = Location("Dockerfile", line=3)
    with hang_guard():
        result = parse_install_command(argv, where)
    assert (result is None) == (installer_of(argv) is None)
    if result is None:
        return
    assert isinstance(result, InstallParse)
    for pkg in result.packages:
        assert pkg.name  # conda names keep their spelling when PyPI has none
    assert set(result.command.packages) == {p.name for p in result.packages}
    assert all(p.location == where for p in result.problems)


@PROPERTY_SETTINGS
@given(text=st.one_of(NASTY_TEXT, st.sampled_from(REQ_LINES), st.text(max_size=80)))
def test_requirement_text_is_a_package_a_problem_or_nothing(text: str) -> None:
    with hang_guard():
        result = parse_requirement_text(text, None)
    assert result is None or isinstance(result, (Package, ReadProblem))
    if isinstance(result, Package):
        _canonical(result)


def _toml_string(text: str) -> str:
    """A TOML basic string for ``text`` (control characters escaped)."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F or 0xD800 <= ord(ch) <= 0xDFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


TOML_VALUE = st.recursive(
    st.one_of(st.integers(-5, 5).map(str), st.sampled_from(["true", "1.5", "1979-05-27"]),
              st.one_of(st.sampled_from(REQ_LINES), NASTY_TEXT).map(_toml_string)),
    lambda inner: st.one_of(st.lists(inner, max_size=4).map(lambda xs: "[" + ", ".join(xs) + "]"),
                            st.dictionaries(st.sampled_from(["url", "name", "include-group", "index", "a"]), inner, max_size=3)
                            .map(lambda d: "{" + ", ".join(f"{k} = {v}" for k, v in d.items()) + "}")),
    max_leaves=8,
)
PYPROJECT_KEYS = ["[project]\ndependencies", "[project.optional-dependencies]\ncuda", "[dependency-groups]\ndev",
                  "[build-system]\nrequires", "[tool.uv]\nindex-url", "[tool.uv]\nextra-index-url", "[[tool.uv.index]]\nurl",
                  "[tool.uv]\nindex", "[project]\noptional-dependencies", "[tool]\nuv", "project"]


@PROPERTY_SETTINGS
@given(tables=st.lists(st.tuples(st.sampled_from(PYPROJECT_KEYS), TOML_VALUE), max_size=4))
def test_pyproject_reader_answers_any_shape(scratch: Path, tables: list[tuple[str, str]]) -> None:
    text = "\n".join(f"{key} = {value}" for key, value in tables)
    path = scratch / "pyproject.toml"
    path.write_text(text, encoding="utf-8")
    try:
        with hang_guard():
            inventory = pyproject.read(path, ReadOptions())
    except InputError as exc:
        assert exc.path == str(path)
        if "not valid TOML" in exc.message:
            assert exc.line is not None and exc.line >= 1
        return
    for pkg in inventory.packages:
        _canonical(pkg)
    _check_problem_locations(inventory, {str(path)}, text.count("\n") + 1)


@PROPERTY_SETTINGS
@given(data=mutated(seed_bytes("examples/**/uv.lock", "examples/**/pylock*.toml", "examples/**/pyproject.toml"), max_edits=4),
       name=st.sampled_from(["uv.lock", "pylock.toml", "pyproject.toml"]))
def test_lock_and_pyproject_readers_answer_mutated_files(scratch: Path, data: bytes, name: str) -> None:
    path = scratch / name
    path.write_bytes(data)
    reader = pyproject if name == "pyproject.toml" else locks
    try:
        with hang_guard():
            inventory = reader.read(path, ReadOptions())
    except InputError as exc:
        assert exc.path == str(path) and exc.message
        return
    for pkg in inventory.packages:
        _canonical(pkg)
    _check_problem_locations(inventory, {str(path)}, data.count(b"\n") + 1)


LOCK_ENTRY = st.dictionaries(
    st.sampled_from(["name", "version", "source", "dependencies", "wheels", "sdist", "marker", "index", "archive", "vcs"]),
    TOML_VALUE, max_size=6)


@PROPERTY_SETTINGS
@given(entries=st.lists(LOCK_ENTRY, max_size=5), style=st.sampled_from(["package", "packages"]))
@example(entries=[{"name": '"a"', "source": '{virtual = "."}', "dependencies": '[{name = "a"}]'}], style="package")
def test_lock_reader_answers_any_entry_shape(scratch: Path, entries: list[dict[str, str]], style: str) -> None:
    text = "\n".join(f"[[{style}]]\n" + "\n".join(f"{k} = {v}" for k, v in e.items()) for e in entries)
    path = scratch / ("uv.lock" if style == "package" else "pylock.toml")
    path.write_text(text, encoding="utf-8")
    try:
        with hang_guard():
            inventory = locks.read(path, ReadOptions())
    except InputError as exc:
        assert exc.path == str(path)
        return
    for pkg in inventory.packages:
        _canonical(pkg)


@PROPERTY_SETTINGS
@given(name=st.from_regex(r"[A-Za-z][A-Za-z0-9_.]{0,12}[A-Za-z0-9]", fullmatch=True),
       version=st.from_regex(r"[0-9]{1,3}(\.[0-9]{1,3}){0,3}(\+cu1[0-9]{2})?", fullmatch=True),
       platform=st.sampled_from(["manylinux_2_28_aarch64", "linux_x86_64", "any", "win_amd64", "macosx_14_0_arm64"]),
       url=st.booleans())
def test_wheel_names_round_trip(name: str, version: str, platform: str, url: bool) -> None:
    filename = f"{name.replace('-', '_')}-{version}-cp311-cp311-{platform}.whl"
    text = f"https://download.pytorch.org/whl/cu130/{filename.replace('+', '%2B')}" if url else filename
    parsed = parse_wheel_name(text)
    if re.search(r"[._]{2}|[._]$", name):
        return  # names packaging refuses
    assert parsed is not None, text
    assert parsed.name == canonicalize_name(name) and parsed.platforms == (platform,)


@PROPERTY_SETTINGS
@given(text=st.one_of(st.text(max_size=120), NASTY_TEXT.map(lambda t: f"http://{t}/x-1-py3-none-any.whl")))
@example(text="http://[/x-1.0-py3-none-any.whl")
def test_wheel_name_parser_never_raises(text: str) -> None:
    parsed = parse_wheel_name(text)
    assert parsed is None or (parsed.name and parsed.tags)


@PROPERTY_SETTINGS
@given(text=text_file(DOCKER_LINES))
@example(text="FROM a\nRUN <<EOF\n")  # heredoc never closed
@example(text="# escape=`\nFROM a\nRUN pip install x `\n")
@example(text="ARG A=${A:-${A:-${A}}}\nFROM x:${A}\n")
def test_dockerfile_reader_answers_every_text(scratch: Path, text: str) -> None:
    try:
        with hang_guard():
            parse(text)
    except DockerfileSyntaxError as exc:
        assert exc.line >= 1
    path = scratch / "Dockerfile"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        with hang_guard():
            inventory = dockerfile_source.read(path, ReadOptions(build_args={"TAG": "25.09-py3"}))
    except InputError as exc:
        assert exc.path == str(path)
        return
    except Exception as exc:
        if known_crash(exc):
            return  # reported: tests/test_fuzz_regressions.py::test_copy_of_an_overlong_file_name_keeps_the_dockerfile
        raise
    for pkg in inventory.packages:
        assert pkg.name
    _check_problem_locations(inventory, {str(path)}, text.count("\n") + text.count("\r") + 1)


@PROPERTY_SETTINGS
@given(data=mutated(seed_bytes("dockerfiles/**/Dockerfile")))
def test_dockerfile_reader_answers_mutated_bytes(scratch: Path, data: bytes) -> None:
    path = scratch / "Dockerfile.mutated"
    path.write_bytes(data)
    try:
        with hang_guard():
            inventory = dockerfile_source.read(path, ReadOptions())
    except EnvcheckError as exc:
        assert exc.message
        return
    except Exception as exc:
        if known_crash(exc):
            return  # reported: tests/test_fuzz_regressions.py
        raise
    assert isinstance(inventory, Inventory)


SHELL_WORDS = ["pip", "install", "&&", "||", ";", "|", "&", "(", ")", "sh", "-c", "bash", "'", '"', "\\", "$A", "${A:-x}",
               "${A:+y}", "if", "then", "fi", "do", "done", "export", "A=1", "sudo", "xargs", "\n", "torch==2.9", "`", "$("]


@PROPERTY_SETTINGS
@given(words=st.lists(st.one_of(st.sampled_from(SHELL_WORDS), NASTY_TEXT), max_size=30), glue=st.sampled_from([" ", "", "\t"]))
@example(words=["sh", "-c", '"sh -c \\"sh -c \\\\\\"pip install x\\\\\\"\\""'], glue=" ")
def test_shell_splitter_answers_every_script(words: list[str], glue: str) -> None:
    text = glue.join(words)
    with hang_guard():
        commands = split_commands(text, {"A": "1"})
    for command in commands:
        assert all(isinstance(word, str) for word in command.argv)
        assert 0 <= command.offset <= len(text), (command.offset, len(text))


def test_properties_cover_the_real_fixtures() -> None:
    """The seed vocabulary is the project's real inputs (a guard against an empty glob hiding the tests)."""
    assert len(REQ_LINES) > 40 and len(DOCKER_LINES) > 40
    assert json.dumps(REQ_LINES)  # all str


@PROPERTY_SETTINGS
@given(text=st.one_of(text_file(REQ_LINES), text_file(DOCKER_LINES)), nvfp4=st.booleans())
def test_every_check_answers_whatever_the_sources_read(scratch: Path, text: str, nvfp4: bool) -> None:
    """Checks are pure functions of the inventory: odd but readable facts must not break one (debug=True
    re-raises instead of turning the failure into an internal-error finding)."""
    from envcheck import engine
    from envcheck.profile import load_profile

    dockerfile = text.lstrip().upper().startswith(("FROM", "ARG", "#"))
    path = scratch / ("Dockerfile" if dockerfile else "requirements.txt")
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    reader = dockerfile_source if dockerfile else requirements
    try:
        inventory = reader.read(path, ReadOptions())
    except EnvcheckError:
        return
    with hang_guard():
        findings = engine.evaluate(inventory, load_profile("dgx-spark"), "dockerfile" if dockerfile else "requirements",
                                   RunOptions(nvfp4=nvfp4), debug=True)
    assert all(f.rule and f.gotcha and f.message for f in findings)
