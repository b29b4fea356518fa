"""A Dockerfile parser that follows BuildKit's rules (the ``docker/dockerfile:1`` frontend).

Our own because ``dockerfile-parse`` reads heredoc bodies as instructions and mis-substitutes
``${TAG:-default}`` in ``FROM`` lines (docs/dockerfiles.md). What ``docker build`` rejects raises
:class:`DockerfileSyntaxError`.
"""

from __future__ import annotations

import bisect
import fnmatch
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache

from envcheck.errors import ReadingError

INSTRUCTIONS = frozenset({"FROM", "RUN", "CMD", "LABEL", "MAINTAINER", "EXPOSE", "ENV", "ADD", "COPY",
                          "ENTRYPOINT", "VOLUME", "USER", "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL",
                          "HEALTHCHECK", "SHELL"})
_FLAG_INSTRUCTIONS = frozenset({"FROM", "RUN", "COPY", "ADD", "HEALTHCHECK"})
_HEREDOC_INSTRUCTIONS = frozenset({"RUN", "COPY", "ADD"})
_DIRECTIVE = re.compile(r"^#\s*([A-Za-z][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$")
# A heredoc marker's groups; quoted runs and here-strings (<<<) are matched only to be skipped.
_HEREDOC = re.compile(r"<<(-?)\s*(?:\"([^\"\n]+)\"|'([^'\n]+)'|([A-Za-z0-9_.\-]+))"
                      r"|'[^']*'?|\"[^\"]*\"?|<<<|[^'\"<]+|.", re.S)
_STAGE_NAME = re.compile(r"^[a-zA-Z][a-zA-Z0-9_.\-]*$")
_VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_FLAG_WORD = re.compile(r"(?:[^ \t'\"]|'[^']*(?:'|\Z)|\"[^\"]*(?:\"|\Z))*")
# Bounds on variable substitution (docs/limits.md). Real Dockerfiles nest ${A:-${B}} a few levels and hold
# values of a few KiB (PATH, LD_LIBRARY_PATH); Linux refuses a single environment string over 128 KiB.
MAX_SUBSTITUTION_DEPTH = 64
MAX_EXPANDED_VALUE = 128 << 10
MAX_EXPANDED_TOTAL = 32 << 20
MAX_STAGES = 1000  # real recipes have a few dozen; the stage relations (FROM, COPY --from) are read pairwise


class DockerfileSyntaxError(ReadingError):
    line: int

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message, line=line)
        self.args = (f"line {line}: {message}",)


@dataclass(frozen=True)
class Heredoc:
    name: str
    body: str
    line: int  # 1-based line of the first body line
    strip_tabs: bool = False  # <<-EOF
    expand: bool = True  # False when the delimiter was quoted (<<'EOF'): no variable expansion


@dataclass(frozen=True)
class Instruction:
    """One instruction; ``args`` has continuations joined as BuildKit joins them, and ``line_of`` maps an
    offset in it back to its physical line, so a command in the middle of a long RUN is located exactly."""

    keyword: str
    args: str
    line: int
    end_line: int
    flags: tuple[tuple[str, str | None], ...] = ()
    json_args: tuple[str, ...] | None = None  # exec form
    heredocs: tuple[Heredoc, ...] = ()
    offsets: tuple[int, ...] = (0,)  # offsets in args where each physical line starts
    lines: tuple[int, ...] = ()  # the physical line number for each entry in offsets
    stage: int = -1  # index of its stage; -1 for global ARGs

    def flag(self, name: str) -> str | None:
        """The value of ``--name=value`` (last one wins), or None."""
        values = self.flag_values(name)
        return values[-1] if values else None

    def flag_values(self, name: str) -> list[str]:
        return [val or "" for key, val in self.flags if key == name]

    def line_of(self, offset: int) -> int:
        if not self.lines:
            return self.line
        i = bisect.bisect_right(self.offsets, offset) - 1
        return self.lines[max(0, i)]


@dataclass
class Stage:
    index: int
    name: str | None
    base: str  # the FROM reference after substitution
    base_written: str  # as written
    line: int
    platform: str | None = None
    parent: int | None = None  # index of the stage it builds on (FROM <stage>)
    instructions: list[Instruction] = field(default_factory=list)
    final: bool = False  # ends up in the final image (the target stage or one it builds on)
    unresolved: tuple[str, ...] = ()  # ARG names in FROM that had no value
    undeclared: tuple[str, ...] = ()  # those of them no ARG before the first FROM declares (FROM cannot see them)

    @property
    def label(self) -> str:
        return self.name or str(self.index)


