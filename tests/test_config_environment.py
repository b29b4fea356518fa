"""The environment layer of the configuration (defaults < config file < ENVCHECK_* < command line), through
the real command line: ENVCHECK_IGNORE and ENVCHECK_PROFILE change what is judged, and each layer above
wins over the one below. Disabling the environment layer in envcheck/config.py turns these red."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import REPO, run_envcheck

REQUIREMENTS = "torch==2.5.1+cu121\nflash-attn==2.7.4.post1\n"


def _report(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    req = tmp_path / "requirements.txt"
    req.write_text(REQUIREMENTS)
    done = run_envcheck("-f", "json", *args, str(req), cwd=tmp_path, env={"ENVCHECK_IGNORE": "", "ENVCHECK_PROFILE": "",
                                                                          "ENVCHECK_FAIL_ON": "", **(env or {})})
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, json.loads(done.stdout) if done.stdout else {}


def _rules(report: dict[str, Any], key: str = "findings") -> set[str]:
    return {f["rule"] for t in report["targets"] for f in t[key] if f["status"] in ("FAIL", "WARN")}


def test_envcheck_ignore_suppresses_rules_and_gotchas(tmp_path: Path) -> None:
    code, plain = _report(tmp_path)
    assert code == 1 and {"G1-cuda12-local-version", "G2-flash-attn-build"} <= _rules(plain)
    code, ignored = _report(tmp_path, env={"ENVCHECK_IGNORE": "G1-cuda12-local-version, G2"})
    assert "G1-cuda12-local-version" not in _rules(ignored)
    assert not {r for r in _rules(ignored) if r.startswith("G2")}  # a whole gotcha
    assert {"G1-cuda12-local-version", "G2-flash-attn-build"} <= _rules(ignored, "suppressed")  # said, not lost
    assert code == (1 if _rules(ignored) else 0)
    # The command line adds to the environment's list.
    _, both = _report(tmp_path, "--ignore", "G1", env={"ENVCHECK_IGNORE": "G2"})
    assert not {r for r in _rules(both) if r.startswith(("G1", "G2"))}


def test_envcheck_ignore_is_above_the_config_file(tmp_path: Path) -> None:
    (tmp_path / ".envcheck.toml").write_text('ignore = ["G2"]\nfail-on = "never"\n')
    code, report = _report(tmp_path, env={"ENVCHECK_IGNORE": "G1", "ENVCHECK_FAIL_ON": "fail"})
    assert not {r for r in _rules(report) if r.startswith(("G1", "G2"))}  # both layers' ignores apply
    code, report = _report(tmp_path, env={"ENVCHECK_FAIL_ON": "fail"})
    assert code == 1  # ENVCHECK_FAIL_ON=fail beats the file's never (G1 still fails)


def test_envcheck_profile_selects_the_target(tmp_path: Path) -> None:
    shipped = (REPO / "envcheck" / "profiles" / "dgx-spark.toml").read_text(encoding="utf-8")
    cuda12 = tmp_path / "cuda12-box.toml"
    cuda12.write_text(shipped.replace('name = "dgx-spark"', 'name = "cuda12-box"').replace("cuda_major = 13", "cuda_major = 12"))
    _, spark = _report(tmp_path)
    assert spark["profile"] == "dgx-spark" and "G1-cuda12-local-version" in _rules(spark)
    _, other = _report(tmp_path, env={"ENVCHECK_PROFILE": str(cuda12)})
    assert other["profile"] == "cuda12-box"
    assert "G1-cuda12-local-version" not in _rules(other)  # a CUDA 12 build is right for a CUDA 12 machine
    _, command_line = _report(tmp_path, "--profile", "dgx-spark", env={"ENVCHECK_PROFILE": str(cuda12)})
    assert command_line["profile"] == "dgx-spark"  # the command line is the top layer


def test_envcheck_profile_that_does_not_exist_is_a_usage_error(tmp_path: Path) -> None:
    req = tmp_path / "requirements.txt"
    req.write_text(REQUIREMENTS)
    done = run_envcheck(str(req), cwd=tmp_path, env={"ENVCHECK_PROFILE": "no-such-profile"})
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "no-such-profile" in done.stderr
