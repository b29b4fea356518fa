"""Split POSIX shell text (a RUN line, a heredoc script) into the simple commands that can run.

Known variables are expanded (``pip install torch==${TORCH_VERSION}`` means something only once the version
is known) and conditions they decide are evaluated; a command under a condition envcheck cannot decide
carries a :class:`Branch`, and one that runs only when an earlier one fails is marked as a fallback.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from collections import ChainMap, Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from envcheck.inspect.heredocs import FUNCTION as _FUNCTION
from envcheck.inspect.heredocs import heredoc_bodies as _heredoc_bodies
from envcheck.inspect.shell_words import ARRAY, SEP, _tokens, _Word, array_value, shortened

_WRAPPERS = frozenset({"sudo", "time", "exec", "nohup", "command", "builtin", "xargs", "nice", "stdbuf"})
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ash"})
_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
# A path whose last part is a Python interpreter or pip (`$VENV/bin/python`, `$ROOT/.venv/bin/pip3`): the folder
# is not known, the program is, so a variable holding one still says what `"$PY" -m pip install` runs.
INTERPRETER_PATH = re.compile(r"\S*/(?:python|pip)(?:\d+(?:\.\d+)?)?")


@dataclass(frozen=True)
class Branch:
    """The condition a command depends on, as written. ``negated``: it runs when the condition is false.
    ``fallback``: it runs only when an earlier command or a probe of the build's state (``[ -f wheel ]``)
    fails: the deliberate second path of a recipe, not its main one."""

    condition: str
    negated: bool = False
    fallback: bool = False

    def describe(self) -> str:
        if self.fallback:
            return f"in a fallback that runs only when `{self.condition}` fails"
        return f"in a conditional branch ({'unless' if self.negated else 'if'} `{self.condition}`)"


@dataclass(frozen=True)
class SimpleCommand:
    """One command: its words (quotes removed, known variables expanded) and where it starts."""

    argv: tuple[str, ...]
    offset: int  # offset in the outermost text where the command's first word starts
    assignments: tuple[tuple[str, str], ...] = ()  # VAR=value prefixes
    env: Mapping[str, str] = field(default_factory=dict)  # variables exported earlier in the same script
    text: str = ""  # the command as written
    branch: Branch | None = None  # set when the command runs only under a condition envcheck cannot decide
    tolerated: bool = False  # `cmd || true`, `cmd || echo ...`: the script goes on when it fails


def split_commands(text: str, values: Mapping[str, str] | None = None, base: int = 0, arch: str = "") -> Commands:
    """Every simple command in ``text`` that can run, in order, nested ``sh -c`` scripts expanded in place;
    ``base`` is added to offsets, ``arch`` (arm64, amd64) answers ``$(uname -m)`` probes."""
    commands = Commands()
    budget = [max(SPLIT_BUDGET, 4 * len(text))]
    text = _heredoc_bodies(text)
    _split(text, dict(values or {}), base, commands, depth=0, budget=budget, outer=None, arch=arch)
    commands.truncated = budget[0] < 0
    return commands


class Commands(list[SimpleCommand]):
    truncated = False  # split_commands stopped at its budget


# Characters read for one call, nested `sh -c` scripts and expanded variables included: real RUN lines use a
# few times their length, but variables holding `sh -c` scripts that expand one another grow exponentially.
SPLIT_BUDGET = 64 << 10
MAX_COMMANDS = 10_000  # simple commands from one RUN; real ones hold tens
MAX_WHOLE_TEXT, MAX_TOKENS = 1 << 20, 200_000  # a text past a RUN's 1 MiB (a script): only its first 200,000 tokens
MAX_NESTING = 40  # compound commands (the parser recurses once per level); real scripts nest a few

_RESERVED = frozenset({"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "for", "select", "case",
                       "esac", "in", "!", "{", "}", "function"})
_FILE_TESTS = frozenset(["-e", "-f", "-d", "-x", "-s", "-r", "-w", "-L", "-h", "-p", "-S", "-b", "-c", "-g", "-u", "-k", "-O", "-G", "-N"])
_DEAD = Branch("", fallback=True)  # marker: the branch cannot run (compared by identity)
_POSITIONAL = re.compile(r"\$(?:\{#?[1-9@*#][}:#%/-]|[1-9@*#])")  # $1, "${1:-}", $@, $#: the caller's arguments
_ARRAY_LIST = re.compile(r'[A-Za-z_]\w*\s+in\s+"\$\{([A-Za-z_]\w*)\[@\]\}"')  # `t in "${cmd[@]}"`
_COMMAND_HEADS = frozenset({"docker", "podman", "nerdctl", "vllm", "sglang", "torchrun", "trtllm-serve"})
_CALL = "\0call"  # marker: a SimpleCommand that calls a function of the script (replaced by its commands)


class _TooDeep(Exception):
    pass


@dataclass
class _Status:
    value: str  # exit status: T/F decided, U an undecidable test, AS/AF assumed success/failure
    text: str = ""  # the condition as written
    probe: bool = False  # a test of the build's state (files, command output), not of a setting


@dataclass(slots=True)
class _Item:
    kind: str  # "op" | "kw" | "cmd"
    value: str
    start: int = 0
    end: int = 0
    detail: str = ""  # a case clause's pattern
    alternatives: tuple[str, ...] = ()  # the patterns of a case clause (a|b)


def _items(tokens: list[_Word], text: str) -> list[_Item]:
    """Operators, reserved words at command positions, and simple commands (as text spans)."""
    items: list[_Item] = []
    at_start = True
    cases = 0  # open `case ... esac` blocks: after `;;` come the next clause's patterns
    k, n = 0, len(tokens)
    while k < n:
        tok = tokens[k]
        if tok.operator:
            items.append(_Item("op", tok.value, tok.start, tok.start + len(tok.value)))
            at_start = True
            k += 1
            if tok.value == ";;" and cases:
                k = _case_patterns(tokens, k, items)
            continue
        if at_start and not tok.quoted and tok.value in _RESERVED and tok.value != "in":
            items.append(_Item("kw", tok.value, tok.start, tok.start))
            cases += {"case": 1, "esac": -1 if cases else 0}.get(tok.value, 0)
            k += 1
            if tok.value in ("for", "select", "case"):  # the header up to `do`/`in` is not a command
                ends = ("in",) if tok.value == "case" else ("do",)
                head = k
                while k < n and not tokens[k].operator and not (not tokens[k].quoted and tokens[k].value in ends):
                    k += 1
                if k > head:  # the header's span (the case word, a loop's list), read with the variables then
                    items[-1].start, items[-1].end = tokens[head].start, tokens[k].start if k < n else len(text)
                if tok.value == "case":
                    k = _case_patterns(tokens, k + 1, items)
            continue
        if tok.redirect:
            k += 1
            continue
        if not tok.quoted and tok.value == "[[":  # [[ a && b ]] is one command
            while k < n and not (not tokens[k].operator and tokens[k].value == "]]"):
                k += 1
            k = min(k + 1, n)
        while k < n and not tokens[k].operator:
            k += 1
        # value: the first word as written (a test, true, a probe ...); detail "q" when it was quoted
        items.append(_Item("cmd", tok.value, tok.start, tokens[k].start if k < n else len(text), "q" if tok.quoted else ""))
        at_start = False
    return items


def _case_patterns(tokens: list[_Word], k: int, items: list[_Item]) -> int:
    """Skip a case clause's patterns (``a|b)``) after ``in`` or ``;;``; emits a ``pattern`` keyword item."""
    n = len(tokens)
    while k < n and tokens[k].operator and tokens[k].value in ("\n", ";"):
        k += 1
    if k < n and not tokens[k].operator and tokens[k].value == "esac":
        return k
    start = k
    while k < n and not (tokens[k].operator and tokens[k].value == ")"):
        if not tokens[k].operator and tokens[k].value == "esac":
            return k
        k += 1
    if k < n:
        pattern = "".join(t.value for t in tokens[start:k]).lstrip("(")
        alternatives = tuple(t.value for t in tokens[start:k] if not t.operator)
        items.append(_Item("kw", "pattern", tokens[start].start if start < n else 0, 0, pattern, alternatives))
        return k + 1
    return k


