"""`--resolve` false-alarm classes from real projects (issue 32), against a loopback index of their own:
pure-Python sdists and source trees are no source-build alarm, a pure-Python wheel's helpers for other machines
are no ARCH fault, a pin of a version the index never served is FAIL, and a project that asks uv for managed
interpreters still resolves for the target."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import require, run_envcheck
from package_index import BINARIES, PackageIndex, build_sdist, build_wheel, serve

X86 = "py3-none-manylinux_2_28_x86_64"


@pytest.fixture(scope="module")
def index() -> Iterator[PackageIndex]:
    idx = PackageIndex()
    idx.add("puresrc", build_sdist("puresrc", "1.0"))  # langdetect, openai-whisper: an sdist on every platform
    idx.add("x86src", build_sdist("x86src", "1.0"), build_wheel("x86src", "1.0", (), {"x86src/_c.so": BINARIES / "plain_exe"}, tag=X86))
    idx.add("xformers", build_sdist("xformers", "0.0.35"))
    # a release with only an sdist of a project whose older release shipped an x86_64 wheel: compiled code
    idx.add("oldwheels", build_wheel("oldwheels", "1.0", (), {"oldwheels/_c.so": BINARIES / "plain_exe"}, tag=X86), build_sdist("oldwheels", "2.0"))
    # debugpy: one py3-none-any wheel that bundles attach helpers for x86_64 next to its aarch64 ones
    idx.add("attachy", build_wheel("attachy", "1.0", (), {
        "attachy/attach/attach_linux_amd64.so": BINARIES / "libext_cuda13.so",
        "attachy/attach/attach_linux_aarch64.so": BINARIES / "aarch64_libtorch_global_deps.so"}, tag="py3-none-any"))
    idx.add("anyx86", build_wheel("anyx86", "1.0", (), {"anyx86/lib/libcore.so": BINARIES / "libext_cuda13.so"}, tag="py3-none-any"))
    idx.add("helper", build_wheel("helper", "1.0", tag="py3-none-any"))
    idx.add("vllm", build_wheel("vllm", "0.11.2", tag="py3-none-any"))
    idx.add("vllm", build_wheel("vllm", "0.11.5", tag="py3-none-any"))  # a release PyPI's recorded history lacks
    # what a requirement names and what the resolver picks for it are one package (PyPI's torch 2.9.0 on aarch64 is CPU-only)
    idx.add("torch", build_wheel("torch", "2.9.0", tag="cp312-cp312-manylinux_2_28_aarch64"))
    idx.add("cupy-cuda12x", build_wheel("cupy-cuda12x", "13.3.0", tag="cp312-cp312-manylinux_2_28_aarch64"))
    # a CUDA 12 distribution whose wheel holds two extensions linking CUDA 12 libraries (cupy-cuda12x's real wheel: five)
    idx.add("gpulibs-cu12", build_wheel("gpulibs-cu12", "1.0", (), {
        "gpulibs/_a.so": BINARIES / "libext_cuda12.so", "gpulibs/_b.so": BINARIES / "libext_cuda12.so"}))
    yield from serve(idx)


def _run(tmp_path: Path, index: PackageIndex, name: str, text: str, *args: str) -> dict[str, Any]:
    if not name.endswith(".lock"):
        require(shutil.which("uv") is not None, "uv is not installed (pip install 'envcheck-spark[resolve]')")
    target = tmp_path / name
    target.write_text(text, encoding="utf-8")
    env = {"PIP_INDEX_URL": "", "PIP_EXTRA_INDEX_URL": "", "PIP_FIND_LINKS": "", "UV_CACHE_DIR": str(tmp_path / "uv"),
           "UV_INDEX_URL": "", "UV_EXTRA_INDEX_URL": "", "ENVCHECK_CACHE_DIR": str(tmp_path / "cache")}
    proc = run_envcheck("--resolve", "--index-url", index.url, "-f", "json", "--fail-on", "never", *args, str(target), env=env)
    assert proc.stdout, proc.stderr
    target_report: dict[str, Any] = json.loads(proc.stdout)["targets"][0]
    return target_report


def _by(target: dict[str, Any], rule: str) -> dict[str, str]:
    return {str(f["evidence"].get("package") or f["evidence"].get("distribution")): f["status"]
            for f in target["findings"] if f["rule"] == rule and f["status"] != "PASS"}


def test_a_source_archive_is_an_alarm_only_where_it_compiles_for_a_machine(tmp_path: Path, index: PackageIndex) -> None:
    target = _run(tmp_path, index, "requirements.txt", "puresrc==1.0\nx86src==1.0\nxformers==0.0.35\noldwheels==2.0\n", "--kind", "freeze")
    assert _by(target, "ARCH-resolve-source-build") == {"puresrc": "INFO", "x86src": "WARN", "xformers": "FAIL", "oldwheels": "WARN"}, target["findings"]


def test_a_pure_python_wheels_helpers_for_other_machines_are_no_arch_fault(tmp_path: Path, index: PackageIndex) -> None:
    target = _run(tmp_path, index, "requirements.txt", "attachy==1.0\nanyx86==1.0\n")
    assert _by(target, "ARCH-elf-machine") == {"anyx86": "FAIL"}


def test_a_pin_of_a_version_the_index_never_served_is_fail(tmp_path: Path, index: PackageIndex) -> None:
    target = _run(tmp_path, index, "requirements.txt", "helper==9.9.9rc1\n")
    found = [f for f in target["findings"] if f["rule"] == "ARCH-resolve-no-file"]
    assert [f["status"] for f in found] == ["FAIL"] and "no such version" in found[0]["message"], target["findings"]


def test_with_resolve_the_index_not_the_recorded_release_list_says_whether_a_version_exists(tmp_path: Path, index: PackageIndex) -> None:
    """Offline, vllm==0.11.5 is not among the releases wheels.toml recorded (G9 FAIL); the index given to --resolve serves it."""
    target = _run(tmp_path, index, "requirements.txt", "vllm==0.11.5\n")
    assert not [f for f in target["findings"] if f["rule"] in ("G9-version-not-served", "ARCH-resolve-no-file") and f["status"] != "PASS"]
    offline = run_envcheck("-f", "json", "--fail-on", "never", str(tmp_path / "requirements.txt"))
    found = {f["rule"]: f["status"] for t in json.loads(offline.stdout)["targets"] for f in t["findings"]}
    assert found.get("G9-version-not-served") == "FAIL"


def test_a_requirement_and_its_resolved_version_are_one_package(tmp_path: Path, index: PackageIndex) -> None:
    """torch==2.9.0 resolved to torch 2.9.0 on its own line is one CPU-only torch, named once; an unpinned
    cupy-cuda12x takes the resolved version into its one finding."""
    target = _run(tmp_path, index, "requirements.txt", "torch==2.9.0\ncupy-cuda12x\n")
    bad = [f for f in target["findings"] if f["gotcha"] == "G1" and f["status"] != "PASS"]
    assert sorted(f["rule"] for f in bad) == ["G1-cpu-build", "G1-cuda12-distribution"], bad
    assert not [f for f in bad if "on this line" in f["message"]], bad
    torch = next(f for f in bad if f["evidence"]["package"] == "torch")
    assert torch["message"].count("torch 2.9.0") == 1, torch
    cupy = next(f for f in bad if f["evidence"]["package"] == "cupy-cuda12x")
    assert cupy["message"].startswith("cupy-cuda12x 13.3.0 ") and cupy["message"].count("13.3.0") == 1, cupy


def test_a_cuda12_distribution_and_the_binaries_resolve_read_are_one_finding(tmp_path: Path, index: PackageIndex) -> None:
    """The line that names a CUDA 12 distribution is the finding (its --fix replaces it); the binaries of the
    wheel --resolve read for it are its evidence, not one more G1 finding per package or per binary."""
    target = _run(tmp_path, index, "requirements.txt", "gpulibs-cu12==1.0\n")
    bad = [f for f in target["findings"] if f["gotcha"] == "G1" and f["status"] != "PASS"]
    assert [(f["rule"], f["status"]) for f in bad] == [("G1-cuda12-distribution", "FAIL")], bad
    assert bad[0]["location"]["line"] == 1 and bad[0]["evidence"]["count"] == 2, bad
    assert sorted(bad[0]["evidence"]["binaries"]) == ["gpulibs/_a.so", "gpulibs/_b.so"], bad


def test_offline_a_package_uvs_cache_lacks_is_a_service_problem_not_a_conflict(tmp_path: Path, index: PackageIndex) -> None:
    """uv --offline refuses what its cache lacks in a resolver's words ("torch was not found in the cache ...
    unsatisfiable"): that says nothing about the requirements (no G9-resolve-conflict, no ARCH-resolve-no-file)."""
    target = _run(tmp_path, index, "requirements.txt", "torch==2.9.0\n", "--offline")
    rules = {f["rule"]: f["status"] for f in target["findings"]}
    assert rules.get("service-error") == "ERROR" and "--offline and uv's cache lacks" in str(target["findings"]), rules
    assert rules.get("G9-resolve-conflict") in (None, "PASS") and rules.get("ARCH-resolve-no-file") in (None, "PASS"), rules
    assert rules.get("G1-cpu-build") == "WARN", rules  # what the file says is still judged


