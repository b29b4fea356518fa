"""Every recipe in dockerfiles/ gives exactly the findings dockerfiles/expected.toml lists (real files, real engine)."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from envcheck import engine
from envcheck.config import Config
from envcheck.profile import load_profile
from envcheck.sources import ReadOptions, detect
from envcheck.sources import dockerfile as dockerfile_source

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

RECIPES = Path(__file__).resolve().parent.parent / "dockerfiles"
CASES: list[dict[str, Any]] = tomllib.loads((RECIPES / "expected.toml").read_text(encoding="utf-8"))["case"]


def _judge(case: dict[str, Any]) -> engine.TargetResult:
    path = RECIPES / case["dockerfile"]
    options = ReadOptions(build_args=case.get("build_args", {}))
    target = engine.Target(str(path), "dockerfile", lambda: dockerfile_source.read(path, options))
    inventory = engine.read_safely(target)
    return engine.judge(target, inventory, load_profile("dgx-spark"), Config())


def test_at_least_fifteen_distinct_recipes() -> None:
    assert len({c["dockerfile"] for c in CASES}) >= 15
    for case in CASES:
        assert detect(RECIPES / case["dockerfile"]) == "dockerfile"


@pytest.mark.parametrize("case", CASES, ids=[f"{c['dockerfile'].split('/')[0]}{'+' + ','.join(c.get('build_args', {})) if c.get('build_args') else ''}" for c in CASES])
def test_recipe_findings(case: dict[str, Any]) -> None:
    result = _judge(case)
    folder = (RECIPES / case["dockerfile"]).parent
    got = Counter()
    for f in result.findings:
        if f.status.value not in ("WARN", "FAIL", "ERROR"):
            continue
        loc = f.location
        assert loc is not None and loc.line is not None, f"{f.rule} has no line: {f.message}"
        path = Path(loc.path)
        key = (f.rule, f.status.value, loc.line, loc.stage if f.rule != "input-error" else None,
               "Dockerfile" if path.name == "Dockerfile" else path.relative_to(folder).as_posix())
        got[key] += 1
    want = Counter(
        (e["rule"], e["status"], e["line"], e.get("stage"), e.get("path", "Dockerfile")) for e in case["findings"]
    )
    assert got == want, f"{case['dockerfile']}: {case['why']}\nmessages: " + "\n".join(
        f"{f.status.value} {f.rule} {f.location}: {f.message}" for f in result.findings if f.status.value in ("WARN", "FAIL", "ERROR"))
    suppressed = Counter((f.rule, f.location.line if f.location else None) for f, _ in result.suppressed)
    assert suppressed == Counter((s["rule"], s["line"]) for s in case.get("suppressed", []))
    passed = {f.rule for f in result.findings if f.status.value == "PASS"}
    assert set(case.get("passes", [])) <= passed
    infos = {f.rule for f in result.findings if f.status.value == "INFO"}
    assert set(case.get("infos", [])) <= infos


def test_findings_name_their_stage_in_a_multistage_build() -> None:
    case = next(c for c in CASES if c["dockerfile"].startswith("multistage-xformers"))
    result = _judge(case)
    warn = [f for f in result.findings if f.rule == "G1-cuda12-base" and f.status.value == "WARN"]
    assert warn and "stage 'tools'" in warn[0].message and "not part of the built image" in warn[0].message


def test_command_line_build_arg_and_a_broken_file_next_to_good_ones() -> None:
    from conftest import run_envcheck

    arg = RECIPES / "arg-base-tag" / "Dockerfile"
    assert run_envcheck(str(arg)).returncode == 1  # default ARG: NGC 25.03, CUDA 12.8
    done = run_envcheck("--build-arg", "NGC_VERSION=25.11", str(arg))
    assert done.returncode == 0, done.stdout
    broken = RECIPES.parent / "fixtures" / "dockerfile-errors" / "unknown-instruction" / "Dockerfile"
    done = run_envcheck(str(broken), str(RECIPES / "ngc-24.10" / "Dockerfile"), str(RECIPES / "vllm-ngc" / "Dockerfile"))
    assert done.returncode == 2
    assert f"{broken}:3: ERROR" in done.stdout and "unknown instruction: PIP" in done.stdout
    assert "ngc-24.10/Dockerfile:1 [stage" in done.stdout and "FAIL G1 G1-cuda12-base" in done.stdout  # the other targets are still checked
    assert "vllm-ngc/Dockerfile (dockerfile): PASS" in done.stdout