@dataclass
class Dockerfile:
    escape: str
    stages: list[Stage]
    instructions: list[Instruction]
    global_values: dict[str, str]  # global ARG values (after --build-arg) visible to FROM
    # ENV values at the end of each stage, by (stage index, build args): the stages built on it start with them
    env_at_end: dict[tuple[int, tuple[tuple[str, str], ...]], dict[str, str]] = field(default_factory=dict)
    expanded_chars: int = 0  # characters of ENV/ARG values expanded so far (bounded by MAX_EXPANDED_TOTAL)

    def stage_by_ref(self, ref: str) -> Stage | None:
        """The stage named ``ref`` (case-insensitive) or with that index."""
        named = _named(self.stages, ref.lower())
        if named is None and ref.isdigit() and int(ref) < len(self.stages):
            named = self.stages[int(ref)]
        return named


@dataclass
class Expansion:
    value: str
    missing: list[str] = field(default_factory=list)  # the variables it used that had no value


def expand(text: str, values: Mapping[str, str], escape: str = "\\", keep_unknown: bool = False,
           remove_quotes: bool = True, depth: int = 0) -> Expansion:
    """Expand ``$VAR`` forms as BuildKit does. ``keep_unknown`` keeps unknown variables as written (RUN
    text: the base image's shell expands them). A broken bound raises DockerfileSyntaxError at line 0."""
    if depth > MAX_SUBSTITUTION_DEPTH:
        raise DockerfileSyntaxError(f"variable substitution nested more than {MAX_SUBSTITUTION_DEPTH} levels deep", 0)
    out: list[str] = []
    missing: list[str] = []
    size = i = 0
    n = len(text)
    quote: str | None = None
    while i < n:
        ch = text[i]
        if quote == "'":
            if ch != "'" or not remove_quotes:
                out.append(ch)
            quote = None if ch == "'" else quote
            i += 1
            continue
        if ch == escape and i + 1 < n:
            nxt = text[i + 1]
            if (quote == '"' and nxt not in ('"', "$", escape)) or not remove_quotes:
                out.append(ch)
            out.append(nxt)
            i += 2
            continue
        if (ch in ("'", '"') and quote is None) or (ch == '"' and quote == '"'):
            quote = ch if quote is None else None
            if not remove_quotes:
                out.append(ch)
            i += 1
            continue
        if ch == "$" and i + 1 < n:
            pieces = len(out)
            i = _dollar(text, i, values, escape, keep_unknown, out, missing, depth)
            size += sum(len(piece) for piece in out[pieces:])
            if size > MAX_EXPANDED_VALUE:
                raise DockerfileSyntaxError(f"a value expands to more than {MAX_EXPANDED_VALUE >> 10} KiB "
                                            "(longer than Linux allows one environment variable)", 0)
            continue
        out.append(ch)
        i += 1
    return Expansion("".join(out), missing)


