"""The pre-commit hooks: generated from the registry, and run by the real pre-commit against scratch repos."""

from __future__ import annotations

import os
import re
import runpy
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, offline_pip_env, require

RECIPES = REPO / "dockerfiles"


def _generator() -> dict[str, Any]:
    return runpy.run_path(str(REPO / "scripts" / "gen_hooks.py"))


def test_checked_in_hooks_file_equals_generator_output() -> None:
    assert (REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8") == _generator()["render"](), (
        "run: python scripts/gen_hooks.py")


def test_hooks_cover_the_kinds_their_rules_declare() -> None:
    yaml = pytest.importorskip("yaml")  # pre-commit's own dependency
    import re

    hooks = {h["id"]: h for h in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))}
    assert set(hooks) == {"envcheck-dockerfile", "envcheck-requirements", "envcheck-pyproject", "envcheck-conda",
                          "envcheck-compose", "envcheck-kubernetes", "envcheck-shell", "envcheck-notebook"}
    for hook in hooks.values():
        assert hook["language"] == "python" and hook["pass_filenames"] is True
    docker = re.compile(hooks["envcheck-dockerfile"]["files"])
    for name in ("Dockerfile", "sub/Dockerfile.gpu", "Containerfile", "docker/train.dockerfile", "app.Dockerfile"):
        assert docker.search(name), name
    # pre-commit identify's `dockerfile` type: never Python or Markdown about Dockerfiles
    for name in ("requirements.txt", "Dockerfiles.md/readme", "dockerignore", "envcheck/inspect/dockerfile.py",
                 "docs/dockerfiles.md", "dockerfile-dev"):
        assert not docker.search(name), name
    reqs = re.compile(hooks["envcheck-requirements"]["files"])
    assert reqs.search("requirements-dev.txt") and reqs.search("ci/constraints.in") and not reqs.search("setup.cfg")
    # files in a folder named for requirements, as the folder walk reads them
    for name in ("requirements/base.txt", "app/requirements/cuda.txt", "reqs/dev.in", "constraints.d/ci.txt", "Requirements/GPU.TXT"):
        assert reqs.search(name), name
    for name in ("requirements/README.md", "requirements/README.txt", "reqs/LICENSE.txt", "docs/base.txt", "requirements/sub/base.txt", "myrequirements/base.txt"):
        assert not reqs.search(name), name
    locks = re.compile(hooks["envcheck-pyproject"]["files"])
    assert locks.search("pyproject.toml") and locks.search("uv.lock") and locks.search("pylock.dev.toml")
    compose = re.compile(hooks["envcheck-compose"]["files"])
    assert all(compose.search(n) for n in ("compose.yaml", "deploy/docker-compose.gpu.yml", "docker-compose-spark.yml"))
    assert not compose.search("environment.yml") and not compose.search("composer.json")
    manifests = re.compile(hooks["envcheck-kubernetes"]["files"])
    assert manifests.search("k8s/vllm.yaml") and manifests.search("deploy/base/job.yml") and not manifests.search(".github/workflows/ci.yml")
    assert re.compile(hooks["envcheck-shell"]["files"]).search("scripts/install.sh")
    assert re.compile(hooks["envcheck-notebook"]["files"]).search("notebooks/setup.ipynb")


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=60)


@pytest.fixture(scope="session")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This checkout's package and hooks file, committed in a scratch repository (uncommitted edits included)."""
    require(shutil.which("git") is not None, "git is not installed")
    require(shutil.which("pre-commit") is not None or _has_module("pre_commit"), "pre-commit is not installed")
    repo = tmp_path_factory.mktemp("hook-repo")
    for name in ("envcheck", "pyproject.toml", "README.md", ".pre-commit-hooks.yaml"):
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, repo / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(source, repo / name)
    assert _git(repo, "init", "-q").returncode == 0
    _git(repo, "add", "-A")
    assert _git(repo, "commit", "-qm", "hooks").returncode == 0
    return repo


def _has_module(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


def _offline_env(home: Path) -> dict[str, str]:
    """pre-commit makes the hook's virtualenv and runs `pip install .` of the hook repository in it, offline
    (tests use loopback only), the same in a virtualenv as on the system interpreter (conftest.offline_pip_env)."""
    return {**offline_pip_env(home / "dependencies"), "PRE_COMMIT_HOME": str(home)}


@pytest.fixture(scope="session")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pre-commit-home")


@pytest.fixture()
def user_repo(tmp_path: Path) -> Callable[[str, str], Path]:
    def make(name: str, text: str) -> Path:
        repo = tmp_path / "user"
        repo.mkdir(exist_ok=True)
        if not (repo / ".git").exists():
            assert _git(repo, "init", "-q").returncode == 0
        (repo / name).write_text(text, encoding="utf-8")
        _git(repo, "add", name)
        return repo
    return make


def _try_repo(hook_repo: Path, home: Path, cwd: Path, hook: str, *files: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(hook_repo), hook, "--files", *files],
                          cwd=cwd, capture_output=True, text=True, env=_offline_env(home), timeout=300)


@pytest.mark.slow
def test_try_repo_blocks_a_bad_dockerfile_and_shows_the_line(hook_repo: Path, pre_commit_home: Path,
                                                              user_repo: Callable[[str, str], Path]) -> None:
    repo = user_repo("Dockerfile", (RECIPES / "heredoc-install" / "Dockerfile").read_text(encoding="utf-8"))
    done = _try_repo(hook_repo, pre_commit_home, repo, "envcheck-dockerfile", "Dockerfile")
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "Failed" in out and "Dockerfile:11 [stage" in out and "FAIL G2 G2-flash-attn-build" in out


