"""Every rule with example inputs fires on its positive examples and not on its negative ones.

The examples live in fixtures/rules/<RULE-ID>/{positive,negative}/ and are real files in the formats
users have; the real command line checks them (`python -m envcheck --format json`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envcheck import kinds, rules
from tests.conftest import FIXTURES, run_envcheck

EXAMPLES = FIXTURES / "rules"
RULE_DIRS = sorted(p for p in EXAMPLES.iterdir() if p.is_dir())
# The rule inputs that files users commit satisfy (the table's kinds with `examples`), "any" aside.
FILE_KINDS = {name for k in kinds.KINDS if k.examples for name in k.rule_inputs} - {kinds.ANY}


def _findings(files: list[Path]) -> dict[str, list[dict[str, object]]]:
    proc = run_envcheck("--format", "json", "--fail-on", "never", *map(str, files))
    assert proc.returncode in (0, 1), proc.stderr
    data = json.loads(proc.stdout)
    return {t["target"]: t["findings"] for t in data["targets"]}


@pytest.mark.parametrize("rule_dir", RULE_DIRS, ids=[p.name for p in RULE_DIRS])
def test_rule_fires_on_positive_and_not_on_negative(rule_dir: Path) -> None:
    rules.load_all()
    rule = rules.RULES[rule_dir.name]
    positive = sorted((rule_dir / "positive").iterdir())
    negative = sorted((rule_dir / "negative").iterdir())
    assert positive and negative, f"{rule.id} needs at least one positive and one negative example"
    found = _findings(positive + negative)
    for path in positive:
        hits = [f for f in found[str(path)] if f["rule"] == rule.id and f["status"] not in ("PASS",)]
        assert hits, f"{rule.id} did not fire on {path}: {found[str(path)]}"
        assert any(f["status"] == rule.severity.value for f in hits), hits
        assert all(f["gotcha"] == rule.gotcha for f in hits)
    for path in negative:
        hits = [f for f in found[str(path)] if f["rule"] == rule.id and f["status"] not in ("PASS", "INFO", "SKIP")]
        assert not hits, f"{rule.id} fired on its negative example {path}: {hits}"
        assert not [f for f in found[str(path)] if f["status"] == "ERROR"]


def test_rules_on_file_inputs_have_examples() -> None:
    """A rule that judges files users commit (requirements, Dockerfiles, ...) ships its two examples."""
    rules.load_all()
    have = {p.name for p in RULE_DIRS}
    missing = [r.id for r in rules.RULES.values() if set(r.inputs) & FILE_KINDS and r.id not in have]
    assert not missing, f"rules without fixtures/rules examples: {missing}"

