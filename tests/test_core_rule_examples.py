"""Every rule with example inputs fires on its positive examples and not on its negative ones.

The examples live in fixtures/rules/<RULE-ID>/{positive,negative}/ and are real files in the formats
users have; the real command line checks them (`python -m envcheck --format json`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, run_envcheck

from envcheck import kinds, rules

EXAMPLES = FIXTURES / "rules"
RULE_DIRS = sorted(p for p in EXAMPLES.iterdir() if p.is_dir())
# The rule inputs that files users commit satisfy (the table's kinds with `examples`), "any" aside.
FILE_KINDS = {name for k in kinds.KINDS if k.examples for name in k.rule_inputs} - {kinds.ANY}


def _findings(files: list[Path], *extra: str, env: dict[str, str] | None = None) -> dict[str, list[dict[str, object]]]:
    proc = run_envcheck("--format", "json", "--fail-on", "never", *extra, *map(str, files), env=env)
    assert proc.returncode in (0, 1), proc.stderr
    data = json.loads(proc.stdout)
    return {t["target"]: t["findings"] for t in data["targets"]}


def _resolve_options(request: pytest.FixtureRequest, needs_uv: bool) -> tuple[tuple[str, ...], dict[str, str]]:
    import shutil

    from conftest import require

    if needs_uv:
        require(shutil.which("uv") is not None, "uv is not installed (pip install 'envcheck-spark[resolve]')")
    index = request.getfixturevalue("loopback_package_index")
    tmp = request.getfixturevalue("tmp_path")
    env = {"PIP_INDEX_URL": "", "PIP_EXTRA_INDEX_URL": "", "PIP_FIND_LINKS": "", "UV_NO_CONFIG": "1", "UV_INDEX_URL": "",
           "UV_EXTRA_INDEX_URL": "", "UV_CACHE_DIR": str(tmp / "uv"), "ENVCHECK_CACHE_DIR": str(tmp / "cache")}
    return ("--resolve", "--index-url", index.url), env


@pytest.fixture(scope="module")
def loopback_package_index() -> Iterator[Any]:
    from package_index import serve, standard_index

    yield from serve(standard_index())


@pytest.mark.parametrize("rule_dir", RULE_DIRS, ids=[p.name for p in RULE_DIRS])
def test_rule_fires_on_positive_and_not_on_negative(rule_dir: Path, request: pytest.FixtureRequest) -> None:
    rules.load_all()
    rule = rules.RULES[rule_dir.name]
    positive = sorted((rule_dir / "positive").iterdir())
    negative = sorted((rule_dir / "negative").iterdir())
    assert positive and negative, f"{rule.id} needs at least one positive and one negative example"
    extra: tuple[str, ...] = ()
    env = None
    if "-resolve-" in rule.id:  # `envcheck --resolve` rules: resolved against the loopback package index
        extra, env = _resolve_options(request, any(p.suffix == ".txt" for p in positive + negative))
    found = _findings(positive + negative, *extra, env=env)
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

