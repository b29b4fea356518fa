"""The model's one JSON reader: a frozen dataclass from the plain form its ``to_json()`` wrote, checked field
by field (reports, snapshots, every cache), and the type words of its errors."""

from __future__ import annotations

import dataclasses
import enum
import functools
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

from envcheck.errors import InputError

_Plain = TypeVar("_Plain")


def json_type(value: Any) -> str:
    """How a JSON value's type reads in an error message."""
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "text", list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


def json_list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise InputError(f"{where}: expected a list, found {json_type(value)}")
    return value


def from_plain(cls: type[_Plain], data: Any, where: str) -> _Plain:
    """A frozen model dataclass from its ``to_json()`` form: missing fields take their defaults; unknown keys,
    wrong types and words outside an enum's vocabulary raise :class:`InputError` naming the JSON path."""
    if not isinstance(data, Mapping):
        raise InputError(f"{where}: expected an object, found {json_type(data)}")
    hints, names, empty_tuples, required = _reading_plan(typing.cast(type, cls))
    unknown = data.keys() - names
    if unknown:
        raise InputError(f"{where}: unknown keys {', '.join(repr(k) for k in sorted(unknown))}")
    values: dict[str, Any] = {}
    for name, value in data.items():
        try:
            values[name] = _field_value(hints[name], value, name)
        except InputError as exc:  # the path is built only for an error (a snapshot holds millions of values)
            raise InputError(f"{where}.{exc.message}") from None
    for name in empty_tuples:  # _plain drops empty tuples, required ones too (InstallCommand.packages)
        if name not in values:
            values[name] = ()
    missing = [name for name in required if name not in values]
    if missing:
        raise InputError(f"{where}: missing {', '.join(missing)}")
    return cls(**values)


@functools.cache
def _reading_plan(cls: type) -> tuple[dict[str, Any], frozenset[str], tuple[str, ...], tuple[str, ...]]:
    """A model class's field types, field names, required tuple fields (read as ``()`` when left out) and
    other required fields: worked out once per class (resolving annotations is slow)."""
    hints, fields = typing.get_type_hints(cls), {f.name: f for f in dataclasses.fields(cls)}
    empty_tuples = tuple(n for n, f in fields.items() if f.default is dataclasses.MISSING and typing.get_origin(hints[n]) is tuple)
    required = tuple(n for n, f in fields.items() if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
                     and n not in empty_tuples)
    return hints, frozenset(fields), empty_tuples, required


@functools.cache
def _field_plan(hint: Any) -> tuple[bool, Any, bool]:
    """Whether a field of type ``hint`` may be null, the type of its other values, and whether that is a tuple
    (resolved once per type: typing's introspection was a third of reading a large snapshot)."""
    options = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
    kind = next(o for o in options if o is not type(None))
    return type(None) in options, kind, typing.get_origin(kind) is tuple


def _field_value(hint: Any, value: Any, where: str) -> Any:
    nullable, kind, is_tuple = _field_plan(hint)
    if value is None:
        if nullable:
            return None
        raise InputError(f"{where}: may not be null")
    if kind is str:  # the most common field type first
        if isinstance(value, str):
            return value
        raise InputError(f"{where}: expected text, found {json_type(value)}")
    if is_tuple:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise InputError(f"{where}: expected a list of text, found {json_type(value)}")
        return tuple(value)
    if dataclasses.is_dataclass(kind):  # a nested record (a finding's Location)
        return from_plain(typing.cast(type, kind), value, where)
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        try:
            return kind(value)
        except ValueError:
            raise InputError(f"{where}: {value!r} is not one of {', '.join(str(m.value) for m in kind)}") from None
    if kind is bool:
        ok = isinstance(value, bool)
    elif kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:  # pragma: no cover - a model field type this reader does not know yet
        raise TypeError(f"{where}: no reader for {kind!r}")
    if not ok:
        raise InputError(f"{where}: expected {json_type(kind())}, found {json_type(value)}")
    return value
