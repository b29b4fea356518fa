"""A file named off the convention but unmistakable by content is read as its kind, and the run says which kind
was assumed (issue 26 item 17): uv.lock, PEP 751 locks, conda environment files and requirements files, like
`gpu-deps.toml` for pyproject. Content that only resembles one (a word list, prose with a pin in it, a Helm
Chart.yaml, a TOML file with a `version`) stays unknown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_envcheck

UV_LOCK = """version = 1
revision = 2
requires-python = ">=3.12"

[[package]]
name = "trainer"
version = "0.1.0"
source = { virtual = "." }
dependencies = [{ name = "torch" }]

[[package]]
name = "torch"
version = "2.5.1+cu121"
source = { registry = "https://download.pytorch.org/whl/cu121" }
"""

PYLOCK = """lock-version = "1.0"
created-by = "uv"

[[packages]]
name = "torch"
version = "2.5.1+cu121"
index = "https://download.pytorch.org/whl/cu121"
"""

CONDA = """name: train
channels:
  - pytorch
  - nvidia
dependencies:
  - python=3.11
  - pytorch-cuda=12.1
"""

REQUIREMENTS = """# the GPU stack
--extra-index-url https://download.pytorch.org/whl/cu121
torch==2.5.1+cu121  # pinned for the cluster
transformers>=4.46
accelerate
"""


@pytest.mark.parametrize(("name", "text", "kind"), [
    ("gpu.lock", UV_LOCK, "uv-lock"),
    ("locked-gpu.toml", PYLOCK, "pylock"),
    ("train-env.yml", CONDA, "conda"),
    ("gpu-deps.txt", REQUIREMENTS, "requirements"),
], ids=["uv-lock", "pylock", "conda", "requirements"])
def test_a_file_named_off_convention_is_read_by_its_content(tmp_path: Path, name: str, text: str, kind: str) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    done = run_envcheck("-f", "json", name, cwd=tmp_path)
    (target,) = json.loads(done.stdout)["targets"]
    assert (target["kind"], done.returncode) == (kind, 1), done.stdout + done.stderr
    assert [f for f in target["findings"] if f["gotcha"] == "G1" and f["status"] == "FAIL"], target["findings"]
    assert f"read as a {kind} file, told from its content" in done.stderr and f"--kind {kind}" in done.stderr


@pytest.mark.parametrize(("name", "text"), [
    ("labels.txt", "cat\ndog\nbird\n"),  # bare words: every line is a valid distribution name, none says more
    ("notes.txt", "torch==2.5.1+cu121\nremember to rebuild the image first\n"),  # prose with one pin in it
    ("todo.txt", "- pin torch==2.5.1\n- update docs\n"),  # a markdown list
    ("settings.txt", "batch_size=8\nlr=3e-4\n"),
    ("Chart.yaml", "apiVersion: v2\nname: vllm\nversion: 0.1.0\ndependencies:\n  - name: redis\n    version: 18.x\n"),
    ("deps.lock", 'version = 3\n\n[[package]]\nname = "anyhow"\nversion = "1.0.86"\n'  # Cargo.lock's shape
                  'source = "registry+https://github.com/rust-lang/crates.io-index"\n'),
], ids=["word-list", "prose", "markdown", "settings", "helm-chart", "cargo-lock"])
def test_content_that_only_resembles_an_input_is_not_read_as_one(tmp_path: Path, name: str, text: str) -> None:
    (tmp_path / name).write_text(text, encoding="utf-8")
    done = run_envcheck("-f", "json", name, cwd=tmp_path)
    (target,) = json.loads(done.stdout)["targets"]
    assert (target["kind"], done.returncode) == ("unknown", 2), done.stdout + done.stderr
    assert "told from its content" not in done.stderr


def test_folders_and_binaries_are_read_without_a_content_note(tmp_path: Path) -> None:
    """Only a text file named off convention gets the stderr note: an environment folder or an ELF file is
    always told by what it holds (there is no name to get right), so `--kind folder`/`elf` would be noise."""
    venv = tmp_path / "venv-a"
    (venv / "lib" / "python3.12" / "site-packages").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    lib = tmp_path / "libcudart.so.12"
    lib.write_bytes((Path(__file__).resolve().parent.parent / "fixtures" / "binaries" / "libcudart.so.12").read_bytes())
    done = run_envcheck("-f", "json", "venv-a", "libcudart.so.12", cwd=tmp_path)
    assert [t["kind"] for t in json.loads(done.stdout)["targets"]] == ["folder", "elf"], done.stdout
    assert "told from its content" not in done.stderr, done.stderr


@pytest.mark.parametrize("folder", ["requirements", "reqs", "requirements.d"])
def test_bare_names_in_a_requirements_folder_are_a_requirements_file(tmp_path: Path, folder: str) -> None:
    """LLaMA-Factory's requirements/metrics.txt holds only bare names: the folder says what the file is."""
    (tmp_path / folder).mkdir()
    (tmp_path / folder / "metrics.txt").write_text("nltk\njieba\nnvidia-cuda-runtime-cu12\n", encoding="utf-8")
    (tmp_path / "words").mkdir()
    (tmp_path / "words" / "metrics.txt").write_text("nltk\njieba\n", encoding="utf-8")
    done = run_envcheck("-f", "json", f"{folder}/metrics.txt", cwd=tmp_path)
    (target,) = json.loads(done.stdout)["targets"]
    assert target["kind"] == "requirements", done.stdout + done.stderr
    assert [f for f in target["findings"] if f["rule"] == "G1-cuda12-distribution" and f["status"] == "FAIL"]
    other = run_envcheck("-f", "json", "words/metrics.txt", cwd=tmp_path)
    assert (json.loads(other.stdout)["targets"][0]["kind"], other.returncode) == ("unknown", 2)


def test_a_folder_walk_reads_the_requirements_folder_a_user_would_name(tmp_path: Path) -> None:
    """`envcheck DIR` reads requirements/*.txt as `envcheck requirements/metrics.txt` does; a word list
    elsewhere, and prose in the requirements folder, stay unread."""
    (tmp_path / "requirements").mkdir()
    (tmp_path / "requirements" / "metrics.txt").write_text("nltk\nnvidia-cuda-runtime-cu12\n", encoding="utf-8")
    (tmp_path / "requirements" / "deepspeed.in").write_text("deepspeed>=0.10\n", encoding="utf-8")
    (tmp_path / "requirements" / "README.txt").write_text("Pick one of these files.\n", encoding="utf-8")
    (tmp_path / "words").mkdir()
    (tmp_path / "words" / "metrics.txt").write_text("nltk\njieba\n", encoding="utf-8")
    done = run_envcheck("-f", "json", ".", cwd=tmp_path)
    targets = {t["target"]: t for t in json.loads(done.stdout)["targets"]}
    assert sorted(targets) == ["requirements/deepspeed.in", "requirements/metrics.txt"], done.stdout
    assert {t["kind"] for t in targets.values()} == {"requirements"}
    assert [f for f in targets["requirements/metrics.txt"]["findings"] if f["rule"] == "G1-cuda12-distribution"]
    assert "told from its content" not in done.stderr  # found in a walk: the folder named it