def _dollar(text: str, i: int, values: Mapping[str, str], escape: str, keep_unknown: bool,
            out: list[str], missing: list[str], depth: int = 0) -> int:
    n = len(text)
    if text[i + 1] != "{":
        m = _VAR_NAME.match(text, i + 1)
        if not m:
            out.append("$")
            return i + 1
        name = m.group(0)
        if name in values:
            out.append(values[name])
        else:
            missing.append(name)
            if keep_unknown:
                out.append(text[i:m.end()])
        return m.end()
    braces, j = 0, i + 1  # ${...}: find the matching brace (nested ${} allowed in the word part)
    while j < n:
        if text[j] == escape:
            j += 2
            continue
        if text[j] == "{":
            braces += 1
        elif text[j] == "}":
            braces -= 1
            if braces == 0:
                break
        j += 1
    if j >= n:
        out.append(text[i:])  # unterminated: BuildKit reports "missing '}'"; keep it literal
        return n
    body = text[i + 2 : j]
    m = _VAR_NAME.match(body)
    if not m:
        out.append(text[i : j + 1])
        return j + 1
    name, rest = m.group(0), body[m.end():]
    is_set, value = name in values, values.get(name, "")
    if not is_set and (rest == "" or rest[:1] in ("#", "%", "/")):
        missing.append(name)
        if rest == "" and keep_unknown:
            out.append(text[i : j + 1])
            return j + 1
    if rest == "":
        result = value
    elif rest[:2] in (":-", ":+", ":?") or rest[:1] in ("-", "+", "?"):
        colon = rest.startswith(":")
        op, word = (rest[1], rest[2:]) if colon else (rest[0], rest[1:])
        present = (is_set and value != "") if colon else is_set
        inner = expand(word, values, escape, keep_unknown, depth=depth + 1)
        if not present and op != "+":  # ?: an error in BuildKit when unset; read on with the empty value
            missing.extend(inner.missing if op == "-" else [name])
        result = {"-": value if present else inner.value, "+": inner.value if present else "", "?": value}[op]
    elif rest[:1] in ("#", "%"):
        double = rest[1:2] == rest[:1]
        pattern = expand(rest[2:] if double else rest[1:], values, escape, keep_unknown, depth=depth + 1).value
        result = _trim(value, pattern, prefix=rest[0] == "#", longest=double)
    elif rest[:1] == "/":
        every = rest[1:2] == "/"
        pattern, _, replacement = rest[1 + every:].partition("/")
        result = _replace(value, pattern, replacement, every)
    else:
        out.append(text[i : j + 1])
        return j + 1
    out.append(result)
    return j + 1


def _trim(value: str, pattern: str, prefix: bool, longest: bool) -> str:
    cuts = range(len(value), -1, -1) if longest == prefix else range(len(value) + 1)
    for k in cuts:
        part = value[:k] if prefix else value[len(value) - k :]
        if fnmatch.fnmatchcase(part, pattern):
            return value[k:] if prefix else value[: len(value) - k]
    return value


def _replace(value: str, pattern: str, replacement: str, every: bool) -> str:
    regex = fnmatch.translate(pattern).replace("\\Z", "").removeprefix("(?s:").removesuffix(")")
    try:
        return re.sub(f"(?s:{regex})", lambda _m: replacement, value, count=0 if every else 1)
    except re.error:
        return value


def split_words(text: str, escape: str = "\\") -> list[str]:
    """Split on blanks outside quotes, keeping quotes and escapes (BuildKit's parseWords)."""
    return _word_pattern(escape).findall(text)


@cache
def _word_pattern(escape: str) -> re.Pattern[str]:
    # a word: escaped characters, quoted runs (an unclosed quote runs to the end) and other non-blanks
    e = re.escape(escape)
    return re.compile(rf"(?:{e}.|'[^']*'?|\"(?:{e}.|[^\"{e}]|{e}\Z)*\"?|[^ \t\r\n'\"{e}]|{e}\Z)+", re.S)


def _directives(lines: list[str]) -> tuple[dict[str, str], int]:
    """Parser directives at the top of the file, and the index of the first line after them."""
    found: dict[str, str] = {}
    for index, raw in enumerate(lines):
        m = _DIRECTIVE.match(raw.strip())
        # a repeated directive is a comment from then on
        if not m or not raw.lstrip().startswith("#") or m.group(1).lower() in found:
            return found, index
        found[m.group(1).lower()] = m.group(2)
    return found, len(lines)


def _heredoc_markers(text: str) -> list[tuple[str, bool, bool]]:
    """(delimiter, strip_tabs, expand) for each ``<<WORD`` outside quotes in an instruction line."""
    if "<<" not in text:
        return []
    return [(m.group(2) or m.group(3) or m.group(4), m.group(1) == "-", m.group(4) is not None)
            for m in _HEREDOC.finditer(text) if m.group(1) is not None]


def _split_flags(keyword: str, args: str, start: int) -> tuple[list[tuple[str, str | None]], int]:
    """Leading ``--name[=value]`` flags of an instruction; returns them and the offset after them."""
    flags: list[tuple[str, str | None]] = []
    if keyword not in _FLAG_INSTRUCTIONS:
        return flags, start
    pos, n = start, len(args)
    while True:
        while pos < n and args[pos] in " \t":
            pos += 1
        if not args.startswith("--", pos):
            return flags, pos
        m = _FLAG_WORD.match(args, pos)  # a word; its quotes may hold blanks
        end = m.end() if m else pos
        word = args[pos + 2 : end]
        if not word:
            return flags, pos
        name, eq, value = word.partition("=")
        flags.append((name.lower(), _unquote(value) if eq else None))
        pos = end


