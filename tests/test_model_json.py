"""The model reads back what it writes: ``from_json`` over real reports, and refusals of damaged data."""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest
from conftest import FIXTURES, REPO, run_envcheck

from envcheck.errors import InputError
from envcheck.model import (
    EnvVar,
    HostReadings,
    IndexOption,
    Inventory,
    Origin,
    Package,
    PackageIndex,
    Role,
    TargetResult,
)
from envcheck.readings import MeminfoReading, TorchReading

RULE_FILES = sorted(p for p in (FIXTURES / "rules").glob("*/*/*") if p.is_file()) + sorted(
    p for p in (REPO / "examples").glob("project-*/*") if p.name in ("pyproject.toml", "uv.lock", "pylock.toml"))


@pytest.fixture(scope="module")
def fixtures_report() -> dict[str, Any]:
    """One `envcheck --format json` run over every shipped rule example and example project (every file kind, ELF)."""
    proc = run_envcheck("--format", "json", "--fail-on", "never", *map(str, RULE_FILES))
    assert proc.returncode == 0, proc.stderr
    data: dict[str, Any] = json.loads(proc.stdout)
    return data


def test_every_target_of_the_shipped_fixtures_round_trips(fixtures_report: dict[str, Any]) -> None:
    targets = fixtures_report["targets"]
    assert len(targets) == len(RULE_FILES)
    kinds = set()
    for data in targets:
        result = TargetResult.from_json(data)
        assert result.to_json() == {**data, "suppressed": data.get("suppressed", [])}
        kinds.add(result.kind)
    assert {"requirements", "dockerfile", "elf", "pyproject", "uv-lock", "pylock"} <= kinds


def test_roles_options_and_origins_are_enums_after_reading(fixtures_report: dict[str, Any]) -> None:
    inventories = [TargetResult.from_json(t).inventory for t in fixtures_report["targets"]]
    roles = {p.role for inv in inventories for p in inv.packages}
    options = {i.option for inv in inventories for i in inv.indexes}
    origins = {e.origin for inv in inventories for e in inv.env}
    assert all(isinstance(r, Role) for r in roles) and {Role.REQUIREMENT, Role.INSTALLED, Role.LOCK} <= roles
    assert all(isinstance(o, IndexOption) for o in options) and IndexOption.EXTRA_INDEX_URL in options
    assert all(isinstance(o, Origin) for o in origins) and Origin.ENV in origins


def test_real_cuda13_environment_inventory_round_trips() -> None:
    report = json.loads(gzip.decompress((FIXTURES / "device" / "h200" / "preflight-binaries.json.gz").read_bytes()))
    data = report["targets"][0]["inventory"]
    inventory = Inventory.from_json(data)
    assert len(inventory.binaries) > 800 and inventory.host.torch is not None
    assert inventory.host.torch.capability == (9, 0) and inventory.host.nvidia_smi is not None and inventory.host.nvidia_smi.gpus
    written = inventory.to_json()
    # the readings are typed records now: what an older envcheck wrote reads back the same, less its null values
    assert {k: v for k, v in written.items() if k != "host"} == {k: v for k, v in data.items() if k != "host"}
    assert written["host"] == _without_nulls(data["host"])
    assert Inventory.from_json(written) == inventory


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def test_enums_print_and_serialise_as_their_words() -> None:
    pkg = Package("torch", role=Role.CONSTRAINT)
    assert pkg.to_json()["role"] == "constraint" and f"{pkg.role}" == "constraint" and pkg.role == "constraint"
    assert PackageIndex("https://x", IndexOption.FIND_LINKS).to_json()["option"] == "find-links"
    assert EnvVar("A", "1", Origin.LIVE).to_json()["origin"] == "live"
    assert json.dumps(pkg.to_json()) == '{"name": "torch", "role": "constraint"}'


def test_host_readings_merge_and_serialise_only_what_was_read() -> None:
    first = HostReadings(torch=TorchReading(status="ok"), sample_seconds=3.0)
    second = HostReadings(torch=TorchReading(status="crashed"), meminfo=MeminfoReading(status="ok"))
    merged = first.merged(second)
    assert merged.to_json() == {"torch": {"status": "crashed"}, "meminfo": {"status": "ok"}, "sample_seconds": 3.0}
    assert not HostReadings() and merged


@pytest.mark.parametrize(("data", "message"), [
    ({"context": "installed", "packages": [{"name": "torch", "role": "wished"}]}, "inventory.packages[0].role: 'wished' is not one of"),
    ({"context": "installed", "packages": [{"version": "1"}]}, "inventory.packages[0]: missing name"),
    ({"context": "installed", "binaries": [{"path": "a.so", "machine": "aarch64", "cuda_major": "13"}]}, "binaries[0].cuda_major: expected a number"),
    ({"context": "installed", "binaries": [{"path": "a.so", "machine": "aarch64", "sass": "sm_121"}]}, "binaries[0].sass: expected a list of text"),
    ({"context": "installed", "packages": [{"name": "x", "colour": "red"}]}, "packages[0]: unknown keys 'colour'"),
    ({"context": "installed", "host": {"torch": "2.9"}}, "inventory.host.torch: expected an object, found text"),
    ({"context": "installed", "host": {"hostname": {}}}, "inventory.host: 'hostname' is not a reading"),
    ({"context": "installed", "host": {"torch": {"status": "ok", "capability": ["12", 1]}}},
     "inventory.host.torch.capability[0]: expected a whole number, found text"),
    ({"context": "installed", "host": {"nvidia_smi": {"status": "ok", "samples": [{"t": 0, "gpus": [{"uuid": 7}]}]}}},
     "inventory.host.nvidia_smi.samples[0].gpus[0].uuid: expected text"),
    ({"context": "installed", "host": {"launch": [{"tp": 2, "colour": "red"}]}}, "inventory.host.launch[0]: 'colour' is not a field"),
    ({"context": "tomorrow"}, "inventory.context"),
    ({"context": "installed", "env": {"A": "1"}}, "inventory.env: expected a list"),
    ([], "inventory: expected an object"),
])
def test_damaged_inventory_data_is_refused_with_its_path(data: Any, message: str) -> None:
    with pytest.raises(InputError) as caught:
        Inventory.from_json(data)
    assert message in caught.value.message


def test_damaged_finding_is_refused_with_its_path() -> None:
    good = {"target": "t", "kind": "requirements", "inventory": {"context": "declared"},
            "findings": [{"rule": "G1-x", "gotcha": "G1", "status": "FAIL", "message": "m", "evidence": {}, "fix": ""}]}
    assert TargetResult.from_json(good).findings[0].rule == "G1-x"
    bad = json.loads(json.dumps(good))
    bad["findings"][0]["status"] = "BAD"
    with pytest.raises(InputError, match=r"target.findings\[0\].status: 'BAD' is not one of"):
        TargetResult.from_json(bad)
