"""Picking files from a lock that pins them (``pylock.toml``, ``uv.lock``, uv's own output): the wheel
that fits the target, else the sdist, else none; a claimed sha256 is checked before anything uses it."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from envcheck.inspect.wheel_tags import canonical
from envcheck.model import Location
from envcheck.profile import Profile
from envcheck.resolution.context import SHA256_HEX, Chosen
from envcheck.resolution.platform import best_wheel
from envcheck.services.package_index import redact


def checked_sha256(value: Any) -> tuple[str | None, str]:
    """A lock's claimed sha256, lowercased, or None and what is wrong with it (it becomes part of cache keys)."""
    if value in (None, ""):
        return None, ""
    text = value.lower() if isinstance(value, str) else ""
    if SHA256_HEX.fullmatch(text):
        return text, ""
    shown = "".join(ch if ch.isprintable() else "?" for ch in repr(value)[:80])
    return None, f"the sha256 {shown} is not 64 hexadecimal digits: this entry is not read"


def lock_choices(path: Path, profile: Profile, python: str) -> list[Chosen]:
    from envcheck.sources.toml_file import parse_toml
    data, text = parse_toml(path)
    style = "pylock" if "packages" in data or path.name.startswith("pylock") else "uv"
    entries = data.get("packages" if style == "pylock" else "package", [])
    out: list[Chosen] = []
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            continue
        source = entry.get("source")
        if style == "uv" and isinstance(source, dict) and any(k in source for k in ("virtual", "editable", "directory")):
            continue  # the project itself
        name = canonical(entry["name"])
        version = str(entry["version"]) if entry.get("version") is not None else None
        m = re.search(rf'^name = "{re.escape(entry["name"])}"', text, re.M)
        loc = Location(str(path), line=text.count("\n", 0, m.start()) + 1 if m else None)
        built = _source_tree(entry, source)
        item = (Chosen(name, version, "sdist", built, reason=f"{SOURCE_TREE}: {built}", location=loc, source="lock file")
                if built and not entry.get("wheels") and not entry.get("sdist") else
                _choose(name, version, _files(entry.get("wheels")), _file(entry.get("sdist")), profile, python, loc, "lock file"))
        if item.problem:
            item = replace(item, problem=f"{path}: {item.name}: {item.problem}", location=_hash_line(path, text, m.start() if m else 0, loc))
        out.append(item)
    return out


SOURCE_TREE = "built from a source tree, not a file for one platform"


def _source_tree(entry: dict[str, Any], source: Any) -> str | None:
    """The git repository, URL or path a lock entry is built from: a platform-independent source, never "no
    file for linux/aarch64"."""
    for table, key in ((source, "git"), (source, "url"), (source, "path"), (entry.get("vcs"), "url"),
                       (entry.get("archive"), "url"), (entry.get("directory"), "path")):
        if isinstance(table, dict) and isinstance(table.get(key), str) and table[key]:
            return redact(str(table[key]).split("#", 1)[0])[:300]
    return None


def _hash_line(path: Path, text: str, start: int, fallback: Location) -> Location:
    for m in re.finditer(r"sha256\s*=\s*(\S+)|hash\s*=\s*\"sha256:([^\"]*)\"", text[start:]):
        value = (m.group(1) or m.group(2) or "").strip("\"'")
        if not SHA256_HEX.fullmatch(value.lower()):
            return Location(str(path), line=text.count("\n", 0, start + m.start()) + 1)
    return fallback


def _file(item: Any) -> dict[str, Any] | None:
    if not isinstance(item, dict):
        return None
    url = item.get("url") or item.get("path") or ""
    name = item.get("name") or (str(url).split("#")[0].rsplit("/", 1)[-1] if url else "")
    hashes: dict[str, Any] = item["hashes"] if isinstance(item.get("hashes"), dict) else {}
    claimed = hashes.get("sha256") or (str(item.get("hash", "")).partition("sha256:")[2] or None)
    sha, problem = checked_sha256(claimed)
    size = item.get("size")
    return {"filename": str(name), "url": str(url) if url else None, "sha256": sha, "size": size if isinstance(size, int) else None,
            "problem": problem}


def _files(items: Any) -> list[dict[str, Any]]:
    return [f for f in (_file(i) for i in (items if isinstance(items, list) else [])) if f is not None and f["filename"]]


def _choose(name: str, version: str | None, wheels: list[dict[str, Any]], sdist: dict[str, Any] | None, profile: Profile,
            python: str, loc: Location | None, source: str) -> Chosen:
    filename, why = best_wheel([w["filename"] for w in wheels], profile, python)
    if filename is not None:
        w = next(w for w in wheels if w["filename"] == filename)
        return Chosen(name, version, "wheel", filename, w["url"], w["sha256"], w["size"], location=loc, source=source,
                      problem=w["problem"])
    if sdist is not None:
        return Chosen(name, version, "sdist", sdist["filename"], sdist["url"], sdist["sha256"], sdist["size"],
                      reason=why, location=loc, source=source, problem=sdist["problem"])
    return Chosen(name, version, "none", reason=why or "no files", location=loc, source=source)