def _unquote(value: str) -> str:
    return value[1:-1] if len(value) >= 2 and value[0] == value[-1] and value[0] in ("'", '"') else value


def read_instructions(text: str) -> tuple[dict[str, str], str, list[Instruction]]:
    """Directives, escape character and instructions (no stage semantics yet)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    lines = [ln[:-1] if ln.endswith("\r") else ln for ln in lines]
    directives, first = _directives(lines)
    escape = directives.get("escape", "\\")
    if escape not in ("\\", "`"):
        raise DockerfileSyntaxError(f"invalid escape directive {escape!r}: must be ` or \\", 1)
    continuation = re.compile(re.escape(escape) + r"[ \t]*$")
    out: list[Instruction] = []
    i, n = first, len(lines)
    while i < n:
        stripped = lines[i].strip()
        if not stripped or stripped.startswith("#"):
            i += 1
            continue
        start_line, length, current = i + 1, 0, lines[i].lstrip()
        parts: list[str] = []
        offsets: list[int] = []
        numbers: list[int] = []
        while True:
            m = continuation.search(current)
            piece = current[: m.start()] if m else current
            offsets.append(length)
            numbers.append(i + 1)
            parts.append(piece)
            length += len(piece)
            i += 1
            if not m:
                break
            # continued: skip comment lines and blank lines, as BuildKit does
            while i < n and (not lines[i].strip() or lines[i].lstrip().startswith("#")):
                i += 1
            if i >= n:
                break
            current = lines[i]
        end_line = numbers[-1]
        joined = "".join(parts)
        m_kw = re.match(r"\s*(\S+)", joined)
        if m_kw is None:  # only continuation characters
            continue
        keyword = m_kw.group(1).upper()
        if keyword not in INSTRUCTIONS:
            raise DockerfileSyntaxError(f"unknown instruction: {m_kw.group(1)}", start_line)
        flags, args_start = _split_flags(keyword, joined, m_kw.end())
        while args_start < len(joined) and joined[args_start] in " \t":
            args_start += 1
        args = joined[args_start:].rstrip()
        shifted = [max(0, off - args_start) for off in offsets]
        heredocs: list[Heredoc] = []
        if keyword in _HEREDOC_INSTRUCTIONS:
            for name, strip_tabs, expand_vars in _heredoc_markers(args):
                body_start = i + 1
                body: list[str] = []
                while i < n:
                    candidate = lines[i].lstrip("\t") if strip_tabs else lines[i]
                    if candidate == name:
                        break
                    body.append(candidate)
                    i += 1
                else:
                    raise DockerfileSyntaxError(f"heredoc <<{name} is never closed (no line {name!r})", start_line)
                end_line = i + 1
                i += 1
                heredocs.append(Heredoc(name, "\n".join(body) + ("\n" if body else ""), body_start, strip_tabs, expand_vars))
        json_args: tuple[str, ...] | None = None
        if args.startswith("[") and keyword in ("RUN", "CMD", "ENTRYPOINT", "SHELL", "COPY", "ADD", "VOLUME", "HEALTHCHECK"):
            try:
                parsed = json.loads(args)
            except ValueError:
                parsed = None
            if isinstance(parsed, list) and all(isinstance(x, str) for x in parsed):
                json_args = tuple(parsed)
        if keyword == "SHELL" and json_args is None:
            raise DockerfileSyntaxError("SHELL requires the arguments to be in JSON form", start_line)
        out.append(Instruction(keyword, args, start_line, end_line, tuple(flags), json_args, tuple(heredocs),
                               tuple(shifted), tuple(numbers)))
    return directives, escape, out


def platform_args(platform: str) -> dict[str, str]:
    """BuildKit's automatic platform ARGs for a build on and for ``platform`` (e.g. linux/arm64)."""
    os_name, _, rest = platform.partition("/")
    arch, _, variant = rest.partition("/")
    parts = {"PLATFORM": platform, "OS": os_name, "ARCH": arch, "VARIANT": variant}
    return {prefix + key: value for prefix in ("TARGET", "BUILD") for key, value in parts.items()}


