"""The words of POSIX shell text, each with its offset, known variables expanded (behind inspect.shell)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from envcheck.inspect.host_probes import host_probe

_OPERATORS = ("&&", "||", ";;", ";", "|", "&", "(", ")", "\n")
_PLAIN = re.compile(r"[^\s\\'\"$#<>&|;()`]+")
_BACKQUOTED = re.compile(r"`(?:[^`\\]|\\.)*(?:`|\\?\Z)", re.DOTALL)  # `command` (to the end when never closed)
_AFTER_VERSION_OPERATOR = ("==", ">=", "<=", "~=", "!=", "<", ">", "@")
# $NAME, and the one-character parameters: $1 (a script's argument: unknown unless a `sh -c` gives it), $#, $@,
# $*, $?, $$, $!; ${...} is read by _dollar
_VAR = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*|[0-9#@*?$!])")
# `$(uname -m)` and friends, answered from the build platform's architecture (arm64, amd64) when it is given.
_ARCH_PROBES = {"uname -m": {"arm64": "aarch64", "amd64": "x86_64"}, "arch": {"arm64": "aarch64", "amd64": "x86_64"},
                "dpkg --print-architecture": {"arm64": "arm64", "amd64": "amd64"}}


# shlex.split's pieces of a word: a plain run, a '...' or "..." string, a backslash and the character after it.
_SPLIT_PLAIN = re.compile(r"[^ \t\r\n'\"\\#]+")
_SPLIT_DOUBLE = re.compile(r'"((?:[^"\\]|\\.)*)"', re.DOTALL)
_SPLIT_DOUBLE_ESCAPE = re.compile(r'\\(["\\])')
_SPLIT_BLANKS = re.compile(r"[ \t\r\n]*")


def split(text: str, comments: bool = False) -> list[str]:
    """``shlex.split(text, comments)``, the same words and ValueErrors, in time linear in the text: shlex
    grows each word one character at a time (a 1 MB word in a compose ``command:`` took minutes)."""
    words: list[str] = []
    i, n = 0, len(text)
    while True:
        i = _SPLIT_BLANKS.match(text, i).end()  # type: ignore[union-attr]  # matches everywhere
        if i >= n:
            return words
        parts: list[str] = []
        quoted = False
        while i < n:
            ch = text[i]
            if ch in " \t\r\n":
                break
            if ch == "#":
                if comments:  # to the end of the line, also inside a word (as shlex does)
                    end = text.find("\n", i)
                    i = n if end < 0 else end + 1
                    break
                parts.append(ch)
                i += 1
            elif ch == "'":
                end = text.find("'", i + 1)
                if end < 0:
                    raise ValueError("No closing quotation")
                parts.append(text[i + 1:end])
                quoted, i = True, end + 1
            elif ch == '"':
                found = _SPLIT_DOUBLE.match(text, i)
                if found is None:
                    raise ValueError("No closing quotation")
                parts.append(_SPLIT_DOUBLE_ESCAPE.sub(r"\1", found.group(1)))
                quoted, i = True, found.end()
            elif ch == "\\":
                if i + 1 >= n:
                    raise ValueError("No escaped character")
                parts.append(text[i + 1])
                i += 2
            else:
                plain = _SPLIT_PLAIN.match(text, i)
                assert plain is not None
                parts.append(plain.group())
                i = plain.end()
        if parts or quoted:
            words.append("".join(parts))


@dataclass(slots=True)  # slots: a 1 MiB RUN line is hundreds of thousands of words
class _Word:
    value: str
    start: int
    quoted: bool = False
    operator: bool = False
    redirect: bool = False  # the target of a redirection (2> log, < file): not an argument
    unknown: bool = False  # holds a variable or command substitution whose value is not known


_REDIRECT = re.compile(r"&?(?:<<-?|>>|<>|>\||[<>])&?")
_FD = re.compile(r"\d+|-")


def _tokens(text: str, values: Mapping[str, str], base: int, keep_empty: bool = False, arch: str = "",
            limit: int | None = None) -> list[_Word]:
    """Words and operators. ``keep_empty``: a variable whose known value is empty stays as written (an ARG
    empty by default is meant to be given with --build-arg, so ``x==${V}`` is not ``x==``). ``limit``: stop after
    about that many (the caller sees more than ``limit`` and knows the text was cut there)."""
    return _Tokenizer(text, values, base, keep_empty, arch, limit).run()


class _Tokenizer:
    """One left-to-right pass; every step matches at a position of the one text (never a slice of the rest),
    so it stays linear in the script's length however many redirections it holds."""

    def __init__(self, text: str, values: Mapping[str, str], base: int, keep_empty: bool, arch: str,
                 limit: int | None = None) -> None:
        self.text, self.values, self.base, self.keep_empty, self.arch = text, values, base, keep_empty, arch
        self.limit = limit
        self.out: list[_Word] = []
        self.buf: list[str] = []
        self.start, self.quoted, self.unknown, self.redirect_next = -1, False, False, False

    def run(self) -> list[_Word]:
        text, n, i = self.text, len(self.text), 0
        limit = self.limit if self.limit is not None else n + 1  # never more words than characters
        while i < n and len(self.out) <= limit:
            plain = _PLAIN.match(text, i)
            if plain is not None:  # fast path: a run of ordinary characters
                self._begin(i)
                self.buf.append(plain.group())
                i = plain.end()
                continue
            ch = text[i]
            if ch == "\\" and i + 1 < n:
                i = self._escape(i)
            elif ch == "'":
                i = self._single_quoted(i)
            elif ch == '"':
                i = self._double_quoted(i)
            elif ch == "$":
                self._begin(i)
                i = self._expansion(i)
            elif ch == "`":  # a command substitution, spaces and all, kept as written (unknown) like $(...)
                self._begin(i)
                found = _BACKQUOTED.match(text, i)
                assert found is not None
                self.buf.append(found.group())
                self.unknown, i = True, found.end()
            elif ch == "#" and self.start < 0:  # comment to end of line
                end = text.find("\n", i)
                i = n if end < 0 else end
            elif ch in " \t\r":
                self._flush()
                i += 1
            elif ch in "<>" or text.startswith("&>", i):
                i = self._redirection(i)
            else:
                i = self._operator_or_char(i)
        self._flush()
        return self.out

    def _begin(self, i: int) -> None:
        if self.start < 0:
            self.start = i

    def _flush(self) -> None:
        if self.start >= 0 and ((self.buf and "".join(self.buf)) or self.quoted):  # an unquoted word that expands to nothing is dropped
            self.out.append(_Word("".join(self.buf), self.base + self.start, self.quoted, redirect=self.redirect_next, unknown=self.unknown))
            self.redirect_next = False
        self.buf, self.start, self.quoted, self.unknown = [], -1, False, False

    def _escape(self, i: int) -> int:
        if self.text[i + 1] != "\n":  # else a line continuation
            self._begin(i)
            self.buf.append(self.text[i + 1])
        return i + 2

    def _single_quoted(self, i: int) -> int:
        end = self.text.find("'", i + 1)
        end = len(self.text) if end < 0 else end
        self._begin(i)
        self.buf.append(self.text[i + 1 : end])
        self.quoted = True
        return end + 1

    def _double_quoted(self, i: int) -> int:
        text, n = self.text, len(self.text)
        self._begin(i)
        self.quoted = True
        i += 1
        while i < n and text[i] != '"':
            if text[i] == "\\" and i + 1 < n and text[i + 1] in '"\\$`\n':
                if text[i + 1] != "\n":
                    self.buf.append(text[i + 1])
                i += 2
                continue
            if text[i] == "$":
                i = self._expansion(i)
                continue
            if text[i] == "`":
                self.unknown = True
            self.buf.append(text[i])
            i += 1
        return i + 1

    def _expansion(self, i: int) -> int:
        if self.text.startswith("$(", i):
            i, missing = _substitution(self.text, i, self.arch, self.buf)
        else:
            i, missing = _dollar(self.text, i, self.values, self.buf, self.keep_empty)
        self.unknown = self.unknown or missing
        return i

    def _redirection(self, i: int) -> int:
        """`2>&1`, `>log`, `< file`, `<<EOF`: an fd number before it is not a word; the next word is its target."""
        if self.buf and "".join(self.buf).isdigit() and not self.quoted:
            self.buf, self.start = [], -1
        self._flush()
        m = _REDIRECT.match(self.text, i)
        i = m.end() if m else i + 1
        m_fd = _FD.match(self.text, i)
        if m_fd and self.text[i - 1] == "&":
            return m_fd.end()  # 2>&1, >&-
        self.redirect_next = True
        return i

    def _operator_or_char(self, i: int) -> int:
        text, ch = self.text, self.text[i]
        op = next((o for o in _OPERATORS if text.startswith(o, i)), None) if ch in "&|;()\n" else None
        if op is None:
            self._begin(i)
            self.buf.append(ch)
            return i + 1
        # redirections like 2>&1 or >& stay part of words
        if op == "&" and (self.buf[-1:] == [">"] or text.startswith("&>", i)):
            self.buf.append(ch)
            return i + 1
        self._flush()
        self.out.append(_Word(op, self.base + i, operator=True))
        return i + len(op)