class _Parser:
    """Recursive descent over the items of one script, evaluating conditions as it goes."""
    def __init__(self, text: str, items: list[_Item], env: dict[str, str], base: int, commands: list[SimpleCommand],
                 depth: int, budget: list[int], arch: str) -> None:
        self.text, self.items, self.base, self.commands, self.budget = text, items, base, commands, budget
        self.depth, self.arch, self.nesting, self.pos, self.env = depth, arch, depth * 4, 0, _ScriptEnv(env)
        # functions the script names again after defining them: read where they are called (see define)
        names = Counter(re.findall(r"(?<![\w-])[A-Za-z_][\w-]*", text))
        self.called = {name for name in _FUNCTION.findall(text) if names[name] > 1}
        self.bodies: dict[str, list[SimpleCommand]] = {}
        self.calls: set[str] = set()  # functions a command calls, in a branch that runs or not

    def peek(self) -> _Item | None:
        return self.items[self.pos] if self.pos < len(self.items) else None

    def at(self, kind: str, *values: str) -> bool:
        item = self.peek()
        return item is not None and item.kind == kind and (not values or item.value in values)

    def take(self) -> _Item:
        self.pos += 1
        return self.items[self.pos - 1]

    def accept(self, kind: str, *values: str) -> None:
        if self.at(kind, *values):
            self.pos += 1

    def skip(self, *ops: str) -> None:
        while self.at("op", *ops):
            self.pos += 1

    def skip_separators(self) -> None:
        self.skip(";", "\n", "&", ";;")

    def nested(self) -> None:
        self.nesting += 1
        if self.nesting > MAX_NESTING:
            raise _TooDeep

    # list := and_or ((; | & | newline) and_or)*, up to one of ``stops`` (keywords or operators)
    def parse_list(self, ctx: Branch | None, stops: tuple[str, ...]) -> _Status:
        status = _Status("T")
        while True:
            self.skip_separators()
            item = self.peek()
            if item is None or (item.value in stops and item.kind in ("kw", "op")):
                return status
            if (item.kind == "op" and item.value in (")", "&&", "||", "|")) or (item.kind == "kw" and item.value in (
                    "then", "else", "elif", "fi", "do", "done", "}", "esac", "pattern")):
                if not stops:
                    self.pos += 1  # a stray terminator at the top level: read on
                    continue
                return status
            if self.budget[0] < 0:
                return status
            status = self.parse_and_or(ctx)

    def parse_and_or(self, ctx: Branch | None) -> _Status:
        first = len(self.commands)
        status = self.parse_pipeline(ctx)
        while self.at("op", "&&", "||"):
            op = self.take().value
            self.skip("\n")
            nxt = _derive(ctx, status, op)
            before = len(self.commands)
            after = self.parse_pipeline(nxt)
            if op == "||" and after.text.split(" ", 1)[0] in _TOLERATING:  # the commands so far may fail
                self.commands[first:before] = [replace(c, tolerated=True) for c in self.commands[first:before]]
            if nxt is _DEAD:
                continue
            if nxt is ctx:
                status = after
            elif op == "&&":
                status = _Status("U", status.text, status.probe)
            else:
                status = _Status("AS", after.text)
        return status

    def parse_pipeline(self, ctx: Branch | None) -> _Status:
        negate = False
        while self.at("kw", "!"):
            self.pos += 1
            negate = not negate
        status = self.parse_command(ctx)
        while self.at("op", "|"):
            self.pos += 1
            self.skip("\n")
            status = self.parse_command(ctx)
        if negate:
            status = _Status({"T": "F", "F": "T", "AS": "AF", "AF": "AS"}.get(status.value, status.value),
                             f"! {status.text}", status.probe)
        return status

    def parse_command(self, ctx: Branch | None) -> _Status:
        item = self.peek()
        if item is None:
            return _Status("T")
        if item.kind == "op" and item.value == "(":
            self.pos += 1
            self.nested()
            status = self.parse_list(ctx, (")",))
            self.accept("op", ")")
            self.nesting -= 1
            return status
        if item.kind == "kw":
            return self.parse_compound(ctx, item.value)
        if item.kind != "cmd":
            return _Status("T")
        self.pos += 1
        if self.at("op", "(") and self.pos + 1 < len(self.items) and self.items[self.pos + 1].value == ")" \
                and not self.text[item.start:item.end].rstrip().endswith("="):  # `m=()` is an empty array
            self.pos += 2  # name() { ...; }: a function definition
            self.skip("\n")
            return self.define(item.value, ctx)
        if self.at("op", "(") and (name := _ARRAY_ASSIGN.fullmatch(self.text[item.start:item.end].strip())):
            return self.array(name.group(1), ctx, append=bool(name.group(2)))
        return self.simple(item, ctx)

    def define(self, name: str, ctx: Branch | None) -> _Status:
        """A function definition. A function the script calls by name runs where it is called, under the call's
        branch (``elif [ "$MODE" = h100 ]; then install_h100``), so its body is kept until then; one it never
        names is read where it stands, as if it ran. Its variables are the ones set where it is defined."""
        if name not in self.called or ctx is _DEAD:
            return self.parse_command(ctx)
        outer, self.commands = self.commands, []
        try:
            self.parse_command(None)
        finally:
            self.bodies[name], self.commands = self.commands, outer
        return _Status("T")

    def finish(self) -> None:
        """Calls replaced by the commands of the functions they run, once per function, at its first call: under
        no branch when some call runs unconditionally, else under its first call's branch. Functions named but
        never called as a command (``trap cleanup EXIT``) are read as if they ran."""
        best: dict[str, Branch | None] = {}

        def under(ctx: Branch | None, cmd: SimpleCommand) -> Branch | None:
            return cmd.branch if ctx is None else ctx if cmd.branch is None else _within(ctx, cmd.branch)

        def reach(cmds: list[SimpleCommand], ctx: Branch | None, stack: tuple[str, ...]) -> None:
            for cmd in cmds:
                name = cmd.argv[1] if cmd.argv[:1] == (_CALL,) else ""
                if name in self.bodies and name not in stack:
                    if len(stack) >= MAX_NESTING:  # functions calling functions 40 deep: stop reading there
                        self.budget[0] = min(self.budget[0], -1)
                        return
                    branch = under(ctx, cmd)
                    if name not in best or (branch is None and best[name] is not None):
                        best[name] = branch  # a function's calls: at most a first one and an unconditional one
                        reach(self.bodies[name], branch, (*stack, name))

        out: list[SimpleCommand] = []
        done: set[str] = set()

        def emit(cmds: list[SimpleCommand], ctx: Branch | None, tolerated: bool, depth: int = 0) -> None:
            for cmd in cmds:
                if len(out) >= MAX_COMMANDS:
                    self.budget[0] = min(self.budget[0], -1)  # reported as truncated: the rest is not read
                    return
                if cmd.argv[:1] != (_CALL,):
                    out.append(replace(cmd, branch=under(ctx, cmd), tolerated=cmd.tolerated or tolerated))
                elif (name := cmd.argv[1]) in best and name not in done and depth < MAX_NESTING:
                    done.add(name)
                    emit(self.bodies[name], best[name], tolerated or cmd.tolerated, depth + 1)

        top = list(self.commands)
        reach(top, None, ())
        for name in self.bodies:
            if name not in self.calls:
                best.setdefault(name, None)
                reach(self.bodies[name], None, (name,))
        emit(top, None, False)
        for name in self.bodies:
            if name not in self.calls and name not in done:
                done.add(name)
                emit(self.bodies[name], None, False)
        self.commands[:] = out

    def array(self, name: str, ctx: Branch | None, append: bool = False) -> _Status:
        """``NAME=( word ... )`` (``local -a``, ``+=`` too), over several lines: its words, expanded when assigned."""
        self.pos += 1
        before = self.env.values.get(name, "") if append else ""
        words = [_Word(w, 0) for w in before[1:].split(SEP)] if before.startswith(ARRAY) and before != ARRAY else []
        while self.peek() is not None and not self.at("op", ")"):
            item = self.take()
            if item.kind == "cmd":
                words += _tokens(self.text[item.start:item.end], self.env.values, 0, arch=self.arch)
        self.accept("op", ")")
        if ctx is not _DEAD:
            # `args+=(--api-key ...)` under a condition: the words before it are on both paths, so they stay
            self.env.set(name, array_value([w.value for w in _spread(words) if not w.operator and not w.redirect]),
                         branch=None if append else ctx)
        return _Status("T")

    def parse_compound(self, ctx: Branch | None, word: str) -> _Status:
        self.pos += 1
        if word == "function":
            name = self.take().value if self.at("cmd") else ""
            if self.at("op", "(") and self.pos + 1 < len(self.items) and self.items[self.pos + 1].value == ")":
                self.pos += 2
            self.skip_separators()
            return self.define(name, ctx)
        self.nested()
        try:
            if word == "if":
                return self.parse_if(ctx)
            if word in ("while", "until", "for", "select"):
                body_ctx = ctx
                if word == "for" and ctx is not _DEAD:
                    self.quoted_command(self.items[self.pos - 1], ctx)
                if word in ("while", "until"):
                    cond = self.parse_list(ctx, ("do",))
                    stops = "T" if word == "until" else "F"
                    body_ctx = _DEAD if cond.value == stops or ctx is _DEAD else ctx
                self.skip_separators()  # `for x in a b; do`
                self.accept("kw", "do")
                self.parse_list(body_ctx, ("done",))
                self.accept("kw", "done")
                return _Status("AS", "loop")
            if word == "case":
                subject, matched = self.case_subject(self.items[self.pos - 1]), False
                while self.at("kw", "pattern"):
                    pattern = self.take()
                    if ctx is _DEAD:
                        clause: Branch | None = _DEAD
                    elif subject is None:
                        clause = _within(ctx, Branch(f"case ... in {shortened(pattern.detail)})"))
                    else:  # the first clause whose pattern matches runs, no other
                        hit = not matched and any(fnmatch.fnmatchcase(subject, alt) for alt in pattern.alternatives)
                        matched = matched or hit
                        clause = ctx if hit else _DEAD
                    self.parse_list(clause, (";;", "esac", "pattern"))
                    self.skip_separators()
                self.accept("kw", "esac")
                return _Status("AS", "case")
            if word == "{":
                status = self.parse_list(ctx, ("}",))
                self.accept("kw", "}")
                return status
            return _Status("T")  # a reserved word out of place: skipped
        finally:
            self.nesting -= 1

    def quoted_command(self, head: _Item, ctx: Branch | None) -> None:
        """``for t in "${cmd[@]}"; do out+=" $(printf %q "$t")"; done``: a command array (``cmd=(docker run ...
        vllm serve ...)``) turned word by word into text that ``ssh`` or ``bash -c`` runs later. It is read as
        a command here, unless the script also runs the array itself."""
        header = self.text[head.start:head.end]
        used = _ARRAY_LIST.fullmatch(header.strip())
        if not used or re.search(rf'(?m)^[ \t]*(?:exec[ \t]+)?"?\$\{{{used.group(1)}\[@\]\}}', self.text):
            return
        words = _spread(_tokens(header, self.env.values, self.base + head.start, arch=self.arch))[2:]
        if words and words[0].value.rsplit("/", 1)[-1] in _COMMAND_HEADS:
            _emit(words, " ".join(header.split()), self.env, self.commands, self.depth, self.budget, ctx, self.arch)

    def case_subject(self, head: _Item) -> str | None:
        if head.end <= head.start or _POSITIONAL.search(self.text[head.start : head.end]):
            return None  # `case "$1" in serve) ...`: the subcommand is the caller's choice, each clause can run
        words = [w for w in _tokens(self.text[head.start : head.end], self.env.values, 0, arch=self.arch) if not w.operator]
        return words[0].value if len(words) == 1 and not words[0].unknown else None

    def parse_if(self, ctx: Branch | None) -> _Status:
        rest = ctx
        while True:  # if, then each elif
            cond = self.parse_list(rest, ("then",))
            self.accept("kw", "then")
            self.parse_list(_derive(rest, cond, "&&"), ("elif", "else", "fi"))
            rest = _derive(rest, cond, "||")
            if not self.at("kw", "elif"):
                break
            self.pos += 1
        if self.at("kw", "else"):
            self.pos += 1
            self.parse_list(rest, ("fi",))
        self.accept("kw", "fi")
        return _Status("AS", "if")

    def simple(self, item: _Item, ctx: Branch | None) -> _Status:
        segment = self.text[item.start : item.end]
        self.budget[0] -= len(segment)
        if self.budget[0] < 0:
            return _Status("AS")
        head = item.value
        written = " ".join(segment.split())
        if head in ("[", "[[", "test") and not item.detail:
            words = [w for w in _tokens(segment, self.env.values, 0, arch=self.arch) if not w.redirect]
            value, probe = _evaluate_test(words)
            if _POSITIONAL.search(segment):  # `[ "${1:-}" = --from-source ]`: the caller's arguments decide
                value = None
            probe = probe or any(re.search(rf"\$\{{?{re.escape(name)}\b", segment) for name in self.env.probes)
            status = _Status({True: "T", False: "F", None: "U"}[value], written, probe)
        elif head in ("true", ":", "false"):
            status = _Status("F" if head == "false" else "T", written)
        else:
            probe = head.rsplit("/", 1)[-1] in ("ls", "test", "command", "which", "find", "grep", "compgen", "stat")
            status = _Status("AS", written, probe)
        if head in self.called and not item.detail:
            self.calls.add(head)
            if ctx is not _DEAD:  # a call: the function's commands take its place when the script is read
                self.commands.append(SimpleCommand((_CALL, head), self.base + item.start, branch=ctx))
            return status
        if ctx is _DEAD:
            return status
        words = _spread([w for w in _tokens(segment, self.env.values, self.base + item.start, keep_empty=True, arch=self.arch)
                         if not w.operator and not w.redirect])
        if words:
            _emit(words, written, self.env, self.commands, self.depth, self.budget, ctx, self.arch)
        return status


