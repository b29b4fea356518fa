"""``envcheck --fix`` / ``--diff``: the certain, local fixes, as byte spans of the files the findings name.

A rule's ``autofix`` gets a :class:`FixRequest` and returns the :class:`~envcheck.model.Edit` spans, a
:class:`Refused` reason, or None (no certain fix). Text outside the spans is never re-rendered."""

from __future__ import annotations

import bisect
import contextlib
import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from envcheck.limits import read_regular
from envcheck.model import Edit, Finding, Inventory, Report, Status, TargetResult
from envcheck.options import RunOptions

# Input kinds whose files --fix edits. Lock files, freeze output, folders and images describe what a tool
# wrote or installed: they are regenerated, not edited.
FIXABLE_KINDS = ("requirements", "pyproject", "dockerfile", "compose", "kubernetes", "shell")
_LOCK_FILE = re.compile(r"(?:.*\.lock|pylock(?:\.[^/]*)?\.toml)$")
_HASH_OPTION = re.compile(r"--hash[=\s]")
MAX_FIX_BYTES = 64 << 20  # a file --fix edits is read whole


@dataclass(frozen=True)
class Source:
    """A file's bytes and their text (decoded so that it encodes back to exactly the same bytes)."""

    path: str
    data: bytes
    text: str
    line_starts: tuple[int, ...]  # character offset where each line starts

    @classmethod
    def of(cls, path: str, data: bytes) -> Source:
        text = data.decode("utf-8", "surrogateescape")
        starts = [0] + [m.end() for m in re.finditer(r"\r\n|\n|\r(?!\n)", text)]
        return cls(path, data, text, tuple(starts))

    def line_span(self, line: int) -> tuple[int, int]:
        if line < 1 or line > len(self.line_starts):
            return len(self.text), len(self.text)
        start = self.line_starts[line - 1]
        end = self.line_starts[line] if line < len(self.line_starts) else len(self.text)
        return start, start + len(self.text[start:end].rstrip("\r\n"))

    def logical_span(self, line: int) -> tuple[int, int]:
        """From ``line`` to the end of its logical line: a backslash continues it, and comment lines inside a
        continuation are skipped (requirements files, Dockerfiles)."""
        start, end = self.line_span(line)
        number = line
        while self.text[start:end].rstrip().endswith("\\") and number < len(self.line_starts):
            number += 1
            _, end = self.line_span(number)
            while self.text[self.line_starts[number - 1]:end].lstrip().startswith("#") and number < len(self.line_starts):
                number += 1
                _, end = self.line_span(number)
        return start, end

    def position(self, offset: int) -> tuple[int, int]:
        index = bisect.bisect_right(self.line_starts, offset) - 1
        return index + 1, offset - self.line_starts[index] + 1

    def edit(self, start: int, end: int, replacement: str) -> Edit:
        offset = len(self.text[:start].encode("utf-8", "surrogateescape"))
        length = len(self.text[start:end].encode("utf-8", "surrogateescape"))
        return Edit(self.path, offset, length, replacement, *self.position(start), *self.position(end))


@dataclass(frozen=True)
class FixRequest:
    finding: Finding
    source: Source
    kind: str  # the target's input kind
    inventory: Inventory
    options: RunOptions = field(default_factory=RunOptions)  # run options (--nvfp4, ...)

    @property
    def region(self) -> tuple[int, int]:
        line = self.finding.location.line if self.finding.location else None
        return self.source.logical_span(line or 1)

    def matches(self, pattern: str | re.Pattern[str]) -> list[re.Match[str]]:
        start, end = self.region
        compiled = re.compile(pattern) if isinstance(pattern, str) else pattern
        return list(compiled.finditer(self.source.text, start, end))


@dataclass(frozen=True)
class Refused:
    """Why a rule with a fix leaves this finding alone; the finding says so."""
    reason: str


Autofix = Callable[[FixRequest], list[Edit] | Refused | None]


