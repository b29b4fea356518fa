"""Policy rules are a declared category, and the levels of G1 findings whose cause only degrades a Spark
(real files, through the CLI)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import run_envcheck


def _report(*args: str) -> dict[str, Any]:
    done = run_envcheck("--format", "json", *args)
    assert done.returncode in (0, 1), done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def _findings(report: dict[str, Any], key: str = "findings") -> list[dict[str, Any]]:
    return [f for t in report["targets"] for f in t[key]]


def _bare_pip_project(folder: Path) -> list[str]:
    (folder / "requirements.txt").write_text("torch>=2.11\ntransformers\n")
    (folder / "Dockerfile").write_text(
        "FROM python:latest\n"
        "RUN pip install torch==2.11.0 --index-url https://download.pytorch.org/whl/cu130\n"
        "RUN pip install transformers accelerate\n"
    )
    return [str(folder / "requirements.txt"), str(folder / "Dockerfile")]


def test_policy_findings_say_so_once_per_file_or_stage_and_ignore_policy_leaves_them_out(tmp_path: Path) -> None:
    paths = _bare_pip_project(tmp_path)
    warned = [f for f in _findings(_report(*paths)) if f["status"] in ("WARN", "FAIL")]
    by_rule = {f["rule"]: f for f in warned}
    assert sorted(by_rule) == ["G9-bare-pip-base", "G9-floating-base-tag", "G9-unpinned"]
    assert all(f["policy"] is True for f in warned)
    # one finding per file (per stage), naming every package it is about
    assert len(warned) == 3
    assert by_rule["G9-unpinned"]["evidence"]["packages"] == ["torch", "transformers"]
    assert by_rule["G9-bare-pip-base"]["evidence"]["unpinned"] == ["transformers", "accelerate"]
    # a finding of another rule carries no policy key
    assert all("policy" not in f for f in _findings(_report(*paths)) if f["rule"].startswith("G1-"))

    ignored = _report("--ignore", "policy", "--fail-on", "warn", *paths)
    assert not [f for f in _findings(ignored) if f["status"] in ("WARN", "FAIL")]
    assert {f["rule"] for f in _findings(ignored, "suppressed") if f["status"] == "WARN"} == set(by_rule)
    assert ignored["exit_code"] == 0

    (tmp_path / ".envcheck.toml").write_text('ignore = [{ rule = "policy", reason = "pins come from the lock in CI" }]\n')
    configured = _report("--config", str(tmp_path / ".envcheck.toml"), *paths)
    assert {f["reason"] for f in _findings(configured, "suppressed") if f["rule"] in by_rule} == {"pins come from the lock in CI"}


def test_sarif_and_the_rule_list_carry_the_policy_category(tmp_path: Path) -> None:
    paths = _bare_pip_project(tmp_path)
    done = run_envcheck("--format", "sarif", *paths)
    run = json.loads(done.stdout)["runs"][0]
    results = {r["ruleId"]: r["properties"]["policy"] for r in run["results"]}
    assert results == {"G9-bare-pip-base": True, "G9-floating-base-tag": True, "G9-unpinned": True}
    rules = {r["id"]: r["properties"] for r in run["tool"]["driver"]["rules"]}
    assert "policy" in rules["G9-unpinned"]["tags"] and rules["G9-unpinned"]["policy"] is True
    assert rules["G1-cuda12-index"]["policy"] is False
    listed = json.loads(run_envcheck("rules", "G9", "-f", "json").stdout)
    assert {r["id"] for r in listed if r["policy"]} >= {"G9-unpinned", "G9-bare-pip-base", "G9-floating-base-tag"}
    assert not any(r["policy"] for r in listed if r["id"] == "G9-pin-conflict")
    chosen = json.loads(run_envcheck("rules", "policy", "-f", "json").stdout)
    assert chosen and all(r["policy"] for r in chosen) and {r["id"] for r in chosen} == {r["id"] for r in listed if r["policy"]}


def _g1(report: dict[str, Any], rule: str = "G1-cpu-build") -> list[tuple[str, int | None, str]]:
    return sorted((Path(f["location"]["path"]).name, f["location"].get("line"), f["status"])
                  for t in report["targets"] for f in t["findings"] if f["rule"] == rule)


def test_a_cpu_only_torch_runs_on_the_grace_cpu_warn_and_a_cpu_named_variant_is_info(tmp_path: Path) -> None:
    cpu_index = "--extra-index-url https://download.pytorch.org/whl/cpu\ntorch==2.11.0\n"
    (tmp_path / "requirements.txt").write_text("torch==2.6.0\nsentence-transformers==3.4.1\n")
    (tmp_path / "requirements-gpu.txt").write_text(cpu_index)
    (tmp_path / "requirements-dev-cpu.txt").write_text(cpu_index)
    (tmp_path / "requirements_cpu.txt").write_text("torch==2.6.0\n")  # PyPI's build, not asked for: still WARN
    (tmp_path / "requirements-rocm.txt").write_text("--index-url https://download.pytorch.org/whl/rocm6.2\ntorch==2.5.1\n")
    (tmp_path / "Dockerfile").write_text(
        "FROM python:3.12-slim AS cpu\n"
        "RUN pip install torch==2.11.0 --index-url https://download.pytorch.org/whl/cpu\n"
        "FROM python:3.12-slim AS serve\n"
        "RUN pip install torch==2.11.0+cpu --extra-index-url https://download.pytorch.org/whl/cpu\n"
    )
    report = _report(*(str(p) for p in sorted(tmp_path.iterdir())))
    assert _g1(report) == [
        ("Dockerfile", 2, "INFO"), ("Dockerfile", 4, "WARN"),
        ("requirements-dev-cpu.txt", 1, "INFO"), ("requirements-gpu.txt", 1, "WARN"),
        ("requirements-rocm.txt", 1, "FAIL"), ("requirements.txt", 1, "WARN"), ("requirements_cpu.txt", 1, "WARN"),
    ]
    messages = {(Path(f["location"]["path"]).name, f["status"]): f["message"] for t in report["targets"] for f in t["findings"]
                if f["rule"] == "G1-cpu-build"}
    assert "Grace CPU" in messages[("requirements.txt", "WARN")]
    assert "requirements-dev-cpu.txt is named for the CPU" in messages[("requirements-dev-cpu.txt", "INFO")]
    assert "stage 'cpu' is named for the CPU" in messages[("Dockerfile", "INFO")]


def test_a_cuda12_base_flavour_stage_that_uses_no_cuda_is_info(tmp_path: Path) -> None:
    """nvidia/cuda:12.x-base carries only the CUDA runtime: a stage that compiles nothing and installs no GPU package
    never loads it (INFO, also when a requirements file it installs cannot be read: it 'depends', and says on what);
    a compiler, a GPU package, another flavour or a compose service whose command envcheck cannot see keep their level."""
    base = "FROM nvidia/cuda:12.6.3-base-ubuntu24.04\nRUN apt-get update && apt-get install -y python3-pip\n"
    cases = {
        "plain": base + "COPY requirements.txt .\nRUN pip install -r requirements.txt\nRUN pip install aiofiles\n",
        "unread": base + "COPY web/requirements.txt .\nRUN pip install -r requirements.txt\n",
        "compiles": base + "RUN apt-get install -y cuda-nvcc-12-6 && nvcc -o /app kernel.cu\n",
        "gpu-package": base + "RUN pip install cupy-cuda12x==13.3.0\n",
        "runtime": "FROM nvidia/cuda:12.6.3-runtime-ubuntu24.04\nRUN pip install aiofiles\n",
    }
    for name, text in cases.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "Dockerfile").write_text(text)
        (tmp_path / name / "requirements.txt").write_text("fastapi==0.115.0\npsutil==6.1.0\n")
    (tmp_path / "compose.yaml").write_text(
        "services:\n  api:\n    image: nvidia/cuda:12.6.3-base-ubuntu24.04\n    command: python3 serve.py\n")
    report = _report(*(str(tmp_path / name / "Dockerfile") for name in cases), str(tmp_path / "compose.yaml"))
    levels = {Path(t["target"]).parent.name if t["kind"] == "dockerfile" else "compose":
              [f["status"] for f in t["findings"] if f["rule"] == "G1-cuda12-base"] for t in report["targets"]}
    assert levels == {"plain": ["INFO"], "unread": ["INFO"], "compiles": ["FAIL"], "gpu-package": ["FAIL"],
                      "runtime": ["FAIL"], "compose": ["FAIL"]}
    infos = {Path(t["target"]).parent.name: f for t in report["targets"] for f in t["findings"] if f["status"] == "INFO"
             and f["rule"] == "G1-cuda12-base"}
    assert "only the CUDA runtime" in infos["plain"]["message"] and "depends" not in infos["plain"]["message"]
    assert "it depends on requirements.txt, which envcheck could not read" in infos["unread"]["message"]
    assert infos["unread"]["evidence"]["unread"] == ["requirements.txt"]


def test_a_policy_finding_stays_one_per_file_when_an_opt_in_extra_adds_packages(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "demo"\nversion = "0.1"\ndependencies = ["transformers>=4.57.1", "fastapi"]\n\n'
        '[project.optional-dependencies]\ngpu = ["accelerate", "transformers>=4.57.1"]\ndocs = ["peft"]\n')
    found = [f for f in _findings(_report(str(tmp_path / "pyproject.toml"))) if f["rule"] == "G9-unpinned" and f["status"] == "WARN"]
    assert len(found) == 1
    assert found[0]["message"] == ("transformers>=4.57.1 is not pinned to an exact version; with extra 'gpu' (opt-in) also accelerate; "
                                   "with extra 'docs' (opt-in) also peft")
    assert found[0]["evidence"]["packages"] == ["transformers", "accelerate", "peft"]
    assert found[0]["evidence"]["lines"] == [4, 7, 8]
