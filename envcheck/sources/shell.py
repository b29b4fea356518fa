"""Shell scripts (``install.sh``, files whose shebang names sh, bash, dash or zsh), read as the heredoc of one
Dockerfile RUN in a stage with the script's folder copied in; :func:`read_script` does the same for shell text
held by other inputs (compose ``command:``, Kubernetes ``args``, notebook ``!pip`` lines)."""

from __future__ import annotations

import bisect
import functools
import itertools
import os
import re
import shlex
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envcheck.errors import UsageError
from envcheck.inspect.docker_run import exec_command, parse_run
from envcheck.inspect.host_probes import on_host
from envcheck.inspect.image_reference import parse_reference
from envcheck.inspect.launch import MEMORY_KEYS, TP_KEYS, LaunchFormatError, image_entrypoint, parse_command
from envcheck.inspect.pip_args import INDEX_VARIABLES
from envcheck.inspect.pragma import instruction_pragmas
from envcheck.inspect.shell import Commands, split_commands
from envcheck.knowledge.base_images import ml_image
from envcheck.model import BaseImage, EnvVar, Inventory, Location, Origin, ReadProblem
from envcheck.readings import launches_from_json
from envcheck.redaction import MASK, is_secret_name
from envcheck.sources import ReadOptions, move_locations
from envcheck.sources.requirements import read_text_file, text_limit

if TYPE_CHECKING:
    from envcheck.inspect.image_reference import Reference
    from envcheck.inspect.shell import SimpleCommand

KIND = "shell"
SHEBANG = re.compile(rb"^#!\s*(?:/usr)?(?:/local)?/bin/(?:env\s+(?:-\S+\s+)*)?(?:sh|bash|dash|zsh)(?:\s|$)")
_MARKER = "ENVCHECK_SHELL_SCRIPT_END"
# FROM, COPY, WORKDIR and the RUN line come before the heredoc body: script line 1 is Dockerfile line 5.
_HEADER_LINES = 4


def sniff(path: Path, head: bytes) -> bool:
    return SHEBANG.match(head) is not None


def read(path: Path, options: ReadOptions) -> Inventory:
    text, problems = read_text_file(path, text_limit(options))
    with on_host():  # a script file runs on the Spark: `$(nvcc --version ...)` is its CUDA 13 toolkit
        inventory = read_script(text, str(path), path.parent, options, lambda line: Location(str(path), line=line))
    inventory.problems[:0] = problems
    inventory.pragmas.extend(instruction_pragmas(text, {}, str(path)))  # each pragma: the next line that is not blank
    return inventory