def attach(report: Report, options: RunOptions | None = None) -> None:
    sources: dict[str, Source | None] = {}
    for result in report.targets:
        if result.kind not in FIXABLE_KINDS:
            continue
        for i, finding in enumerate(result.findings):
            edits: list[Edit] = []
            for one in (finding, *finding.folded):  # a folded finding's cause is this one's: its fix is made too
                outcome = _autofix(one, result, sources, options)
                if isinstance(outcome, Refused):
                    result.findings[i] = finding = replace(finding, fix_refused=outcome.reason)
                    break
                edits += outcome
            else:
                if edits:
                    result.findings[i] = replace(finding, edits=tuple(edits))


def _autofix(finding: Finding, result: TargetResult, sources: dict[str, Source | None],
             options: RunOptions | None) -> list[Edit] | Refused:
    """The edits that fix ``finding`` (none where its rule has no fix or it is not a place in a file)."""
    from envcheck.rules import RULES
    declared = RULES.get(finding.rule)
    loc = finding.location
    if declared is None or declared.autofix is None or finding.status not in (Status.WARN, Status.FAIL):
        return []
    if loc is None or loc.line is None or loc.member:
        return []
    if _LOCK_FILE.match(Path(loc.path).name):
        return Refused(f"{loc.path} is written by its locker: fix the project file and lock again")
    if loc.path not in sources:
        sources[loc.path] = _read(loc.path)
    source = sources[loc.path]
    if source is None:
        return []
    request = FixRequest(finding, source, result.kind, result.inventory, options or RunOptions())
    outcome = declared.autofix(request)
    if isinstance(outcome, list) and outcome:
        start, end = request.region
        if _HASH_OPTION.search(source.text, start, end):
            return Refused("the requirement carries --hash: the hashes would no longer match the changed "
                           "requirement; change it by hand and generate the hashes again")
    return outcome or []


def _read(path: str) -> Source | None:
    """A regular file's source, else None: a FIFO (``envcheck <(pip freeze)``) was consumed by its reader, and
    opening it again would block for ever."""
    try:
        return Source.of(path, read_regular(path, MAX_FIX_BYTES)[0])
    except OSError:
        return None


@dataclass(frozen=True)
class FileFix:
    path: str
    before: bytes
    after: bytes
    findings: tuple[Finding, ...]


def plan(report: Report) -> list[FileFix]:
    """The files ``--fix`` rewrites, with their edits applied (one overlapping an earlier one waits for the
    next run; identical edits count once)."""
    by_path: dict[str, list[tuple[Edit, Finding]]] = {}
    for finding in report.findings:
        for one in finding.edits:
            by_path.setdefault(one.path, []).append((one, finding))
    out = []
    for path, pairs in by_path.items():
        source = _read(path)
        if source is None:
            continue
        edits = sorted({e for e, _ in pairs}, key=lambda e: (e.offset, e.length))
        chunks: list[bytes] = []
        at = 0
        for one in edits:
            if one.offset < at or one.offset + one.length > len(source.data):
                continue
            chunks += [source.data[at:one.offset], one.replacement.encode("utf-8", "surrogateescape")]
            at = one.offset + one.length
        chunks.append(source.data[at:])
        after = b"".join(chunks)
        if after != source.data:
            out.append(FileFix(path, source.data, after, tuple(dict.fromkeys(f for _, f in pairs))))
    return out


