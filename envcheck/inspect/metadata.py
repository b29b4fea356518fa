"""The header fields of a core metadata file (``*.dist-info/METADATA``, ``PKG-INFO``), read the way
``email.parser.HeaderParser`` (policy compat32) reads them, without building a message.

What the standard library does, and so what :func:`header_fields` does: lines end at ``\\r\\n``, ``\\r`` or
``\\n``; the headers end at the first line that is neither ``Name:`` (a name of printable ASCII other than
``:``, possibly empty), a continuation (it starts with a space or a tab) nor a ``From `` line (an mbox
envelope: ignored, and so are the continuations after it). A line ``:value`` (no name) is skipped, and so is
a continuation before the first field. A field's value is the rest of its first line with leading spaces and
tabs removed, its continuation lines appended as they are (folded values keep their line breaks), and the
trailing line break removed. tests/test_metadata_reader.py compares the two on every METADATA of a real
CUDA torch environment and on malformed inputs.
"""

from __future__ import annotations

import re

_HEADER_LINE = re.compile(r"From |[\041-\071\073-\176]*:|[\t ]")  # email.feedparser.headerRE
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")  # one line with its end, as StringIO(newline="") splits


def header_fields(text: str) -> dict[str, list[str]]:
    """Every header field of ``text``: lower-case name -> its values in order (``msg.get_all(name)``)."""
    fields: dict[str, list[str]] = {}
    name = ""
    lines: list[str] = []
    for match in _LINE.finditer(text):
        line = match.group()
        if not _HEADER_LINE.match(line):
            break  # a blank line or the body
        if line[0] in " \t":
            if name:
                lines.append(line)
            continue
        if name:
            _add(fields, name, lines)
            name = ""
        if line.startswith("From "):
            continue  # an envelope line, wherever it is
        colon = line.index(":")
        if colon == 0:
            continue  # no field name
        name, lines = line[:colon], [line]
    if name:
        _add(fields, name, lines)
    return fields


def _add(fields: dict[str, list[str]], name: str, lines: list[str]) -> None:
    value = lines[0][len(name) + 1:].lstrip(" \t") + "".join(lines[1:])
    fields.setdefault(name.lower(), []).append(value.rstrip("\r\n"))