def _substitution(text: str, i: int, arch: str, buf: list[str]) -> tuple[int, bool]:
    """A command substitution at ``text[i:] == "$(..."``: kept as written (unknown), except the
    architecture probes (``$(uname -m)``), answered from ``arch``. Returns the index after it."""
    depth, j, n = 0, i, len(text)
    while j < n:
        if text[j] == "(":
            depth += 1
        elif text[j] == ")":
            depth -= 1
            if depth == 0:
                break
        j += 1
    probe = _ARCH_PROBES.get(" ".join(text[i + 2 : j].split()), {}).get(arch)
    if probe is None:
        probe = host_probe(text[i + 2 : j])  # `$(nvcc --version | ...)` in a script run on the Spark
    if probe is not None:
        buf.append(probe)
        return j + 1, False
    buf.append(text[i : j + 1])
    return j + 1, True


# A bash array (ARGS=(--port 8000 ...)) is held as one value: ARRAY, then its words joined by SEP; "${ARGS[@]}" stands
# for all of them and becomes one word each where the command's words are read (inspect.shell).
ARRAY, SEP = "\x1e", "\x1f"
_ARRAY_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\[[@*]\]\}")
_ARRAY_LEN = re.compile(r"\$\{#([A-Za-z_][A-Za-z0-9_]*)\[[@*]\]\}")