def read_script(text: str, path: str, folder: Path, options: ReadOptions, where: Callable[[int], Location]) -> Inventory:
    """The facts a Dockerfile RUN of ``text`` has, located by ``where(line)``."""
    from envcheck.sources import dockerfile

    marker = _MARKER
    while marker in text:
        marker += "_"
    recipe = f"FROM scratch\nCOPY . /\nWORKDIR /\nRUN <<'{marker}'\n{text}\n{marker}\n"
    inventory = dockerfile.read_text(recipe, path, folder, options)
    lines = text.count("\n") + 1

    def moved(loc: Location | None) -> Location | None:
        if loc is None:
            return None
        if loc.path != path:  # a file the script read (-r requirements.txt): its own lines, the caller's stage
            return replace(loc, stage=where(1).stage)
        line = (loc.line or _HEADER_LINES + 1) - _HEADER_LINES
        base = where(min(max(line, 1), lines))  # the caller's branch (a compose profile, a notebook's Python block) stays
        return replace(base, branch=loc.branch or base.branch, fallback=loc.fallback or base.fallback,
                       tolerated=loc.tolerated or base.tolerated)

    out = Inventory(context=inventory.context, packages=inventory.packages, indexes=inventory.indexes,
                    installs=inventory.installs, wheels=inventory.wheels)
    move_locations(out, moved, "packages", "indexes", "installs", "wheels")
    seen: set[tuple[str, str]] = set()
    for variable in inventory.env:  # `export X=...` then a build that runs with it: one setting, where it is made
        if (variable.name, variable.value) not in seen:
            seen.add((variable.name, variable.value))
            out.env.append(replace(variable, location=moved(variable.location)))
    out.problems = [ReadProblem(p.message.replace("this RUN", "this script"), moved(p.location)) for p in inventory.problems]
    out.pragmas = [replace(p, location=moved(p.location) or p.location) for p in inventory.pragmas if p.location.path != path]
    if found := launches(text, path, where):
        out.host = replace(out.host, launch=launches_from_json(found))
    out.images = container_images(text, where, folder)
    # The environment programs run with: `docker run -e NAME=VALUE` (the container's), else what the script
    # exports (or sets before the command) for what it runs here, as compose `environment:` is read. Not
    # through docker/ssh, nor what the RUN reading already made facts of (build arch settings, indexes).
    made = {v.name for v in out.env} | set(dockerfile.TRACKED_BUILD_ENV) | set(INDEX_VARIABLES) | {"CMAKE_ARGS"}
    exports, settings = _exports_and_settings(text)
    for cmd in _script_commands(text):
        argv = _unwrapped(cmd.argv)
        if (run := parse_run(argv)) is not None:
            for name, value in run.env:  # at the line that sets it (a continued docker run spans several)
                at = text.find(f"{name}=", cmd.offset)
                out.env.append(EnvVar(name, value, Origin.ENV, where(text.count("\n", 0, max(at, cmd.offset)) + 1)))
            continue
        if not argv or exec_command(argv) is not None or _ssh_command(argv) is not None:
            continue
        at = text.find(cmd.text, cmd.offset) if cmd.text else -1  # in `sh -c '...'` the offset is the script's
        cut = max(at, cmd.offset)  # the text before the command
        assigned = dict(cmd.assignments)
        for name, value in cmd.env.items():
            if name in made or not (name in assigned or exports.get(name, cut + 1) <= cut):
                continue
            made.add(name)
            set_at = settings.get(name, [])
            last = bisect.bisect_left(set_at, cut)  # the last `NAME=` before the command
            out.env.append(EnvVar(name, value, Origin.ENV, where(text.count("\n", 0, set_at[last - 1] if last else cmd.offset) + 1)))
    return out


_EXPORT = re.compile(r"(?m)\b(?:export|declare\s+-\w*x\w*)\b([^\n;&|]*)")
_NAME = re.compile(r"(?<![\w$])([A-Za-z_]\w*)\b")
_SETTING = re.compile(r"(?<![\w$])([A-Za-z_]\w*)=")


def _exports_and_settings(text: str) -> tuple[dict[str, int], dict[str, list[int]]]:
    """Where each name is first exported (the end of the name in `export A B=1`, `declare -x A`), and where each
    `NAME=` starts, in order: one pass over the script (a search per command and name was cubic)."""
    exports: dict[str, int] = {}
    for found in _EXPORT.finditer(text):
        for name in _NAME.finditer(text, found.start(1), found.end(1)):
            exports.setdefault(name.group(1), name.end())
    settings: dict[str, list[int]] = {}
    for found in _SETTING.finditer(text):
        settings.setdefault(found.group(1), []).append(found.start())
    return exports, settings


@functools.lru_cache(maxsize=4)
def _script_commands(text: str) -> Commands:
    """``split_commands(text, arch="arm64")``, once per script however many passes read it."""
    return split_commands(text, arch="arm64")


def container_images(text: str, where: Callable[[int], Location], folder: Path | None = None) -> list[BaseImage]:
    """Images ``docker run`` lines start with a GPU, a platform, a known server or a known image; the
    project's own builds (``docker build -t`` tags, a bare local name beside a Dockerfile) are left out."""
    images: list[BaseImage] = []
    commands = _script_commands(text)
    built = _built_tags([_unwrapped(cmd.argv) for cmd in commands])
    beside = folder is not None and _has_dockerfile(folder)
    for cmd in commands:
        argv = _unwrapped(cmd.argv)
        run = parse_run(argv)
        if run is None or "$" in run.image:
            continue
        try:
            ref = parse_reference(run.image)
        except UsageError:
            continue
        if _same_image(ref, built) or (beside and "/" not in run.image and ":" not in run.image and "@" not in run.image):
            continue  # the project's own build
        command = list(run.command) or list(image_entrypoint(run.image))
        if run.gpus or run.platform or ml_image(run.image) or (command and _leading_tool(command)):
            at = cmd.offset
            if run.image not in text[cmd.offset:cmd.offset + _SETTING_SPAN]:  # "$IMAGE": where its value is written
                written = text.rfind(run.image, 0, cmd.offset)
                at = written if written >= 0 else at
            images.append(BaseImage(ref=run.image, platform=run.platform, location=where(text.count("\n", 0, at) + 1)))
    return images


