"""conda environment files (``environment.yml``): channels, conda package specs, and the ``pip:`` list.

What ``conda env create -f environment.yml`` installs: each entry of ``dependencies`` is a conda match spec
(``pytorch-cuda=12.1``, ``cuda-version >=12,<13``, ``nvidia::cuda-toolkit=12.4``), a package with the
``conda`` role, and every ``channels`` entry (and a ``channel::`` prefix) a conda channel. The ``pip:`` entry
is a requirements list, read the way pip reads a requirements file (options such as ``--extra-index-url``
and ``-r other.txt`` included, relative to the environment file).

The file is read with a small reader for the YAML that environment files use, not a full YAML parser (no
dependency for one file format): a top-level mapping; block sequences (``- item``) and flow sequences
(``[a, b]``) of plain or quoted scalars; comments; one nested ``- pip:`` sequence. Anything else in
``channels`` or ``dependencies`` (anchors, block scalars, other nested mappings) is a problem at its line,
and the rest of the file is still read. Other top-level keys (``name``, ``prefix``, ``variables``) are skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from envcheck.inspect.pip_args import parse_install_command, parse_requirement_text, shown
from envcheck.model import IndexOption, InstallCommand, Inventory, Location, PackageIndex, ReadProblem, Role
from envcheck.sources import ReadOptions
from envcheck.sources.requirements import (
    MAX_PACKAGES,
    _option_line,
    read_text_file,
    text_limit,
    too_many_packages,
)

KIND = "conda"

_KEY = re.compile(r"^([A-Za-z_][\w.-]*)\s*:(?:\s+(.*))?$")
_ITEM = re.compile(r"^(\s*)-(?:\s+(.*))?$")
_PIP_KEY = re.compile(r"^pip\s*:\s*(.*)$")
_MAPPING = re.compile(r"^[A-Za-z_][\w.-]*\s*:(\s|$)")


@dataclass
class EnvironmentFile:
    """The parts of an environment file that decide what gets installed, each item with its line."""

    channels: list[tuple[int, str]] = field(default_factory=list)
    dependencies: list[tuple[int, str]] = field(default_factory=list)
    pip: list[tuple[int, str]] = field(default_factory=list)
    problems: list[tuple[int, str]] = field(default_factory=list)
    keys: set[str] = field(default_factory=set)


def sniff(path: Path, head: bytes) -> bool:
    """A YAML file with a top-level ``dependencies:`` key and ``channels:`` or ``name:`` (an environment file)."""
    if b"\x00" in head:
        return False
    text = head.decode("utf-8", "replace")
    return bool(re.search(r"(?m)^dependencies\s*:", text)) and bool(re.search(r"(?m)^(channels|name)\s*:", text))


def _strip_comment(text: str) -> str:
    """``text`` without a trailing ``# comment`` (a # at the start or after whitespace, outside quotes)."""
    quote = ""
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or text[i - 1] in " \t"):
            return text[:i].rstrip()
    return text.rstrip()


def _scalar(text: str) -> str | None:
    """A plain or quoted YAML scalar; None for what this reader does not take (anchors, tags, block scalars)."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        inner = text[1:-1]
        return inner.replace("''", "'") if text[0] == "'" else inner.replace('\\"', '"').replace("\\\\", "\\")
    if not text or text[0] in "&*!|>{[@`%" or text.startswith("? "):
        return None
    return text


def _flow(text: str) -> list[str] | None:
    """The items of a flow sequence ``[a, b]``, or None when ``text`` is not one this reader takes."""
    text = text.strip()
    if not (text.startswith("[") and text.endswith("]")):
        return None
    items = [_scalar(part) for part in text[1:-1].split(",") if part.strip()]
    return None if any(i is None for i in items) else [i for i in items if i is not None]


def parse(text: str) -> EnvironmentFile:
    """The channels, dependencies and pip entries of an environment file's text (problems, not exceptions)."""
    env = EnvironmentFile()
    key: str | None = None  # the top-level key whose block we are in
    pip_indent: int | None = None  # indentation of the `- pip:` item while reading its list
    for number, raw in enumerate(text.splitlines(), 1):
        line = _strip_comment(raw.replace("\t", "    "))
        if not line.strip() or line.strip() in ("---", "..."):
            continue
        indent = len(line) - len(line.lstrip())
        item = _ITEM.match(line)
        if indent == 0 and item is None:
            pip_indent = None
            m = _KEY.match(line)
            if m is None:
                env.problems.append((number, f"cannot read {shown(line.strip())}: expected `key:` at the top level"))
                key = None
                continue
            key, value = m.group(1), (m.group(2) or "").strip()
            env.keys.add(key)
            if key in ("channels", "dependencies") and value:
                items = _flow(value)
                if items is None:
                    env.problems.append((number, f"cannot read {key}: {shown(value)} (expected a list)"))
                else:
                    target = env.channels if key == "channels" else env.dependencies
                    target.extend((number, i) for i in items)
            continue
        if key not in ("channels", "dependencies"):
            continue  # name, prefix, variables, ...: nothing that decides what is installed
        if item is None:
            env.problems.append((number, f"cannot read {shown(line.strip())} in {key} (expected `- item`)"))
            continue
        content = (item.group(2) or "").strip()
        if pip_indent is not None and indent > pip_indent:
            value = _scalar(content)
            if value is None:
                env.problems.append((number, f"cannot read pip entry {shown(content)} (this reader takes plain or quoted strings)"))
            else:
                env.pip.append((number, value))
            continue
        pip_indent = None
        pip = _PIP_KEY.match(content) if key == "dependencies" else None
        if pip is not None:
            inline = pip.group(1).strip()
            if inline:
                items = _flow(inline)
                if items is None:
                    env.problems.append((number, f"cannot read pip: {shown(inline)} (expected a list)"))
                else:
                    env.pip.extend((number, i) for i in items)
            else:
                pip_indent = indent
            continue
        value = _scalar(content)
        if value is None or _MAPPING.match(content):  # (channel::package is a spec: `::` is not `: `)
            env.problems.append((number, f"cannot read {key} entry {shown(content)} (this reader takes plain or quoted strings and `pip:`)"))
            continue
        (env.channels if key == "channels" else env.dependencies).append((number, value))
    return env


