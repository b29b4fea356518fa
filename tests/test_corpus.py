"""The real-world corpus (corpus/CORPUS.md): its judgement files are sound, and envcheck's figures over it do not
fall below the floor recorded in corpus/floor.toml."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from conftest import REPO


def _scorer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("score_corpus", REPO / "scripts" / "score_corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("score_corpus", module)
    spec.loader.exec_module(module)
    return module


score_corpus = _scorer()


def test_every_judgement_is_sound() -> None:
    """Each judgement file follows the schema, and its corpus file is there with the recorded sha256, at most
    2 MiB, under a licence that allows keeping it."""
    paths = score_corpus.judgement_files()
    assert paths, "corpus/judgements holds no judgement file"
    problems = [p for path in paths for p in score_corpus.schema_problems(path)]
    assert problems == []


def test_every_corpus_file_is_judged() -> None:
    judged = {score_corpus.load(p).file for p in score_corpus.judgement_files()}
    files = {p.relative_to(REPO) for p in (REPO / "corpus" / "files").rglob("*") if p.is_file()}
    assert sorted(map(str, files - judged)) == []


def test_schema_problems_name_the_fault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A judgement whose file changed, whose licence forbids keeping it, or whose entry lacks a level is refused."""
    files, judgements = tmp_path / "files", tmp_path / "judgements"
    (files / "o__r").mkdir(parents=True)
    (judgements / "o__r").mkdir(parents=True)
    (files / "o__r" / "Dockerfile").write_text("FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\n")
    toml = judgements / "o__r" / "Dockerfile.toml"
    toml.write_text(
        'repo = "o/r"\ncommit = "' + "a" * 40 + '"\npath = "Dockerfile"\nlicense = "GPL-3.0-only"\n'
        'sha256 = "' + "0" * 64 + '"\nkind = "dockerfile"\njudged = "2026-12-04"\nsummary = "x"\n\n'
        '[[must]]\ngotcha = "G1"\nline = 1\nwhy = "CUDA 12 base"\n'
    )
    monkeypatch.setattr(score_corpus, "FILES", files)
    monkeypatch.setattr(score_corpus, "JUDGEMENTS", judgements)
    monkeypatch.setattr(score_corpus, "ROOT", tmp_path)
    problems = "\n".join(score_corpus.schema_problems(toml))
    assert "licence 'GPL-3.0-only'" in problems
    assert "sha256 does not match" in problems
    assert "must #1: missing 'level'" in problems


def test_matching(tmp_path: Path) -> None:
    """A finding matches a must on the same logical line (a continued RUN) or within two lines, at the judged
    level; a second finding for the same must is a duplicate; a may makes a finding policy, a must_not a trap."""
    dockerfile = tmp_path / "Dockerfile"
    lines = ["FROM x", "RUN pip install \\", "    a \\", "    b", "", "", "", "RUN c", "RUN d", "RUN e"]
    dockerfile.write_text("\n".join(lines) + "\n")
    Entry, Finding = score_corpus.Entry, score_corpus.Finding
    must = (Entry("must", "G1", 2, "FAIL", "cu12 index"), Entry("must", "G9", 8, "WARN", "c"))
    j = score_corpus.Judgement(
        dockerfile, "o/r", "Dockerfile", "dockerfile", dockerfile, must,
        (Entry("must_not", "G2", 10, None, "trap"),), (Entry("may", "G9", 9, None, "policy"),),
    )
    name = str(dockerfile)
    found = [
        Finding(name, 4, "G1-cuda12-index", "G1", "FAIL", "continuation of line 2"),
        Finding(name, 2, "G1-cuda12-distribution", "G1", "FAIL", "same cause again"),
        Finding(name, 8, "G9-unpinned", "G9", "FAIL", "right place, wrong level"),
        Finding(name, 9, "G9-unpinned", "G9", "WARN", "policy"),
        Finding(name, 10, "G2-flash-attn", "G2", "WARN", "trap"),
        Finding(name, 1, "input-error", "ENVCHECK", "ERROR", "cannot read"),
        Finding(name, 6, "G7-arch", "G7", "WARN", "nothing judged here"),
    ]
    s = score_corpus.score([j], found).total
    assert (s.musts, s.found, s.findings) == (2, 2, 6)
    assert (s.right, s.duplicate, s.wrong_level, s.policy, s.traps, s.false_alarms, s.errors) == (1, 1, 1, 1, 1, 2, 1)
    assert s.precision() == 1 / 5
    assert s.recall() == 1.0


def test_check_names_each_figure_below_the_floor() -> None:
    s = score_corpus.Score()
    s.total = score_corpus.Tally(files=2, musts=4, found=3, findings=4, right=2, errors=1)
    s.kinds["dockerfile"] = s.total
    floor = {
        "total": {"precision": 0.5, "recall": 0.75, "errors": 1, "traps": 0},
        "kind": {"dockerfile": {"precision": 0.6, "recall": 0.8, "errors": 0}},
    }
    assert score_corpus.check(s, floor) == [
        "kind dockerfile: precision 0.5000 < floor 0.6",
        "kind dockerfile: recall 0.7500 < floor 0.8",
        "kind dockerfile: errors 1 > floor 0",
    ]


@pytest.mark.slow
def test_corpus_figures_hold_the_floor() -> None:
    """envcheck over the whole corpus: precision, recall, ERRORs and traps, in total and per kind, no worse
    than corpus/floor.toml (python3 scripts/score_corpus.py --details lists every miss and false alarm)."""
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "score_corpus.py"), "--check"],
        cwd=REPO, capture_output=True, text=True, timeout=900, check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_policy_rules_finding_is_policy_unless_a_trap_or_a_must_claims_it(tmp_path: Path) -> None:
    """A finding of a policy rule (the report's ``policy``) is left out of precision like a ``may``, wherever no
    judgement claims it; at a ``must_not`` it is still a trap, at a ``must`` still the finding for it."""
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("".join(f"pkg{n}\n" for n in range(1, 21)))
    Entry, Finding = score_corpus.Entry, score_corpus.Finding
    j = score_corpus.Judgement(
        requirements, "o/r", "requirements.txt", "requirements", requirements,
        (Entry("must", "G9", 10, "WARN", "a real G9 problem"),), (Entry("must_not", "G9", 20, None, "trap"),), (),
    )
    name = str(requirements)
    found = [
        Finding(name, 1, "G9-unpinned", "G9", "WARN", "unjudged policy", policy=True),
        Finding(name, 10, "G9-unpinned", "G9", "WARN", "the must", policy=True),
        Finding(name, 11, "G9-bare-pip-base", "G9", "WARN", "near the matched must", policy=True),
        Finding(name, 20, "G9-unpinned", "G9", "WARN", "the trap", policy=True),
        Finding(name, 5, "G9-pin-conflict", "G9", "FAIL", "unjudged, not policy"),
    ]
    s = score_corpus.score([j], found).total
    assert (s.right, s.policy, s.traps, s.false_alarms, s.duplicate) == (1, 2, 1, 2, 0)