def _unwrapped(words: tuple[str, ...]) -> list[str]:
    argv = list(words)
    while argv and (argv[0] in _WRAPPERS or ("=" in argv[0] and not argv[0].startswith("-"))):
        argv.pop(0)
    return argv


def _built_tags(commands: list[list[str]]) -> list[Reference]:
    """The tags ``docker build -t NAME`` (``docker buildx build``, ``podman build``) gives what it builds."""
    tags: list[Reference] = []
    for argv in commands:
        if len(argv) < 2 or argv[0].rsplit("/", 1)[-1] not in ("docker", "podman", "buildah"):
            continue
        words = argv[2:] if argv[1] == "buildx" else argv[1:]
        if not words or words[0] not in ("build", "bud"):
            continue
        for value in option_values(words, "-t", "--tag"):
            try:
                tags.append(parse_reference(value))
            except UsageError:
                continue
    return tags


def option_values(argv: list[str], *names: str) -> list[str]:
    """The values of the options ``names`` in ``argv``, written ``--name=value`` or ``--name value``."""
    return [value if eq else (argv[i + 1] if i + 1 < len(argv) else "")
            for i, (name, eq, value) in enumerate(word.partition("=") for word in argv) if name in names]


def _same_image(ref: Reference, built: list[Reference]) -> bool:
    return any((b.registry, b.repository, b.tag or "latest") == (ref.registry, ref.repository, ref.tag or "latest")
               for b in built)


_DOCKERFILE = re.compile(r"^(?:Dockerfile|Containerfile)(?:\..+)?$|\.(?:dockerfile|Dockerfile)$")


def _has_dockerfile(folder: Path) -> bool:
    """A Dockerfile (Dockerfile, x.Dockerfile, Containerfile...) among the folder's first 2000 entries."""
    try:
        with os.scandir(folder) as entries:
            return any(_DOCKERFILE.search(entry.name) for entry in itertools.islice(entries, 2000))
    except OSError:
        return False


# A launch's command line is kept whole up to this length (G3-share-below-weights reads its model and options).
COMMAND_CHARS = 4000
# Words that run the command after them: `exec vllm serve ...`, `nohup torchrun ... &`.
_WRAPPERS = frozenset({"exec", "nohup", "env", "sudo", "time", "command"})
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ash"})


def launches(text: str, path: str, where: Callable[[int], Location], entry: tuple[str, ...] = (),
             extra: Mapping[str, object] | None = None) -> list[dict[str, Any]]:
    """Launch commands in shell text as ``HostReadings.launch`` entries; ``entry``: the image's entrypoint,
    run before commands that start with an option (a compose ``command:`` that is only flags)."""
    found: list[dict[str, Any]] = []
    commands = list(_commands(_script_commands(text)))
    cluster = next((c for c in (_cluster(argv) for _offset, argv in commands) if c), None)
    if cluster is None and _ray_in_substitution(text):  # GPUS=$(docker exec "$C" ray status | ...)
        cluster = "Ray"
    for offset, words in commands:
        argv = _launched(words)
        run = parse_run(argv)
        if run is not None:  # `docker run ... IMAGE CMD`: the container's command is the launch
            argv = list(run.command)
            if run.entrypoint is None and (not argv or argv[0].startswith("-")):
                argv = [*image_entrypoint(run.image), *argv]
        elif argv and argv[0].startswith("-") and entry:
            argv = [*entry, *argv]
        if not argv:
            continue
        try:
            launch = parse_command(shlex.join(argv), origin=path)
        except LaunchFormatError:
            continue
        tool = launch.tool if _leading_tool(argv) else None  # `lm_eval --model vllm` does not start vLLM
        if tool is None and not launch.settings:
            continue
        loc = where(text.count("\n", 0, offset) + 1)
        memory = next((_fraction(s.value) for s in launch.settings if s.key in MEMORY_KEYS), None)
        item = launch.to_json()
        item["tool"] = tool
        settings: list[dict[str, Any]] = list(item["settings"])  # type: ignore[call-overload]
        item["settings"] = [{**setting, "line": _setting_line(text, offset, str(setting["key"]), where) or loc.line}
                            for setting in settings]
        item.update({"line": loc.line, "memory": memory, "command": shlex.join(_masked(argv))[:COMMAND_CHARS], **(extra or {})})
        if loc.member:
            item["member"] = loc.member
        unknown_tp = launch.tp is None and any(s.key in TP_KEYS for s in launch.settings)  # --tensor-parallel-size "$3"
        if cluster and ((launch.tp or 0) > 1 or unknown_tp) and not launch.nodes:
            item["cluster"] = cluster  # a Spark has one GPU: tp > 1 over a Ray/MPI cluster spans Sparks
            if cluster == "Ray" and _ray_joins(text):
                item["multi_node"] = True  # a head here and a worker that joins it: the cluster spans machines
        found.append(item)
    return found