def _match_spec(spec: str) -> list[str]:
    """A conda match spec as conda install's argument: ``name >=1,<2`` -> ``name>=1,<2``; ``name 1.2 build`` ->
    ``name=1.2=build``. (Split and joined without regular expressions: linear on any input.)"""
    words: list[str] = []
    for word in spec.split():
        if words and (word[0] in "<>=!~," or words[-1][-1] in "<>=!~,"):
            words[-1] += word  # an operator and its version, or a version list, belong to the word before
        else:
            words.append(word)
    if len(words) <= 1:
        return words
    return ["=".join(words)]  # name version [build]


def read(path: Path, options: ReadOptions) -> Inventory:
    """Read one conda environment file: what ``conda env create -f`` would install, and from where."""
    text, problems = read_text_file(path, text_limit(options))
    inventory = Inventory()
    inventory.problems.extend(problems)
    env = parse(text)
    where = str(path)
    for number, message in env.problems:
        inventory.problems.append(ReadProblem(message, Location(where, line=number)))
    if "dependencies" not in env.keys:
        inventory.problems.append(ReadProblem(f"{path.name} has no `dependencies:` list: not a conda environment file?",
                                              Location(where)))
    entries = len(env.dependencies) + len(env.pip)
    if entries > MAX_PACKAGES:  # the same bound as a requirements file: time stays bounded by it
        first_dropped = [*env.dependencies, *env.pip][MAX_PACKAGES][0]
        inventory.problems.append(ReadProblem(too_many_packages(), Location(where, line=first_dropped)))
        env.dependencies = env.dependencies[:MAX_PACKAGES]
        env.pip = env.pip[:max(0, MAX_PACKAGES - len(env.dependencies))]
    for number, channel in env.channels:
        inventory.indexes.append(PackageIndex(channel, IndexOption.CONDA_CHANNEL, Location(where, line=number)))
    names: list[str] = []
    for number, spec in env.dependencies:
        loc = Location(where, line=number)
        channel, sep, _ = spec.partition("::")
        if sep:
            inventory.indexes.append(PackageIndex(channel.strip(), IndexOption.CONDA_CHANNEL, loc))
        parsed = parse_install_command(["conda", "install", *_match_spec(spec)], loc)
        if parsed is None:
            continue
        inventory.packages.extend(parsed.packages)
        inventory.problems.extend(parsed.problems)
        names.extend(p.name for p in parsed.packages)
    if names:
        inventory.installs.append(InstallCommand(tool="conda", packages=tuple(names), text=f"conda env create -f {path.name}",
                                                 location=Location(where)))
    pip_names: list[str] = []
    for number, line in env.pip:
        loc = Location(where, line=number)
        if line.startswith("-"):
            _option_line(line, loc, path, options, inventory, role=Role.REQUIREMENT, seen={path.resolve()}, depth=0)
            continue
        pkg = parse_requirement_text(line, loc)
        if isinstance(pkg, ReadProblem):
            inventory.problems.append(pkg)
        elif pkg is not None:
            inventory.packages.append(pkg)
            pip_names.append(pkg.name)
    if env.pip:
        inventory.installs.append(InstallCommand(tool="requirements", packages=tuple(pip_names),
                                                 text=f"pip install (the pip: list of {path.name})", location=Location(where)))
    return inventory

