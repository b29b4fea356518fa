"""The shape of every knowledge file, as data: checked on load so that a broken row fails loudly.

Each file has a ``[meta]`` table (``updated``, ``sources``). A *row* (an entry of an array of tables) carries
its own ``source`` and may say ``inferred = true``; a *table* lists its keys the same way. Keys not in the
schema are refused, so a typo (``sorce``) cannot silently drop a fact. A source starts with something a reader
can follow: an http(s) URL or a path in the repository (``docs/research/spark-facts.md §1.1: ...``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from envcheck.errors import KnowledgeError

# value kinds: a Python type, or one of these words for containers
STR_LIST = "list of strings"
INT_LIST = "list of integers"
STR_TO_INT = "table of integers"
Kind = type | str


@dataclass(frozen=True)
class Table:
    """A single table: ``required`` and ``optional`` keys with their value kinds."""

    required: Mapping[str, Kind]
    optional: Mapping[str, Kind] = field(default_factory=dict)


@dataclass(frozen=True)
class Rows:
    """An array of tables whose every row has a ``source`` (and may say ``inferred``)."""

    required: Mapping[str, Kind]
    optional: Mapping[str, Kind] = field(default_factory=dict)


@dataclass(frozen=True)
class Value:
    """A top-level key holding one value."""

    kind: Kind


@dataclass(frozen=True)
class Mapping_:
    """A table of free keys whose values share one kind (``[suffix]`` ``"-cu12" = 12``)."""

    kind: Kind


Entry = Table | Rows | Value | Mapping_

META = Table({"updated": str, "sources": STR_LIST})
ROW = {"source": str}
ROW_OPTIONAL = {"inferred": bool}

SCHEMAS: dict[str, dict[str, Entry]] = {
    "cuda_extensions": {
        "meta": META,
        "package": Rows({"name": str, "reason": str}, {"aarch64_wheels": bool}),
    },
    "cuda_image_tags": {
        "meta": META,
        "cuda13": Rows({"version": str, "flavor": str, "os": str}),
    },
    "nvcc_targets": {
        "meta": META,
        "target": Rows({"targets": STR_LIST, "first_nvcc": str}),
    },
    "cuda_sonames": {
        "meta": META,
        "library": Rows({"soname": str, "cuda": INT_LIST}),
    },
    "ngc_tags": {
        "meta": META,
        "first_cuda13_pytorch": Value(str),
        "first_cuda13_source": Value(str),
        "built_on_pytorch": Value(STR_LIST),
        "ngc_torch_repos": Value(STR_LIST),
        "ngc_torch_repos_source": Value(str),
        "ngc_torch_repos_inferred": Value(bool),
        "pip_constraint_from": Value(str),
        "pip_constraint_inferred": Value(bool),
        "pip_constraint_source": Value(str),
        "monthly_release_repos": Value(STR_LIST),
        "release_cuda_inferred": Value(bool),
        "release_cuda_source": Value(str),
        "release_variant": Rows({"repo": str, "tag_contains": str, "first_cuda13": str}),
        "release_variant_row": Rows({"repo": str, "tag_contains": str, "tag": str, "cuda": str}),
        "tensorflow": Rows({"tag": str, "cuda": str}),
        "pytorch": Rows({"tag": str, "torch": str, "cuda": str},
                        {"torch_cuda_arch_list": str, "arm64": bool, "flash_attn": str, "triton": str, "triton_dist": str}),
        "vllm": Rows({"tag": str, "cuda": str, "arm64": bool},
                     {"vllm": str, "torch": str, "triton": str, "flash_attn": str}),
        "cuda_images": Table({"repos": STR_LIST, "tag_pattern": str, "arm64": bool, "source": str}),
        "amd64_only": Rows({"repo": str}),
        "tag_text": Table({"patterns": STR_LIST, "source": str}, {"inferred": bool}),
    },
    "nvidia_distributions": {
        "meta": META,
        "suffix": Mapping_(int),
        "pattern": Rows({"regex": str}),
        "unsuffixed": Rows({"name": str, "cuda13": str}, {"cuda12": str}),
        "conda": Rows({"name": str}),
    },
    "pins": {
        "meta": META,
        "stack": Table({"ml_stack": STR_LIST}),
        "pin": Rows({"package": str, "when": str, "requires": str, "spec": str}),
        "same_version": Rows({"package": str, "requires": str, "since": str}),
    },
    "torch_builds": {
        "meta": META,
        "pypi": Rows({"versions": str, "aarch64": str, "x86_64": str}),
        "pypi_releases": Table({"versions": STR_LIST, "source": str}),
        "pytorch_index": Table({"first_cu130_release": str, "source": str}),
        "ngc": Table({"version_pattern": str, "source": str}),
    },
}


def validate(name: str, data: Mapping[str, Any]) -> None:
    """Raise ``KnowledgeError`` naming the file, row and key where ``data`` breaks the schema of ``name``."""
    where = f"envcheck/knowledge/{name}.toml"
    schema = SCHEMAS.get(name)
    if schema is None:
        raise KnowledgeError(f"{where}: no schema in envcheck/knowledge/schema.py; add one before shipping the file")
    _keys(where, data, {k: v for k, v in schema.items()}, {})
    for key, entry in schema.items():
        if key not in data:
            if isinstance(entry, Rows):
                continue  # an array of tables may be empty
            raise KnowledgeError(f"{where}: missing {key!r}")
        value = data[key]
        if isinstance(entry, Value):
            _check(where, key, value, entry.kind)
        elif isinstance(entry, Mapping_):
            if not isinstance(value, dict):
                raise KnowledgeError(f"{where}: [{key}] must be a table")
            for k, v in value.items():
                _check(f"{where}: [{key}]", k, v, entry.kind)
        elif isinstance(entry, Table):
            _table(f"{where}: [{key}]", value, entry.required, entry.optional)
        else:
            if not isinstance(value, list):
                raise KnowledgeError(f"{where}: {key!r} must be an array of tables ([[{key}]])")
            for i, row in enumerate(value):
                _table(f"{where}: [[{key}]] row {i + 1}", row, {**entry.required, **ROW}, {**ROW_OPTIONAL, **entry.optional})


def _table(where: str, value: Any, required: Mapping[str, Kind], optional: Mapping[str, Kind]) -> None:
    if not isinstance(value, dict):
        raise KnowledgeError(f"{where} must be a table")
    _keys(where, value, required, optional)
    for key, kind in required.items():
        if key not in value:
            raise KnowledgeError(f"{where}: missing {key!r}")
        _check(where, key, value[key], kind)
    for key, kind in optional.items():
        if key in value:
            _check(where, key, value[key], kind)


def _keys(where: str, value: Mapping[str, Any], required: Mapping[str, Any], optional: Mapping[str, Any]) -> None:
    unknown = sorted(set(value) - set(required) - set(optional))
    if unknown:
        known = ", ".join(sorted({*required, *optional}))
        raise KnowledgeError(f"{where}: unknown key {unknown[0]!r} (known: {known})")


def _check(where: str, key: str, value: Any, kind: Kind) -> None:
    if kind == STR_LIST:
        ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
    elif kind == INT_LIST:
        ok = isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    elif kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif isinstance(kind, type):
        ok = isinstance(value, kind)
    else:  # pragma: no cover - a schema typo
        raise KnowledgeError(f"{where}: {key!r} has an unknown kind {kind!r} in schema.py")
    if not ok:
        what = kind if isinstance(kind, str) else kind.__name__
        raise KnowledgeError(f"{where}: {key!r} must be a {what}, not {type(value).__name__} {value!r:.60}")