_RAY_HEAD = re.compile(r"\bray\s+start\b[^\n]*--head\b")
_RAY_JOIN = re.compile(r"\bray\s+start\b[^\n]*--address\b")


def _ray_joins(text: str) -> bool:
    """A multi-node Ray cluster: ``ray start --head`` and a ``ray start --address`` that joins it."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    return any(_RAY_HEAD.search(line) for line in lines) and any(_RAY_JOIN.search(line) for line in lines)


_MPI = frozenset({"mpirun", "mpiexec", "srun"})
_RAY_WORDS = re.compile(r"\bray\s+(?:start|status)\b")


def _ray_in_substitution(text: str) -> bool:
    """``ray start``/``ray status`` in a command substitution (``$(...)``), which the splitter does not open."""
    for line in text.splitlines():
        at = line.find("$(")
        if at >= 0 and not line.lstrip().startswith("#") and _RAY_WORDS.search(line, at):
            return True
    return False


def _commands(commands: Iterable[SimpleCommand], depth: int = 0) -> Iterator[tuple[int, list[str]]]:
    """Each command's words with wrappers dropped, and where it starts; what ``docker exec``, ``ssh HOST '...'``
    and ``docker run --entrypoint bash IMAGE -c '...'`` run is read as commands at the same place."""
    for cmd in commands:
        argv = _unwrapped(cmd.argv)
        inside = exec_command(argv)
        if inside is None and (run := parse_run(argv)) is not None and run.entrypoint is not None \
                and run.entrypoint.rsplit("/", 1)[-1] in _SHELLS and run.command:
            inside = (run.entrypoint, *run.command)  # the shell's -c script is the container's command
        remote = _ssh_command(argv) if inside is None else None
        if depth >= 3 or (inside is None and remote is None):
            yield cmd.offset, argv
            continue
        text = shlex.join(inside) if inside is not None else str(remote)
        for _offset, inner in _commands(split_commands(text, dict(cmd.env), arch="arm64"), depth + 1):
            yield cmd.offset, inner


# ssh options that take a value (OpenSSH ssh(1))
_SSH_VALUED = frozenset("BbcDEeFIiJLlmOopQRSWw")


def _ssh_command(argv: list[str]) -> str | None:
    """The remote command of ``ssh [options] HOST COMMAND...`` as shell text, or None."""
    if not argv or argv[0].rsplit("/", 1)[-1] != "ssh":
        return None
    i = 1
    while i < len(argv) and argv[i].startswith("-") and len(argv[i]) > 1:
        flag = argv[i]
        i += 2 if flag[-1] in _SSH_VALUED and len(flag) == 2 else 1
    return " ".join(argv[i + 1:]) if i + 1 < len(argv) else None


def _launched(argv: list[str]) -> list[str]:
    """The words from the program an MPI launcher (or a wrapper ``x.sh vllm serve ...``) starts."""
    if argv and argv[0].endswith(".sh") and len(argv) > 1 and _leading_tool(argv[1:]):
        return argv[1:]
    if not argv or argv[0].rsplit("/", 1)[-1] not in _MPI:
        return argv
    start = next((i for i in range(1, len(argv)) if not argv[i].startswith("-") and _leading_tool(argv[i:])), None)
    return argv if start is None else argv[start:]


def _cluster(argv: list[str]) -> str | None:
    """The multi-node runtime (Ray, MPI) a command starts or joins."""
    if not argv:
        return None
    first = argv[0].rsplit("/", 1)[-1]
    if first == "ray" and len(argv) > 1 and argv[1] in ("start", "status", "up", "attach"):
        return "Ray"
    if first in _MPI:
        return "MPI"
    return "Ray" if "ray" in option_values(argv, "--distributed-executor-backend") else None


_SETTING_SPAN = 8192  # a command's flags are looked for this far after its start (its continued lines)


def _setting_line(text: str, start: int, key: str, where: Callable[[int], Location]) -> int | None:
    """The file line where a launch's setting ``key`` is written, so a finding points at the flag."""
    span = text[start:start + _SETTING_SPAN]
    short = ("-tp",) if key == "tp" else ()  # vLLM's -tp: the nearest form written wins, not a later command's --tp
    flags = (f"--{key.replace('_', '-')}", f"--{key}", *short)
    if (in_array := _array_flag(text, start, flags)) >= 0:  # "${ARGS[@]}": the flag is in ARGS=( ... )
        return where(text.count("\n", 0, in_array) + 1).line
    for forms in (flags, (f"{key.upper()}=",)):
        found = min((at for at in (span.find(written) for written in forms) if at >= 0), default=-1)  # the nearest
        if found >= 0:
            return where(text.count("\n", 0, start + found) + 1).line
    bare = re.search(rf"(?<![A-Za-z0-9_]){re.escape(key)}(?![A-Za-z0-9_])", span)  # `tp`, not the tp of http
    return where(text.count("\n", 0, start + bare.start()) + 1).line if bare else None


