"""Property tests for reading snapshots back and comparing them (`envcheck diff`, twins, preflight --baseline).

A snapshot is input like any other (it comes over ssh, from another machine, from a hand edit): every
document either reads or raises ``InputError`` naming the file and the JSON path; whatever reads can be
compared with a real snapshot in both directions and in twin mode without any other exception.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import FIXTURES, run_envcheck
from fuzz_strategies import PROPERTY_SETTINGS, hang_guard
from hypothesis import given
from hypothesis import strategies as st

from envcheck.checks import drift
from envcheck.commands.snapshot import parse_snapshot
from envcheck.errors import InputError

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)


@pytest.fixture(scope="module")
def seed() -> dict[str, Any]:
    """A real snapshot with packages, indexes, installs and findings, and live readings added by hand."""
    proc = run_envcheck("snapshot", str(FIXTURES / "rules" / "G1-cuda12-index" / "positive" / "requirements.txt"), "-o", "-")
    data: dict[str, Any] = json.loads(proc.stdout)
    inventory = data["targets"][0]["inventory"]
    inventory["binaries"] = [{"path": "/v/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so", "machine": "aarch64",
                              "needed": ["libcudart.so.13"], "cuda_major": 13, "sass": ["sm_121a"], "sm121": "native"}]
    inventory["env"] = [{"name": "CUDA_VERSION", "value": "13.0.2", "origin": "live"}]
    inventory["host"] = {"torch": {"status": "ok", "version": "2.9.0+cu130", "cuda": "13.0"},
                         "nvidia_smi": {"status": "ok", "samples": [{"t": 0, "gpus": [{"driver_version": "580.95.05"}]}]}}
    return data


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            out.extend(_paths(item, (*prefix, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out.extend(_paths(item, (*prefix, index)))
    return out


def _replaced(data: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    copy = json.loads(json.dumps(data))
    holder = copy
    for step in path[:-1]:
        holder = holder[step]
    holder[path[-1]] = new
    return copy


@PROPERTY_SETTINGS
@given(choice=st.integers(min_value=0), new=JSON_VALUES, drop=st.booleans())
def test_a_damaged_snapshot_reads_or_is_refused_and_compares_without_crashing(seed: dict[str, Any], choice: int, new: Any,
                                                                               drop: bool) -> None:
    paths = _paths(seed)
    path = paths[choice % len(paths)]
    if drop and path and isinstance(path[-1], str):
        damaged = json.loads(json.dumps(seed))
        holder = damaged
        for step in path[:-1]:
            holder = holder[step]
        del holder[path[-1]]
    else:
        damaged = _replaced(seed, path, new)
    good = parse_snapshot(json.dumps(seed).encode(), "good.json")
    with hang_guard():
        try:
            snapshot = parse_snapshot(json.dumps(damaged).encode(), "damaged.json")
        except InputError as exc:
            assert exc.message.startswith("damaged.json") and "\n" not in exc.message
            return
        a, b = drift.side_of("good.json", good.targets), drift.side_of("damaged.json", snapshot.targets)
        for finding in [*drift.compare(a, b, 13), *drift.compare(b, a, 13), *drift.twins([a, b])]:
            assert finding.rule.startswith(("G9-drift-", "G10-twin-")) and finding.message


@PROPERTY_SETTINGS
@given(raw=st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_bytes_that_are_not_a_snapshot_are_refused(raw: bytes) -> None:
    with hang_guard():
        try:
            parse_snapshot(raw, "x.json")
        except InputError as exc:
            assert exc.message.startswith("x.json")
