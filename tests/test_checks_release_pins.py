"""G9-pin-conflict from the recorded release pins (wheels.toml): a requirement every allowed release of which pins
torch/torchvision/torchaudio outside what the input asks cannot be installed (raibid-labs/dgx-music, issue 32)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import run_envcheck


def _conflicts(path: Path) -> list[dict[str, Any]]:
    proc = run_envcheck("--format", "json", "--fail-on", "never", str(path))
    assert proc.returncode == 0, proc.stderr
    return [f for t in json.loads(proc.stdout)["targets"] for f in t["findings"]
            if f["rule"] == "G9-pin-conflict" and f["status"] != "PASS"]


def test_a_range_whose_every_release_pins_an_older_torch_fails_at_its_line(tmp_path: Path) -> None:
    """audiocraft 1.2.0 and 1.3.0 (its newest) require torch==2.1.0: beside torch>=2.3.0 pip cannot resolve, whether
    the file is a requirements file, a pyproject or one pip command of a Dockerfile."""
    from envcheck.knowledge import wheels

    newest = wheels.release("audiocraft")
    assert newest is not None and ("torch", "==2.1.0") in newest.pins
    files = {
        "requirements.txt": "torch>=2.3.0\ntorchaudio>=2.3.0\naudiocraft>=1.2.0  # MusicGen\n",
        "pyproject.toml": '[project]\nname = "p"\nversion = "1"\ndependencies = [\n  "torch>=2.3.0",\n  "torchaudio>=2.3.0",\n'
                          '  "audiocraft>=1.2.0",\n]\n',
        "Dockerfile": "FROM nvcr.io/nvidia/cuda:13.0.1-devel-ubuntu24.04\nRUN pip install 'torch>=2.3.0' 'torchaudio>=2.3.0' "
                      "'audiocraft>=1.2.0'\n",
    }
    for name, text in files.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        found = _conflicts(path)
        line = next(i for i, text_line in enumerate(text.splitlines(), 1) if "audiocraft" in text_line)
        assert [(f["status"], f["location"]["line"]) for f in found] == [("FAIL", line)], (name, found)
        message = found[0]["message"]
        assert "(1.2.0, 1.3.0)" in message and "torch==2.1.0" in message and "torch>=2.3.0" in message, message
        assert newest.checked in message and found[0]["evidence"]["requires"][0] == "torch==2.1.0"
        path.unlink()


def test_an_exact_pin_is_judged_by_that_releases_pins_once(tmp_path: Path) -> None:
    """vllm 0.11.0 requires torch==2.8.0 (wheels.toml; the hand-kept pin table has no torch row for it); vllm 0.11.2's
    pin is in the pin table and is reported by it alone, not twice."""
    req = tmp_path / "requirements.txt"
    req.write_text("torch==2.9.0\nvllm==0.11.0\n", encoding="utf-8")
    found = _conflicts(req)
    assert [(f["location"]["line"], f["evidence"]["requires"]) for f in found] == [(2, ["torch==2.8.0"])], found
    req.write_text("torch==2.8.0\nvllm==0.11.2\n", encoding="utf-8")
    assert len(_conflicts(req)) == 1


def test_a_range_with_a_release_that_fits_is_no_conflict(tmp_path: Path) -> None:
    """pip backtracks to a release whose pins fit (audiocraft 1.1.0 asks torch>=2.0.0; vllm 0.11.1 pins torch 2.9.0),
    and a correct CUDA 13 project (a cu130 torch with the vLLM release that pins it) stays clean."""
    req = tmp_path / "requirements.txt"
    for text in ("torch>=2.3.0\ntorchaudio>=2.3.0\naudiocraft\n",
                 "torch==2.9.0\nvllm>=0.11,<0.12\n",
                 "--extra-index-url https://download.pytorch.org/whl/cu130\ntorch==2.14.0+cu130\ntorchvision==0.29.0+cu130\n"
                 "vllm==0.34.0\n",
                 "torch~=2.8.0\ntorchaudio~=2.8.0\nwhisperx>=3.7.4\n"):
        req.write_text(text, encoding="utf-8")
        assert _conflicts(req) == [], text


def test_a_later_stage_built_on_the_first_holds_both(tmp_path: Path) -> None:
    """A stage built FROM another keeps the first one's torch: audiocraft's install there replaces it with 2.1.0; an
    opt-in extra is judged with the default install it adds to, and two extras apart."""
    docker = tmp_path / "Dockerfile"
    docker.write_text("FROM python:3.12 AS app\nRUN pip install 'torch>=2.3.0'\n"
                      "FROM app AS music\nRUN pip install 'audiocraft>=1.3.0'\n", encoding="utf-8")
    assert [(f["status"], f["location"]["line"]) for f in _conflicts(docker)] == [("FAIL", 4)]
    project = tmp_path / "pyproject.toml"
    project.write_text('[project]\nname = "p"\nversion = "1"\ndependencies = ["torch>=2.3.0"]\n\n[project.optional-dependencies]\n'
                       'music = ["audiocraft>=1.3.0"]\n', encoding="utf-8")
    assert [f["location"]["line"] for f in _conflicts(project)] == [7]
    project.write_text('[project]\nname = "p"\nversion = "1"\ndependencies = []\n\n[project.optional-dependencies]\n'
                       'gpu = ["torch>=2.3.0"]\nmusic = ["audiocraft>=1.3.0"]\n', encoding="utf-8")
    assert _conflicts(project) == []


def test_yanked_releases_are_not_what_pip_picks_for_a_range(tmp_path: Path) -> None:
    """whisperx 3.8.2 and 3.8.3 are yanked (wheels.toml [[served]] yanked): pip skips them for whisperx>=3.7.4, whose
    every other release requires torch~=2.8.0."""
    from envcheck.knowledge import wheels

    listed = wheels.served("whisperx")
    assert listed is not None and {"3.8.2", "3.8.3"} <= set(listed.yanked) and wheels.release("whisperx", "3.8.2") is None
    req = tmp_path / "requirements.txt"
    req.write_text("torch>=2.9\nwhisperx>=3.7.4\n", encoding="utf-8")
    found = _conflicts(req)
    assert [(f["location"]["line"], f["evidence"]["requires"]) for f in found] == [(2, ["torch~=2.8.0"])], found
    assert "3.8.2" not in found[0]["evidence"]["releases"]


def test_an_exact_pin_whose_requirement_a_range_of_the_input_excludes_fails_once(tmp_path: Path) -> None:
    """torchvision==0.22.1 needs torch 2.7; torch>=2.11 beside it leaves pip nothing to install (seen while fixing
    the eleventh corpus batch); the same for vLLM 0.14's transformers<5 beside transformers>=5."""
    req = tmp_path / "requirements.txt"
    req.write_text("torch>=2.11\ntorchvision==0.22.1\n", encoding="utf-8")
    (found,) = _conflicts(req)
    assert found["status"] == "FAIL" and found["location"]["line"] == 2, found
    assert "torch==2.7.*" in found["message"] and "torch>=2.11" in found["message"]
    req.write_text("vllm==0.14.0\ntransformers>=5.0\n", encoding="utf-8")
    assert [f["location"]["line"] for f in _conflicts(req)] == [1]
    # a range that admits the pinned release is no conflict
    req.write_text("torch>=2.7\ntorchvision==0.22.1\n", encoding="utf-8")
    assert not _conflicts(req)