def arg_pairs(inst: Instruction, escape: str) -> list[tuple[str, str | None]]:
    pairs: list[tuple[str, str | None]] = []
    words = split_words(inst.args, escape)
    if not words:
        raise DockerfileSyntaxError("ARG requires at least one argument", inst.line)
    for word in words:
        name, eq, default = word.partition("=")
        if not _VAR_NAME.fullmatch(name):
            raise DockerfileSyntaxError(f"ARG name {name!r} is not a valid variable name", inst.line)
        pairs.append((name, default if eq else None))
    return pairs


def env_pairs(inst: Instruction, escape: str) -> list[tuple[str, str]]:
    """(name, raw value) pairs of ENV/LABEL in either syntax (``K=V ...`` or legacy ``K V``)."""
    words = split_words(inst.args, escape)
    if not words:
        raise DockerfileSyntaxError(f"{inst.keyword} requires at least one argument", inst.line)
    if "=" not in words[0]:  # legacy form: ENV NAME the rest of the line
        m = re.match(r"(\S+)\s+(.*)$", inst.args, re.S)
        if not m:
            raise DockerfileSyntaxError(f"{inst.keyword} {words[0]} has no value (use {words[0]}=VALUE)", inst.line)
        return [(m.group(1), m.group(2).strip())]
    pairs: list[tuple[str, str]] = []
    for word in words:
        name, eq, value = word.partition("=")
        if not eq:
            raise DockerfileSyntaxError(f"syntax error - can't find = in {word!r}. Must be of the form: name=value", inst.line)
        if not name:
            raise DockerfileSyntaxError(f"{inst.keyword} names can not be blank", inst.line)
        pairs.append((name, value))
    return pairs


def parse(text: str, build_args: Mapping[str, str] | None = None, platform: str = "linux/arm64",
          target: str | None = None) -> Dockerfile:
    """Parse a Dockerfile with ``--build-arg`` values, for a build on/for ``platform``; ``target`` is
    ``docker build --target`` (default: the last stage)."""
    build_args = dict(build_args or {})
    _, escape, instructions = read_instructions(text)
    global_values: dict[str, str] = platform_args(platform)
    declared = set(global_values)  # names FROM can see: declared before the first FROM (a value or not)
    stages: list[Stage] = []
    current: Stage | None = None
    line = instructions[0].line if instructions else 1
    expanded_chars = 0
    try:
        for inst in instructions:
            line = inst.line
            if inst.keyword == "FROM":
                if len(stages) >= MAX_STAGES:
                    raise DockerfileSyntaxError(f"more than {MAX_STAGES} build stages; envcheck reads at most {MAX_STAGES}", inst.line)
                current = _new_stage(inst, stages, global_values, escape, declared)
                stages.append(current)
            elif current is None:
                if inst.keyword != "ARG":
                    raise DockerfileSyntaxError(f"{inst.keyword} before the first FROM: only ARG may come first", inst.line)
                for name, default in arg_pairs(inst, escape):
                    declared.add(name)
                    if name in build_args:
                        global_values[name] = build_args[name]
                    elif default is not None:
                        global_values[name] = expand(default, global_values, escape).value
                        expanded_chars += len(global_values[name])
                        if expanded_chars > MAX_EXPANDED_TOTAL:
                            raise DockerfileSyntaxError(f"the ARG values of this file expand to more than "
                                                        f"{MAX_EXPANDED_TOTAL >> 20} MiB", inst.line)
                continue
            # In place: made by read_instructions for this parse alone (a replace() each was most of the cost)
            object.__setattr__(inst, "stage", current.index)
            current.instructions.append(inst)
            if inst.keyword in ("ENV", "LABEL"):
                env_pairs(inst, escape)  # validates the syntax
            elif inst.keyword == "ARG":
                arg_pairs(inst, escape)
    except RecursionError as exc:  # ${A:-${A:-...}} nested beyond any real recipe
        raise DockerfileSyntaxError("variable substitution nested too deeply", line) from exc
    except DockerfileSyntaxError as exc:
        if exc.line:
            raise
        raise DockerfileSyntaxError(exc.message, line) from exc
    if not stages:
        raise DockerfileSyntaxError("no FROM instruction: a Dockerfile must start a build stage", instructions[-1].line if instructions else 1)
    if target:  # docker build --target: the stages after it are never built, so they are not read
        chosen = _named(stages, target.lower())  # a number is not a stage name for --target
        if chosen is None:
            raise UnknownTargetError(target, tuple(s.name for s in stages if s.name is not None))
        stages = stages[:chosen.index + 1]
        instructions = [inst for inst in instructions if inst.stage <= chosen.index]
    walk: Stage | None = stages[-1]  # the target and the stages it builds on end up in the image
    while walk is not None:
        walk.final = True
        walk = stages[walk.parent] if walk.parent is not None else None
    _platform_alternatives(stages, global_values, build_args, platform, escape)
    return Dockerfile(escape, stages, instructions, global_values)