def test_a_project_that_wants_managed_pythons_still_resolves_for_the_target(tmp_path: Path, index: PackageIndex) -> None:
    text = ('[project]\nname = "p"\nversion = "1"\nrequires-python = ">=3.12"\ndependencies = ["helper==1.0"]\n\n'
            '[tool.uv]\npython-preference = "only-managed"\n')
    target = _run(tmp_path, index, "pyproject.toml", text)
    assert not [f for f in target["findings"] if f["status"] == "ERROR"], target["findings"]
    assert [r["name"] for r in target["inventory"]["resolved"]] == ["helper"]


def test_a_git_source_in_a_lock_is_built_from_source_not_missing(tmp_path: Path, index: PackageIndex) -> None:
    text = ('version = 1\nrequires-python = ">=3.12"\n\n[[package]]\nname = "p"\nversion = "1"\nsource = { virtual = "." }\n'
            'dependencies = [{ name = "gitdep" }, { name = "flash-attn" }]\n\n'
            '[[package]]\nname = "gitdep"\nversion = "0.1.0"\nsource = { git = "https://github.com/o/gitdep?rev=main#0123abcd" }\n\n'
            '[[package]]\nname = "flash-attn"\nversion = "2.8.3"\nsource = { git = "https://github.com/Dao-AILab/flash-attention#0123abcd" }\n')
    target = _run(tmp_path, index, "uv.lock", text)
    assert not [f for f in target["findings"] if f["rule"] == "ARCH-resolve-no-file" and f["status"] != "PASS"], target["findings"]
    assert _by(target, "ARCH-resolve-source-build") == {"gitdep": "INFO", "flash-attn": "FAIL"}


