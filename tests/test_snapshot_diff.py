"""`envcheck snapshot`, `envcheck diff` (G9 drift), twin mode (G10) and `preflight --baseline/--twin`.

Real inputs throughout: the shipped fixtures, site-packages folders made of the real ELF fixtures in
fixtures/binaries, the loopback registry's NGC-like images, the inventory of a real CUDA 13 torch
environment captured on an H200 (fixtures/device/h200), and the real venvs of the preflight tests.
"""

from __future__ import annotations

import copy
import gzip
import json
import shutil
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import FIXTURES, REPO, installed_dist, run_envcheck
from test_binaries_real import torch_venv  # noqa: F401  (the shared 5 GB CUDA 13 torch venv fixture)

from envcheck.commands.snapshot import load_snapshot
from envcheck.formats.snapshot_format import snapshot_data
from envcheck.model import Report, TargetResult

BINARIES = FIXTURES / "binaries"
H200 = FIXTURES / "device" / "h200" / "preflight-binaries.json.gz"


def _schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(resources.files("envcheck.formats").joinpath("report.schema.json").read_text())
    return schema


def _diff(*args: str, input: str | None = None) -> tuple[int, list[dict[str, Any]]]:
    """`envcheck diff ... --format json`: the exit code and the findings."""
    proc = run_envcheck("diff", *args, "--format", "json", input=input)
    assert proc.returncode in (0, 1), proc.stderr
    report = json.loads(proc.stdout)
    jsonschema.validate(report, _schema())
    return proc.returncode, report["targets"][0]["findings"]