def array_value(words: list[str]) -> str:
    return ARRAY + SEP.join(words)


# ${NAME}, ${NAME:-word}, ${NAME:+word}; ${3:-2}: a positional parameter's default is the script's value when the
# caller does not give it, as ${VAR:-2} is; the word may hold references itself (${A:-${3:-$B}})
_PARAM = re.compile(r"([A-Za-z_][A-Za-z0-9_]*|[0-9]+)(?:(:?[-+])(.*))?", re.S)


def _braced_end(text: str, i: int) -> int:
    """The index of the ``}`` closing the ``${`` at ``text[i]`` (nested ``${...}`` included), or -1."""
    depth, j, n = 0, i, len(text)
    while j < n:
        if text.startswith("${", j):
            depth, j = depth + 1, j + 2
            continue
        if text[j] == "}":
            depth -= 1
            if depth == 0:
                return j
        j += 1
    return -1


def _expanded(word: str, values: Mapping[str, str]) -> tuple[str, bool]:
    """A default or alternative word (``${A:-${3:-$B}}``), its references expanded and its quotes removed."""
    out: list[str] = []
    unknown, k = False, 0
    while k < len(word):
        if word[k] == "$":
            k, missing = _dollar(word, k, values, out)
            unknown = unknown or missing
        elif word[k] == "'" and (close := word.find("'", k + 1)) > k:
            out.append(word[k + 1 : close])
            k = close + 1
        else:
            out.append("" if word[k] == '"' else word[k])
            k += 1
    return "".join(out), unknown


def _dollar(text: str, i: int, values: Mapping[str, str], buf: list[str], keep_empty: bool = False) -> tuple[int, bool]:
    """Expand the reference at ``text[i]``; returns the index after it and whether its value is unknown."""
    if (count := _ARRAY_LEN.match(text, i)) is not None:  # ${#NODES[@]}: how many words a known array holds
        held = values.get(count.group(1), "")
        if not held.startswith(ARRAY) or any(c in held for c in "*?["):  # (*.whl): as many as the glob finds
            buf.append(count.group(0))
            return count.end(), True
        buf.append(str(len(held[1:].split(SEP)) if held != ARRAY else 0))
        return count.end(), False
    if (whole := _ARRAY_REF.match(text, i)) is not None:
        if whole.group(1) not in values:
            buf.append(whole.group(0))
            return whole.end(), True
        buf.append(values[whole.group(1)])
        return whole.end(), False
    op: str | None = None
    word = ""
    if text.startswith("${", i):
        end = _braced_end(text, i)
        p = _PARAM.fullmatch(text, i + 2, end) if end > 0 else None
        if p is None:
            buf.append("$")
            return i + 1, False
        name, op, word, stop = p.group(1), p.group(2), p.group(3) or "", end + 1
    elif (m := _VAR.match(text, i)) is not None:
        name, stop = m.group(1), m.end()
    else:
        buf.append("$")
        return i + 1, False
    ref, missing = text[i:stop], False
    if name in values:
        value = values[name]
        if value.startswith(ARRAY):  # $ARGS of an array: its first word
            value = value[1:].split(SEP, 1)[0]
        if op is not None and op.endswith("+"):
            value, missing = _expanded(word, values) if (value or op == "+") else ("", False)
        elif op == ":-" and value == "":
            value, missing = _expanded(word, values)
        # empty by default: `pkg==${V}` must not read as the invalid `pkg==` (nor a lone `$V` as nothing), but
        # `python${SUFFIX}` is python
        if keep_empty and value == "" and op is None and (not any(buf) or "".join(buf[-3:]).endswith(_AFTER_VERSION_OPERATOR)):
            buf.append(ref)
            return stop, True
        buf.append(value)
        return stop, missing
    if op is None:
        buf.append(ref)
        return stop, True
    if op.endswith("-"):
        value, missing = _expanded(word, values)
        buf.append(value)
    return stop, missing


def shortened(text: str, limit: int = 80) -> str:
    """``text`` on one line, cut to ``limit`` characters (a condition quoted in a message)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
