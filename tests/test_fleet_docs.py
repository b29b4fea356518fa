"""docs/fleet.md's Kubernetes Indexed Job, GitHub Actions matrix and SLURM array: schema-checked, consistent,
and their commands run as the engine would run them (its variables set) against the loopback registry."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from conftest import REPO
from fleet_fixtures import TAGS, FleetRepository, fleet_repository
from registry_fixtures import Images

pytestmark = pytest.mark.registry
DOC = REPO / "docs" / "fleet.md"
SCHEMAS = REPO / "tests" / "fleet_schemas"
DOC_REPOSITORY = "registry.lab:5000/ml/train"


def recipe(name: str) -> str:
    """The fenced block that follows ``<!-- fleet: NAME -->`` in docs/fleet.md."""
    text = DOC.read_text(encoding="utf-8")
    found = re.search(rf"<!-- fleet: {name} -->\n```\w+\n(.*?)\n```", text, re.S)
    assert found, f"docs/fleet.md has no {name} recipe"
    return found.group(1)


def schema(name: str) -> dict[str, Any]:
    return json.loads((SCHEMAS / name).read_text())  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def fleet(registry_images: Images) -> FleetRepository:
    return fleet_repository(registry_images.host)


def shell(tmp_path: Path, script: str, env: dict[str, str], fleet: FleetRepository, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run a recipe's shell text with `envcheck` on PATH (this checkout), the doc's registry replaced by the loopback one."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    shim = bindir / "envcheck"
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m envcheck "$@"\n')
    shim.chmod(0o755)
    script = script.replace(DOC_REPOSITORY, fleet.repository)
    script = re.sub(r'pip install (--quiet )?"envcheck-spark @ [^"]+"( &&|$)', "", script, flags=re.M)
    full = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}", "PYTHONPATH": str(REPO), **env}
    return subprocess.run(["bash", "-c", script], env=full, cwd=cwd, capture_output=True, text=True, timeout=300, check=False)


def assert_merged_page(page: Path, fleet: FleetRepository) -> None:
    text = page.read_text(encoding="utf-8")
    matrix = text.split('id="matrix"', 1)[1].split("</table>", 1)[0]
    assert all(f"{fleet.repository}:{tag}</a>" in matrix for tag in TAGS)


def test_kubernetes_indexed_job(fleet: FleetRepository, tmp_path: Path) -> None:
    shards, merge = list(yaml.safe_load_all(recipe("kubernetes")))
    for job in (shards, merge):
        jsonschema.validate(job, schema("kubernetes-job.schema.json"))
    spec = shards["spec"]
    container = spec["template"]["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert spec["completionMode"] == "Indexed" and spec["completions"] == spec["parallelism"] == int(env["JOB_COMPLETIONS"])
    mount = container["volumeMounts"][0]["mountPath"]
    reports = tmp_path / "reports"
    reports.mkdir()
    env = {k: v.replace(mount, str(reports)) for k, v in env.items()}
    command = container["command"][-1:] == ["-c"] and container["args"][0]
    assert command
    for index in range(spec["completions"]):  # what each pod runs, with the index Kubernetes gives it
        done = shell(tmp_path, command.replace(mount, str(reports)), {**env, "JOB_COMPLETION_INDEX": str(index)}, fleet, tmp_path)
        assert done.returncode == 0, done.stderr
        assert f"shard {index + 1}/{spec['completions']} (from JOB_COMPLETION_INDEX/JOB_COMPLETIONS)" in done.stderr
    judged = [t["target"] for i in range(spec["completions"]) for t in json.loads((reports / f"shard-{i}.json").read_text())["targets"]]
    assert sorted(judged) == [f"{fleet.repository}:{tag}" for tag in TAGS]
    merge_container = merge["spec"]["template"]["spec"]["containers"][0]
    done = shell(tmp_path, merge_container["args"][0].replace(mount, str(reports)), {}, fleet, tmp_path)
    assert done.returncode == 1, done.stderr  # the CUDA 12 tags fail
    assert_merged_page(reports / "fleet.html", fleet)


def test_github_actions_matrix(fleet: FleetRepository, tmp_path: Path) -> None:
    workflow = yaml.safe_load(recipe("github"))
    workflow["on"] = workflow.pop(True)  # YAML 1.1 reads the key `on` as true
    jsonschema.validate(workflow, schema("github-workflow.schema.json"))
    shard_job, merge_job = workflow["jobs"]["shard"], workflow["jobs"]["merge"]
    shards = shard_job["strategy"]["matrix"]["shard"]
    assert merge_job["needs"] == "shard"
    runs = [s["run"] for s in shard_job["steps"] if "run" in s]
    assert any(f"--shard ${{{{ matrix.shard }}}}/{len(shards)}" in r for r in runs) and shards == list(range(1, len(shards) + 1))
    for shard in shards:  # each matrix job, ${{ matrix.shard }} substituted as the runner does
        for run in runs:
            done = shell(tmp_path, run.replace("${{ matrix.shard }}", str(shard)), {"ENVCHECK_CACHE_DIR": str(tmp_path / f"cache-{shard}")},
                         fleet, tmp_path)
            assert done.returncode == 0, done.stderr
    merge_runs = [s["run"] for s in merge_job["steps"] if "run" in s]
    results = [shell(tmp_path, run, {}, fleet, tmp_path) for run in merge_runs]
    assert results[-1].returncode == 1, results[-1].stderr
    assert_merged_page(tmp_path / "fleet.html", fleet)


def test_slurm_array(fleet: FleetRepository, tmp_path: Path) -> None:
    script = recipe("slurm")
    assert script.startswith("#!/bin/bash\n")
    assert subprocess.run(["bash", "-n"], input=script, text=True, check=False).returncode == 0
    options = dict(re.findall(r"^#SBATCH --([a-z-]+)=(\S+)$", script, re.M))
    assert set(options) <= {"job-name", "array", "cpus-per-task", "time", "output", "mem", "partition"}
    first, last = map(int, re.fullmatch(r"(\d+)-(\d+)", options["array"]).groups())  # type: ignore[union-attr]
    count = last - first + 1
    for task in range(first, last + 1):  # each array task, with the variables SLURM sets
        env = {"SLURM_ARRAY_TASK_ID": str(task), "SLURM_ARRAY_TASK_MIN": str(first), "SLURM_ARRAY_TASK_MAX": str(last),
               "SLURM_ARRAY_TASK_COUNT": str(count), "HOME": str(tmp_path)}
        done = shell(tmp_path, script, env, fleet, tmp_path)
        assert done.returncode == 0, done.stderr
        assert f"shard {task - first + 1}/{count} (from SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT)" in done.stderr
    merge = re.search(r"--wrap '([^']+)'", DOC.read_text(encoding="utf-8").replace("\n", " "))
    assert merge
    done = shell(tmp_path, merge.group(1), {}, fleet, tmp_path)
    assert done.returncode == 1, done.stderr
    assert_merged_page(tmp_path / "reports" / "fleet.html", fleet)
