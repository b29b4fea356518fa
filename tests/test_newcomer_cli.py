"""What a newcomer types on the first day, with habits from ruff, trivy, hadolint and git: each gets an answer
that names envcheck's own spelling, never a Docker Hub lookup or a neighbouring command that does something
else. Real files through the real command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_envcheck

CUDA12 = "torch==2.5.1+cu121\nnvidia-cublas-cu12==12.1.3.1\n"


@pytest.mark.parametrize(("words", "said"), [
    (("check", "requirements.txt"), "`envcheck requirements.txt`"),
    (("lint", "."), "`envcheck .`"),
    (("check",), "`envcheck .`"),
    (("explain", "G1-cuda12-index"), "`envcheck rules G1-cuda12-index`"),
    (("explain",), "`envcheck rules [ID|G2]`"),
    (("version",), "`envcheck --version`"),
    (("g1-cuda12-index",), "`envcheck rules G1-cuda12-index`"),
    (("G2",), "`envcheck rules G2`"),
])
def test_another_tools_command_word_names_envchecks_spelling(tmp_path: Path, words: tuple[str, ...], said: str) -> None:
    """`envcheck check x` once answered "the most similar command is `envcheck cache`"; a rule id given as a
    PATH was a missing file. Each now names the command that does it, with exit 2 and nothing checked."""
    (tmp_path / "requirements.txt").write_text(CUDA12)
    done = run_envcheck(*words, cwd=tmp_path)
    assert done.returncode == 2 and said in done.stderr, done.stderr
    assert "envcheck cache" not in done.stderr and done.stdout == ""
    (tmp_path / words[0]).write_text(CUDA12)  # a file of that name is a file, checked as one
    named = run_envcheck("--kind", "requirements", words[0], cwd=tmp_path)
    assert named.returncode == 1 and said not in named.stderr, named.stderr


def test_what_the_hint_names_does_what_was_meant(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text(CUDA12)
    assert run_envcheck("requirements.txt", cwd=tmp_path).returncode == 1
    explained = run_envcheck("rules", "G1-cuda12-index", cwd=tmp_path)
    assert explained.returncode == 0 and explained.stdout.startswith("G1-cuda12-index")


def _layout(folder: Path) -> Path:
    from registry_fixtures import Layer, config_for, tar_of, write_oci_layout
    write_oci_layout(folder, config_for("arm64", ["CUDA_VERSION=12.4.1", "PATH=/usr/bin"]),
                     [Layer(tar_of({"etc/os-release": b"ID=ubuntu\n"}))], "app")
    return folder


@pytest.mark.parametrize("spelled", ["out", "./out", "out/"])
def test_an_image_layout_folder_without_its_transport_is_named_not_looked_up(tmp_path: Path, spelled: str) -> None:
    """`envcheck image ./out` was "invalid registry host '.'", and `envcheck image out` asked Docker Hub for
    docker.io/library/out: both name `oci-layout:` now, before any network use, and that spelling reads it."""
    _layout(tmp_path / "out")
    env = {"ENVCHECK_CACHE_DIR": str(tmp_path / "cache")}
    done = run_envcheck("image", spelled, cwd=tmp_path, env=env, timeout=30)
    assert done.returncode == 2 and f"`envcheck image oci-layout:{spelled}`" in done.stderr, done.stdout + done.stderr
    assert "registry" not in done.stdout and "docker.io" not in done.stderr
    read = run_envcheck("image", f"oci-layout:{spelled}", "-f", "json", "--no-progress", cwd=tmp_path, env=env)
    found = {f["rule"] for t in json.loads(read.stdout)["targets"] for f in t["findings"] if f["status"] == "FAIL"}
    assert read.returncode == 1 and "G1-image-cuda" in found, read.stdout


def test_a_local_file_given_to_image_names_docker_archive(tmp_path: Path) -> None:
    (tmp_path / "saved.tar").write_bytes(b"")
    done = run_envcheck("image", "saved.tar", cwd=tmp_path, timeout=30)
    assert done.returncode == 2 and "`envcheck image docker-archive:saved.tar`" in done.stderr, done.stderr


def test_a_missing_layout_folder_is_said_to_be_missing(tmp_path: Path) -> None:
    """oci-layout: of a folder that does not exist said "it has no index.json" with "Fix or remove the broken
    input"; it says the folder is missing, and a file or a folder without index.json each get their own advice."""
    (tmp_path / "out.tar").write_bytes(b"")
    (tmp_path / "plain").mkdir()
    said = {}
    for name in ("nope", "out.tar", "plain"):
        done = run_envcheck("image", f"oci-layout:{name}:app", "-f", "json", "--no-progress", cwd=tmp_path, timeout=30)
        (error,) = [f for t in json.loads(done.stdout)["targets"] for f in t["findings"] if f["status"] == "ERROR"]
        assert done.returncode == 2 and "Fix or remove the broken input" not in error["fix"], error
        said[name] = error["message"]
    assert said["nope"] == "nope: no such folder"
    assert "is a file" in said["out.tar"] and "index.json" in said["plain"]


