"""Here-document bodies in shell text, as what they feed (behind inspect.shell): a script a shell reads stays
commands; text ``cat`` shows and a program another interpreter reads (``python3 - <<'PY'``) are blanked."""

from __future__ import annotations

import bisect
import re

FUNCTION = re.compile(r"(?m)^[ \t]*(?:function[ \t]+)?([A-Za-z_][\w-]*)[ \t]*\([ \t]*\)")

_HEREDOC = re.compile(r"(?<![<\w])<<(-?)[ \t]*(\\?)(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\3")


def heredoc_bodies(text: str) -> str:
    """Here-document bodies as what they feed (same length, so offsets hold). Text that ``cat`` prints to the
    terminal (a usage message with example commands) is no command: blanked. An unquoted here-document prints
    ``\\\\`` as ``\\``: lines ending in ``\\\\`` are continued lines of the script it writes (``cat <<EOF | ssh host
    bash``), rewritten as `` \\``; a quoted delimiter prints the body as written."""
    if "<<" not in text:
        return text
    out, done = [], 0
    shown = _Shown(text)
    for m in _HEREDOC.finditer(text):
        if m.start() < done:
            continue  # inside a body already read
        start = text.find("\n", m.end()) + 1
        if start == 0:
            break
        end = start
        while end < len(text):
            stop = text.find("\n", end)
            line = text[end:] if stop < 0 else text[end:stop]
            if (line.lstrip("\t") if m.group(1) else line) == m.group(4):
                break
            end = len(text) if stop < 0 else stop + 1
        body = text[start:end]
        if shown(m.start(), m.end(), start) or _foreign(text, m.start()):
            body = re.sub(r"[^\n]", " ", body)
        elif not m.group(2) and not m.group(3):
            body = body.replace("\\\\\n", " \\\n")
        out += [text[done:start], body]
        done = end
    return "".join(out) + text[done:] if out else text


# Programs whose standard input is their own language, not shell: `python3 - "$F" <<'PY'` feeds Python.
_INTERPRETER = re.compile(r"(?:python|pypy)(?:\d+(?:\.\d+)*)?|perl|ruby|node(?:js)?|php|Rscript|julia|lua(?:jit)?"
                          r"|psql|mysql|sqlite3|osascript")


def _foreign(text: str, at: int) -> bool:
    """Whether the here-document at ``at`` feeds another language's interpreter (``python3 - <<'PY'``,
    ``X="$(python3 - <<'PY'``, ``docker exec -i C python3 <<EOF``): the first program named before ``<<``
    is such an interpreter, not a shell."""
    head = re.split(r"&&|\|\||;|\||\$\(|`|\(", text[text.rfind("\n", 0, at) + 1:at])[-1]
    for word in head.split():
        name = word.strip("\"'").rsplit("/", 1)[-1]
        if name in _SHELL_NAMES:
            return False
        if _INTERPRETER.fullmatch(name):
            return True
    return False


_SHELL_NAMES = frozenset({"sh", "bash", "dash", "zsh", "ash", "ksh"})


class _Shown:
    """Whether a here-document is text ``cat`` shows: no pipe or file after it, and not in a function whose
    output a caller pipes or captures (``gen | ssh host bash``, ``$(gen)``)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.functions = [(m.start(), m.end(), m.group(1)) for m in FUNCTION.finditer(text)]
        self.closes = [m.start() for m in re.finditer(r"(?m)^\}", text)]
        self.piped: dict[str, bool] = {}

    def __call__(self, at: int, after: int, body: int) -> bool:
        text = self.text
        head = re.split(r"&&|\|\||;|\|", text[text.rfind("\n", 0, at) + 1:at])[-1]
        tail = text[after:body].replace("1>&2", "").replace(">&2", "")
        if head.split()[:1] != ["cat"] or ">" in head.replace(">&2", "") or re.search(r"(?<!\|)\|(?!\|)|>", tail):
            return False
        k = bisect.bisect_left(self.functions, (at,)) - 1
        if k < 0 or bisect.bisect_left(self.closes, self.functions[k][1]) < bisect.bisect_left(self.closes, at):
            return True  # not inside a function: shown where it stands
        name = self.functions[k][2]
        if name not in self.piped:
            use = re.escape(name)
            used = re.compile(rf"(?<![\w-]){use}(?![\w-])[^\n|(]*(?<!\|)\|(?!\|)|\$\(\s*{use}(?![\w-])")
            self.piped[name] = used.search(text) is not None
        return not self.piped[name]