_TOLERATING = ("true", ":", "echo", "printf")  # `|| echo "skipped"`: a failure the script reports and ignores


_ARRAY_ASSIGN = re.compile(r"(?:(?:local|declare|typeset|readonly)(?:\s+-[A-Za-z]+)*\s+)?([A-Za-z_][A-Za-z0-9_]*)(\+?)=")


def _spread(words: list[_Word]) -> list[_Word]:
    """Words with ``"${ARGS[@]}"`` of a known array spread into one word per element."""
    if not any(ARRAY in w.value for w in words):
        return words
    out: list[_Word] = []
    for w in words:
        if w.value.startswith(ARRAY) and w.value.count(ARRAY) == 1:
            out += [replace(w, value=part) for part in w.value[1:].split(SEP) if part or w.value != ARRAY]
        else:
            out.append(replace(w, value=w.value.replace(ARRAY, "").replace(SEP, " ")))
    return out


def _within(outer: Branch | None, inner: Branch) -> Branch:
    """The branch of a command under ``inner`` inside ``outer``: a fallback anywhere makes it a fallback."""
    return inner if outer is None else replace(inner, fallback=inner.fallback or outer.fallback)


def _derive(ctx: Branch | None, status: _Status, op: str) -> Branch | None:
    """The branch of what runs after ``status`` through ``op`` (``&&``: on success, ``||``: on failure)."""
    if ctx is _DEAD:
        return _DEAD
    value, success = status.value, op == "&&"
    condition = shortened(status.text)
    if value in ("T", "F"):
        return ctx if (value == "T") == success else _DEAD
    if value == "AS":  # a command assumed to succeed: what follows on success runs; on failure, a fallback
        return ctx if success else _within(ctx, Branch(condition, True, fallback=True))
    if value == "AF":  # `! probe`: what runs on success runs only when the probe fails
        return _within(ctx, Branch(condition.removeprefix("! "), False, fallback=True)) if success else ctx
    # U: a test envcheck cannot decide; the negative side of a probe is a fallback
    return _within(ctx, Branch(condition, not success, fallback=status.probe and not success))