_PLATFORM_REF = re.compile(r"\$\{?((?:TARGET|BUILD)(?:PLATFORM|OS|ARCH|VARIANT))\b")


def _platform_alternatives(stages: list[Stage], values: Mapping[str, str], build_args: Mapping[str, str],
                           platform: str, escape: str) -> None:
    """``ARG TARGETARCH=amd64`` then ``FROM base-${TARGETARCH}``: the declared default shadows BuildKit's value
    (docker/buildx#510), so a plain build takes base-amd64; the stage the file names for ``platform``
    (base-arm64) is the one a build that passes the platform gets, so it is in the image as well."""
    for stage in [s for s in stages if s.final]:
        names = set(_PLATFORM_REF.findall(stage.base_written))
        if not names or names & set(build_args):
            continue
        own = expand(stage.base_written, {**values, **platform_args(platform)}, escape).value.lower()
        alt = _named(stages[:stage.index], own)
        while alt is not None and not alt.final:
            alt.final = True
            alt = stages[alt.parent] if alt.parent is not None else None


def _named(stages: list[Stage], low: str) -> Stage | None:
    return next((s for s in stages if s.name is not None and s.name.lower() == low), None)


class UnknownTargetError(ReadingError):
    """``--target`` names no stage (``docker build`` fails the same way)."""

    def __init__(self, target: str, stages: tuple[str, ...]) -> None:
        named = ", ".join(stages) if stages else "none: no stage has an AS name"
        super().__init__(f"--target {target!r} names no stage of this Dockerfile (stage names: {named})")
        self.stages = stages


def _new_stage(inst: Instruction, stages: list[Stage], global_values: dict[str, str], escape: str,
               declared: set[str]) -> Stage:
    words = split_words(inst.args, escape)
    name: str | None = None
    if len(words) == 3 and words[1].lower() == "as":
        name = words[2]
        if not _STAGE_NAME.match(name):
            raise DockerfileSyntaxError(f"invalid stage name {name!r}", inst.line)
    elif len(words) != 1:
        raise DockerfileSyntaxError("FROM requires either one argument, or three: FROM <image> [AS <name>]", inst.line)
    expanded = expand(words[0], global_values, escape)
    base = expanded.value
    missing = tuple(dict.fromkeys(expanded.missing))
    undeclared = tuple(n for n in missing if n not in declared)
    if not base.strip() and (undeclared or not missing):
        raise DockerfileSyntaxError(
            f"base name ({words[0]}) should not be blank: ARG {', '.join(undeclared)} is not declared before the first "
            "FROM (an ARG inside a stage is not visible to FROM); docker build fails the same way" if undeclared
            else f"base name ({words[0]}) should not be blank", inst.line)
    platform_written = inst.flag("platform")
    platform = expand(platform_written, global_values, escape).value if platform_written else None
    parent, low = None, base.lower()
    for earlier in stages:  # the last stage of that name
        if earlier.name is not None and earlier.name.lower() == low:
            parent = earlier.index
    for key, _ in inst.flags:
        if key != "platform":
            raise DockerfileSyntaxError(f"unknown flag for FROM: --{key}", inst.line)
    return Stage(len(stages), name, base, words[0], inst.line, platform, parent, unresolved=missing,
                 undeclared=undeclared)


def copied_from(inst: Instruction) -> str | None:
    """The stage or image a ``COPY --from=...`` reads from."""
    return inst.flag("from") if inst.keyword in ("COPY", "ADD") else None
