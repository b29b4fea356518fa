"""Split POSIX shell text (a Dockerfile RUN line, a heredoc script) into simple commands.

Handles ``&&``, ``||``, ``;``, ``|``, ``&``, newlines, subshells and braces, ``if/then/for/do``
keywords, comments, single/double quotes and backslashes, line continuations, ``VAR=value`` prefixes,
``export``, wrappers (``sudo``, ``env``, ``time``, ``exec``, ``nohup``) and nested ``sh -c '...'`` /
``bash -c "..."`` scripts. Variables are expanded from the values given (unknown ones stay as written),
because ``pip install torch==${TORCH_VERSION}`` only means something once ``TORCH_VERSION`` is known.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

_OPERATORS = ("&&", "||", ";;", ";", "|", "&", "(", ")", "\n")
_KEYWORDS = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!", "{", "}"})
_ENDS = frozenset({"fi", "done", "esac", "}"})
_WRAPPERS = frozenset({"sudo", "time", "exec", "nohup", "command", "builtin", "xargs", "nice", "stdbuf"})
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ash"})
_PLAIN = re.compile(r"[^\s\\'\"$#<>&|;()]+")
_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-+])([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))")


@dataclass(frozen=True)
class SimpleCommand:
    """One command: its words (quotes removed, known variables expanded) and where it starts."""

    argv: tuple[str, ...]
    offset: int  # offset in the outermost text where the command's first word starts
    assignments: tuple[tuple[str, str], ...] = ()  # VAR=value prefixes
    env: Mapping[str, str] = field(default_factory=dict)  # variables exported earlier in the same script
    text: str = ""  # the command as written


@dataclass
class _Word:
    value: str
    start: int
    quoted: bool = False
    operator: bool = False
    redirect: bool = False  # the target of a redirection (2> log, < file): not an argument


def _tokens(text: str, values: Mapping[str, str], base: int) -> list[_Word]:
    """Words and operators (``operator=True``), each with its offset."""
    out: list[_Word] = []
    i = 0
    n = len(text)
    buf: list[str] = []
    start = -1
    quoted = False
    redirect_next = False

    def flush() -> None:
        nonlocal buf, start, quoted, redirect_next
        if start >= 0 and ((buf and "".join(buf)) or quoted):  # an unquoted word that expands to nothing is dropped
            out.append(_Word("".join(buf), base + start, quoted, redirect=redirect_next))
            redirect_next = False
        buf, start, quoted = [], -1, False

    while i < n:
        plain = _PLAIN.match(text, i)
        if plain is not None:  # fast path: a run of ordinary characters
            if start < 0:
                start = i
            buf.append(plain.group())
            i = plain.end()
            continue
        ch = text[i]
        if ch == "\\" and i + 1 < n:
            if text[i + 1] == "\n":  # line continuation
                i += 2
                continue
            if start < 0:
                start = i
            buf.append(text[i + 1])
            i += 2
            continue
        if ch == "'":
            end = text.find("'", i + 1)
            end = n if end < 0 else end
            if start < 0:
                start = i
            buf.append(text[i + 1 : end])
            quoted = True
            i = end + 1
            continue
        if ch == '"':
            if start < 0:
                start = i
            quoted = True
            i += 1
            while i < n and text[i] != '"':
                if text[i] == "\\" and i + 1 < n and text[i + 1] in '"\\$`\n':
                    if text[i + 1] != "\n":
                        buf.append(text[i + 1])
                    i += 2
                    continue
                if text[i] == "$":
                    i = _dollar(text, i, values, buf)
                    continue
                buf.append(text[i])
                i += 1
            i += 1
            continue
        if ch == "$":
            if start < 0:
                start = i
            if text.startswith("$(", i):  # command substitution: keep as written, unexpanded
                depth = 0
                j = i
                while j < n:
                    if text[j] == "(":
                        depth += 1
                    elif text[j] == ")":
                        depth -= 1
                        if depth == 0:
                            break
                    j += 1
                buf.append(text[i : j + 1])
                i = j + 1
                continue
            i = _dollar(text, i, values, buf)
            continue
        if ch == "#" and start < 0:  # comment to end of line
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if ch in " \t\r":
            flush()
            i += 1
            continue
        if ch in "<>" or text.startswith("&>", i):
            # a redirection: `2>&1`, `>log`, `< file`, `<<EOF`; an fd number before it is not a word
            if buf and "".join(buf).isdigit() and not quoted:
                buf, start = [], -1
            flush()
            m = re.match(r"&?(?:<<-?|>>|<>|>\||[<>])&?", text[i:])
            i += m.end() if m else 1
            m_fd = re.match(r"\d+|-", text[i:])
            if m_fd and text[i - 1] == "&":
                i += m_fd.end()  # 2>&1, >&-
            else:
                redirect_next = True
            continue
        op = next((o for o in _OPERATORS if text.startswith(o, i)), None) if ch in "&|;()\n" else None
        if op is not None:
            # redirections like 2>&1 or >& stay part of words
            if op == "&" and (buf[-1:] == [">"] or text.startswith("&>", i)):
                buf.append(ch)
                i += 1
                continue
            flush()
            out.append(_Word(op, base + i, operator=True))
            i += len(op)
            continue
        if start < 0:
            start = i
        buf.append(ch)
        i += 1
    flush()
    return out


def _dollar(text: str, i: int, values: Mapping[str, str], buf: list[str]) -> int:
    m = _VAR.match(text, i)
    if not m:
        buf.append("$")
        return i + 1
    name = m.group(1) or m.group(4)
    op, word = m.group(2), m.group(3)
    if name in values:
        value = values[name]
        if op is not None and op.endswith("+"):
            value = word if (value or op == "+") else ""
        elif op == ":-" and value == "":
            value = word
        buf.append(value)
    elif op is not None and op.endswith("-"):
        buf.append(word)
    elif op is not None and op.endswith("+"):
        pass
    else:
        buf.append(m.group(0))
    return m.end()


def split_commands(text: str, values: Mapping[str, str] | None = None, base: int = 0) -> Commands:
    """Every simple command in ``text``, in order, with nested ``sh -c`` scripts expanded in place.

    ``base`` is added to offsets (used when ``text`` is itself part of a larger text).
    """
    env = dict(values or {})
    commands = Commands()
    budget = [max(SPLIT_BUDGET, 4 * len(text))]
    _split(text, env, base, commands, depth=0, budget=budget)
    commands.truncated = budget[0] < 0
    return commands


class Commands(list[SimpleCommand]):
    """The commands :func:`split_commands` found; ``truncated`` when it stopped at its budget."""

    truncated = False


# Characters the splitter may read for one call, nested `sh -c` scripts and their expanded variables
# included. Real RUN lines use a few times their length; a line whose variables hold `sh -c` scripts that
# expand one another can need exponentially more (a 5 KB history line took 7 s), so reading stops there.
SPLIT_BUDGET = 64 << 10


def _split(text: str, env: dict[str, str], base: int, commands: list[SimpleCommand], depth: int,
           budget: list[int]) -> None:
    # First find the command boundaries, then read each command with the variables in effect when it
    # runs, so `export V=1 && pip install x==$V` sees V.
    budget[0] -= len(text)
    if budget[0] < 0:
        return
    tokens = _tokens(text, {}, 0)
    seg_start = 0
    for tok in [*tokens, _Word(";", len(text), operator=True)]:
        if not tok.operator:
            continue
        segment = text[seg_start : tok.start]
        if segment.strip():
            budget[0] -= len(segment)
            if budget[0] < 0:
                return
            words = [w for w in _tokens(segment, env, base + seg_start) if not w.operator and not w.redirect]
            if words:
                _emit(words, segment.strip(), env, commands, depth, budget)
        seg_start = tok.start + len(tok.value)


def _emit(words: list[_Word], written: str, env: dict[str, str], commands: list[SimpleCommand], depth: int,
          budget: list[int]) -> None:
    # drop shell keywords that precede a command (if, then, do, !) and lone terminators (fi, done)
    while words and not words[0].quoted and words[0].value in _KEYWORDS:
        words = words[1:]
    if not words or (not words[0].quoted and words[0].value in _ENDS):
        return
    if words[0].value in ("for", "case", "select", "function") and not words[0].quoted:
        return
    assignments: list[tuple[str, str]] = []
    while words and (m := _ASSIGN.match(words[0].value)) and not words[0].value.startswith("="):
        assignments.append((m.group(1), m.group(2)))
        words = words[1:]
    if not words:
        env.update(assignments)  # plain assignment: visible to later commands in this script
        return
    head = words[0].value
    if head == "export" and not words[0].quoted:
        for word in words[1:]:
            m = _ASSIGN.match(word.value)
            if m:
                env[m.group(1)] = m.group(2)
        return
    # wrappers: sudo -E pip ..., env A=B pip ..., time pip ...
    while words and words[0].value.rsplit("/", 1)[-1] in (*_WRAPPERS, "env"):
        wrapper = words[0].value.rsplit("/", 1)[-1]
        words = words[1:]
        while words and (words[0].value.startswith("-") or (wrapper == "env" and _ASSIGN.match(words[0].value))):
            m = _ASSIGN.match(words[0].value)
            if m:
                assignments.append((m.group(1), m.group(2)))
            words = words[1:]
    if not words:
        return
    argv = [w.value for w in words]
    exe = argv[0].rsplit("/", 1)[-1]
    if exe in _SHELLS and depth < 4:
        script_at = _shell_c_script(argv)
        if script_at is not None:
            nested = words[script_at]
            inner_env = {**env, **dict(assignments)}
            # offsets inside the nested script are approximate: they point at the script's start
            sub: list[SimpleCommand] = []
            _split(nested.value, inner_env, 0, sub, depth + 1, budget)
            for cmd in sub:
                commands.append(SimpleCommand(cmd.argv, nested.start, cmd.assignments, cmd.env, cmd.text))
            return
    commands.append(SimpleCommand(tuple(argv), words[0].start, tuple(assignments), {**env, **dict(assignments)}, written))


def _shell_c_script(argv: list[str]) -> int | None:
    """Index of the script argument in ``sh -c 'script'`` (``-ec``, ``-exc`` ... too)."""
    for i, word in enumerate(argv[1:], 1):
        if word.startswith("-") and not word.startswith("--") and "c" in word[1:]:
            return i + 1 if i + 1 < len(argv) else None
        if not word.startswith("-"):
            return None
    return None