def _rules(findings: list[dict[str, Any]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in findings:
        out.setdefault(f["rule"], []).append(f"{f['status']} {f['message']}")
    return out


# ---------------------------------------------------------------------------------------------- snapshots of the fixtures


@pytest.mark.parametrize("target", [
    "examples/project-uv-lock",  # a project folder: pyproject.toml and uv.lock, two targets in one snapshot
    "fixtures/rules/G1-cuda12-index/positive/requirements.txt",
    "fixtures/rules/G9-floating-base-tag/positive/Dockerfile",
    "fixtures/binaries/gpu_sm120_121a.so",
])
def test_snapshot_of_a_shipped_fixture_validates_reads_back_and_diffs_empty_with_itself(target: str, tmp_path: Path) -> None:
    out = tmp_path / "snap.json"
    proc = run_envcheck("snapshot", target, "-o", str(out), "-q", cwd=REPO)
    assert proc.returncode == 0, proc.stderr  # findings are data in a snapshot: not exit 1
    data = json.loads(out.read_text())
    jsonschema.validate(data, _schema())
    assert data["snapshot"]["snapshot_version"] == 1 and data["targets"]
    snapshot = load_snapshot(str(out))
    assert [t.to_json() for t in snapshot.targets] == [{**t, "suppressed": t.get("suppressed", [])} for t in data["targets"]]
    code, findings = _diff(str(out), str(out))
    assert (code, findings) == (0, [])


def test_a_diff_that_finds_no_change_says_the_sides_match(tmp_path: Path) -> None:
    """`envcheck diff X.json X.json` ended with "summary: nothing checked", as if nothing had been compared: a
    diff without findings says that the two sides match; one whose changes were all ignored says no change was
    reported (and how many problems --ignore left out), never that the sides match."""
    target = str(FIXTURES / "rules" / "G1-cuda12-index" / "positive" / "requirements.txt")
    assert run_envcheck("snapshot", target, "-o", str(tmp_path / "a.json"), "-q").returncode == 0
    for sides in ((str(tmp_path / "a.json"), str(tmp_path / "a.json")), (str(tmp_path / "a.json"), target)):
        proc = run_envcheck("diff", *sides)
        assert proc.returncode == 0 and proc.stdout.splitlines()[-1] == "summary: nothing changed: the two sides match", proc.stdout
    (tmp_path / "b.txt").write_text("torch==2.5.1+cu121\ntransformers\n")
    proc = run_envcheck("diff", str(tmp_path / "a.json"), str(tmp_path / "b.txt"), "--ignore", "g9")
    assert proc.returncode == 0 and proc.stdout.splitlines()[-1].startswith("summary: no change reported; "), proc.stdout
    assert "match" not in proc.stdout
    # an ordinary check that finds nothing to judge still says so
    (tmp_path / "empty.txt").write_text("# nothing\n")
    assert run_envcheck("--kind", "requirements", str(tmp_path / "empty.txt")).stdout.splitlines()[-1] == "summary: nothing checked"


def test_variables_with_empty_values_round_trip_through_json_merge_and_snapshot(tmp_path: Path) -> None:
    """`ARG NAME=""`, `ENV NAME=`, a compose `NAME: ""`: the JSON report left the empty value out, against its own
    schema (an env entry requires `value`), and `envcheck merge` or `diff` of that report or snapshot refused it
    (`targets[0].inventory.env[0]: missing value`)."""
    (tmp_path / "Dockerfile").write_text('FROM nvcr.io/nvidia/pytorch:25.11-py3\nARG FLASHINFER_VERSION=""\nENV EMPTY=\n'
                                         'RUN if [ -n "$FLASHINFER_VERSION" ]; then pip install flashinfer-python; fi\n')
    (tmp_path / "compose.yaml").write_text('services:\n  vllm:\n    image: nvcr.io/nvidia/vllm:25.11-py3\n'
                                           '    environment:\n      HF_HOME: ""\n')
    proc = run_envcheck("-f", "json", "-o", "report.json", ".", cwd=tmp_path)
    report = json.loads((tmp_path / "report.json").read_text())
    jsonschema.validate(report, _schema())
    empty = [e for t in report["targets"] for e in t["inventory"].get("env", []) if e["value"] == ""]
    assert {e["name"] for e in empty} >= {"FLASHINFER_VERSION", "EMPTY", "HF_HOME"}, empty
    merged = run_envcheck("merge", "report.json", cwd=tmp_path)
    assert merged.returncode == proc.returncode and "missing" not in merged.stderr, merged.stderr
    snap = run_envcheck("snapshot", ".", "-o", "snap.json", "-q", cwd=tmp_path)
    assert snap.returncode == 0, snap.stderr
    assert _diff(str(tmp_path / "snap.json"), str(tmp_path / "snap.json")) == (0, [])


def test_snapshot_to_stdout_is_only_the_document_and_composes_with_diff_over_stdin(tmp_path: Path) -> None:
    target = str(FIXTURES / "rules" / "G1-cuda12-index" / "positive" / "requirements.txt")
    proc = run_envcheck("snapshot", target, "-o", "-")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("\n") == 1 and json.loads(proc.stdout)["targets"][0]["kind"] == "requirements"
    # the same file now (live) against the snapshot read from stdin: nothing changed
    assert _diff("-", target, input=proc.stdout) == (0, [])


def test_snapshot_without_a_target_or_of_nothing_is_a_usage_error(tmp_path: Path) -> None:
    assert run_envcheck("snapshot", "-o", "-").returncode == 2
    # a file name that does not exist is not looked up as a Docker Hub image
    proc = run_envcheck("snapshot", str(tmp_path / "requirements-typo.txt"), "-o", "-")
    assert proc.returncode == 2 and "requirements-typo.txt: no such file" in proc.stderr and proc.stdout == ""
    proc = run_envcheck("diff", str(tmp_path / "missing.json"), str(tmp_path / "other.json"))
    assert proc.returncode == 2 and "missing.json" in proc.stderr
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema_version": 1, "targets": [{"target": "x", "kind": "requirements", "inventory": {"context": "declared", "packages": [{"name": "torch", "role": "wished"}]}, "findings": []}]}')
    proc = run_envcheck("diff", str(bad), str(bad))
    assert proc.returncode == 2 and "bad.json: targets[0].inventory.packages[0].role: 'wished'" in proc.stderr
    assert "Traceback" not in proc.stderr


# ---------------------------------------------------------------------------------------------- a CUDA 12 wheel added


@pytest.fixture(scope="module")
def cuda_sites(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two site-packages folders: a clean CUDA 13 one, and the same after one CUDA 12 wheel was installed."""
    root = tmp_path_factory.mktemp("sites")
    clean = root / "clean" / "lib" / "python3.12" / "site-packages"
    installed_dist(clean, "ext13", "1.0", {"ext13/_C.so": BINARIES / "libext_cuda13.so"})
    installed_dist(clean, "gpukernels", "2.0", {"gpukernels/_k.so": BINARIES / "gpu_sm121.so"})
    drifted = root / "drifted" / "lib" / "python3.12" / "site-packages"
    shutil.copytree(clean, drifted)
    installed_dist(drifted, "nvidia-cuda-runtime-cu12", "12.8.90", {"nvidia/cuda_runtime/lib/libcudart.so.12": BINARIES / "libcudart.so.12",
                                                            "nvidia/cuda_runtime/lib/libext12.so": BINARIES / "libext_cuda12.so"})
    return clean, drifted


def test_one_cuda12_wheel_added_to_a_cuda13_environment(cuda_sites: tuple[Path, Path], tmp_path: Path) -> None:
    clean, drifted = cuda_sites
    code, findings = _diff(str(clean), str(drifted))
    rules = _rules(findings)
    assert code == 1, rules  # a finding got worse
    [package] = rules["G9-drift-package"]
    assert package.startswith("WARN nvidia-cuda-runtime-cu12 12.8.90 added (CUDA 12)")
    assert any(b.startswith("WARN nvidia/cuda_runtime/lib/libext12.so (nvidia-cuda-runtime-cu12) added: CUDA 12") for b in rules["G9-drift-binary"])
    worse = rules["G9-drift-finding"]
    # one cause, one finding: the CUDA 12 distribution and its two libraries are one G1 finding
    [g1] = [w for w in worse if w.startswith("FAIL G1-")]
    assert "G1-binary-soname not reported → FAIL: nvidia-cuda-runtime-cu12: 2 binaries" in g1, worse
    assert all(w.startswith("FAIL ") for w in worse)
    # the untouched CUDA 13 libraries are not mentioned
    assert not any("ext13" in m or "gpukernels" in m for ms in rules.values() for m in ms)
    # the same comparison from snapshot files, and the way back (better: exit 0, the FAILs become INFO)
    a, b = tmp_path / "clean.json", tmp_path / "drifted.json"
    for site, out in ((clean, a), (drifted, b)):
        assert run_envcheck("snapshot", str(site), "-o", str(out), "-q").returncode == 0
    code_files, from_files = _diff(str(a), str(b))
    assert code_files == 1 and _rules(from_files) == rules
    back_code, back = _diff(str(b), str(a))
    assert back_code == 0
    assert {f["status"] for f in back if f["rule"] == "G9-drift-finding"} == {"INFO"}
    assert any(f["message"].startswith("nvidia-cuda-runtime-cu12 12.8.90 removed") for f in back)


def test_diff_text_output_shows_the_changes_and_sarif_carries_the_rules(cuda_sites: tuple[Path, Path]) -> None:
    clean, drifted = cuda_sites
    text = run_envcheck("diff", str(clean), str(drifted))
    assert text.returncode == 1
    assert f"{clean} → {drifted} (diff): FAIL" in text.stdout
    assert "WARN G9 G9-drift-package: nvidia-cuda-runtime-cu12 12.8.90 added (CUDA 12)" in text.stdout
    sarif = json.loads(run_envcheck("diff", str(clean), str(drifted), "--format", "sarif").stdout)
    results = sarif["runs"][0]["results"]
    rule_ids = {r["id"] for r in sarif["runs"][0]["tool"]["driver"]["rules"]}
    assert {"G9-drift-finding", "G9-drift-package", "G10-twin-mismatch"} <= rule_ids
    assert {r["ruleId"] for r in results} >= {"G9-drift-finding", "G9-drift-package", "G9-drift-binary"}
    # --fail-on never: the same changes, exit 0; --ignore: a drift rule can be silenced like any rule
    assert run_envcheck("diff", str(clean), str(drifted), "--fail-on", "never").returncode == 0
    assert run_envcheck("diff", str(clean), str(drifted), "--ignore", "G9-drift-finding").returncode == 0


def test_pins_that_now_contradict() -> None:
    pins = FIXTURES / "rules" / "G9-pin-conflict"
    code, findings = _diff(str(pins / "negative" / "requirements.txt"), str(pins / "positive" / "requirements.txt"))
    rules = _rules(findings)
    assert code == 1
    assert [m.split(": ", 1)[0] for m in rules["G9-drift-pin"]] == ["FAIL G9-pin-conflict PASS → FAIL"]
    assert "WARN triton 3.6.0 → 3.4.0" in rules["G9-drift-package"]
    code, back = _diff(str(pins / "positive" / "requirements.txt"), str(pins / "negative" / "requirements.txt"))
    assert code == 0 and "G9-drift-pin" not in _rules(back)


# ---------------------------------------------------------------------------------------------- NGC image configs


def test_two_ngc_image_configs(registry_images: Any, tmp_path: Path) -> None:
    cuda13, cuda12 = registry_images.ngc_arm64, registry_images.ngc_cuda12
    code, findings = _diff(cuda13, cuda12)
    rules = _rules(findings)
    assert code == 1, rules
    assert any(m.startswith("WARN CUDA_VERSION: 13.") and "→ 12." in m for m in rules["G9-drift-env"]), rules
    assert any(m.startswith("FAIL G1-image-cuda PASS → FAIL") for m in rules["G9-drift-finding"]), rules
    back_code, back = _diff(cuda12, cuda13)
    assert back_code == 0 and all(f["status"] != "FAIL" for f in back)
    # an image snapshot diffed with the live image: nothing changed
    snap = tmp_path / "ngc.json"
    assert run_envcheck("snapshot", cuda13, "-o", str(snap), "-q").returncode == 0
    assert _diff(str(snap), cuda13) == (0, [])


# ---------------------------------------------------------------------------------------------- containers


def test_snapshot_of_a_container_and_diff_with_another_image(test_images: Any, tmp_path: Path) -> None:
    """The collector run inside the test images (tests/docker_images.py): a CUDA 13 one, then a CUDA 12 one."""
    good = tmp_path / "cuda13.json"
    proc = run_envcheck("snapshot", test_images.cuda13, "--container", "-o", str(good), "-q", timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert _diff(str(good), str(good)) == (0, [])
    proc = run_envcheck("diff", str(good), test_images.cuda12, "--container", "--format", "json", timeout=300)
    assert proc.returncode == 1, proc.stderr
    rules = _rules(json.loads(proc.stdout)["targets"][0]["findings"])
    assert any("G1-live-torch PASS → FAIL" in m for m in rules["G9-drift-finding"]), rules
    assert any(m.startswith("WARN torch ") and "(CUDA 13 → 12)" in m for m in rules["G9-drift-package"]), rules
    proc = run_envcheck("diff", "--twins", str(good), test_images.cuda12, "--container", "--format", "json", timeout=300)
    mismatches = [f["message"] for f in json.loads(proc.stdout)["targets"][0]["findings"]]
    assert proc.returncode == 1 and any(m.startswith("torch CUDA: 13.0 on ") for m in mismatches), mismatches


# ---------------------------------------------------------------------------------------------- a real CUDA 13 torch environment


@pytest.fixture(scope="module")
def h200_report() -> dict[str, Any]:
    report: dict[str, Any] = json.loads(gzip.decompress(H200.read_bytes()))
    return report


def _snapshot_file(report: dict[str, Any], path: Path, node: str) -> Path:
    parsed = Report(profile=report["profile"], targets=[TargetResult.from_json(t) for t in report["targets"]])
    path.write_text(json.dumps(snapshot_data(parsed, created="2026-12-02T10:00:00Z", node=node), separators=(",", ":")))
    return path


def test_snapshot_of_a_real_cuda13_torch_environment_is_small_and_reads_back(h200_report: dict[str, Any], tmp_path: Path) -> None:
    path = _snapshot_file(h200_report, tmp_path / "h200.json", "h200")
    size = path.stat().st_size
    assert size < 1_000_000, size  # 866 ELF files, 198 distributions
    jsonschema.validate(json.loads(path.read_text()), _schema())
    snapshot = load_snapshot(str(path))
    assert len(snapshot.targets[0].inventory.binaries) == len(h200_report["targets"][0]["inventory"]["binaries"])
    assert snapshot.node == "h200"
    assert _diff(str(path), str(path)) == (0, [])


def _node(report: dict[str, Any], nccl: str | None = None, hostname: str = "spark-a", cached_gib: int = 4) -> dict[str, Any]:
    """The H200 capture as another node: a host name and a page cache of its own, optionally another NCCL."""
    node = copy.deepcopy(report)
    inventory = node["targets"][0]["inventory"]
    inventory["host"]["meminfo"]["bytes"]["Cached"] = cached_gib << 30
    inventory["host"]["probe"]["origin"] = f"{hostname}:/opt/torch/.venv/bin/python3"
    for gpu in inventory["host"]["nvidia_smi"]["samples"][-1]["gpus"]:
        gpu["temperature_c"] = 30 + cached_gib
    if nccl is not None:
        for pkg in inventory["packages"]:
            if pkg["name"] == "nvidia-nccl-cu13":
                pkg["version"] = nccl
    return node


def test_two_nodes_that_differ_in_nccl_only(h200_report: dict[str, Any], tmp_path: Path) -> None:
    a = _snapshot_file(_node(h200_report, hostname="spark-a", cached_gib=4), tmp_path / "spark-a.json", "spark-a")
    same = _snapshot_file(_node(h200_report, hostname="spark-b", cached_gib=40), tmp_path / "spark-b-same.json", "spark-b")
    b = _snapshot_file(_node(h200_report, nccl="2.27.7", hostname="spark-b", cached_gib=40), tmp_path / "spark-b.json", "spark-b")
    code, findings = _diff("--twins", str(a), str(same))
    assert code == 0 and [f["rule"] for f in findings] == ["G10-twin-match"]
    assert "nvidia-nccl-cu13" in findings[0]["message"] and "driver" in findings[0]["message"]
    code, findings = _diff("--twins", str(a), str(b))
    assert code == 1
    assert [(f["rule"], f["status"], f["message"]) for f in findings] == [
        ("G10-twin-mismatch", "FAIL", f"nvidia-nccl-cu13: 2.28.9 on {a}, 2.27.7 on {b}")]
    # over ssh: the second node's snapshot arrives on stdin
    code, piped = _diff("--twins", str(a), "-", input=b.read_text())
    assert code == 1 and [f["rule"] for f in piped] == ["G10-twin-mismatch"] and "2.27.7 on stdin (spark-b)" in piped[0]["message"]
    # three nodes: each compared with the first
    code, three = _diff("--twins", str(a), str(same), str(b))
    assert code == 1 and len(three) == 1
    # without --twins the same pair is drift: a WARN for the NCCL change, nothing got worse
    code, drift = _diff(str(a), str(b))
    assert code == 0
    assert [(f["rule"], f["status"], f["message"]) for f in drift] == [
        ("G9-drift-package", "WARN", "nvidia-nccl-cu13 2.28.9 → 2.27.7")]
    assert drift[0]["evidence"]["change"] == "downgraded"


def test_diff_needs_two_sides_and_twins_for_more(tmp_path: Path) -> None:
    target = str(FIXTURES / "rules" / "G1-cuda12-index" / "positive" / "requirements.txt")
    assert run_envcheck("diff", target).returncode == 2
    proc = run_envcheck("diff", target, target, target)
    assert proc.returncode == 2 and "--twins" in proc.stderr
    assert run_envcheck("diff", "-", "-", input="{}").returncode == 2


# ---------------------------------------------------------------------------------------------- preflight --baseline / --twin


def _preflight(*args: str) -> tuple[int, list[str], str]:
    proc = run_envcheck("preflight", "--sample-seconds", "0", *args)
    lines = proc.stdout.splitlines()
    assert len(lines) == 10 and [line.split()[0] for line in lines] == [f"G{n}" for n in range(1, 11)], proc.stdout
    return proc.returncode, lines, proc.stderr


def test_preflight_baseline_puts_what_changed_into_the_g9_line(preflight_envs: dict[str, Path], tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    proc = run_envcheck("snapshot", "--python", str(preflight_envs["good"]), "--no-binaries", "-o", str(good), "-q")
    assert proc.returncode == 0, proc.stderr
    _, lines, _ = _preflight("--python", str(preflight_envs["good"]), "--baseline", str(good))
    assert "→" not in lines[8]
    code, lines, _ = _preflight("--python", str(preflight_envs["cu12"]), "--baseline", str(good))
    g9 = lines[8]
    assert g9.startswith("G9 FAIL since ") and str(good) in g9, g9
    assert "torch" in g9 and "→" in g9
    assert code == 1
    # --format json keeps every change in the evidence
    proc = run_envcheck("preflight", "--sample-seconds", "0", "--python", str(preflight_envs["cu12"]), "--baseline", str(good),
                        "--format", "json")
    [summary] = [f for f in json.loads(proc.stdout)["targets"][0]["findings"] if f["message"].startswith("since ")]
    assert any(c["message"].startswith("torch ") for c in summary["evidence"]["changes"])
    # the README's form: the snapshot against the live environment of an interpreter
    code, findings = _diff(str(good), "--python", str(preflight_envs["cu12"]), "--no-binaries")
    rules = _rules(findings)
    assert code == 1 and any(m.startswith("WARN torch ") and "(CUDA 13 → 12)" in m for m in rules["G9-drift-package"]), rules
    assert any("G1-live-torch" in m for m in rules["G9-drift-finding"]), rules


def test_preflight_twin_puts_node_differences_into_the_g10_line(preflight_envs: dict[str, Path], tmp_path: Path) -> None:
    other = tmp_path / "other-node.json"
    assert run_envcheck("snapshot", "--python", str(preflight_envs["good"]), "--no-binaries", "-o", str(other), "-q").returncode == 0
    _, lines, _ = _preflight("--python", str(preflight_envs["good"]), "--twin", str(other))
    assert lines[9].startswith("G10 PASS") and "nodes match" in lines[9], lines[9]
    code, lines, _ = _preflight("--python", str(preflight_envs["cu12"]), "--twin", str(other))
    assert lines[9].startswith(f"G10 FAIL differs from {other}: "), lines[9]
    assert "torch CUDA: 12.8 on this host, 13.0 on " in lines[9] and "flash-attn: not installed on this host" in lines[9]
    assert code == 1


def test_preflight_baseline_that_cannot_be_read_is_a_usage_error(tmp_path: Path) -> None:
    proc = run_envcheck("preflight", "--sample-seconds", "0", "--baseline", str(tmp_path / "none.json"))
    assert proc.returncode == 2 and "none.json" in proc.stderr and proc.stdout == ""



@pytest.mark.slow
def test_live_snapshot_of_the_real_cuda13_torch_venv(torch_venv: Path, tmp_path: Path) -> None:  # noqa: F811
    """The 5 GB torch 2.14.1+cu130 venv of tests/test_binaries_real.py, read live as preflight reads it."""
    python = torch_venv.parents[2] / "bin" / "python"
    out = tmp_path / "torch.json"
    proc = run_envcheck("snapshot", "--python", str(python), "-o", str(out), "-q", timeout=900)
    assert proc.returncode == 0, proc.stderr
    assert out.stat().st_size < 1_000_000
    data = json.loads(out.read_text())
    jsonschema.validate(data, _schema())
    inventory = TargetResult.from_json(data["targets"][0]).inventory
    probe = inventory.host.torch
    assert probe is not None and probe.cuda == "13.0" and str(probe.version).endswith("+cu130")
    assert inventory.package("torch") is not None and any(b.cuda_major == 13 for b in inventory.binaries)
    assert _diff(str(out), str(out)) == (0, [])


def _packages_snapshot(path: Path, count: int, bump: int) -> Path:
    """A valid snapshot of a requirements target with ``count`` pinned packages (versions shifted by ``bump``)."""
    packages = [{"name": f"pkg{i}", "version": f"1.{(i + bump) % 7}", "specifier": f"==1.{(i + bump) % 7}",
                 "role": "requirement", "location": {"path": "requirements.txt", "line": i + 1}} for i in range(count)]
    document = {"schema_version": 1, "envcheck_version": "0", "profile": "dgx-spark", "snapshot": {"snapshot_version": 1},
                "targets": [{"target": "requirements.txt", "kind": "requirements", "findings": [], "suppressed": [],
                             "inventory": {"context": "declared", "packages": packages}}]}
    path.write_text(json.dumps(document))
    return path


def test_a_snapshot_of_millions_of_empty_objects_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    """Bounded by what would be parsed, not only by bytes: 10 million empty objects in 30 MB (780 MB once
    parsed) are refused from a count of the bytes, in little time and memory."""
    from bounded import run_envcheck_bounded

    bomb = tmp_path / "bomb.json"
    bomb.write_text('{"schema_version": 1, "targets": [' + ",".join(["{}"] * 10_000_000) + "]}")
    good = _packages_snapshot(tmp_path / "good.json", 10, 0)
    run = run_envcheck_bounded("diff", str(bomb), str(good))
    run.assert_within(seconds=3, rss_mb=150)
    assert run.returncode == 2 and "objects and lists" in run.stderr, run.describe()
    deep = tmp_path / "deep.json"
    deep.write_text('{"schema_version": 1, "targets": ' + "[" * 500_000 + "]" * 500_000 + "}")
    run = run_envcheck_bounded("diff", str(deep), str(good))
    run.assert_within(seconds=3, rss_mb=150)
    assert run.returncode == 2 and "nested too deeply" in run.stderr, run.describe()


def test_diff_of_two_large_valid_snapshots_is_bounded(tmp_path: Path) -> None:
    """Two valid snapshots of 50,000 packages each, every version changed: read, compared and reported
    within the hostile-input bars (the work is linear in the packages; 300,000 stay under the parse bounds)."""
    from bounded import run_envcheck_bounded

    a = _packages_snapshot(tmp_path / "a.json", 50_000, 0)
    b = _packages_snapshot(tmp_path / "b.json", 50_000, 1)
    run = run_envcheck_bounded("diff", str(a), str(b), "-f", "json", "-o", str(tmp_path / "out.json"), "-q")
    run.assert_within(seconds=10, rss_mb=300)
    assert run.returncode == 0, run.describe()
    [target] = json.loads((tmp_path / "out.json").read_text())["targets"]
    assert len(target["findings"]) == 50_000


def test_added_packages_get_removal_advice_and_twins_without_torch_are_no_mismatch(tmp_path: Path) -> None:
    """Issue 26 item 14: an added package is not 'reinstall the version of the good side'; two nodes on which
    nothing that must match was read (no torch, NCCL, CUDA or driver) are nothing to compare, not a WARN mismatch."""
    a_dir, b_dir = tmp_path / "a", tmp_path / "b"
    a_dir.mkdir()
    b_dir.mkdir()
    (a_dir / "requirements.txt").write_text("numpy==2.1.0\n", encoding="utf-8")
    (b_dir / "requirements.txt").write_text("numpy==2.1.0\ntransformers==4.57.1\n", encoding="utf-8")
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for folder, out in ((a_dir, a), (b_dir, b)):
        assert run_envcheck("snapshot", str(folder / "requirements.txt"), "-o", str(out), "-q").returncode == 0
    _code, findings = _diff(str(a), str(b))
    [added] = [f for f in findings if f["rule"] == "G9-drift-package"]
    assert added["message"].startswith("transformers 4.57.1 added")
    assert "pip uninstall transformers" in added["fix"] and "good side" not in added["fix"]
    code, twins = _diff("--twins", str(a), str(b))
    assert code == 0
    assert [(f["rule"], f["status"]) for f in twins] == [("G10-twin-match", "INFO")], twins