def unified_diff(fixes: list[FileFix]) -> str:
    """The changes as a unified diff, with secrets masked, control characters escaped and no line starting a
    workflow command, as in every other output."""
    import difflib

    from envcheck.redaction import escape_controls, no_command_lines, redact

    def lines(data: bytes) -> list[str]:
        # Lines end at "\n" only, as the readers count them (U+2028, NEL or a form feed inside a line is text,
        # escaped below). The whole text is redacted first: a secret can take two lines (a Kubernetes `name:`
        # and its `value:`, a private key); the masks keep the line count, else each line is redacted alone.
        text = data.decode("utf-8", "surrogateescape")
        out, masked = _LINE.findall(text), _LINE.findall(redact(text))
        return masked if len(masked) == len(out) else out

    def shown(line: str) -> str:
        ending = "\r\n" if line.endswith("\r\n") else line[-1:] if line.endswith("\n") else ""  # kept: the diff applies
        body = redact(line[:len(line) - len(ending)])
        # every control character written visibly, tabs aside (a Makefile's or a heredoc's tab is the text)
        clean = "\t".join(map(escape_controls, body.split("\t"))).encode("utf-8", "backslashreplace").decode("utf-8")
        return clean + ending if ending else clean + "\n\\ No newline at end of file\n"

    out = []
    for one in fixes:
        # /tmp/x is a/tmp/x, as git diff --no-index writes it
        name = escape_controls(redact(one.path)).encode("utf-8", "backslashreplace").decode("utf-8").lstrip("/")
        for i, line in enumerate(difflib.unified_diff(lines(one.before), lines(one.after), f"a/{name}", f"b/{name}")):
            # the two file headers, and hunk headers (a line of the file starts with " ", "-" or "+" here:
            # a removed "--extra-index-url" line is "---extra-index-url", not a header)
            out.append(line if i < 2 or line.startswith("@@") else shown(line))
    return no_command_lines("".join(out))


_LINE = re.compile(r"[^\n]*\n|[^\n]+")


def _inside(path: str, real_roots: list[str]) -> bool:
    real = os.path.realpath(path)
    return any(real == r or real.startswith(r.rstrip(os.sep) + os.sep) for r in real_roots)


def confine(report: Report, roots: list[str]) -> Report:
    """``report`` with the edits of files outside ``roots`` taken off their findings, which say why instead: the
    text and the formats never promise a change --fix will not write."""
    real_roots = [os.path.realpath(r) for r in roots]
    for target in report.targets:
        for n, f in enumerate(target.findings):
            outside = next((e.path for e in f.edits if not _inside(e.path, real_roots)), None)
            if outside is not None:
                why = (f"a symbolic link leads {outside} outside the checked folders" if os.path.realpath(outside)
                       != os.path.abspath(outside) else f"{outside} is outside the checked folders (included from a checked file)")
                target.findings[n] = replace(f, edits=(), fix_refused=f"{why}: fix it by hand, or run envcheck --fix on it")
    return report


def within(fixes: list[FileFix], roots: list[str]) -> tuple[list[FileFix], list[str]]:
    """The fixes of files inside ``roots`` (the targets' folders), and a line for each other one: a file
    included from elsewhere (``-r``) or led out by a symbolic link is never written."""
    real_roots = [os.path.realpath(r) for r in roots]
    kept, left = [], []
    for one in fixes:
        real = os.path.realpath(one.path)
        if _inside(one.path, real_roots):
            kept.append(one)
        elif real != os.path.abspath(one.path):
            left.append(f"{one.path}: not fixed: a symbolic link leads it to {real}, outside the checked folders")
        else:
            left.append(f"{one.path}: not fixed: it is outside the checked folders (included from a checked file); "
                        "fix it by hand, or run envcheck --fix on it")
    return kept, left


def write(fixes: list[FileFix], roots: list[str]) -> Iterator[str]:
    """Write each file inside ``roots`` atomically, mode kept, and say what was done; a file that changed
    since it was read is left alone."""
    fixes, left = within(fixes, roots)
    yield from left
    for one in fixes:
        real = os.path.realpath(one.path)
        try:
            with open(real, "rb") as handle:
                if handle.read(len(one.before) + 1) != one.before:  # bounded: the file may have been swapped
                    yield f"{one.path}: not fixed: it changed while envcheck ran; run envcheck --fix again"
                    continue
            _write_atomically(real, one.after)
        except OSError as exc:
            yield f"{one.path}: not fixed: {exc.strerror or exc}"
            continue
        count = len(one.findings)
        yield f"{one.path}: fixed {count} finding{'s' if count != 1 else ''} ({', '.join(sorted({f.rule for f in one.findings}))})"


def _write_atomically(path: str, data: bytes) -> None:
    import tempfile
    mode = stat.S_IMODE(os.stat(path).st_mode)
    folder = os.path.dirname(path) or "."
    fd, temporary = tempfile.mkstemp(prefix=".envcheck-fix-", dir=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