def _evaluate_test(words: list[_Word]) -> tuple[bool | None, bool]:
    """The value of ``[ ... ]``, ``[[ ... ]]`` or ``test ...`` (None: undecidable) and whether it probes state."""
    args = words[1:]
    if (words[0].value == "[" and args and args[-1].value == "]") or (words[0].value == "[[" and args and args[-1].value == "]]"):
        args = args[:-1]
    probe, pos = [False], [0]

    def peek() -> _Word | None:
        return args[pos[0]] if pos[0] < len(args) else None

    def is_op(word: _Word | None, *ops: str) -> bool:
        return word is not None and not word.quoted and word.value in ops

    def or_expr(level: int) -> bool | None:
        if level > 20:
            raise _TooDeep
        value = and_expr(level)
        while is_op(peek(), "-o", "||"):
            pos[0] += 1
            right = and_expr(level)
            value = True if value is True or right is True else (False if value is False and right is False else None)
        return value

    def and_expr(level: int) -> bool | None:
        value = not_expr(level)
        while is_op(peek(), "-a", "&&"):
            pos[0] += 1
            right = not_expr(level)
            value = False if value is False or right is False else (True if value is True and right is True else None)
        return value

    def not_expr(level: int) -> bool | None:
        if is_op(peek(), "!"):
            pos[0] += 1
            value = not_expr(level + 1)
            return None if value is None else not value
        return primary(level)

    def primary(level: int) -> bool | None:
        word = peek()
        if word is None:
            return False
        if is_op(word, "(") or (word.operator and word.value == "("):
            pos[0] += 1
            value = or_expr(level + 1)
            if (close := peek()) is not None and close.value == ")":
                pos[0] += 1
            return value
        nxt = args[pos[0] + 1] if pos[0] + 1 < len(args) else None
        after = args[pos[0] + 2] if pos[0] + 2 < len(args) else None
        if nxt is not None and after is not None and is_op(nxt, "=", "==", "!=", "-eq", "-ne", "-lt", "-le", "-gt", "-ge", "=~", "<", ">"):
            pos[0] += 3
            if word.unknown or after.unknown or nxt.value in ("=~", "<", ">"):
                probe[0] = probe[0] or "$(" in word.value or "$(" in after.value
                return None
            return _compare(word.value, nxt.value, after.value, pattern=not after.quoted and words[0].value == "[[")
        if not word.quoted and word.value.startswith("-") and len(word.value) == 2 and nxt is not None:
            pos[0] += 2
            if word.value in _FILE_TESTS:
                probe[0] = True
                return None
            if word.value in ("-n", "-z"):
                if nxt.unknown:
                    probe[0] = probe[0] or "$(" in nxt.value
                    return None
                return (nxt.value != "") == (word.value == "-n")
            return None
        pos[0] += 1
        return None if word.unknown else word.value != ""

    try:
        value = or_expr(0)
    except _TooDeep:
        return None, False
    return (value if pos[0] == len(args) else None), probe[0]


