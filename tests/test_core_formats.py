"""Output formats on real reports: the JSON Schema, SARIF's required fields, GitHub annotations, preflight lines."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
from conftest import REPO, run_envcheck

EXAMPLES = sorted(str(p) for p in (REPO / "examples").rglob("*") if p.is_file())


@pytest.fixture(scope="module")
def json_report() -> dict:
    proc = run_envcheck("--format", "json", *EXAMPLES)
    assert proc.returncode == 1, proc.stderr
    return json.loads(proc.stdout)


def test_json_validates_against_the_shipped_schema(json_report: dict) -> None:
    schema = json.loads(resources.files("envcheck.formats").joinpath("report.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(json_report, schema)
    assert json_report["schema_version"] == 1
    assert json_report["summary"]["G1"] == "FAIL"
    assert json_report["exit_code"] == 1
    kinds = {t["kind"] for t in json_report["targets"]}
    assert {"requirements", "pyproject"} <= kinds
    assert all("inventory" in t and "context" in t["inventory"] for t in json_report["targets"])


def test_json_schema_rejects_a_broken_report(json_report: dict) -> None:
    schema = json.loads(resources.files("envcheck.formats").joinpath("report.schema.json").read_text())
    broken = json.loads(json.dumps(json_report))
    broken["targets"][0]["findings"].append({"rule": "x", "gotcha": "G11", "status": "MAYBE", "message": "", "evidence": {}, "fix": ""})
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)


def test_json_schema_covers_fix_edits(json_report: dict) -> None:
    """--fix's edits and refusals (docs/fix.md) are in the report and the schema: a broken edit is refused."""
    schema = json.loads(resources.files("envcheck.formats").joinpath("report.schema.json").read_text())
    findings = [f for t in json_report["targets"] for f in t["findings"]]
    assert any(f.get("edits") for f in findings) and any(f.get("fix_refused") for f in findings)
    for bad in ({"offset": -1}, {"replacement": None}, {"extra": 1}):
        broken = json.loads(json.dumps(json_report))
        finding = next(f for t in broken["targets"] for f in t["findings"] if f.get("edits"))
        finding["edits"][0].update(bad)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(broken, schema)