def test_a_requirement_its_own_constraint_excludes_fails_and_a_fitting_one_passes(tmp_path: Path) -> None:
    """pip stops with no version to install when a -c file (uv: constraint-dependencies) excludes what a requirement
    asks; a constraint the requirement fits, or one on another package, is no conflict."""
    (tmp_path / "constraints.txt").write_text("torch==2.11.0\nnumpy<2\n", encoding="utf-8")
    cases = {
        "requirements.txt": ("-c constraints.txt\ntorch==2.10.0\nnumpy\n", 2),
        "requirements-range.txt": ("-c constraints.txt\ntorch>=2.12\n", 2),
        "requirements-fits.txt": ("-c constraints.txt\ntorch>=2.11\nnumpy==1.26.4\n", None),
        "pyproject.toml": ('[project]\nname = "p"\nversion = "1"\ndependencies = ["torch==2.10.0"]\n'
                           '[tool.uv]\nconstraint-dependencies = ["torch==2.11.0"]\n', 4),
    }
    for name, (text, line) in cases.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        found = _conflicts(path)
        assert [(f["status"], f["location"]["line"]) for f in found] == ([("FAIL", line)] if line else []), (name, found)
        if line:
            assert "constraint torch==2.11.0" in found[0]["message"], found


def test_pypis_aarch64_torch_before_2_11_requires_no_triton_but_cuda_builds_and_2_11_do(tmp_path: Path) -> None:
    """PyPI's linux/aarch64 wheels of torch 2.6-2.10 require triton only on x86_64: beside another triton they install
    on a Spark, so no pin conflict. PyTorch's CUDA aarch64 builds (a +cu130 pin, or a PyTorch index the input reaches)
    and PyPI's torch 2.11 require it on all Linux: the same pair there is a conflict."""
    cases = {
        "torch==2.9.0\ntriton==3.6.0\n": [],
        "torch==2.10.0\ntriton==3.6.1\n": [],
        "torch==2.11.0\ntriton==3.5.0\n": [("FAIL", 1)],
        "--extra-index-url https://download.pytorch.org/whl/cu130\ntorch==2.9.0+cu130\ntriton==3.6.0\n": [("FAIL", 2)],
        "--extra-index-url https://download.pytorch.org/whl/cu130\ntorch==2.9.0\ntriton==3.6.0\n": [("FAIL", 2)],
    }
    for text, expected in cases.items():
        path = tmp_path / "requirements.txt"
        path.write_text(text, encoding="utf-8")
        assert [(f["status"], f["location"]["line"]) for f in _conflicts(path)] == expected, text
    on_x86 = tmp_path / "requirements.txt"
    on_x86.write_text("torch==2.9.0\ntriton==3.6.0\n", encoding="utf-8")
    import envcheck
    spark = (Path(envcheck.__file__).parent / "profiles" / "dgx-spark.toml").read_text(encoding="utf-8")
    x86 = tmp_path / "x86.toml"
    x86.write_text(spark.replace('name = "dgx-spark"', 'name = "x86-box"').replace('machine = "aarch64"', 'machine = "x86_64"'),
                   encoding="utf-8")
    proc = run_envcheck("--format", "json", "--fail-on", "never", "--profile", str(x86), str(on_x86))
    rules = [f["rule"] for t in json.loads(proc.stdout)["targets"] for f in t["findings"] if f["status"] == "FAIL"]
    assert "G9-pin-conflict" in rules, proc.stdout