def _compare(left: str, op: str, right: str, pattern: bool) -> bool | None:
    if op in ("=", "==", "!="):
        same = fnmatch.fnmatchcase(left, right) if pattern else left == right
        return same if op != "!=" else not same
    try:
        a, b = int(left), int(right)
    except ValueError:
        return None
    return {"-eq": a == b, "-ne": a != b, "-lt": a < b, "-le": a <= b, "-gt": a > b, "-ge": a >= b}[op]


def _split(text: str, env: dict[str, str], base: int, commands: list[SimpleCommand], depth: int,
           budget: list[int], outer: Branch | None, arch: str) -> None:
    # First find the structure (operators and reserved words), then read each simple command with the
    # variables in effect when it runs, so `export V=1 && pip install x==$V` sees V.
    budget[0] -= len(text)
    if budget[0] < 0:
        return
    tokens = _tokens(text, {}, 0, limit=MAX_TOKENS if len(text) > MAX_WHOLE_TEXT else None)
    if len(text) > MAX_WHOLE_TEXT and len(tokens) > MAX_TOKENS:  # the commands before the cut are read
        budget[0], tokens = min(budget[0], -1), tokens[:MAX_TOKENS]
    parser = _Parser(text, _items(tokens, text), env, base, commands, depth, budget, arch)
    try:
        parser.parse_list(outer, ())
        parser.finish()
    except _TooDeep:
        budget[0] = min(budget[0], -1)  # reported as truncated: the rest was not read