_ARRAY_USE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\[[@*]\]\}")


def _array_flag(text: str, start: int, flags: tuple[str, ...]) -> int:
    """Where a flag of the arrays a command expands (``"${ARGS[@]}"``) is written: in the last ``ARGS=( ... )``
    or ``ARGS+=( ... )`` before the command that holds it, also in an array such an array expands
    (``RUN=(docker run ... "${ARGS[@]}")``); -1 when there is none."""
    best = -1
    names = _ARRAY_USE.findall(text[start:_command_end(text, start)])
    seen: set[str] = set()
    while names and len(seen) < _NESTED_ARRAYS:
        name = names.pop(0)
        if name in seen:
            continue
        seen.add(name)
        for m in re.finditer(rf"(?<![A-Za-z0-9_]){re.escape(name)}\+?=\(", text[:start]):
            close = text.find(")", m.end())
            found = [x for x in (text.find(flag, m.end(), close) for flag in flags) if x >= 0]
            best = max(best, min(found)) if found else best
            names += _ARRAY_USE.findall(text, m.end(), close if close >= 0 else len(text))
    return best


_NESTED_ARRAYS = 8  # arrays followed through the arrays a command expands


def _command_end(text: str, start: int) -> int:
    """Where the command written at ``start`` ends: the first newline outside quotes that no backslash
    continues (``docker run ... bash -lc '<several lines>' bash "${ARGS[@]}"`` ends after its quoted script)."""
    quote, i, n = "", start, len(text)
    while i < n:
        ch = text[i]
        if quote == "'":
            quote = "" if ch == "'" else quote
        elif ch == "\\":
            i += 1
        elif quote:
            quote = "" if ch == '"' else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "\n":
            return i
        elif ch == "#" and text[i - 1] in " \t":  # a comment: the command ends with its line
            stop = text.find("\n", i)
            return n if stop < 0 else stop
        i += 1
    return n


def _leading_tool(argv: list[str]) -> bool:
    first = argv[0].rsplit("/", 1)[-1]
    if re.fullmatch(r"python(\d+(\.\d+)?)?", first):
        return len(argv) >= 3 and argv[1] == "-m" and parse_command(shlex.join(argv[:3])).tool not in (None, "python")
    return parse_command(shlex.quote(argv[0])).tool not in (None, "python")


def _masked(argv: list[str]) -> list[str]:
    """``argv`` with secret options' values (``--api-key sk-...``) masked: the command is kept as evidence."""
    out: list[str] = []
    hide_next = False
    for word in argv:
        name, eq, _value = word.partition("=")
        secret = word.startswith("-") and is_secret_name(name.lstrip("-"))
        out.append(MASK if hide_next else f"{name}={MASK}" if secret and eq else word)
        hide_next = not hide_next and secret and not eq
    return out


def _fraction(value: str) -> float | None:
    try:
        number = float(value.strip().strip("\"'"))
    except ValueError:
        return None
    return number if 0 <= number <= 1 else None