def test_what_resolve_read_is_not_judged_again_from_the_table(tmp_path: Path, index: PackageIndex) -> None:
    """With --resolve the picked vLLM file itself is read (G1-binary-soname): the offline table's finding stays out."""
    target = _run(tmp_path, index, "requirements.txt", "vllm==0.11.2\n")
    assert [r["name"] for r in target["inventory"]["resolved"]] == ["vllm"]
    assert not [f for f in target["findings"] if f["rule"] == "G1-pypi-vllm-cuda12"]
    plain = tmp_path / "plain.txt"
    plain.write_text("vllm==0.11.2\n", encoding="utf-8")
    proc = run_envcheck("-f", "json", "--fail-on", "never", "--kind", "requirements", str(plain))
    assert "G1-pypi-vllm-cuda12" in proc.stdout


def test_an_editable_project_that_is_not_there_is_left_out_and_the_rest_resolves(tmp_path: Path, index: PackageIndex) -> None:
    """`-e .` in a requirements file checked without its project: uv and pip stop there ("does not appear to be
    a Python project"); envcheck resolves the rest, its includes too, and says at INFO what it left out."""
    (tmp_path / "more.txt").write_text("vllm==0.11.2\n", encoding="utf-8")
    target = _run(tmp_path, index, "requirements.txt", "-e .\n-r more.txt\nhelper==1.0\n-e ./sub/../gone[gpu]\n")
    assert not [f for f in target["findings"] if f["status"] == "ERROR"], target["findings"]
    assert sorted(r["name"] for r in target["inventory"]["resolved"]) == ["helper", "vllm"]
    notes = [f for f in target["findings"] if f["rule"] == "input-skipped"]
    assert [(f["status"], f["location"]["line"]) for f in notes] == [("INFO", 1), ("INFO", 4)], notes
    assert notes[0]["message"].startswith("-e .: not resolved: ") and "the rest is resolved without it" in notes[0]["message"]
    assert f"not resolved: {tmp_path.resolve() / 'gone'} is not here" in notes[1]["message"], notes  # named without `sub/..`


def test_an_editable_path_in_an_included_file_is_read_as_pip_reads_it(tmp_path: Path, index: PackageIndex) -> None:
    """`-e ./x` in a file included with `-r`: pip and uv read `-r` paths from the including file and `-e` paths from
    the working folder (uv's #1421, pip's own), which envcheck takes as the top file's. One that is not there is left
    out at INFO on its own file and line, as a top-level `-e .` is; the rest (its project beside the top file) resolves."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "more.txt").write_text("-e ./gone\n-e ./mine\nvllm==0.11.2\n", encoding="utf-8")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "pyproject.toml").write_text('[project]\nname = "mine"\nversion = "0.1"\ndependencies = ["helper==1.0"]\n\n'
                                                      '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n')
    target = _run(tmp_path, index, "requirements.txt", "-r sub/more.txt\n")
    assert not [f for f in target["findings"] if f["status"] == "ERROR"], target["findings"]
    assert sorted(r["name"] for r in target["inventory"]["resolved"]) == ["helper", "mine", "vllm"], target["findings"]
    (note,) = [f for f in target["findings"] if f["rule"] == "input-skipped"]
    assert note["status"] == "INFO" and note["location"] == {"path": str(tmp_path / "sub" / "more.txt"), "line": 1}, note
    assert note["message"].startswith(f"-e ./gone: not resolved: {tmp_path / 'gone'} is not here"), note


def test_an_editable_project_that_is_there_is_read(tmp_path: Path, index: PackageIndex) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "mine"\nversion = "0.1"\ndependencies = ["helper==1.0"]\n\n'
                                             '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n')
    target = _run(tmp_path, index, "requirements.txt", "-e .\nvllm==0.11.2\n")
    assert not [f for f in target["findings"] if f["rule"] == "input-skipped"], target["findings"]
    assert "helper" in [r["name"] for r in target["inventory"]["resolved"]], target["findings"]
