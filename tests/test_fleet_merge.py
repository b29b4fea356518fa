"""`envcheck merge`: real JSON reports and snapshots of real fixture files, through the command line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from conftest import FIXTURES, run_envcheck

BAD = FIXTURES / "rules" / "G1-cuda12-distribution" / "positive" / "requirements.txt"
GOOD = FIXTURES / "rules" / "G1-cuda12-distribution" / "negative" / "requirements.txt"


def report_of(path: Path, out: Path, *args: str) -> Path:
    done = run_envcheck(str(path), "-f", "json", "-o", str(out), "-q", *args)
    assert done.returncode in (0, 1), done.stderr
    return out


def test_merge_is_one_report_with_the_exit_code_of_one_run(tmp_path: Path) -> None:
    bad = report_of(BAD, tmp_path / "bad.json")
    good = report_of(GOOD, tmp_path / "good.json")
    merged = run_envcheck("merge", str(good), str(bad), "-f", "json")
    data = json.loads(merged.stdout)
    assert merged.returncode == 1 and data["exit_code"] == 1
    assert [t["target"] for t in data["targets"]] == sorted([str(BAD), str(GOOD)])
    assert data["summary"]["G1"] == "FAIL"
    assert run_envcheck("merge", str(good), str(bad), "--fail-on", "never").returncode == 0
    assert run_envcheck("merge", str(good)).returncode == 0
    ignored = run_envcheck("merge", str(good), str(bad), "--ignore", "G1", "-f", "json")
    assert ignored.returncode == 0 and json.loads(ignored.stdout)["summary"]["G1"] != "FAIL"
    # the same target in two inputs with the same verdicts is one target
    again = json.loads(run_envcheck("merge", str(bad), str(bad), str(good), "-f", "json").stdout)
    assert len(again["targets"]) == 2


def test_reports_of_another_version_or_schema_are_refused(tmp_path: Path) -> None:
    good = report_of(GOOD, tmp_path / "good.json")
    for key, value, said in (("envcheck_version", "0.0.1", "written by envcheck 0.0.1"), ("schema_version", 2, "schema 2")):
        data: dict[str, Any] = json.loads(good.read_text())
        data[key] = value
        other = tmp_path / f"other-{key}.json"
        other.write_text(json.dumps(data))
        done = run_envcheck("merge", str(good), str(other))
        assert done.returncode == 2 and not done.stdout
        assert said in done.stderr and "reports of different versions are not merged" in done.stderr
        assert str(other) in done.stderr
    (tmp_path / "notes.txt").write_text("hello\n")
    done = run_envcheck("merge", str(tmp_path / "notes.txt"))
    assert done.returncode == 2 and "not JSON" in done.stderr


def test_two_sparks_with_the_same_target_name_are_both_kept(tmp_path: Path) -> None:
    """Snapshots of one target on two machines that disagree: one row per machine, named by its node."""
    folder = tmp_path / "proj"
    folder.mkdir()
    shutil.copy(BAD, folder / "requirements.txt")
    first = run_envcheck("snapshot", "requirements.txt", "-o", str(tmp_path / "spark-a.json"), cwd=folder)
    assert first.returncode == 0, first.stderr
    shutil.copy(GOOD, folder / "requirements.txt")
    second = run_envcheck("snapshot", "requirements.txt", "-o", str(tmp_path / "spark-b.json"), cwd=folder)
    assert second.returncode == 0, second.stderr
    for name, node in (("spark-a.json", "spark-a"), ("spark-b.json", "spark-b")):
        data = json.loads((tmp_path / name).read_text())
        data["snapshot"]["node"] = node
        (tmp_path / name).write_text(json.dumps(data))
    merged = run_envcheck("merge", str(tmp_path / "spark-a.json"), str(tmp_path / "spark-b.json"), "-f", "html")
    assert merged.returncode == 1
    matrix = merged.stdout.split('id="matrix"', 1)[1].split("</table>", 1)[0]
    assert "requirements.txt @ spark-a</a>" in matrix and "requirements.txt @ spark-b</a>" in matrix
    assert '<td class="s-FAIL"><a href="#t0-G1">FAIL</a></td>' in matrix
    assert 'id="t0-G1"' in merged.stdout  # the cell's link lands on the findings


def test_shards_of_a_multi_target_check_merge_into_the_whole_run(tmp_path: Path) -> None:
    files = sorted(str(p) for p in (FIXTURES / "rules").glob("G1-*/*/requirements.txt"))
    assert len(files) >= 6
    whole = run_envcheck(*files, "-f", "json", "-o", str(tmp_path / "whole.json"), "-q")
    assert whole.returncode == 1
    paths = []
    for k in (1, 2, 3):
        env = {"SLURM_ARRAY_TASK_ID": str(k + 4), "SLURM_ARRAY_TASK_MIN": "5", "SLURM_ARRAY_TASK_COUNT": "3"}
        done = run_envcheck("--shard", "auto" if k == 2 else f"{k}/3", *files, "-f", "json", "-o", str(tmp_path / f"{k}.json"), "-q",
                            env=env)
        assert done.returncode in (0, 1) and f"shard {k}/3" in done.stderr
        paths.append(str(tmp_path / f"{k}.json"))
    judged = [t["target"] for p in paths for t in json.loads(Path(p).read_text())["targets"]]
    assert sorted(judged) == sorted(files)  # each file in exactly one shard
    assert run_envcheck("merge", *paths).stdout == run_envcheck("merge", str(tmp_path / "whole.json")).stdout
    plain = run_envcheck(*files, "-f", "json", env={"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "3"})
    assert len(json.loads(plain.stdout)["targets"]) == len(files)  # without --shard, engine variables do not split a check
