"""Hostile numbers in what a launch command serves (G3-share-below-weights reads the parameter count from a model's
name): giant counts, non-ASCII digits and very long commands are no count, every JSON format stays strict JSON
(no Infinity/NaN) and the run stays bounded. docs/limits.md states the bound."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from bounded import run_envcheck_bounded

from envcheck.redaction import clean_value

BOGUS = {
    "nines": "9" * 400,  # float() of it is inf
    "many-nines": "9" * 5000,  # past int()'s digit limit
    "eleven-digits": "99999999999",
    "arabic-indic": "\u0661\u0662\u0663",  # float() reads it as 123
    "fullwidth": "\uff17",  # a fullwidth 7
}


def _strict(text: str) -> Any:
    def refuse(constant: str) -> Any:
        raise AssertionError(f"{constant} is not JSON")
    return json.loads(text, parse_constant=refuse)


def _compose(tmp_path: Path) -> Path:
    services = "".join(
        f"  {name}:\n    image: vllm/vllm-openai:v0.11.0\n    command: vllm serve org/Model-{digits}B --gpu-memory-utilization 0.3\n"
        for name, digits in BOGUS.items())
    words = " ".join(f"--x{i} {i}" for i in range(100_000))
    services += f"  long:\n    image: vllm/vllm-openai:v0.11.0\n    command: vllm serve org/Long-{'9' * 300}B {words}\n"
    services += "  real:\n    image: vllm/vllm-openai:v0.11.0\n    command: vllm serve org/Model-70B --gpu-memory-utilization 0.3\n"
    path = tmp_path / "compose.yaml"
    path.write_text("services:\n" + services, encoding="utf-8")
    return path


@pytest.mark.parametrize("fmt", ["json", "sarif", "snapshot"])
def test_a_model_name_with_a_bogus_parameter_count_is_no_count_and_json_stays_strict(tmp_path: Path, fmt: str) -> None:
    compose = _compose(tmp_path)
    out = tmp_path / f"out.{fmt}"
    run = run_envcheck_bounded(str(compose), "--no-cache", "-v", "-f", fmt, "-o", str(out), "--fail-on", "never")
    run.assert_within(seconds=10, rss_mb=300)
    text = out.read_text(encoding="utf-8")
    data = _strict(text)
    assert "Traceback" not in run.stderr, run.describe()
    if fmt == "json":
        shares = [f for t in data["targets"] for f in t["findings"] if f["rule"] == "G3-share-below-weights"]
        # only the real 70B model is judged: 140 GB of BF16 weights in 0.3 of 128 GB
        assert [(f["status"], f["evidence"]["parameters_billion"]) for f in shares] == [("FAIL", 70.0)], shares
    assert "inf GB" not in text and "infB" not in text


def test_non_finite_numbers_never_reach_a_written_value() -> None:
    cleaned = clean_value({"weights_gb": math.inf, "share": [math.nan, 0.5], "ok": 1.5})
    assert cleaned == {"weights_gb": None, "share": [None, 0.5], "ok": 1.5}
    assert json.dumps(cleaned, allow_nan=False)
