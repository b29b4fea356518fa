"""The GitHub Action (action.yml, issue 19), run the way a runner runs it.

action.yml is read with PyYAML (pre-commit's dependency); its ``run:`` steps run in bash with the flags a
runner uses (``bash --noprofile --norc -eo pipefail``), with ``${{ }}`` expressions substituted from the
inputs, ``runner.temp``, ``github.action_path`` and earlier steps' outputs (a fake ``GITHUB_OUTPUT`` and
``GITHUB_STEP_SUMMARY``), ``if:`` conditions evaluated, and the ``uses:`` steps recorded with their inputs
instead of run (setup-python is replaced by a new virtualenv on PATH; upload-sarif and upload-artifact get
the files checked). The inputs are the ones .github/workflows/envcheck.yml gives the action.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, offline_pip_env, require

ACTION = REPO / "action.yml"
WORKFLOW = REPO / ".github" / "workflows" / "envcheck.yml"
_EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def _yaml(path: Path) -> Any:
    """A YAML file read with PyYAML (pre-commit's dependency: the test extra brings it)."""
    require(importlib.util.find_spec("yaml") is not None, "PyYAML (pre-commit's dependency) reads action.yml")
    import yaml

    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _action() -> dict[str, Any]:
    data: dict[str, Any] = _yaml(ACTION)
    return data


@dataclass
class Run:
    """One run of the action: outputs of each step, the uses: steps called, what each bash step returned."""

    outputs: dict[str, dict[str, str]] = field(default_factory=dict)
    called: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    codes: dict[str, int] = field(default_factory=dict)
    logs: dict[str, str] = field(default_factory=dict)
    failed: bool = False
    summary: str = ""


def _value(expr: str, inputs: dict[str, str], context: dict[str, str], run: Run) -> str:
    if expr.startswith("inputs."):
        return inputs[expr.removeprefix("inputs.")]
    m = re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expr)
    if m:
        return run.outputs.get(m.group(1), {}).get(m.group(2), "")
    if expr in context:
        return context[expr]
    raise AssertionError(f"action.yml uses an expression this runner does not know: {expr}")


def _substitute(text: str, inputs: dict[str, str], context: dict[str, str], run: Run) -> str:
    return _EXPR.sub(lambda m: _value(m.group(1), inputs, context, run), text)


def _condition(text: str, inputs: dict[str, str], context: dict[str, str], run: Run) -> bool:
    """The ``if:`` forms action.yml uses: terms joined by ``&&``: ``always()``, ``X == 'v'``, ``X != 'v'``."""
    result = not run.failed
    for term in (t.strip() for t in _EXPR.sub(r"\1", text).split("&&")):
        if term == "always()":
            result = True
            continue
        m = re.fullmatch(r"([\w.-]+)\s*(==|!=)\s*'([^']*)'", term)
        assert m, f"an if: term this runner does not know: {term}"
        equal = _value(m.group(1), inputs, context, run) == m.group(3)
        if equal != (m.group(2) == "=="):
            return False
    return result


def _run_action(inputs: dict[str, str], work: Path, python_bin: Path, skip_install: bool, action_path: Path = REPO) -> Run:
    """Run action.yml's steps with ``inputs`` (defaults filled in) in ``work``."""
    action = _action()
    full = {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()}
    unknown = set(inputs) - set(full)
    assert not unknown, f"inputs action.yml does not declare: {unknown}"
    full.update(inputs)
    temp = work / "runner-temp"
    temp.mkdir(parents=True, exist_ok=True)
    context = {"github.action_path": str(action_path), "runner.temp": str(temp)}
    run = Run()
    summary = work / "step-summary.md"
    summary.touch()
    base_env = offline_pip_env(work / "dependencies")
    base_env["PATH"] = f"{python_bin}{os.pathsep}{base_env['PATH']}"
    base_env["ENVCHECK_CACHE_DIR"] = str(work / "cache")
    for index, step in enumerate(action["runs"]["steps"]):
        sid = step.get("id", f"step{index}")
        if "if" in step and not _condition(str(step["if"]), full, context, run):
            continue
        if not step.get("if") and run.failed:
            continue
        if "uses" in step:
            run.called.append((step["uses"], {k: _substitute(str(v), full, context, run) for k, v in (step.get("with") or {}).items()}))
            continue
        if skip_install and "pip install" in step["run"]:
            continue
        assert step.get("shell") == "bash", f"step {sid}: composite run steps need shell: bash"
        assert "${{" not in step["run"], f"step {sid}: an expression inside run: (inputs reach scripts through env only)"
        output = work / f"{sid}.out"
        output.write_text("")
        env = {**base_env, **{k: _substitute(str(v), full, context, run) for k, v in (step.get("env") or {}).items()},
               "GITHUB_OUTPUT": str(output), "GITHUB_STEP_SUMMARY": str(summary), "RUNNER_TEMP": str(temp)}
        script = work / f"{sid}.sh"
        script.write_text(step["run"])
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=work, env=env,
                              capture_output=True, text=True, timeout=600)
        run.codes[sid], run.logs[sid] = done.returncode, done.stdout + done.stderr
        run.outputs[sid] = dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
        if done.returncode != 0:
            run.failed = True
    run.summary = summary.read_text()
    return run


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """setup-python's part: a new virtualenv on PATH; then the action's install step, run for real, into it."""
    work = tmp_path_factory.mktemp("action-install")
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    # the action's checkout, as GitHub makes one: pip builds in it, never in this tree other tests build from
    checkout = work / "action"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True, timeout=60).stdout
    for name in filter(None, tracked.decode().split("\0")):  # the package and the top-level files
        if (REPO / name).is_file() and (name.startswith("envcheck/") or "/" not in name):
            (checkout / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, checkout / name)
    run = _run_action({}, work, venv / "bin", skip_install=False, action_path=checkout)
    # The install ran (the other steps ran on "." of an empty folder: nothing to check)
    assert (venv / "bin" / "envcheck").is_file(), run.logs
    return venv / "bin"