def _emit(words: list[_Word], written: str, env: _ScriptEnv, commands: list[SimpleCommand], depth: int,
          budget: list[int], branch: Branch | None, arch: str) -> None:
    if words[0].value in ("for", "case", "select", "function") and not words[0].quoted:
        return
    assignments: list[tuple[str, str]] = []
    unknown: set[str] = set()  # WHEEL=$(ls ...): a value only the build knows
    while words and (m := _ASSIGN.match(words[0].value)) and not words[0].value.startswith("="):
        assignments.append((m.group(1), m.group(2)))
        if words[0].unknown and not INTERPRETER_PATH.fullmatch(m.group(2)):
            unknown.add(m.group(1))
        words = words[1:]
    if not words:
        for name, value in assignments:  # plain assignment: visible to later commands in this script
            env.set(name, value, known=name not in unknown, branch=branch)
        return
    head = words[0].value
    if head in ("export", "readonly", "local", "declare", "typeset") and not words[0].quoted:  # all assign
        for word in words[1:]:
            if m := _ASSIGN.match(word.value):
                env.set(m.group(1), m.group(2), known=not word.unknown or INTERPRETER_PATH.fullmatch(m.group(2)) is not None,
                        branch=branch)
        return
    # wrappers: sudo -E pip ..., env A=B pip ..., time pip ...
    while words and words[0].value.rsplit("/", 1)[-1] in (*_WRAPPERS, "env"):
        wrapper = words[0].value.rsplit("/", 1)[-1]
        words = words[1:]
        while words and (words[0].value.startswith("-") or (wrapper == "env" and _ASSIGN.match(words[0].value))):
            if m := _ASSIGN.match(words[0].value):
                assignments.append((m.group(1), m.group(2)))
            words = words[1:]
    if not words:
        return
    argv = [w.value for w in words]
    exe = argv[0].rsplit("/", 1)[-1]
    script: _Word | None = None
    params: list[str] = []
    if exe in _SHELLS and depth < 4 and (script_at := _shell_c_script(argv)) is not None:
        script = words[script_at]
        params = argv[script_at + 2:]  # `bash -c 'exec vllm serve "$@"' -- --flag v`: the words after $0
    elif depth < 4 and ((exe == "eval" and not words[0].quoted and len(words) > 1)
                        or (not words[0].quoted and any(c in argv[0] for c in " \t\n"))):
        # `eval "$CMD"`, or `$CMD` whose value splits into words: the command the text holds
        script = replace(words[0], value=" ".join(argv[1:] if exe == "eval" else argv))
    if script is not None:
        inner_env = {**env.values, **dict(assignments), **{str(n): a for n, a in enumerate(params, 1)}}
        text = script.value
        if params:  # the script's parameters
            text = text.replace('"$@"', "$@").replace("$@", " ".join(shlex.quote(a) for a in params))
        # offsets inside the nested script are approximate: they point at the script's start
        sub: list[SimpleCommand] = []
        _split(text, inner_env, 0, sub, depth + 1, budget, branch, arch)
        commands.extend(replace(cmd, offset=script.start) for cmd in sub)
        return
    commands.append(SimpleCommand(tuple(argv), words[0].start, tuple(assignments), env.view(assignments), written,
                                  branch))
    if len(commands) >= MAX_COMMANDS:
        budget[0] = min(budget[0], -1)  # reported as truncated: the rest is not read


