"""Versioned JSON (``schema_version`` 1), described by ``report.schema.json`` in this package."""

from __future__ import annotations

from json.encoder import encode_basestring_ascii
from typing import Any

from envcheck import __version__
from envcheck.model import Report

SCHEMA_VERSION = 1
INDENT = "  "


def report_data(report: Report) -> dict[str, Any]:
    """The report as JSON-ready data (what ``--format json`` prints)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "envcheck_version": __version__,
        "profile": report.profile,
        "targets": [t.to_json() for t in report.targets],
        "summary": {g: s.value for g, s in report.summary().items()},
        "exit_code": report.exit_code,
    }


def render(report: Report, verbosity: int = 0) -> str:
    return dumps(report_data(report)) + "\n"


def dumps(data: Any) -> str:
    """``json.dumps(data, indent=2, default=str)``, the same text, several times faster.

    With an indent the standard library uses its pure-Python encoder, whose generators pass every piece of
    text up through each level of nesting (a whole-environment report: 60,000 lines, 10 levels). This one
    appends to one list; strings still go through the C ``encode_basestring_ascii``. Differences: none in
    the text; a container that contains itself is a RecursionError here (json says ValueError), which a
    report, built fresh from dataclasses, cannot be.
    """
    out: list[str] = []
    _encode(data, "\n", out)
    return "".join(out)


def _scalar(o: Any) -> str | None:
    """The JSON text of a scalar as json writes it (None: not a scalar)."""
    if isinstance(o, str):
        return encode_basestring_ascii(o)
    if o is None:
        return "null"
    if o is True:
        return "true"
    if o is False:
        return "false"
    if isinstance(o, int):
        return int.__repr__(o)
    if isinstance(o, float):
        return _float(o)
    return None


def _float(o: float) -> str:
    if o != o:
        return "NaN"
    if o == float("inf"):
        return "Infinity"
    if o == -float("inf"):
        return "-Infinity"
    return float.__repr__(o)


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, float):
        return _float(key)
    if key is True:
        return "true"
    if key is False:
        return "false"
    if key is None:
        return "null"
    if isinstance(key, int):
        return int.__repr__(key)
    raise TypeError(f"keys must be str, int, float, bool or None, not {key.__class__.__name__}")


def _encode(o: Any, newline: str, out: list[str]) -> None:
    """Append ``o``'s JSON text; ``newline`` is a newline and the indent of the line ``o`` starts on."""
    kind = type(o)
    if kind is dict:
        _encode_dict(o, newline, out)
    elif kind is list or kind is tuple:
        _encode_list(o, newline, out)
    elif (text := _scalar(o)) is not None:
        out.append(text)
    elif isinstance(o, (list, tuple)):
        _encode_list(o, newline, out)
    elif isinstance(o, dict):
        _encode_dict(o, newline, out)
    else:
        _encode(str(o), newline, out)  # default=str


def _item(o: Any) -> str | None:
    """The JSON text of a list item or dict value that is text or a whole number (most of a report), else
    :func:`_scalar`'s answer (None: a container, or a value for ``default=str``)."""
    kind = type(o)
    if kind is str:
        return encode_basestring_ascii(o)
    if kind is int:
        return int.__repr__(o)
    return _scalar(o)


def _encode_list(o: list[Any] | tuple[Any, ...], newline: str, out: list[str]) -> None:
    if not o:
        out.append("[]")
        return
    inner = newline + INDENT
    separator = "," + inner
    try:  # a list of text (sonames, Requires-Dist lines) in one C pass; anything else fails at once
        out.append("[" + inner + separator.join(map(encode_basestring_ascii, o)) + newline + "]")
        return
    except TypeError:
        pass
    out.append("[")
    first = len(out)
    for item in o:
        if (text := _item(item)) is not None:
            out.append(separator + text)
        else:
            out.append(separator)
            _encode(item, inner, out)
    out[first] = out[first][1:]  # the first item has no comma before it
    out.append(newline + "]")


def _encode_dict(o: dict[Any, Any], newline: str, out: list[str]) -> None:
    if not o:
        out.append("{}")
        return
    inner = newline + INDENT
    separator = "," + inner
    out.append("{")
    first = len(out)
    for key, value in o.items():
        head = separator + encode_basestring_ascii(key if type(key) is str else _key(key)) + ": "
        if (text := _item(value)) is not None:
            out.append(head + text)
        else:
            out.append(head)
            _encode(value, inner, out)
    out[first] = out[first][1:]
    out.append(newline + "}")