@pytest.mark.slow
def test_try_repo_passes_a_good_dockerfile(hook_repo: Path, pre_commit_home: Path, user_repo: Callable[[str, str], Path]) -> None:
    repo = user_repo("Dockerfile", (RECIPES / "vllm-ngc" / "Dockerfile").read_text(encoding="utf-8"))
    done = _try_repo(hook_repo, pre_commit_home, repo, "envcheck-dockerfile", "Dockerfile")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "Passed" in out


@pytest.mark.slow
def test_git_commit_is_blocked_until_the_dockerfile_is_fixed(hook_repo: Path, pre_commit_home: Path,
                                                             user_repo: Callable[[str, str], Path]) -> None:
    rev = _git(hook_repo, "rev-parse", "HEAD").stdout.strip()
    repo = user_repo(".pre-commit-config.yaml",
                     f"repos:\n- repo: {hook_repo}\n  rev: {rev}\n  hooks:\n  - id: envcheck-dockerfile\n  - id: envcheck-requirements\n")
    user_repo("Dockerfile", "FROM nvcr.io/nvidia/pytorch:24.10-py3\nRUN pip install --no-deps einops==0.8.0\n")
    user_repo("requirements.txt", "torch==2.9.0+cu128\n")
    env = _offline_env(pre_commit_home)
    installed = subprocess.run([sys.executable, "-m", "pre_commit", "install"], cwd=repo, capture_output=True, text=True, env=env, timeout=120)
    assert installed.returncode == 0, installed.stderr
    commit = subprocess.run(["git", "commit", "-m", "bad"], cwd=repo, capture_output=True, text=True, timeout=300,
                            env={**env, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e.invalid", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e.invalid"})
    out = commit.stdout + commit.stderr
    assert commit.returncode != 0, out
    assert "Dockerfile:1 [stage" in out and "FAIL G1 G1-cuda12-base" in out and "requirements.txt:1: FAIL G1 G1-cuda12-local-version" in out
    assert _git(repo, "rev-parse", "--verify", "HEAD").returncode != 0  # nothing was committed
    user_repo("Dockerfile", "FROM nvcr.io/nvidia/pytorch:25.11-py3\nRUN pip install --no-deps einops==0.8.0\n")
    user_repo("requirements.txt", "einops==0.8.0\n")
    commit = subprocess.run(["git", "commit", "-m", "good"], cwd=repo, capture_output=True, text=True, timeout=300,
                            env={**env, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e.invalid", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e.invalid"})
    assert commit.returncode == 0, commit.stdout + commit.stderr


@pytest.mark.slow
def test_try_repo_checks_compose_files_and_manifests(hook_repo: Path, pre_commit_home: Path,
                                                     user_repo: Callable[[str, str], Path]) -> None:
    """The compose and Kubernetes hooks (issue 28) run envcheck with their kind on the files their patterns take."""
    repo = user_repo("compose.yaml", "services:\n  train:\n    image: nvidia/cuda:12.4.1-runtime-ubuntu22.04\n    runtime: nvidia\n")
    done = _try_repo(hook_repo, pre_commit_home, repo, "envcheck-compose", "compose.yaml")
    out = done.stdout + done.stderr
    assert done.returncode == 1 and re.search(r"compose\.yaml:3 \[stage train\]: FAIL G1 G1-cuda12-base", out), out
    (repo / "k8s").mkdir()
    user_repo("k8s/job.yaml", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: t}\nspec:\n  template:\n    spec:\n"
                              "      containers:\n      - name: t\n        image: nvcr.io/nvidia/pytorch:24.05-py3\n")
    user_repo("k8s/kustomization.yaml", "resources: [job.yaml]\n")  # no workload: clean, not an error
    done = _try_repo(hook_repo, pre_commit_home, repo, "envcheck-kubernetes", "k8s/job.yaml", "k8s/kustomization.yaml")
    out = done.stdout + done.stderr
    assert done.returncode == 1 and re.search(r"job\.yaml:9 \[stage [^\]]+\]: FAIL G1 G1-cuda12-base", out) and "ERROR" not in out, out


@pytest.mark.slow
def test_try_repo_checks_requirements_files_in_a_requirements_folder(hook_repo: Path, pre_commit_home: Path,
                                                                     user_repo: Callable[[str, str], Path]) -> None:
    """requirements/cuda.txt and requirements/base.txt (the folder walk reads them) go through the requirements
    hook: a CUDA 12 index in one blocks the commit; an empty one in the folder is no error, nor is a prose README.txt."""
    repo = user_repo("README.md", "a project\n")
    (repo / "requirements").mkdir()
    user_repo("requirements/base.txt", "numpy\neinops\n")
    user_repo("requirements/cuda.txt", "-r base.txt\n--extra-index-url https://download.pytorch.org/whl/cu128\ntorch==2.9.0+cu128\n")
    user_repo("requirements/optional.txt", "# nothing optional yet\n")
    user_repo("requirements/README.txt", "Pins of the project.\nUse cuda.txt on a Spark.\n")
    files = ("README.md", "requirements/base.txt", "requirements/cuda.txt", "requirements/optional.txt", "requirements/README.txt")
    done = _try_repo(hook_repo, pre_commit_home, repo, "envcheck-requirements", *files)
    out = done.stdout + done.stderr
    assert done.returncode == 1 and "requirements/cuda.txt:2: FAIL G1 G1-cuda12-index" in out, out
    assert "ERROR" not in out and "README" not in out, out
    user_repo("requirements/cuda.txt", "-r base.txt\n--extra-index-url https://download.pytorch.org/whl/cu130\ntorch==2.11.0+cu130\n")
    done = _try_repo(hook_repo, pre_commit_home, repo, "envcheck-requirements", *files)
    assert done.returncode == 0, done.stdout + done.stderr
