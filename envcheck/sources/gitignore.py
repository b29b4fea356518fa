"""The ``.gitignore`` patterns ``envcheck DIR`` honours while it looks for input files: gitignore(5)'s common
rules, without ``.git/info/exclude``, ``core.excludesFile`` and escaped trailing spaces."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from envcheck.limits import open_input

MAX_BYTES = 1 << 20  # a bigger .gitignore is not read


@dataclass(frozen=True)
class Pattern:
    base: Path  # the folder of the .gitignore
    text: str  # the line as written (for -v)
    regex: re.Pattern[str]
    negate: bool
    folders_only: bool
    anchored: bool


# gitignore glob tokens: **/ (any leading folders), /** at the end (everything inside), **, *, ?, a [class],
# a backslash escape, any other character
_GLOB = re.compile(r"(\*\*/)|(/\*\*\Z)|(\*\*)|(\*)|(\?)|\[(.[^\]]*)\]|\\(.)|(.)", re.S)
_WILDCARDS = ("(?:.*/)?", "/.*", ".*", "[^/]*", "[^/]")


def _translate(glob: str) -> str:
    out: list[str] = []
    for m in _GLOB.finditer(glob):
        group = m.lastindex or 8
        if group <= len(_WILDCARDS):
            out.append(_WILDCARDS[group - 1])
        elif group == 6:
            body = "^" + m.group(6)[1:] if m.group(6).startswith("!") else m.group(6)
            out.append("[" + body.replace("\\", "\\\\") + "]")
        else:
            out.append(re.escape(m.group(group)))
    return "".join(out)


def compile_line(line: str, base: Path) -> Pattern | None:
    text = line.rstrip("\n").rstrip("\r")
    stripped = text.rstrip(" ")
    if not stripped or stripped.startswith("#"):
        return None
    negate = stripped.startswith("!")
    body = stripped[1:] if negate else stripped
    if body.startswith(("\\#", "\\!")):
        body = body[1:]
    folders_only = body.endswith("/")
    body = body.rstrip("/")
    if not body:
        return None
    anchored = "/" in body
    body = body.lstrip("/")
    try:
        regex = re.compile(_translate(body))
    except re.error:
        return None  # a malformed character class: git ignores the line too
    return Pattern(base, stripped, regex, negate, folders_only, anchored)


@dataclass(frozen=True)
class IgnoreRules:
    """The .gitignore patterns in force for one folder (those of its parents first)."""
    patterns: tuple[Pattern, ...] = ()

    def add_file(self, path: Path, base: Path) -> IgnoreRules:
        try:
            with open_input(path, streams=False) as fh:  # a FIFO named .gitignore must not stop the walk
                data = fh.read(MAX_BYTES + 1)
        except OSError:
            return self
        if len(data) > MAX_BYTES:
            return self
        added = [p for line in data.decode("utf-8", "replace").splitlines() if (p := compile_line(line, base))]
        return IgnoreRules(self.patterns + tuple(added)) if added else self

    def excluded(self, path: Path, is_dir: bool) -> str | None:
        """The pattern that excludes ``path`` (the last match decides), or None."""
        verdict: Pattern | None = None
        for pattern in self.patterns:
            if pattern.folders_only and not is_dir:
                continue
            try:
                rel = path.relative_to(pattern.base).as_posix()
            except ValueError:
                continue
            subject = rel if pattern.anchored else rel.rsplit("/", 1)[-1]
            if pattern.regex.fullmatch(subject):
                verdict = pattern
        return None if verdict is None or verdict.negate else verdict.text
