"""Jupyter notebooks: ``!`` lines, ``%%bash`` cells and ``%pip`` magics of code cells read as a shell script,
``%env`` and ``os.environ`` as settings. A fact's ``member`` is ``cell 3, line 2``; its ``line`` is the
line of the ``.ipynb`` where Jupyter wrote that source line, so a SARIF region points at it."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from envcheck.errors import InputError
from envcheck.inspect.pip_args import variable_indexes
from envcheck.inspect.pragma import pragma_targets
from envcheck.model import EnvVar, Inventory, Location, Origin, Pragma, ReadProblem
from envcheck.sources import ReadOptions, shell
from envcheck.sources.requirements import read_text_file, text_limit

KIND = "notebook"
MAX_CELLS = 10_000  # notebooks with a few hundred cells are large
_SHELL_CELLS = re.compile(r"^%%(?:bash|sh|script\s+(?:ba|da|z)?sh)\b")
_LINE_MAGIC = re.compile(r"^%(pip|conda|mamba|uv)\s+(.*)$")
_ENV_MAGIC = re.compile(r"^%env\s+([A-Za-z_][A-Za-z0-9_]*)(?:\s*=\s*|\s+)(.*)$")
_OS_ENVIRON = re.compile(r"""^os\.environ\[\s*(["'])([A-Za-z_][A-Za-z0-9_]*)\1\s*\]\s*=\s*(["'])(.*?)\3\s*(?:#.*)?$""")
_SETDEFAULT = re.compile(r"""^os\.environ\.setdefault\(\s*(["'])([A-Za-z_][A-Za-z0-9_]*)\1\s*,\s*(["'])(.*?)\3\s*\)""")
_EXECUTABLE = re.compile(r"\{sys\.executable\}|\$\{?sys\.executable\}?")
# IPython replaces `{expression}` in `!` and `%pip` lines with the Python value: unknown here, so left out.
_PYTHON_VALUE = re.compile(r"(?<!\$)\{[^{}\s]+\}")
_PYTHON_BLOCK = "in an indented Python block of the cell (if/else/try: it may not run)"


def read(path: Path, options: ReadOptions) -> Inventory:
    text, problems = read_text_file(path, text_limit(options))
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path} is not a notebook: invalid JSON ({exc.msg})", str(path), exc.lineno) from None
    except RecursionError:
        raise InputError(f"{path} is not a notebook: JSON nested too deeply", str(path)) from None
    cells = document.get("cells") if isinstance(document, dict) else None
    if not isinstance(cells, list):  # nbformat 3 kept cells under worksheets
        sheets = document.get("worksheets") if isinstance(document, dict) else None
        cells = [c for s in sheets if isinstance(s, dict) for c in s.get("cells", []) or []] if isinstance(sheets, list) else None
    if not isinstance(cells, list):
        raise InputError(f"{path} is not a Jupyter notebook: no cells", str(path))
    if len(cells) > MAX_CELLS:
        raise InputError(f"{path} has {len(cells)} cells, over the {MAX_CELLS} envcheck reads", str(path))
    finder = _Lines(text)
    script: list[str] = []
    places: list[Location] = []
    unread: list[int] = []
    inventory = Inventory(problems=list(problems))
    for number, cell in enumerate(cells, 1):
        source = cell.get("source", "") if isinstance(cell, dict) else None
        if not isinstance(cell, dict) or (cell.get("cell_type") == "code" and not (
                isinstance(source, str) or (isinstance(source, list) and all(isinstance(s, str) for s in source)))):
            unread.append(number)  # not a cell, or code that is not text: nbformat has neither
            continue
        lines = _source_lines(source)
        if isinstance(source, str):  # one JSON string: every line of it is on the file line where it starts
            file_lines = [finder.find(lines[0])] * len(lines)
        else:
            file_lines = [finder.find(line) for line in lines]
        if cell.get("cell_type") not in ("code", None) or "cell_type" not in cell:
            continue
        for where, command in _commands(lines):
            inside = lines[where][:1] in (" ", "\t") and not _SHELL_CELLS.match(lines[0].strip())
            loc = Location(str(path), line=file_lines[where], member=f"cell {number}, line {where + 1}",
                           branch=_PYTHON_BLOCK if inside else None)
            if isinstance(command, tuple):
                name, value = command
                inventory.env.append(EnvVar(name, value, Origin.ENV, loc))
                inventory.indexes.extend(variable_indexes(name, value, loc))
                continue
            script.append(command)
            places.append(loc)
        inventory.pragmas.extend(_pragmas(lines, file_lines, str(path), number))
    if unread:
        shown = ", ".join(map(str, unread[:10])) + (f" and {len(unread) - 10} more" if len(unread) > 10 else "")
        inventory.problems.append(ReadProblem(
            f"cell{'s' if len(unread) > 1 else ''} {shown}: not a cell, or a code cell whose source is neither a string nor "
            "a list of strings; what it runs is not read", Location(str(path), member=f"cell {unread[0]}")))
    if script:
        sub = shell.read_script("\n".join(script), str(path), path.parent, options,
                                lambda n: places[min(max(n, 1), len(places)) - 1])
        for facts in ("packages", "indexes", "installs", "env", "wheels", "problems", "pragmas"):
            getattr(inventory, facts).extend(getattr(sub, facts))
        inventory.host = sub.host
    return inventory


def _source_lines(source: Any) -> list[str]:
    """nbformat stores a list of lines, each with its newline, or one string."""
    if isinstance(source, list):
        return "".join(s for s in source if isinstance(s, str)).split("\n")
    return source.split("\n") if isinstance(source, str) else []


def _commands(lines: list[str]) -> Iterator[tuple[int, str | tuple[str, str]]]:
    """(line index, shell command) or (line index, (name, value)) for what a code cell runs or sets."""
    if lines and _SHELL_CELLS.match(lines[0].strip()):
        for i, line in enumerate(lines[1:], 1):
            if line.strip():
                yield i, line
        return
    i = 0
    while i < len(lines):
        start = i
        parts = [lines[i].strip()]
        while parts[-1].endswith("\\") and i + 1 < len(lines):  # `!pip install a \` continued on the next line
            i += 1
            parts[-1] = parts[-1][:-1]
            parts.append(lines[i].strip())
        line = " ".join(parts)
        i += 1
        if line.startswith("!"):
            yield start, _PYTHON_VALUE.sub("", _EXECUTABLE.sub("python", line[1:].lstrip("!").strip()))
            continue
        if magic := _LINE_MAGIC.match(line):
            tool, rest = magic.groups()
            yield start, f"{tool} {_PYTHON_VALUE.sub('', _EXECUTABLE.sub('python', rest))}"
            continue
        if env := _ENV_MAGIC.match(line):
            yield start, (env.group(1), env.group(2).strip().strip("\"'"))
            continue
        if assigned := _OS_ENVIRON.match(line) or _SETDEFAULT.match(line):
            yield start, (assigned.group(2), assigned.group(4))


def _pragmas(lines: list[str], file_lines: list[int | None], path: str, cell: int) -> list[Pragma]:
    """``# envcheck: ignore=RULE reason`` in a cell applies to the next non-blank line of that cell."""
    return [Pragma(rules, reason, Location(path, line=file_lines[target], member=f"cell {cell}, line {target + 1}"))
            for rules, reason, target in pragma_targets(lines) if target < len(lines)]


class _Lines:
    """Finds, in order, the line of the ``.ipynb`` file on which each source line is written as a JSON string."""
    def __init__(self, text: str) -> None:
        self.text = text
        self.position = 0
        self.line = 1
        # A line not found was searched for to the end of the text: all such searches together read at most
        # this much (a line written with other escapes than json.dumps's, again and again, is quadratic).
        self.misses_left = 4 * len(text) + (1 << 20)

    def find(self, source_line: str) -> int | None:
        if not source_line or self.misses_left <= 0:
            return None if self.position == 0 else self.line
        for ensure_ascii in (False, True):
            needle = json.dumps(source_line, ensure_ascii=ensure_ascii)[:-1]  # without the closing quote (a newline may follow)
            found = self.text.find(needle, self.position)
            if found < 0:
                self.misses_left -= len(self.text) - self.position
            else:
                self.line += self.text.count("\n", self.position, found)
                self.position = found + len(needle)
                return self.line
        return self.line if self.position else None