class _ScriptEnv:
    """A script's variables, one shared copy for the commands that run while they are unchanged (8000 exports
    then 8000 commands must not copy 8000 names 8000 times)."""

    def __init__(self, values: dict[str, str]) -> None:
        self.values = values
        self.probes: set[str] = set()  # variables set from a command's output (WHEEL=$(ls *.whl)): build state
        self.varied: set[str] = set()  # variables a branch envcheck cannot decide gave another value
        self._shared: Mapping[str, str] | None = None

    def set(self, name: str, value: str, known: bool = True, branch: Branch | None = None) -> None:
        """``branch``: the assignment runs only there. An earlier value stands in a fallback (the main path is
        assumed) and is unknown after an undecidable one (`case "$1" in --x) X=true`), also through others."""
        if branch is not None and (name in self.varied or (name in self.values and self.values[name] != value)):
            if not branch.fallback:
                self.values.pop(name, None)
                self.varied.add(name)
                self._shared = None
            return
        if branch is None:
            self.varied.discard(name)
        if known:
            self.values[name] = value
            self.probes.discard(name)
        else:
            self.values.pop(name, None)
            if "$(" in value or "`" in value:
                self.probes.add(name)
        self._shared = None

    def view(self, assignments: list[tuple[str, str]]) -> Mapping[str, str]:
        """The script's variables under a command's own ``VAR=value`` prefixes."""
        if self._shared is None:
            self._shared = dict(self.values)
        if not assignments:
            return self._shared
        return ChainMap(dict(assignments), self._shared)  # type: ignore[arg-type]


def _shell_c_script(argv: list[str]) -> int | None:
    """Index of the script argument in ``sh -c 'script'`` (``-ec``, ``-exc`` ... too)."""
    for i, word in enumerate(argv[1:], 1):
        if word.startswith("-") and not word.startswith("--") and "c" in word[1:]:
            return i + 1 if i + 1 < len(argv) else None
        if not word.startswith("-"):
            return None
    return None