def _workflow_inputs() -> dict[str, dict[str, str]]:
    """The inputs the repository's workflow gives each `uses: ./` step, by step id."""
    workflow = _yaml(WORKFLOW)
    steps = [s for job in workflow["jobs"].values() for s in job["steps"] if s.get("uses") == "./"]
    return {s["id"]: {k: str(v) for k, v in (s.get("with") or {}).items()} for s in steps}


def test_the_action_and_the_workflow_are_well_formed() -> None:
    action = _action()
    assert action["runs"]["using"] == "composite"
    uses = [s["uses"] for s in action["runs"]["steps"] if "uses" in s]
    assert [u.split("@")[0] for u in uses] == ["actions/setup-python", "github/codeql-action/upload-sarif", "actions/upload-artifact"]
    # Each action pinned to a full commit SHA (a tag can be moved), its version in a comment on the same line.
    assert all(re.fullmatch(r"[\w./-]+@[0-9a-f]{40}", u) for u in uses), uses
    text = ACTION.read_text(encoding="utf-8")
    for u in uses:
        assert re.search(re.escape(u) + r" # v\d+\.\d+\.\d+\n", text), u
    for step in action["runs"]["steps"]:
        if "run" in step:  # inputs reach scripts through environment variables only (no script injection)
            assert "${{" not in step["run"] and step["shell"] == "bash"
    install = next(s for s in action["runs"]["steps"] if "pip install" in s.get("run", ""))
    assert install["env"]["ACTION_PATH"] == "${{ github.action_path }}"
    workflow_inputs = _workflow_inputs()
    assert set(workflow_inputs) == {"good", "cuda12"}
    for given in workflow_inputs.values():
        assert set(given) <= set(action["inputs"]), given
        for value in given.values():
            for word in value.split():
                if "/" in word:
                    assert (REPO / word).exists(), word


@pytest.mark.slow
def test_the_workflow_inputs_through_the_action(installed: Path, tmp_path: Path) -> None:
    """The workflow's two steps: the clean example passes, the CUDA 12 one fails the job with exit code 1."""
    inputs = _workflow_inputs()
    (tmp_path / "examples").symlink_to(REPO / "examples")  # the checkout: paths are relative to it
    good = _run_action(inputs["good"], tmp_path, installed, skip_install=True)
    assert good.outputs["run"]["exit-code"] == "0", good.logs
    assert not good.failed
    called = {u.split("@")[0]: given for u, given in good.called}
    sarif = json.loads(Path(called["github/codeql-action/upload-sarif"]["sarif_file"]).read_text())
    assert sarif["version"] == "2.1.0" and sarif["runs"][0]["tool"]["driver"]["name"] == "envcheck"
    artifact = called["actions/upload-artifact"]
    assert artifact["name"] == "envcheck-good"
    page = Path(artifact["path"]).read_text()
    assert page.startswith("<!DOCTYPE html>") and "requirements-good.txt" in page
    assert "exit code 0" in good.summary

    cuda12 = _run_action(inputs["cuda12"], tmp_path, installed, skip_install=True)
    assert cuda12.outputs["run"]["exit-code"] == "1", cuda12.logs
    assert cuda12.failed and list(cuda12.codes.values())[-1] == 1
    names = [u.split("@")[0] for u, _ in cuda12.called]
    assert "github/codeql-action/upload-sarif" not in names  # sarif: "false"
    assert "actions/upload-artifact" in names  # attached even though the job fails
    assert "G1 FAIL" in cuda12.summary and "exit code 1" in cuda12.summary


@pytest.mark.slow
def test_fail_on_never_and_hostile_inputs(installed: Path, tmp_path: Path) -> None:
    (tmp_path / "examples").symlink_to(REPO / "examples")
    never = _run_action({"paths": "examples/requirements-cuda12.txt", "fail-on": "never", "html-artifact": ""},
                        tmp_path, installed, skip_install=True)
    assert never.outputs["run"]["exit-code"] == "0" and not never.failed
    assert [u.split("@")[0] for u, _ in never.called] == ["actions/setup-python", "github/codeql-action/upload-sarif"]
    # Inputs are data: a command substitution in paths or args runs nothing; a bad fail-on fails with exit code 2.
    hostile = _run_action({"paths": "$(touch pwned) `touch pwned2`", "args": "; touch pwned3"}, tmp_path, installed, skip_install=True)
    assert not list(tmp_path.glob("pwned*"))
    assert hostile.outputs["run"]["exit-code"] == "2", hostile.logs
    # A word of paths is a path, never an option: `--fail-on=never` cannot turn a failing run into a pass.
    injected = _run_action({"paths": "--fail-on=never examples/requirements-cuda12.txt", "html-artifact": ""},
                           tmp_path, installed, skip_install=True)
    assert injected.outputs["run"]["exit-code"] not in ("0", ""), injected.logs
    assert injected.failed
    bad = _run_action({"fail-on": "sometimes"}, tmp_path, installed, skip_install=True)
    assert bad.outputs["run"]["exit-code"] == "2" and bad.failed and list(bad.codes.values())[-1] == 2