def test_fix_with_diff_prints_the_diff_and_writes_nothing(tmp_path: Path) -> None:
    """`--fix --diff` is `--diff` (as ruff's): the change is shown, the file keeps its bytes."""
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(CUDA12)
    done = run_envcheck("--fix", "--diff", "requirements.txt", cwd=tmp_path)
    assert done.returncode == 1 and "+nvidia-cublas>=13" in done.stdout, done.stdout + done.stderr
    assert requirements.read_text() == CUDA12
    assert "also with --fix" in run_envcheck("--help", env={"COLUMNS": "1000"}).stdout


@pytest.mark.parametrize(("variable", "value"), [("ENVCHECK_FAIL_ON", "warnings"), ("ENVCHECK_IGNORE", "G9-unpined")])
def test_a_bad_environment_variable_is_named(tmp_path: Path, variable: str, value: str) -> None:
    """A wrong ENVCHECK_* value said "environment: fail-on must be ..."; the error names the variable to fix."""
    (tmp_path / "requirements.txt").write_text(CUDA12)
    done = run_envcheck("requirements.txt", cwd=tmp_path, env={variable: value})
    assert done.returncode == 2 and done.stderr.startswith(f"envcheck: error: {variable}: "), done.stderr
    assert value in done.stderr


def test_an_image_step_that_installs_a_cuda12_torch_is_one_finding_with_or_without_its_layers(tmp_path: Path) -> None:
    """`RUN pip install torch==2.5.1+cu121 --index-url .../cu121` in an image's history was two FAILs (the pin and
    the index, where the same Dockerfile line is one), and with --deep three (the layer's METADATA of that torch
    too). One step, one cause: one G1 finding at the step, naming the rest. A CUDA 12 torch installed without a
    history step of its own stays a finding of its own."""
    from registry_fixtures import Layer, config_for, metadata, tar_of, write_oci_layout

    step = "/bin/sh -c pip install torch==2.5.1+cu121 --index-url https://download.pytorch.org/whl/cu121"
    files: dict[str, bytes | None] = {
        "usr/local/lib/python3.12/site-packages/torch-2.5.1+cu121.dist-info/METADATA": metadata("torch", "2.5.1+cu121"),
        "usr/local/lib/python3.12/site-packages/torchaudio-2.5.1+cu121.dist-info/METADATA": metadata("torchaudio", "2.5.1+cu121")}
    write_oci_layout(tmp_path / "out", config_for("arm64", history=[{"created_by": step}]), [Layer(tar_of(files))], "app")
    (tmp_path / "Dockerfile").write_text(f"FROM ubuntu:24.04\nRUN {step.removeprefix('/bin/sh -c ')}\n")
    env = {"ENVCHECK_CACHE_DIR": str(tmp_path / "cache")}

    def g1(*args: str) -> list[dict[str, str]]:
        done = run_envcheck(*args, "-f", "json", cwd=tmp_path, env=env)
        assert done.returncode == 1, done.stdout + done.stderr
        return [{"rule": f["rule"], "where": f["location"].get("member", str(f["location"].get("line"))), "message": f["message"]}
                for t in json.loads(done.stdout)["targets"] for f in t["findings"] if f["gotcha"] == "G1" and f["status"] == "FAIL"]

    assert len(g1("Dockerfile")) == 1
    (config_level,) = g1("image", "--no-progress", "oci-layout:out:app")
    assert config_level["where"] == "history[0]" and "cu121 index" in config_level["message"]
    deep = g1("image", "--deep", "--no-progress", "oci-layout:out:app")
    assert [f["where"] for f in deep] == ["history[0]", "/usr/local/lib/python3.12/site-packages/torchaudio-2.5.1+cu121.dist-info/METADATA"], deep
    assert "installed in the layers (/usr/local/lib/python3.12/site-packages/torch-2.5.1+cu121.dist-info/METADATA)" in deep[0]["message"]


