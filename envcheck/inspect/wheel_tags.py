"""Wheel filenames: name, version and platform tags (``envcheck.knowledge.wheel_platforms`` judges the tags)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote, urlparse


@dataclass(frozen=True)
class WheelName:
    filename: str
    name: str
    version: str
    tags: tuple[str, ...]  # interpreter-abi-platform triples
    platforms: tuple[str, ...]


def parse_wheel_name(text: str) -> WheelName | None:
    """Parse a wheel filename, path or URL (``.../torch-2.9.0%2Bcu130-cp312-...whl``); None if not a wheel."""
    try:
        path = urlparse(text).path if "://" in text else text
    except ValueError:  # e.g. "Invalid IPv6 URL" for http://[ : not a wheel URL we can read
        return None
    filename = unquote(path.rsplit("/", 1)[-1].split("#", 1)[0])
    if not filename.endswith(".whl"):
        return None
    # imported here: packaging.utils brings packaging.tags, which a folder scan needs for nothing else
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    try:
        name, version, _build, tags = parse_wheel_filename(filename)
    except InvalidWheelFilename:
        return None
    triples = tuple(sorted(str(t) for t in tags))
    platforms = tuple(sorted({t.platform for t in tags}))
    return WheelName(filename, canonical(name), str(version), triples, platforms)


def canonical(name: str) -> str:
    """PEP 503 canonical project name, as ``packaging.utils.canonicalize_name`` writes it."""
    return re.sub(r"[-_.]+", "-", name).lower()
