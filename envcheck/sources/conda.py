"""conda environment files (``environment.yml``): what ``conda env create -f`` installs: channels, conda
match specs (``conda`` role) and the ``pip:`` list, read as a requirements file. A malformed entry is a
problem at its line; the rest is still read."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from envcheck.inspect.pip_args import parse_install_command, parse_requirement_text, shown
from envcheck.inspect.yaml_tree import Scalar, YamlError, YList, YMap, line_of, load_all
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


@dataclass
class EnvironmentFile:
    """The parts of an environment file that decide what gets installed, each item with its line."""
    channels: list[tuple[int, str]] = field(default_factory=list)
    dependencies: list[tuple[int, str]] = field(default_factory=list)
    pip: list[tuple[int, str]] = field(default_factory=list)
    problems: list[tuple[int, str]] = field(default_factory=list)
    keys: set[str] = field(default_factory=set)


def sniff(path: Path, head: bytes) -> bool:
    """Top-level ``dependencies:`` and ``channels:`` or ``name:``, no ``apiVersion:`` (a Helm Chart.yaml)."""
    text = "" if b"\x00" in head else head.decode("utf-8", "replace")  # binary junk matches no pattern
    return (bool(re.search(r"(?m)^dependencies\s*:", text)) and bool(re.search(r"(?m)^(channels|name)\s*:", text))
            and not re.search(r"(?m)^apiVersion\s*:", text))


def parse(text: str) -> EnvironmentFile:
    env = EnvironmentFile()
    try:
        documents = load_all(text, max_documents=1 << 10)
    except YamlError as exc:
        env.problems.append((exc.line or 1, f"cannot read the file: {exc.message}"))
        return env
    document = next((d for d in documents if d is not None), None)
    if document is None:
        return env
    if not isinstance(document, YMap):
        env.problems.append((line_of(document), "cannot read the file: expected `key:` at the top level"))
        return env
    env.keys.update(document)
    for key, target in (("channels", env.channels), ("dependencies", env.dependencies)):
        value = document.get(key)
        if value is None or (isinstance(value, Scalar) and value.null):
            continue
        if not isinstance(value, YList):
            env.problems.append((document.line_of(key), f"cannot read {key}: {shown(str(value))} (expected a list)"))
            continue
        for item in value:
            if isinstance(item, Scalar) and not item.null:
                target.append((item.line, str(item)))
            elif key == "dependencies" and isinstance(item, YMap) and list(item) == ["pip"]:
                _pip_list(item["pip"], item.line_of("pip"), env)
            else:
                shape = "a mapping" if isinstance(item, YMap) else "a list" if isinstance(item, YList) else "an empty entry"
                env.problems.append((line_of(item, value.line), f"cannot read {key} entry: {shape} (expected a string or `pip:`)"))
    return env


def _pip_list(value: object, line: int, env: EnvironmentFile) -> None:
    if not isinstance(value, YList):
        env.problems.append((line, "cannot read pip: (expected a list)"))
        return
    for item in value:
        if isinstance(item, Scalar) and not item.null:
            env.pip.append((item.line, str(item)))
        else:
            env.problems.append((line_of(item, value.line), "cannot read pip entry (expected a string)"))


def _match_spec(spec: str) -> list[str]:
    """A match spec as conda install takes it: ``n >=1,<2`` -> ``n>=1,<2``; ``n 1.2 b`` -> ``n=1.2=b``."""
    words: list[str] = []
    for word in spec.split():
        if words and (word[0] in "<>=!~," or words[-1][-1] in "<>=!~,"):
            words[-1] += word  # an operator and its version, or a version list, belong to the word before
        else:
            words.append(word)
    return words if len(words) <= 1 else ["=".join(words)]  # name version [build]


def read(path: Path, options: ReadOptions) -> Inventory:
    text, problems = read_text_file(path, text_limit(options))
    inventory = Inventory(problems=list(problems))
    env = parse(text)
    where = str(path)
    for number, message in env.problems:
        inventory.problems.append(ReadProblem(message, Location(where, line=number)))
    if "dependencies" not in env.keys:
        inventory.problems.append(ReadProblem(f"{path.name} has no `dependencies:` list: not a conda environment file?",
                                              Location(where)))
    if len(env.dependencies) + len(env.pip) > MAX_PACKAGES:  # the requirements bound: time stays bounded
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

