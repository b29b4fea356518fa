"""`envcheck catalog` and `envcheck merge` against the loopback registry (issue 30), through the command line."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import REPO, run_envcheck
from fleet_fixtures import OTHER_TAGS, TAGS, FleetRepository, fleet_repository
from registry_fixtures import PASSWORD, USER, AuthRegistry, Fault, FaultProxy, Images

from envcheck.shards import shard_from, shard_of

pytestmark = pytest.mark.registry
GLOB = "t[0-9][0-9]"


@pytest.fixture(scope="module")
def fleet(registry_images: Images) -> FleetRepository:
    return fleet_repository(registry_images.host)


def catalog(*args: str, cache: Path, env: dict[str, str] | None = None) -> tuple[int, dict[str, Any], str]:
    done = run_envcheck("catalog", *args, "-f", "json", "--no-progress", env={"ENVCHECK_CACHE_DIR": str(cache), **(env or {})})
    assert "Traceback" not in done.stdout + done.stderr
    report = json.loads(done.stdout) if done.stdout.strip() else {}
    if report:
        jsonschema.validate(report, json.loads((REPO / "envcheck" / "formats" / "report.schema.json").read_text()))
    return done.returncode, report, done.stderr


def tag_of(target: dict[str, Any]) -> str:
    return str(target["target"]).rsplit(":", 1)[1]


def worst_by_gotcha(target: dict[str, Any]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for f in target["findings"]:
        out.setdefault(f["gotcha"], set()).add(f["status"])
    return out


def test_catalog_judges_each_matching_tag_as_image_does(fleet: FleetRepository, image_cache: Path) -> None:
    code, report, _ = catalog(fleet.repository, "--tags", GLOB, cache=image_cache)
    assert code == 1
    assert [tag_of(t) for t in report["targets"]] == TAGS  # one target per tag, in tag order; latest, nightly, t00-arm64 left out
    for target in report["targets"]:
        statuses = {f["status"] for f in target["findings"]}
        if tag_of(target) in fleet.cuda13:
            assert statuses <= {"PASS", "INFO", "SKIP"}, target["findings"]
        else:
            assert "FAIL" in worst_by_gotcha(target)["ARCH"]
    # the same verdicts as `envcheck image` gives one tag
    one = run_envcheck("image", f"{fleet.repository}:t01", "-f", "json", env={"ENVCHECK_CACHE_DIR": str(image_cache)})
    assert json.loads(one.stdout)["targets"][0]["findings"] == report["targets"][1]["findings"]
    code, report, _ = catalog(fleet.repository, "--tags", "nightly", "--tags", "lat?st", cache=image_cache)
    assert sorted(tag_of(t) for t in report["targets"]) == sorted(OTHER_TAGS)


def test_tags_list_pages_are_followed_through_link_headers(fleet: FleetRepository, image_cache: Path,
                                                           fault_proxy: Any) -> None:
    path = "/v2/fleet/train/tags/list"
    page = lambda tags, link: Fault(rf"^{path}\?{link}", "rewrite", times=-1,  # noqa: E731
                                    body=json.dumps({"name": "fleet/train", "tags": tags}).encode())
    first = page(TAGS[:10], r"n=1000$")
    first.headers = {"Link": f'<{path}?last=t09&n=10>; rel="next"'}
    second = page(TAGS[10:20], r"last=t09&n=10$")
    second.headers = {"Link": f'<{path}?last=t19&n=10>; rel="next"'}
    third = page([*TAGS[20:], "t05"], r"last=t19&n=10$")  # a tag sent twice is judged once
    proxy: FaultProxy = fault_proxy(first, second, third)
    code, report, _ = catalog(f"{proxy.host}/fleet/train", cache=image_cache)
    assert code == 1 and [tag_of(t) for t in report["targets"]] == TAGS
    assert [p for _, p in proxy.seen if "tags/list" in p] == [f"{path}?n=1000", f"{path}?last=t09&n=10", f"{path}?last=t19&n=10"]


def test_a_next_page_on_another_host_is_refused(fleet: FleetRepository, image_cache: Path, fault_proxy: Any) -> None:
    body = json.dumps({"name": "fleet/train", "tags": TAGS[:2]}).encode()
    proxy: FaultProxy = fault_proxy(Fault(r"tags/list", "rewrite", times=-1, body=body,
                                          headers={"Link": '<http://192.0.2.1:5000/v2/fleet/train/tags/list?last=t01>; rel="next"'}))
    code, report, err = catalog(f"{proxy.host}/fleet/train", cache=image_cache)
    assert code == 3 and not report
    assert "on another server" in err and "192.0.2.1:5000" in err


def test_names_in_the_tags_list_that_are_not_tags_are_left_out(fleet: FleetRepository, image_cache: Path,
                                                                 fault_proxy: Any) -> None:
    hostile = ["t00", "../../v2/other/manifests/x", "t01\n::error::pwned", "\x1b[31mred", "", 7, None, "t02"]
    proxy: FaultProxy = fault_proxy(Fault(r"tags/list", "rewrite", times=-1,
                                          body=json.dumps({"name": "fleet/train", "tags": hostile}).encode()))
    code, report, err = catalog(f"{proxy.host}/fleet/train", cache=image_cache)
    assert code == 0 and [tag_of(t) for t in report["targets"]] == ["t00", "t02"]
    assert "6 entries of the tags list are not valid tag names" in err and "pwned" not in err


def test_since_and_last_select_by_the_image_config_date(fleet: FleetRepository, image_cache: Path, fault_proxy: Any) -> None:
    _, report, _ = catalog(fleet.repository, "--tags", GLOB, "--last", "3", cache=image_cache)
    assert [tag_of(t) for t in report["targets"]] == ["t21", "t22", "t23"]
    _, report, _ = catalog(fleet.repository, "--tags", GLOB, "--since", "2025-10-20", cache=image_cache)
    assert [tag_of(t) for t in report["targets"]] == [f"t{i}" for i in range(19, 24)]
    done = run_envcheck("catalog", fleet.repository, "--since", "last tuesday")
    assert done.returncode == 2 and "--since 'last tuesday': expected a date" in done.stderr
    # a tag whose image cannot be read has no date either: it is kept, and its error reported, never dropped
    proxy: FaultProxy = fault_proxy(Fault(r"/manifests/t05$", "status", times=-1, status=404))
    code, report, _ = catalog(f"{proxy.host}/fleet/train", "--tags", GLOB, "--since", "2025-10-20", cache=image_cache)
    assert code == 3 and [tag_of(t) for t in report["targets"]] == ["t05", *[f"t{i}" for i in range(19, 24)]]


def test_a_tag_stays_in_its_shard_when_other_tags_come_and_go(fleet: FleetRepository, image_cache: Path) -> None:
    _, few, _ = catalog(fleet.repository, "--tags", "t1?", "--shard", "2/3", cache=image_cache)
    _, more, _ = catalog(fleet.repository, "--tags", GLOB, "--tags", "lat?st", "--shard", "2/3", cache=image_cache)
    in_few = [tag_of(t) for t in few["targets"]]
    assert in_few and in_few == [tag_of(t) for t in more["targets"] if tag_of(t).startswith("t1")]
    assert in_few == [t for t in TAGS if t.startswith("t1") and shard_of(t, 3) == 2]


def test_the_shard_comes_from_the_engine_variables() -> None:
    named = shard_from("2/3", {})
    assert named is not None and (named.index, named.count) == (2, 3)
    k8s = shard_from(None, {"JOB_COMPLETION_INDEX": "1", "JOB_COMPLETIONS": "3"})
    slurm = shard_from(None, {"SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_MIN": "4", "SLURM_ARRAY_TASK_COUNT": "3"})
    matrix = shard_from(None, {"ENVCHECK_SHARD": "2/3"})
    assert all(s is not None and (s.index, s.count) == (2, 3) for s in (k8s, slurm, matrix))
    assert shard_from(None, {}) is None


def test_bad_shards_and_jobs_are_usage_errors(fleet: FleetRepository, image_cache: Path) -> None:
    for args, env, said in ((["--shard", "0/3"], {}, "expected K/N"), (["--shard", "4/3"], {}, "expected K/N"),
                            (["--jobs", "0"], {}, "--jobs 0"), ([], {"JOB_COMPLETION_INDEX": "0"}, "JOB_COMPLETIONS is not")):
        done = run_envcheck("catalog", fleet.repository, *args, env={"ENVCHECK_CACHE_DIR": str(image_cache), **env})
        assert done.returncode == 2 and said in done.stderr, (args, done.stderr)
    done = run_envcheck("catalog", f"{fleet.repository}:t01")
    assert done.returncode == 2 and "without a tag" in done.stderr


def test_progress_line_per_tag_only_on_a_terminal(fleet: FleetRepository, image_cache: Path) -> None:
    leader, follower = pty.openpty()
    env = {**os.environ, "ENVCHECK_CACHE_DIR": str(image_cache), "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "envcheck", "catalog", fleet.repository, "--tags", "t0[0-3]", "-q"],
                          stderr=follower, stdout=subprocess.PIPE, env=env, timeout=120, check=False)
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    lines = [line for line in seen.decode().splitlines() if line.startswith("envcheck: [")]
    assert len(lines) == 4 and lines[-1].startswith("envcheck: [4/4]"), seen
    assert any(":t01 FAIL (ARCH, G1)" in line for line in lines) and any(":t00 PASS" in line for line in lines)
    assert done.returncode == 1
    piped = run_envcheck("catalog", fleet.repository, "--tags", "t0[0-3]", "-q", env={"ENVCHECK_CACHE_DIR": str(image_cache)})
    assert "envcheck: [" not in piped.stderr


def test_three_concurrent_shards_on_one_cache_merge_into_the_single_run(fleet: FleetRepository, tmp_path: Path) -> None:
    single_cache, shard_cache = tmp_path / "single", tmp_path / "shared"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    base = [sys.executable, "-m", "envcheck", "catalog", fleet.repository, "--tags", GLOB, "--deep", "--no-progress", "--jobs", "4"]
    single = run_envcheck(*base[3:], "-f", "json", "-o", str(tmp_path / "single.json"), "-q",
                          env={"ENVCHECK_CACHE_DIR": str(single_cache)}, timeout=300)
    assert single.returncode == 1, single.stderr
    shards = [subprocess.Popen([*base, "--shard", f"{k}/3", "-f", "json", "-o", str(tmp_path / f"shard-{k}.json"), "-q"],
                               env={**env, "ENVCHECK_CACHE_DIR": str(shard_cache)}, cwd=REPO,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE) for k in (1, 2, 3)]
    for proc in shards:
        proc.wait(timeout=300)
        assert proc.returncode == 1, proc.stderr.read() if proc.stderr else ""
    reports = [json.loads((tmp_path / f"shard-{k}.json").read_text()) for k in (1, 2, 3)]
    judged = [tag_of(t) for r in reports for t in r["targets"]]
    assert sorted(judged) == TAGS  # every tag exactly once
    # tags and shards share layers: each distinct layer was read once, by one of the three processes
    scanned = sum(t["inventory"]["host"]["image"]["deep"]["layers_scanned"] for r in reports for t in r["targets"])
    assert scanned == fleet.distinct_layers
    paths = [str(tmp_path / f"shard-{k}.json") for k in (1, 2, 3)]
    for fmt in ("text", "sarif"):
        merged = run_envcheck("merge", *paths, "-f", fmt)
        alone = run_envcheck("merge", str(tmp_path / "single.json"), "-f", fmt)
        assert merged.returncode == alone.returncode == 1
        assert merged.stdout == alone.stdout and merged.stdout
    sarif = json.loads(merged.stdout)
    assert len(sarif["runs"]) == 1
    merged_json = json.loads(run_envcheck("merge", *reversed(paths), "-f", "json").stdout)
    single_json = json.loads((tmp_path / "single.json").read_text())
    assert [(t["target"], t["findings"]) for t in merged_json["targets"]] == [(t["target"], t["findings"]) for t in single_json["targets"]]
    assert merged_json["summary"] == single_json["summary"] and merged_json["exit_code"] == single_json["exit_code"]
    page = run_envcheck("merge", *paths, "-f", "html").stdout
    matrix = page.split('id="matrix"', 1)[1].split("</table>", 1)[0]
    assert all(f"{fleet.repository}:{tag}</a>" in matrix for tag in TAGS)
    assert matrix.count('<td class="s-FAIL"><a href="#t') == 2 * len(fleet.cuda12)  # ARCH and G1 of each CUDA 12 tag


def test_catalog_logs_in_as_image_does(token_registry: AuthRegistry, image_cache: Path, tmp_path: Path) -> None:
    config = {"DOCKER_CONFIG": str(tmp_path), "ENVCHECK_CACHE_DIR": str(image_cache)}  # no docker login of the user's
    repository = token_registry.image.rsplit(":", 1)[0]
    done = run_envcheck("catalog", repository, "--username", USER, "--password-stdin", "-f", "json", env=config, input=PASSWORD)
    assert done.returncode == 0, done.stderr
    assert [t["target"] for t in json.loads(done.stdout)["targets"]] == [token_registry.image]
    anonymous = run_envcheck("catalog", repository, env=config)
    assert anonymous.returncode == 3 and "the tags list (page 1) needs authentication" in anonymous.stderr
    assert PASSWORD not in done.stdout + done.stderr
