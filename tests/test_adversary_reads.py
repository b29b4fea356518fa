"""Hostile inputs that try to make envcheck read (and echo) host files outside what the user gave: a Dockerfile's
build context, a requirements file it copies, a uv workspace's members. Through the real command line; the
secret planted outside must appear in no output, and the run stays bounded (docs/limits.md)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from bounded import run_envcheck_bounded
from conftest import run_envcheck

SECRET = "hunter2SECRETVALUE"
BASE = "FROM nvcr.io/nvidia/pytorch:25.09-py3\n"


def _outside(tmp_path: Path) -> Path:
    """A file outside every project below whose content must never be read: a requirements line that would
    fail (torch+cu121) and the planted secret."""
    secret = tmp_path / "outside" / "netrc"
    secret.parent.mkdir()
    secret.write_text(f"torch==2.5.1+cu121\n{SECRET} x\n", encoding="utf-8")
    return secret


def _report(*args: str) -> tuple[list[dict[str, Any]], str]:
    done = run_envcheck("-f", "json", "--fail-on", "never", "-v", "--no-cache", *args)
    assert done.returncode in (0, 2), done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return [f for t in json.loads(done.stdout)["targets"] for f in t["findings"]], done.stdout + done.stderr


@pytest.mark.parametrize("how", ["link-in-copied-folder", "absolute-include", "dotdot-include", "link-include"])
def test_a_dockerfile_never_reads_a_host_file_outside_its_build_context(tmp_path: Path, how: str) -> None:
    secret = _outside(tmp_path)
    ctx = tmp_path / "ctx"
    (ctx / "app").mkdir(parents=True)
    (ctx / "app" / "ok.txt").write_text("torch==2.3.0\n", encoding="utf-8")  # NGC's torch replaced: a FAIL here
    include = {"absolute-include": str(secret), "dotdot-include": "../../outside/netrc", "link-include": "linked.txt"}
    if how == "link-in-copied-folder":
        (ctx / "app" / "requirements.txt").symlink_to(secret)
    else:
        (ctx / "app" / "requirements.txt").write_text(f"-r ok.txt\n-r {include[how]}\n", encoding="utf-8")
        (ctx / "app" / "linked.txt").symlink_to(secret)
    (ctx / "Dockerfile").write_text(BASE + "COPY app /app\nRUN pip install -r /app/requirements.txt\n", encoding="utf-8")
    found, text = _report(str(ctx / "Dockerfile"))
    assert SECRET not in text and "cu121" not in text, text
    failed = {f["location"]["path"] for f in found if f["status"] in ("FAIL", "ERROR")}
    if how == "link-in-copied-folder":
        assert not failed, found
    else:
        assert failed == {str(ctx / "app" / "ok.txt")}, found  # the file inside the context is still read
        notes = [f["message"] for f in found if f["rule"] == "input-skipped"]
        assert any("outside the build context" in m for m in notes), notes


def test_a_dockerfile_at_a_repository_root_never_takes_a_folder_above_as_its_context(tmp_path: Path) -> None:
    _outside(tmp_path)
    (tmp_path / "requirements.txt").write_text(f"torch==2.5.1+cu121\n{SECRET} x\n", encoding="utf-8")
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "Dockerfile").write_text(BASE + "COPY requirements.txt /r.txt\nRUN pip install -r /r.txt\n", encoding="utf-8")
    found, text = _report(str(repo / "Dockerfile"))
    assert SECRET not in text and "cu121" not in text, text
    assert not [f for f in found if "build context taken" in f["message"]], found


@pytest.mark.parametrize("pattern", ["/**", "../../../../../../../**", "../../../../../../*/*/*", "*/../../outside", "escape"])
def test_uv_workspace_members_stay_inside_the_project_and_the_walk_is_bounded(tmp_path: Path, pattern: str) -> None:
    secret = _outside(tmp_path)
    (secret.parent / "pyproject.toml").write_text(
        f'[project]\nname = "foo"\nversion = "1"\n[project.optional-dependencies]\nx = ["torch==2.5.1+cu121", "{SECRET}"]\n',
        encoding="utf-8")
    project = tmp_path / "project"
    project.mkdir()
    (project / "escape").symlink_to(secret.parent)
    (project / "pyproject.toml").write_text(
        '[project]\nname = "app"\nversion = "1"\ndependencies = ["foo[x]"]\n[tool.uv.sources]\nfoo = { workspace = true }\n'
        f'[tool.uv.workspace]\nmembers = ["{pattern}"]\n', encoding="utf-8")
    run = run_envcheck_bounded(str(project / "pyproject.toml"), "--no-cache", "-f", "json", "--fail-on", "never", "-v")
    run.assert_within(seconds=10, rss_mb=300)
    assert SECRET not in run.stdout + run.stderr and "cu121" not in run.stdout, run.describe()
    report = json.loads(run.stdout)
    assert not [f for t in report["targets"] for f in t["findings"] if f["status"] == "ERROR"], run.describe()


# Files a hostile input can point a reader at (compose `dockerfile: /etc/shadow`, `--kind requirements ~/.netrc`):
# whatever line a syntax error quotes, the secret in it is masked.
SECRET_FILES = {
    "shadow": "root:$6$rounds=5000$saltsalt$S3cr3tHashS3cr3tHashS3cr3tHashS3cr3tHash0123456789abcdef:19000:0:99999:7:::\n",
    "yescrypt": "admin:$y$j9T$F5Jx5fExrKuPp53xLKQ..1$S3cr3tHashX3DX6M94c7o.9agCG9G317fhZg9SqC.5i5r:19000::\n",
    "htpasswd": "user:$2y$10$S3cr3tHashR9h/cIPz0gi.URNNX3kh2OPST9/PgBkqquzi.Ss7KIUgO2t\n",
    "credentials": "[default]\naws_secret_access_key = S3cr3tHashwJalrXUtnFEMIK7MDENGbPxRfiCY\n",
    "netrc": "machine github.com\n  login x\n  password S3cr3tHash-netrc-value\n",
}


@pytest.mark.parametrize("name", sorted(SECRET_FILES))
def test_a_secret_file_read_as_a_dockerfile_or_requirements_never_shows_its_secret(tmp_path: Path, name: str) -> None:
    secret = tmp_path / name
    secret.write_text(SECRET_FILES[name], encoding="utf-8")
    compose = tmp_path / "compose.yaml"
    compose.write_text(f"services:\n  app:\n    build:\n      context: /\n      dockerfile: {secret}\n", encoding="utf-8")
    for args in ([str(compose)], ["--kind", "dockerfile", str(secret)], ["--kind", "requirements", str(secret)]):
        for fmt in ("text", "json", "github"):
            done = run_envcheck("-f", fmt, "-v", "--no-cache", "--fail-on", "never", *args)
            assert "Traceback" not in done.stderr, done.stderr
            assert "S3cr3tHash" not in done.stdout + done.stderr, (args, fmt, done.stdout)


def test_masking_password_hashes_stays_linear_in_a_hostile_line(tmp_path: Path) -> None:
    hostile = tmp_path / "Dockerfile"
    hostile.write_text("root:" + ".$1$" * 250_000 + "\n", encoding="utf-8")  # one 1 MB line a syntax error quotes
    run = run_envcheck_bounded("--kind", "dockerfile", str(hostile), "--no-cache", "-f", "json", "--fail-on", "never")
    run.assert_within(seconds=10, rss_mb=300)
    assert "Traceback" not in run.stderr, run.describe()


@pytest.mark.parametrize("name", ["..", ".", "x" * 300])
def test_a_heredoc_requirements_file_of_any_name_is_read_in_the_scratch_folder(tmp_path: Path, name: str) -> None:
    """`COPY <<EOF /x` then `-r ..` from below it: the heredoc is written under its own plain name, never `.`/`..`
    (the scratch folder's parent) nor a name the file system refuses; its lines are judged."""
    where, workdir, named = {"..": ("/x", "/x/y", ".."), ".": ("/x", "/x", ".")}.get(name, (f"/{name}", "/", f"/{name}"))
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text(BASE + f"COPY <<EOF {where}\ntorch==2.3.0\nEOF\nWORKDIR {workdir}\nRUN pip install -r {named}\n",
                          encoding="utf-8")
    found, _text = _report(str(dockerfile))
    assert ("G9-ngc-torch-replaced", "FAIL", 3) in {(f["rule"], f["status"], (f.get("location") or {}).get("line"))
                                                    for f in found}, found
