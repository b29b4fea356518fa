"""Score envcheck against the real-world corpus (corpus/CORPUS.md says what it is and how it was judged).

    python3 scripts/score_corpus.py              # totals and one row per kind
    python3 scripts/score_corpus.py --details    # also every miss, false alarm, trap and wrong level
    python3 scripts/score_corpus.py --check      # exit 1 when a figure is worse than corpus/floor.toml
    python3 scripts/score_corpus.py --write-floor

Every judgement file (``corpus/judgements/<owner>__<repo>/<path>.toml``) names one corpus file
(``corpus/files/<owner>__<repo>/<path>``) and what a Spark expert said about it before envcheck ran:
``must`` (a real problem to report at WARN or FAIL), ``must_not`` (a trap) and ``may`` (policy); a finding of a
policy rule (the report's ``policy``) is policy too, unless it matches a trap or a must. envcheck runs
once over all the corpus files (each file's kind told from its name, as a user's run would); its WARN/FAIL
findings are matched against the judgements, ERROR findings on these valid files are counted apart.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from envcheck.toml import TOMLDecodeError, loads  # tomllib, or tomli on Python 3.10

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "corpus"
FILES = CORPUS / "files"
JUDGEMENTS = CORPUS / "judgements"
FLOOR = CORPUS / "floor.toml"

KINDS = (
    "dockerfile", "requirements", "pyproject", "uv-lock", "pylock", "conda", "freeze",
    "compose", "kubernetes", "shell", "notebook",
)
GOTCHA = re.compile(r"G(?:[1-9]|10)|ARCH")
LEVELS = ("FAIL", "WARN")
# SPDX ids of licences that allow redistributing the file (corpus/CORPUS.md: rules for keeping a file)
LICENCES = frozenset({
    "MIT", "MIT-0", "Apache-2.0", "BSD-2-Clause", "BSD-3-Clause", "BSD-3-Clause-Clear", "0BSD", "ISC",
    "MPL-2.0", "CC0-1.0", "Unlicense", "CC-BY-4.0", "Zlib", "BSL-1.0", "PSF-2.0", "Python-2.0",
    "LGPL-3.0-only", "LGPL-3.0-or-later",  # redistribution of the unmodified file with its licence named
})
MAX_FILE = 2 * 1024 * 1024
NEAR = 2  # a finding within this many lines of the judged line matches it
RUN_SECONDS = 900
TOP_KEYS = {"repo", "commit", "path", "license", "sha256", "kind", "judged", "summary", "must", "must_not", "may"}
ENTRY_KEYS = {
    "must": ({"gotcha", "line", "level", "why"}, {"source"}),
    "must_not": ({"gotcha", "why"}, {"line", "source"}),
    "may": ({"gotcha", "why"}, {"line", "source"}),
}


@dataclass(frozen=True)
class Entry:
    """One judged item: a must, must_not or may."""

    section: str
    gotcha: str
    line: int | None
    level: str | None
    why: str


@dataclass(frozen=True)
class Judgement:
    toml_path: Path
    repo: str
    path: str
    kind: str
    file: Path  # the corpus file, relative to ROOT
    must: tuple[Entry, ...]
    must_not: tuple[Entry, ...]
    may: tuple[Entry, ...]


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def judgement_files() -> list[Path]:
    return sorted(JUDGEMENTS.rglob("*.toml"))


def schema_problems(toml_path: Path) -> list[str]:
    """What is wrong with one judgement file (empty when it is sound): keys, types, vocabularies, and the
    corpus file it names (present, its sha256, its size, a licence that allows keeping it)."""
    where = rel(toml_path)
    try:
        data = loads(toml_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, TOMLDecodeError) as exc:
        return [f"{where}: cannot read: {exc}"]
    out: list[str] = []
    for key in sorted(set(data) - TOP_KEYS):
        out.append(f"{where}: unknown key {key!r}")
    for key in ("repo", "commit", "path", "license", "sha256", "kind", "judged", "summary"):
        if not isinstance(data.get(key), str) or not data[key]:
            out.append(f"{where}: {key} must be non-empty text")
    if out:
        return out
    owner_repo = toml_path.relative_to(JUDGEMENTS).parts[0]
    if "/" not in data["repo"] or data["repo"].replace("/", "__", 1) != owner_repo:
        out.append(f"{where}: repo {data['repo']!r} does not match the folder {owner_repo!r}")
    expected = JUDGEMENTS / owner_repo / (data["path"] + ".toml")
    if expected != toml_path:
        out.append(f"{where}: path {data['path']!r} does not match the judgement's file name")
    if not re.fullmatch(r"[0-9a-f]{40}", data["commit"]):
        out.append(f"{where}: commit must be 40 lower-case hex digits")
    if data["license"] not in LICENCES:
        out.append(f"{where}: licence {data['license']!r} is not one that allows keeping the file")
    if data["kind"] not in KINDS:
        out.append(f"{where}: kind {data['kind']!r} is not one of {', '.join(KINDS)}")
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", data["judged"]):
        out.append(f"{where}: judged must be a date YYYY-MM-DD")
    file = FILES / owner_repo / data["path"]
    try:
        body = file.read_bytes()
    except OSError:
        return [*out, f"{where}: corpus file {rel(file) if file.is_relative_to(ROOT) else file} is missing"]
    if len(body) > MAX_FILE:
        out.append(f"{where}: corpus file is over 2 MiB")
    if hashlib.sha256(body).hexdigest() != data["sha256"]:
        out.append(f"{where}: sha256 does not match {rel(file)}")
    lines = body.count(b"\n") + (0 if body.endswith(b"\n") or not body else 1)
    for section, (required, optional) in ENTRY_KEYS.items():
        entries = data.get(section, [])
        if not isinstance(entries, list):
            out.append(f"{where}: {section} must be an array of tables ([[{section}]])")
            continue
        for n, entry in enumerate(entries, 1):
            at = f"{where}: {section} #{n}"
            if not isinstance(entry, dict):
                out.append(f"{at}: must be a table")
                continue
            for key in sorted(required - set(entry)):
                out.append(f"{at}: missing {key!r}")
            for key in sorted(set(entry) - required - optional):
                out.append(f"{at}: unknown key {key!r}")
            if not isinstance(entry.get("gotcha"), str) or not GOTCHA.fullmatch(entry["gotcha"]):
                out.append(f"{at}: gotcha must be G1..G10 or ARCH")
            line = entry.get("line")
            if "line" in entry and (type(line) is not int or not 1 <= line <= max(lines, 1)):
                out.append(f"{at}: line must be a line of the file (1..{lines})")
            if "level" in entry and entry["level"] not in LEVELS:
                out.append(f"{at}: level must be FAIL or WARN")
            for key in ("why", "source"):
                if key in entry and (not isinstance(entry[key], str) or not entry[key]):
                    out.append(f"{at}: {key} must be non-empty text")
    return out


def load(toml_path: Path) -> Judgement:
    data = loads(toml_path.read_text(encoding="utf-8"))
    owner_repo = toml_path.relative_to(JUDGEMENTS).parts[0]

    def entries(section: str) -> tuple[Entry, ...]:
        return tuple(
            Entry(section, e["gotcha"], e.get("line"), e.get("level"), e["why"]) for e in data.get(section, [])
        )

    return Judgement(
        toml_path, data["repo"], data["path"], data["kind"], (FILES / owner_repo / data["path"]).relative_to(ROOT),
        entries("must"), entries("must_not"), entries("may"),
    )


def logical_lines(path: Path) -> dict[int, int]:
    """Physical line -> first line of its logical line (a line ending in the escape character continues on
    the next; comment lines inside a continued Dockerfile instruction belong to it)."""
    try:
        text = (ROOT / path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    escape = "\\"
    head = re.match(r"(?:\s*#\s*[a-zA-Z]+\s*=.*\n)*", text)
    if head and (m := re.search(r"(?im)^\s*#\s*escape\s*=\s*(\S)", head.group(0))):
        escape = m.group(1)
    out: dict[int, int] = {}
    start: int | None = None
    for n, line in enumerate(text.splitlines(), 1):
        first = n if start is None else start
        out[n] = first
        stripped = line.rstrip()
        if start is not None and (not stripped or stripped.lstrip().startswith("#")):
            continue  # empty and comment lines inside a continuation do not end it
        start = first if stripped.endswith(escape) else None
    return out


@dataclass(frozen=True)
class Finding:
    file: str  # relative to ROOT
    line: int | None
    rule: str
    gotcha: str
    status: str
    message: str
    lines: tuple[int, ...] = ()  # the other lines the finding names (one finding for several packages)
    policy: bool = False  # its rule gives policy advice (the JSON report's `policy`)


def run_envcheck(files: Sequence[Path]) -> tuple[list[Finding], dict[str, str]]:
    """envcheck's findings over ``files`` (one run, kinds told from the names), and each target's kind."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for name in ("ENVCHECK_CONFIG",):
        env.pop(name, None)
    proc = subprocess.run(
        [sys.executable, "-m", "envcheck", "-f", "json", "--fail-on", "never", "--no-cache",
         *(p.as_posix() for p in files)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=RUN_SECONDS, check=False,
    )
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        sys.exit(f"envcheck printed no JSON report (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    known = {os.path.normpath(p.as_posix()) for p in files}
    findings: list[Finding] = []
    kinds: dict[str, str] = {}
    for target in report["targets"]:
        name = os.path.normpath(target["target"])
        kinds[name] = target.get("kind", "")
        for f in target["findings"]:
            loc = f.get("location") or {}
            where = os.path.normpath(loc.get("path") or name)
            named = (f.get("evidence") or {}).get("lines")
            findings.append(Finding(
                where if where in known else name, loc.get("line"), f["rule"], f["gotcha"], f["status"],
                f["message"], tuple(n for n in named if isinstance(n, int)) if isinstance(named, list) else (),
                f.get("policy") is True,
            ))
    return findings, kinds


def gotcha_of(f: Finding) -> str:
    if GOTCHA.fullmatch(f.gotcha):
        return f.gotcha
    m = re.match(r"(G(?:10|[1-9])|ARCH)-", f.rule)
    return m.group(1) if m else f.gotcha


def near(f: Finding, line: int | None, spans: Mapping[int, int]) -> bool:
    """Whether the finding is at the judged line: the same logical line or within NEAR lines."""
    if line is None:
        return True  # a file-wide may/must_not
    if f.line is None:
        return False
    return any(abs(at - line) <= NEAR or spans.get(at, at) == spans.get(line, line) for at in (f.line, *f.lines))


def closest(
    f: Finding, gotcha: str, entries: Iterable[Entry], spans: Mapping[int, int], matched: Set[Entry],
) -> Entry | None:
    """The judged entry of this gotcha the finding is at: the nearest (the same logical line first); at the same
    distance a must not yet matched, then a may, a must_not, and last a must already matched (a duplicate)."""
    rank = {"must": 0, "may": 1, "must_not": 2}

    def key(e: Entry) -> tuple[int, int]:
        if e.line is None or f.line is None:
            distance = NEAR + 1  # file-wide entries come after any entry with a line
        else:
            distance = min(0 if spans.get(at, at) == spans.get(e.line, e.line) else abs(at - e.line) for at in (f.line, *f.lines))
        return distance, 3 if e in matched else rank[e.section]

    found = [e for e in entries if e.gotcha == gotcha and near(f, e.line, spans)]
    return min(found, key=key) if found else None


@dataclass
class Tally:
    files: int = 0
    musts: int = 0
    found: int = 0  # musts matched by a WARN/FAIL finding at any level
    findings: int = 0  # WARN/FAIL findings
    right: int = 0  # matched a must at its level (the first finding for that must)
    wrong_level: int = 0
    duplicate: int = 0  # a second finding for a must already matched
    policy: int = 0  # matched a may
    traps: int = 0  # matched a must_not
    false_alarms: int = 0  # matched nothing (traps included)
    errors: int = 0

    def precision(self) -> float:
        counted = self.findings - self.policy
        return self.right / counted if counted else 1.0

    def recall(self) -> float:
        return self.found / self.musts if self.musts else 1.0

    def policy_share(self) -> float:
        return self.policy / self.findings if self.findings else 0.0

    def figures(self) -> dict[str, float | int]:
        return {
            "precision": round(self.precision(), 4), "recall": round(self.recall(), 4), "errors": self.errors,
            "traps": self.traps,
        }


@dataclass
class Score:
    total: Tally = field(default_factory=Tally)
    kinds: dict[str, Tally] = field(default_factory=lambda: {k: Tally() for k in KINDS})
    details: list[str] = field(default_factory=list)


def score(judgements: Sequence[Judgement], findings: Iterable[Finding]) -> Score:
    result = Score()
    by_file: dict[str, list[Finding]] = {}
    for f in findings:
        by_file.setdefault(f.file, []).append(f)
    for j in judgements:
        name = os.path.normpath(j.file.as_posix())
        spans = logical_lines(j.file)
        tallies = (result.total, result.kinds.setdefault(j.kind, Tally()))
        for t in tallies:
            t.files += 1
            t.musts += len(j.must)
        matched: set[Entry] = set()
        ordered = sorted(by_file.get(name, []), key=lambda f: (f.line or 0, f.status != "FAIL", f.rule))
        for f in ordered:
            where = f"{name}:{f.line if f.line is not None else '-'} {f.rule} {f.status}: {f.message}"
            if f.status == "ERROR":
                for t in tallies:
                    t.errors += 1
                result.details.append(f"ERROR        {where}")
                continue
            if f.status not in LEVELS:
                continue
            g = gotcha_of(f)
            entry = closest(f, g, [*j.must, *j.may, *j.must_not], spans, matched)
            label: str
            if f.policy and (entry is None or entry.section == "may" or (entry.section == "must" and entry in matched)):
                # a policy rule's finding is policy wherever no trap or unmatched must claims it (issue 32: policy left out)
                label = "policy"
                result.details.append(f"POLICY       {where}")
            elif entry is None:
                label = "false_alarm"
                result.details.append(f"FALSE ALARM  {where}")
            elif entry.section == "must" and entry in matched:
                label = "duplicate"
                result.details.append(f"DUPLICATE    {where}")
            elif entry.section == "must":
                matched.add(entry)
                label = "right" if entry.level == f.status else "wrong_level"
                if label == "wrong_level":
                    result.details.append(f"WRONG LEVEL  {where} (judged {entry.level} at line {entry.line})")
            elif entry.section == "may":
                label = "policy"
                result.details.append(f"POLICY       {where}")
            else:
                label = "trap"
                result.details.append(f"TRAP         {where} (judged: {entry.why})")
            for t in tallies:
                t.findings += 1
                if label == "right":
                    t.right += 1
                elif label == "wrong_level":
                    t.wrong_level += 1
                elif label == "duplicate":
                    t.duplicate += 1
                elif label == "policy":
                    t.policy += 1
                else:
                    t.false_alarms += 1
                    t.traps += label == "trap"
        for e in j.must:
            if e in matched:
                for t in tallies:
                    t.found += 1
            else:
                result.details.append(f"MISS         {name}:{e.line} {e.gotcha} {e.level}: {e.why}")
    return result


def table(s: Score) -> str:
    head = ("kind", "files", "musts", "WARN/FAIL", "right", "wrong lvl", "dup", "policy", "false", "traps",
            "ERROR", "precision", "recall", "policy share")
    rows = [head]
    for name, t in [*sorted(s.kinds.items(), key=lambda kv: KINDS.index(kv[0])), ("total", s.total)]:
        rows.append((
            name, str(t.files), str(t.musts), str(t.findings), str(t.right), str(t.wrong_level), str(t.duplicate),
            str(t.policy), str(t.false_alarms), str(t.traps), str(t.errors),
            f"{t.precision():.0%}", f"{t.recall():.0%} ({t.found}/{t.musts})", f"{t.policy_share():.0%}",
        ))
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in rows]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def floor_text(s: Score) -> str:
    def block(title: str, t: Tally) -> list[str]:
        return [f"[{title}]", *(f"{k} = {v}" for k, v in t.figures().items()), ""]

    out = ["# Written by scripts/score_corpus.py --write-floor: the figures CI may not fall below.", ""]
    out += block("total", s.total)
    for name in KINDS:
        if s.kinds[name].files:  # a kind with no files yet gets its floor when its first files come
            out += block(f"kind.{name}", s.kinds[name])
    return "\n".join(out)


def check(s: Score, floor: Mapping[str, Any]) -> list[str]:
    """Figures worse than the floor: precision or recall lower, more ERRORs or traps."""
    worse: list[str] = []
    pairs = [("total", s.total, floor.get("total", {}))]
    pairs += [(f"kind {k}", s.kinds[k], floor.get("kind", {}).get(k, {})) for k in KINDS]
    for title, tally, recorded in pairs:
        now = tally.figures()
        for key in ("precision", "recall"):
            if key in recorded and now[key] < recorded[key] - 1e-9:
                worse.append(f"{title}: {key} {now[key]:.4f} < floor {recorded[key]}")
        for key in ("errors", "traps"):
            if key in recorded and now[key] > recorded[key]:
                worse.append(f"{title}: {key} {now[key]} > floor {recorded[key]}")
    return worse


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--details", action="store_true", help="list every miss, false alarm, trap, duplicate, wrong level, ERROR and policy finding")
    parser.add_argument("--check", action="store_true", help="exit 1 when a figure is worse than the floor")
    parser.add_argument("--write-floor", action="store_true", help="record the current figures as the floor")
    args = parser.parse_args(argv)
    paths = judgement_files()
    problems = [p for path in paths for p in schema_problems(path)]
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 2
    judgements = [load(p) for p in paths]
    findings, _ = run_envcheck([j.file for j in judgements]) if judgements else ([], {})
    s = score(judgements, findings)
    print(table(s))
    if args.details:
        print()
        print("\n".join(sorted(s.details)))
    if args.write_floor:
        FLOOR.write_text(floor_text(s) + "\n", encoding="utf-8")
        print(f"wrote {rel(FLOOR)}")
    if args.check:
        worse = check(s, loads(FLOOR.read_text(encoding="utf-8")))
        if worse:
            print("\n".join(["below the floor in corpus/floor.toml:", *worse]), file=sys.stderr)
            return 1
        print("at or above the floor in corpus/floor.toml")
    return 0


if __name__ == "__main__":
    sys.exit(main())