def test_sarif_has_what_code_scanning_requires() -> None:
    proc = run_envcheck("--format", "sarif", *EXAMPLES)
    sarif = json.loads(proc.stdout)
    assert sarif["version"] == "2.1.0" and "$schema" in sarif
    run = sarif["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "envcheck" and driver["rules"]
    ids = [r["id"] for r in driver["rules"]]
    assert len(ids) == len(set(ids))
    for rule in driver["rules"]:
        assert rule["shortDescription"]["text"] and rule["fullDescription"]["text"] and rule["help"]["text"]
    assert run["results"]
    for result in run["results"]:
        assert result["ruleId"] in ids and driver["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["level"] in ("error", "warning", "note")
        assert result["message"]["text"]
        phys = result["locations"][0]["physicalLocation"]
        assert phys["artifactLocation"]["uri"]
    lines = [r["locations"][0]["physicalLocation"].get("region", {}).get("startLine") for r in run["results"]]
    assert any(isinstance(n, int) and n >= 1 for n in lines)


def test_github_annotations_escape_and_point_at_lines(tmp_path) -> None:
    req = tmp_path / "requirements,odd:name.txt"
    req.write_text("torch==2.5.1+cu121\nflash-attn==2.7.4.post1\n")
    proc = run_envcheck("--format", "github", "--kind", "requirements", str(req))
    lines = proc.stdout.splitlines()
    assert any(line.startswith("::error file=") and ",line=1," in line for line in lines), lines
    assert all("%2C" in line and "%3A" in line for line in lines if line.startswith("::error file="))
    assert proc.returncode == 1


def test_preflight_format_has_ten_gotcha_lines_in_order() -> None:
    proc = run_envcheck("--format", "preflight", str(REPO / "examples" / "requirements-cuda12.txt"))
    lines = proc.stdout.splitlines()
    assert [line.split()[0] for line in lines[:10]] == [f"G{n}" for n in range(1, 11)]
    assert lines[0].startswith("G1 FAIL ")
    assert lines[2].startswith("G3 SKIP")
    for line in lines[:10]:
        assert line.split()[1] in ("PASS", "FAIL", "WARN", "SKIP", "INFO:")


def test_text_format_shows_fix_and_summary() -> None:
    proc = run_envcheck(str(REPO / "examples" / "requirements-cuda12.txt"))
    assert "fix:" in proc.stdout and "summary: G1 FAIL" in proc.stdout
    assert proc.returncode == 1


def test_text_summary_counts_what_was_suppressed(tmp_path: Path) -> None:
    """Problems left out by --ignore, the config or a pragma were counted only in JSON's `suppressed`: the text
    summary says how many, by status, and only when there are some (a suppressed PASS is no problem hidden)."""
    req = tmp_path / "requirements.txt"
    req.write_text("# envcheck: ignore=G9-unpinned constraints.txt pins it\ntransformers\ntorch==2.5.1+cu121\n")
    last = run_envcheck("--ignore", "G1", str(req)).stdout.splitlines()[-1]
    assert last == "summary: G2 PASS, G9 PASS; 1 FAIL, 1 WARN suppressed (-v lists them)", last
    verbose = run_envcheck("-v", "--ignore", "G1", str(req)).stdout.splitlines()
    assert verbose[-1].endswith("; 1 FAIL, 1 WARN suppressed") and sum("  suppressed " in line for line in verbose) >= 2, verbose
    assert run_envcheck("-q", "--ignore", "G1", str(req)).stdout.splitlines()[-1].endswith("suppressed (drop -q and add -v)")
    req.write_text("--index-url https://download.pytorch.org/whl/cu130\ntorch==2.9.0+cu130\n")  # only PASS findings left out
    quiet = run_envcheck("--ignore", "G1", "--ignore", "G2", str(req)).stdout.splitlines()[-1]
    assert quiet.startswith("summary: ") and "suppressed" not in quiet, quiet


def test_preflight_format_keeps_ten_lines_and_sends_other_findings_to_stderr(tmp_path) -> None:
    wheel_url = "https://example.org/w/bitsandbytes-0.48.0-py3-none-manylinux_2_24_x86_64.whl"
    req = tmp_path / "requirements.txt"
    req.write_text(f"torch==2.5.1+cu121\n{wheel_url}\n")
    broken = tmp_path / "requirements-broken.txt"
    broken.write_bytes(b"\x00\x01junk")
    proc = run_envcheck("--format", "preflight", str(req), str(broken))
    assert [line.split()[0] for line in proc.stdout.splitlines()] == [f"G{n}" for n in range(1, 11)]
    assert "ARCH FAIL" in proc.stderr and "ENVCHECK ERROR" in proc.stderr
    assert proc.returncode == 2


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github", "html"])
def test_stdin_is_named_dash_in_every_format_with_its_lines(tmp_path: Path, fmt: str) -> None:
    """`-` is stdin, named `-` as ruff and hadolint name it, never /dev/stdin; its lines stay right."""
    done = run_envcheck("--kind", "requirements", "-f", fmt, "-", cwd=tmp_path, input="numpy==2.2.0\ntorch==2.5.1\n")
    assert done.returncode == 0 and "/dev/stdin" not in done.stdout + done.stderr, done.stdout
    said = {"text": "-:2: WARN G1 G1-cpu-build", "github": "::warning file=-,line=2,title=G1 G1-cpu-build",
            "html": "<code>-:2</code>"}.get(fmt)
    if said is not None:
        assert said in done.stdout, done.stdout
    if fmt == "json":
        (target,) = json.loads(done.stdout)["targets"]
        (warn,) = [f for f in target["findings"] if f["status"] == "WARN"]
        assert (target["target"], warn["location"]) == ("-", {"path": "-", "line": 2})
    if fmt == "sarif":
        (result,) = json.loads(done.stdout)["runs"][0]["results"]
        assert result["locations"][0]["physicalLocation"] == {"artifactLocation": {"uri": "-"}, "region": {"startLine": 2}}


STDIN_LAUNCHES = {
    "shell": "#!/bin/bash\nvllm serve Qwen/Qwen3-8B --gpu-memory-utilization 0.95\n"
             "torchrun --nnodes 2 --nproc-per-node 1 train.py --tp 2\n",
    "kubernetes": "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n  - name: a\n"
                  "    image: nvcr.io/nvidia/vllm:25.11-py3\n    resources: {limits: {nvidia.com/gpu: 2}}\n",
    "compose": "services:\n  vllm:\n    image: nvcr.io/nvidia/vllm:25.11-py3\n"
               "    command: vllm serve Qwen/Qwen3-8B --gpu-memory-utilization 0.95\n",
}


@pytest.mark.parametrize("kind", sorted(STDIN_LAUNCHES))
def test_stdin_launch_and_pod_findings_are_named_dash_too(tmp_path: Path, kind: str) -> None:
    """Launch commands and pod requests carry their file in the readings (G3, G6, G10 findings are located from
    them): from stdin they said /dev/stdin where every other finding says `-`."""
    done = run_envcheck("--kind", kind, "-f", "json", "-", cwd=tmp_path, input=STDIN_LAUNCHES[kind])
    assert "/dev/stdin" not in done.stdout + done.stderr, done.stdout
    (target,) = json.loads(done.stdout)["targets"]
    located = [f for f in target["findings"] if f["rule"].startswith(("G3-", "G10-")) and f.get("location")]
    assert located and all(f["location"]["path"] == "-" for f in located), located


def test_an_unreadable_stdin_is_named_too(tmp_path: Path) -> None:
    done = run_envcheck("--kind", "uv-lock", "-", cwd=tmp_path, input="")
    assert done.returncode == 2 and "-: ERROR ENVCHECK input-error: stdin (-) is empty: not a uv lock file" in done.stdout