def test_a_diff_side_that_cannot_be_read_is_not_compared(tmp_path: Path) -> None:
    """`envcheck diff good.json empty-folder` listed every package of good.json as removed and the read error
    itself as a G9 FAIL ("input-error not reported → ERROR"), then summed up "nothing changed" once the drift
    was gone: an unread side is not an empty side. The ERROR stands alone, exit 2."""
    (tmp_path / "requirements.txt").write_text(CUDA12)
    (tmp_path / "empty").mkdir()
    assert run_envcheck("snapshot", "requirements.txt", "-o", "good.json", cwd=tmp_path).returncode == 0
    for args in (("good.json", "empty"), ("--twins", "good.json", "empty")):
        done = run_envcheck("diff", *args, "-f", "json", cwd=tmp_path)
        findings = [f for t in json.loads(done.stdout)["targets"] for f in t["findings"]]
        assert done.returncode == 2 and [f["rule"] for f in findings] == ["input-error"], findings
    text = run_envcheck("diff", "good.json", "empty", cwd=tmp_path)
    assert "summary: not compared: a side could not be read" in text.stdout and "nothing changed" not in text.stdout
    same = run_envcheck("diff", "good.json", "requirements.txt", cwd=tmp_path)
    assert same.returncode == 0 and "summary: nothing changed: the two sides match" in same.stdout, same.stdout


def test_a_bare_word_that_is_no_file_says_it_was_read_as_an_image(tmp_path: Path) -> None:
    """`envcheck snapshot requirments` (a typo, no such file) is a Docker Hub image by docker's rules; when the
    registry cannot answer, the error says so, rather than only that registry-1.docker.io was unreachable."""
    from registry_fixtures import refusing_port
    with refusing_port() as port:
        proxy = f"http://127.0.0.1:{port}"
        done = run_envcheck("snapshot", "requirments", "-o", "-", "-f", "json", "--no-cache", cwd=tmp_path,
                            env={"HTTPS_PROXY": proxy, "https_proxy": proxy, "NO_PROXY": "", "no_proxy": ""}, timeout=60)
    (error,) = [f for t in json.loads(done.stdout)["targets"] for f in t["findings"] if f["status"] == "ERROR"]
    assert done.returncode == 3, done.stdout
    assert error["message"].startswith(f"requirments is no file or folder in {tmp_path}, so it was read as the image "
                                       "docker.io/library/requirments:latest: "), error["message"]


def test_an_output_that_cannot_be_written_stops_before_the_check(tmp_path: Path) -> None:
    """-o into a missing folder was found only after the whole check (minutes for `image --deep`), and after
    --fix had rewritten the files. It is a usage error before anything is read or written now."""
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(CUDA12)
    for output in ("nodir/report.json", "."):
        done = run_envcheck("--fix", "-f", "json", "-o", output, "requirements.txt", cwd=tmp_path)
        assert done.returncode == 2 and f"-o {output}: cannot write the report" in done.stderr, done.stderr
        assert requirements.read_text() == CUDA12 and "fixed" not in done.stderr
    snapshot = run_envcheck("snapshot", "requirements.txt", "-o", "nodir/good.json", cwd=tmp_path)
    assert snapshot.returncode == 2 and "its folder nodir does not exist" in snapshot.stderr, snapshot.stderr


def test_dash_capital_v_is_the_version_as_in_ruff_uv_and_pip() -> None:
    from envcheck import __version__
    for option in ("-V", "--version"):
        done = run_envcheck(option)
        assert done.returncode == 0 and done.stdout == f"envcheck {__version__}\n", (option, done.stdout, done.stderr)
