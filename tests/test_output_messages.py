"""What the reports say, as a user reads them: paths named the same way however a file was reached, SARIF
URIs that point at the real file, hints only where they apply, fixes for the package at hand, and a typo
of a subcommand answered like git does. Real files through the real command line."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, run_envcheck

CUDA12 = "torch==2.5.1+cu121\n"


def _json(*args: str, cwd: Path) -> dict[str, Any]:
    done = run_envcheck("-f", "json", *args, cwd=cwd)
    assert "Traceback" not in done.stderr, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def _paths(report: dict[str, Any]) -> set[str]:
    names = {t["target"] for t in report["targets"]}
    return names | {f["location"]["path"] for t in report["targets"] for f in t["findings"] if "location" in f}


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github" / "requirements.txt").write_text(CUDA12)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "requirements.txt").write_text(CUDA12)
    (tmp_path / "requirements.txt").write_text(CUDA12)
    return tmp_path


def test_found_files_are_named_the_same_however_the_folder_was_given(project: Path) -> None:
    no_argument = _paths(_json(cwd=project))
    assert no_argument == _paths(_json(".", cwd=project)) == _paths(_json(str(project), cwd=project))
    assert {"requirements.txt", "sub/requirements.txt"} <= no_argument
    assert not any(p.startswith(("/", "./")) for p in no_argument)
    # A file the user names is shown as named; found files outside the working folder stay absolute.
    assert _paths(_json(str(project / "requirements.txt"), cwd=project)) == {str(project / "requirements.txt")}
    assert _paths(_json("requirements.txt", cwd=project)) == {"requirements.txt"}
    elsewhere = project / ".github"
    assert str(project / "requirements.txt") in _paths(_json(str(project), cwd=elsewhere))


def test_sarif_uris_point_at_the_real_files(project: Path) -> None:
    done = run_envcheck("-f", "sarif", "./.github/requirements.txt", str(project / "requirements.txt"), cwd=project)
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in json.loads(done.stdout)["runs"][0]["results"]}
    assert uris == {".github/requirements.txt", "requirements.txt"}
    assert all((project / uri).is_file() for uri in uris)
    outside = project / ".github"
    done = run_envcheck("-f", "sarif", str(project / "requirements.txt"), cwd=outside)
    (uri,) = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in json.loads(done.stdout)["runs"][0]["results"]}
    assert uri == (project / "requirements.txt").as_uri()


def test_kind_hint_only_where_the_kind_was_guessed(tmp_path: Path) -> None:
    missing = run_envcheck("nothing-here.txt", cwd=tmp_path)
    assert missing.returncode == 2 and "no such file" in missing.stdout
    assert "--kind" not in missing.stdout and "Check the path" in missing.stdout
    image = run_envcheck("image", f"oci-layout:{tmp_path / 'no-such-layout'}", cwd=tmp_path)
    assert image.returncode in (2, 3) and "--kind" not in image.stdout + image.stderr
    (tmp_path / "pyproject.toml").write_text("[project\nname = \n")
    broken = run_envcheck("pyproject.toml", cwd=tmp_path)
    assert broken.returncode == 2 and "pass --kind" in broken.stdout  # it may not be a pyproject at all
    forced = run_envcheck("--kind", "pyproject", "pyproject.toml", cwd=tmp_path)
    assert forced.returncode == 2 and "--kind" not in forced.stdout  # the user said what it is


def test_kind_error_lists_every_kind(tmp_path: Path) -> None:
    (tmp_path / "x.txt").write_text(CUDA12)
    done = run_envcheck("--kind", "nonsense", "x.txt", cwd=tmp_path)
    assert done.returncode == 2
    for kind in ("requirements", "freeze", "pyproject", "uv-lock", "pylock", "dockerfile", "wheel", "elf", "folder"):
        assert kind in done.stderr, done.stderr
    assert "freeze" in run_envcheck("--help").stdout
    assert run_envcheck("--kind", "freeze", "x.txt", cwd=tmp_path).returncode == 1


@pytest.mark.parametrize(("typed", "meant"), [("imgae", "image"), ("rule", "rules"), ("preflite", "preflight"),
                                              ("contianer", "container")])
def test_mistyped_subcommand_suggests_the_command(tmp_path: Path, typed: str, meant: str) -> None:
    done = run_envcheck(typed, "foo", cwd=tmp_path)
    assert done.returncode == 2 and f"envcheck {meant}" in done.stderr, done.stderr
    (tmp_path / typed).write_text(CUDA12)  # a file of that name is a file
    assert f"envcheck {meant}" not in run_envcheck("--kind", "requirements", typed, cwd=tmp_path).stderr


def test_single_file_binary_messages_name_it_once(tmp_path: Path) -> None:
    report = _json("-v", str(FIXTURES / "binaries" / "gpu_sm80.so"), str(FIXTURES / "binaries" / "libext_cuda12.so"), cwd=tmp_path)
    messages = [f["message"] for t in report["targets"] for f in t["findings"]]
    assert any(f["rule"] == "ARCH-elf-machine" for t in report["targets"] for f in t["findings"])
    for message in messages:
        assert "(e.g." not in message and "((" not in message, message
        path = message.split(" ", 1)[0]
        if path.startswith("/"):
            assert message.count(path) == 1, message


def test_binary_soname_fix_names_the_package_at_hand(tmp_path: Path) -> None:
    lib = (FIXTURES / "binaries" / "libext_cuda12.so").read_bytes()
    wheel = tmp_path / "cupy_cuda12x-13.0.0-cp312-cp312-manylinux_2_28_aarch64.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("cupy_cuda12x-13.0.0.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: false\n"
                    "Tag: cp312-cp312-manylinux_2_28_aarch64\n")
        zf.writestr("cupy_cuda12x-13.0.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: cupy-cuda12x\nVersion: 13.0.0\n")
        zf.writestr("cupy/_core/core.so", lib)
        zf.writestr("cupy_cuda12x-13.0.0.dist-info/RECORD", "cupy/_core/core.so,,\n")
    loose = tmp_path / "libmine.so"
    loose.write_bytes(lib)
    fixes = {}
    for target in (wheel, loose):
        report = _json(target.name, cwd=tmp_path)
        (fix,) = {f["fix"] for t in report["targets"] for f in t["findings"] if f["rule"] == "G1-binary-soname" and f["status"] == "FAIL"}
        fixes[target.name] = fix
    assert "cupy-cuda13x" in fixes[wheel.name] and "torch" not in fixes[wheel.name].split("reinstalling")[0]
    assert "Rebuild libmine.so" in fixes["libmine.so"] and "pip install torch" not in fixes["libmine.so"]


def test_each_error_advises_for_its_own_cause(tmp_path: Path) -> None:
    """An empty folder, a file of no known kind and an unreachable package index each get advice about that
    cause: never the generic "Fix or remove the broken input", never `docker login` for an index (issue 26
    item 12)."""
    import shutil

    from conftest import require
    from registry_fixtures import refusing_port

    (tmp_path / "empty").mkdir()
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01\x02 not any input\n")
    report = _json(str(tmp_path / "empty"), str(tmp_path / "blob.bin"), cwd=tmp_path)
    fixes = {t["target"]: [f["fix"] for f in t["findings"] if f["status"] == "ERROR"] for t in report["targets"]}
    assert "--allow-empty" in fixes[str(tmp_path / "empty")][0]
    assert "--kind" in fixes[str(tmp_path / "blob.bin")][0]
    assert not [f for found in fixes.values() for f in found if "Fix or remove the broken input" in f]
    require(shutil.which("uv") is not None, "uv is not installed (pip install 'envcheck-spark[resolve]')")
    (tmp_path / "requirements.txt").write_text("numpy==2.1.0\n")
    with refusing_port() as port:
        done = run_envcheck("-f", "json", "--resolve", "--no-cache", "--index-url", f"http://127.0.0.1:{port}/simple",
                            "requirements.txt", cwd=tmp_path, env={"UV_CACHE_DIR": str(tmp_path / "uv"), "UV_HTTP_RETRIES": "0"})
    assert done.returncode == 3, done.stdout + done.stderr
    errors = [f for t in json.loads(done.stdout)["targets"] for f in t["findings"] if f["status"] == "ERROR"]
    assert errors and not [f for f in errors if "docker" in f["fix"].lower() or "DOCKER_HOST" in f["fix"]], errors


def test_a_file_named_off_convention_is_read_by_its_content_and_says_so(tmp_path: Path) -> None:
    """`gpu-deps.toml` holding [project] and [[tool.uv.index]] is a pyproject.toml by content: judged as one,
    with a line saying which kind was assumed (issue 26 item 17). A TOML file of something else is not."""
    deps = tmp_path / "gpu-deps.toml"
    deps.write_text('[project]\nname = "trainer"\nversion = "0.1"\ndependencies = ["torch==2.5.1+cu121"]\n\n'
                    '[[tool.uv.index]]\nname = "pytorch"\nurl = "https://download.pytorch.org/whl/cu121"\n')
    done = run_envcheck("-f", "json", str(deps), cwd=tmp_path)
    (target,) = json.loads(done.stdout)["targets"]
    assert done.returncode == 1 and target["kind"] == "pyproject"
    assert {"G1-cuda12-local-version", "G1-cuda12-index"} <= {f["rule"] for f in target["findings"]}
    assert "read as a pyproject file, told from its content" in done.stderr and "--kind pyproject" in done.stderr
    other = tmp_path / "ruff.toml"
    other.write_text('line-length = 100\n[lint]\nselect = ["E"]\n')
    done = run_envcheck("-f", "json", str(other), cwd=tmp_path)
    assert done.returncode == 2 and json.loads(done.stdout)["targets"][0]["kind"] == "unknown"
    named = run_envcheck(str(tmp_path / "gpu-deps.toml"), "--kind", "pyproject", cwd=tmp_path)
    assert "told from its content" not in named.stderr


def test_help_names_every_subcommand() -> None:
    from envcheck.cli import COMMANDS
    text = run_envcheck("--help", env={"COLUMNS": "1000"}).stdout
    assert [c for c in COMMANDS if f"envcheck {c}" not in text] == [] and "cache [info|clean|update-facts]" in text


@pytest.mark.parametrize("args", [("snapshot", "ssh://spark@127.0.0.1:1", "-f", "json", "-o", "-"),
                                  ("container", "nvcr.io/nvidia/pytorch:25.11-py3", "-f", "json")])
def test_a_missing_extra_is_said_one_way_with_exit_2(tmp_path: Path, args: tuple[str, ...]) -> None:
    """paramiko missing (the ssh extra) reads as uv missing (the resolve extra): `pip install 'envcheck-spark[EXTRA]'`,
    an input-error of this machine's setup (exit 2), not an unreachable service (exit 3)."""
    from conftest import REPO
    (tmp_path / "paramiko.py").write_text("raise ImportError('No module named paramiko')\n")
    done = run_envcheck(*args, env={"PYTHONPATH": f"{tmp_path}:{REPO}", "DOCKER_HOST": "ssh://spark@127.0.0.1:1"})
    (finding,) = [f for t in json.loads(done.stdout)["targets"] for f in t["findings"] if f["status"] == "ERROR"]
    assert done.returncode == 2 and finding["rule"] == "input-error", done.stdout
    assert "needs paramiko" in finding["message"]
    assert finding["message"].endswith(", which is not installed here: pip install 'envcheck-spark[ssh]'")
    assert finding["fix"] == "Install envcheck's ssh extra where envcheck runs (pip install 'envcheck-spark[ssh]')."



def test_the_extras_envcheck_names_are_pyproject_s() -> None:
    from conftest import REPO

    from envcheck import toml
    extras = toml.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert [p.split(">")[0] for p in extras["ssh"]] == ["paramiko"] and [p.split(">")[0] for p in extras["resolve"]] == ["uv"]
