"""Dockerfiles and Containerfiles: base images, ENV/ARG, and every package install in RUN lines.

Packages installed in stages that do not reach the final image carry ``role="build"``;
:func:`inventory_from_history` reads an image's ``history[].created_by`` the same way."""

from __future__ import annotations

import importlib
import posixpath
import re
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path

from envcheck.errors import InputError, UsageError
from envcheck.inspect.dockerfile import (
    Dockerfile,
    DockerfileSyntaxError,
    Heredoc,
    Instruction,
    Stage,
    UnknownTargetError,
    copied_from,
    env_pairs,
    expand,
    parse,
    split_words,
)
from envcheck.inspect.dockerfile_env import (
    copied_into_image,
    settings_ending_with_run,
    stages_in_build,
    walk_stage,
)
from envcheck.inspect.image_reference import parse_reference
from envcheck.inspect.pip_args import (
    INDEX_VARIABLES,
    NAMED_INDEX,
    VALUE_OPTIONS,
    InstallParse,
    parse_install_command,
    variable_indexes,
)
from envcheck.inspect.pragma import instruction_pragmas
from envcheck.inspect.shell import INTERPRETER_PATH, SimpleCommand, split_commands
from envcheck.inspect.source_edits import VLLM_FREE_MEMORY_CHECK_EDIT, disables_vllm_free_memory_check
from envcheck.inspect.wheel_tags import canonical
from envcheck.knowledge.base_images import safe_describe
from envcheck.model import (
    BaseImage,
    EnvVar,
    InstallCommand,
    Inventory,
    Location,
    Origin,
    Package,
    ReadProblem,
    Role,
)
from envcheck.sources import ReadOptions, requirements
from envcheck.sources.build_context import ContextFiles, Copies, bind_mounts, record_clone, repo_of
from envcheck.sources.requirements import read_text_file, text_limit

KIND = "dockerfile"
BUILD_PLATFORM = "linux/arm64"  # the Spark builds its own images: $TARGETARCH etc. resolve to arm64
_ARCH = BUILD_PLATFORM.split("/")[1]  # what `$(uname -m)`-style probes in RUN conditions answer
_FIRST_WORD = re.compile(rb"^\s*([A-Za-z]+)[ \t]")
_SHELL_EXES = frozenset({"sh", "bash", "dash", "ash", "zsh"})
TRUNCATED_RUN = ("this RUN goes past what envcheck reads of one shell script (variables holding `sh -c` scripts that run "
                 "each other, subshells or ifs nested 40 deep, or more than 10000 commands); envcheck stopped reading it "
                 "there, so installs after that point were not checked")
# The shell text of one RUN (its line and heredocs) that envcheck reads; real ones are a few KiB, the
# largest seen in public recipes under 64 KiB. Longer ones are not read (docs/limits.md).
MAX_RUN_TEXT = 1 << 20


def _stdin_shell(argv: tuple[str, ...]) -> bool:
    """A shell started with options only (``bash -e``): it reads its script from stdin (a heredoc)."""
    return argv[0].rsplit("/", 1)[-1] in _SHELL_EXES and all(a.startswith("-") for a in argv[1:])


def _included_role(own: Role, role: Role, role_override: Role | None) -> Role:
    if role == "constraint" and own == "requirement":
        return Role.CONSTRAINT
    return role_override if role_override is not None and own == "requirement" else own


def _too_long(size: int) -> str:
    return (f"this RUN holds {size} characters of shell text, over the {MAX_RUN_TEXT >> 20} MiB envcheck reads; "
            "its installs were not checked (split it, or generate it from a script envcheck can read)")


# COPY --from sources that carry a stage's Python packages into the image: installed trees and wheel folders.
_SITE_DIRS = ("site-packages", "dist-packages", "/opt/venv", "/opt/conda", "/venv", "/.venv", "/usr/local/lib/python",
              "wheels", "wheelhouse", ".whl")
# Build settings that choose GPU targets: recorded where a RUN sets them for a build command.
TRACKED_BUILD_ENV = ("TORCH_CUDA_ARCH_LIST", "CMAKE_CUDA_ARCHITECTURES", "CUDAARCHS")
_CMAKE_ARCH_FLAG = re.compile(r"^-D\s*CMAKE_CUDA_ARCHITECTURES(?::[A-Za-z]+)?=(.*)$", re.S)


def sniff(path: Path, head: bytes) -> bool:
    """A Dockerfile starts (after comments and directives) with FROM or ARG and has a FROM."""
    for raw in head.splitlines():
        if not raw.strip() or raw.strip().startswith(b"#"):
            continue
        m = _FIRST_WORD.match(raw)
        if m is None or m.group(1).upper() not in (b"FROM", b"ARG"):
            return False
        return re.search(rb"(?im)^\s*FROM\s+\S", head) is not None
    return False


def read(path: Path, options: ReadOptions, context: Path | None = None) -> Inventory:
    """A syntax error is a problem at its line; nothing else is read then. ``context``: the build context (a compose
    file's ``build.context``); when not given, the Dockerfile's folder, or the nearest folder above it (up to a
    repository root) that holds every file the Dockerfile copies when its own folder lacks one (``docker build -f
    docker/Dockerfile .``), said in an INFO note."""
    text, problems = read_text_file(path, text_limit(options))
    inventory = read_text(text, str(path), context or path.parent, options, infer_context=context is None)
    inventory.problems[:0] = problems
    return inventory


def read_text(text: str, path: str, context: Path, options: ReadOptions, infer_context: bool = False) -> Inventory:
    """A Dockerfile's text located as ``path`` (the shell source wraps a script into one RUN)."""
    inventory = Inventory()
    try:
        df = parse(text, options.build_args, BUILD_PLATFORM, options.target or None)
    except DockerfileSyntaxError as exc:
        inventory.problems.append(ReadProblem(f"Dockerfile syntax error: {exc.message}", Location(path, line=exc.line)))
        return inventory
    except UnknownTargetError as exc:
        raise InputError(exc.message, path,
                         fix="Pass one of the stage names to --target, as `docker build --target` takes them.") from None
    if infer_context and (found := _inferred_context(df, context)) is not None:
        context = found[0]
        inventory.problems.append(ReadProblem(
            f"build context taken as {context}: the Dockerfile's folder has no {found[1]}, which it copies, and that "
            "folder has every file it copies", Location(path), note=True))
    reader = _Reader(df, path, context, options)
    try:
        reader.read_all(inventory)
    except DockerfileSyntaxError as exc:  # a value that expands past the limits: what was read so far stays
        inventory.problems.append(ReadProblem(f"Dockerfile: {exc.message}", Location(path, line=exc.line or reader.line)))
    except RecursionError:  # a structure nested past anything real that a bound above did not catch
        inventory.problems.append(ReadProblem("Dockerfile: nested too deeply to read; envcheck stopped here",
                                              Location(path, line=reader.line)))
    inventory.pragmas.extend(instruction_pragmas(text, {inst.line: inst.end_line for inst in df.instructions}, path))
    return inventory


_CONTEXT_LEVELS = 3  # folders above the Dockerfile's tried as its build context


def _inferred_context(df: Dockerfile, folder: Path) -> tuple[Path, str] | None:
    """(the build context, the first copied file the Dockerfile's folder lacks) when ``folder`` lacks a plain COPY/ADD
    source (no stage, URL, variable or wildcard) and the nearest folder above it (at most three, not past a repository
    root) holds them all; None otherwise (the Dockerfile's folder is the context)."""
    sources = sorted({w.lstrip("/") for inst in df.instructions if inst.keyword in ("COPY", "ADD") and copied_from(inst) is None
                      for w in (list(inst.json_args) if inst.json_args else split_words(inst.args, df.escape))[:-1]
                      if w and not w.startswith(("<<", "-")) and "://" not in w and not any(c in w for c in "$*?[")})
    try:
        missing = next((s for s in sources if not (folder / s).exists()), None)
        if missing is None or (folder / ".git").exists():
            return None  # all there, or the folder is a repository's root: nothing above it is its context
        for level, above in enumerate(folder.resolve().parents):
            if level >= _CONTEXT_LEVELS:
                break
            if all((above / s).exists() for s in sources):
                return above, missing
            if (above / ".git").exists():
                break
    except (OSError, ValueError):  # a name the file system rejects: no folder holds it
        pass
    return None


class _Reader:
    def __init__(self, df: Dockerfile, path: str, context: Path, options: ReadOptions) -> None:
        self.df, self.path, self.context, self.options = df, path, context, options
        self.build_args: Mapping[str, str] = options.build_args
        self.line = 1  # the instruction being read (for errors raised while reading it)
        self.outside: set[int] = set()  # stages that are not part of the built image (Location.outside_image)
        self.work: dict[str, tuple[list[str], list[str]]] = {}  # stage label -> (programs run, files not read)

    def read_all(self, inventory: Inventory) -> None:
        keeps = self._stages_in_image()
        self.outside = {s.index for s in self.df.stages} - stages_in_build(self.df)
        copies = copied_into_image(self.df, keeps)
        for stage in self.df.stages:
            self._read_stage(stage, stage.index in keeps, inventory, copies.get(stage.index))
        inventory.images[:] = [replace(i, programs=tuple(dict.fromkeys(p for s in i.stages for p in self.work.get(s, ([], []))[0] if p)),
                                       unread=tuple(dict.fromkeys(f for s in i.stages for f in self.work.get(s, ([], []))[1])))
                               if i.location is not None and i.location.path == self.path else i for i in inventory.images]

    def _stages_in_image(self) -> set[int]:
        """The final stage, the stages it builds on, and any whose site-packages, venv or conda it copies."""
        keeps = {s.index for s in self.df.stages if s.final}
        changed = True
        while changed:
            changed = False
            for stage in self.df.stages:
                if stage.index not in keeps:
                    continue
                for inst in stage.instructions:
                    source = copied_from(inst)
                    other = self.df.stage_by_ref(source) if source is not None else None
                    if other is None or other.index in keeps:
                        continue
                    words = list(inst.json_args) if inst.json_args else split_words(inst.args, self.df.escape)
                    if any(marker in w for w in words[:-1] for marker in _SITE_DIRS):
                        keeps.update(s.index for s in self._lineage(other))
                        changed = True
        return keeps

    def _lineage(self, stage: Stage) -> Iterator[Stage]:
        """``stage`` and the stages it builds on, nearest first."""
        walk: Stage | None = stage
        while walk is not None:
            yield walk
            walk = self.df.stages[walk.parent] if walk.parent is not None else None

    def _built_on(self, root: Stage) -> tuple[str, ...]:
        return tuple(s.label for s in self.df.stages if any(w.index == root.index for w in self._lineage(s)))

    def _loc(self, line: int, stage: Stage) -> Location:
        return Location(self.path, line=line, stage=stage.label, outside_image=stage.index in self.outside)

    def _read_stage(self, stage: Stage, in_image: bool, inventory: Inventory, copied_at: int | None = None) -> None:
        if stage.parent is None and stage.base.lower() != "scratch":
            try:
                parse_reference(stage.base)
            except UsageError as exc:  # docker build stops here: "invalid reference format"
                if stage.unresolved and not stage.undeclared:  # a build argument the build passes: base unknown
                    inventory.problems.append(ReadProblem(
                        f"FROM {stage.base_written}: the base comes from --build-arg {', '.join(stage.unresolved)} (no "
                        "default), so it is not checked; pass --build-arg NAME=VALUE to check it", self._loc(stage.line, stage),
                        note=True))
                else:
                    message = (f"FROM {stage.base_written}: ARG {', '.join(stage.undeclared)} is not declared before the "
                               f"first FROM, so FROM reads {stage.base!r}" if stage.undeclared
                               else f"FROM {stage.base_written}: {exc.message}")
                    inventory.problems.append(ReadProblem(message, self._loc(stage.line, stage)))
                    return
            else:
                inventory.images.append(BaseImage(
                    ref=stage.base, stage=stage.label, platform=stage.platform, final=in_image,
                    location=self._loc(stage.line, stage), stages=self._built_on(stage), copied_at=copied_at))
                if in_image:
                    inventory.packages.extend(shipped_packages(stage.base, self._loc(stage.line, stage)))
        workdir = "/"
        clones: dict[str, str] = {}  # git clones made by earlier RUNs of this stage
        copies = Copies()  # (sources in context, destination, workdir)
        heredoc_files: dict[str, tuple[Heredoc, Instruction]] = {}
        for inst, values, changes in walk_stage(self.df, stage, self.build_args):
            self.line = inst.line
            if inst.keyword in ("ENV", "ARG"):
                for name, value, origin in changes:
                    where = self._loc(_setting_line(inst, name), stage)  # `ENV A=1 \ B=2`: B on its own line
                    inventory.env.append(EnvVar(name, value, Origin(origin), where))
                    # pip/uv read their default index from the environment of every later RUN
                    inventory.indexes.extend(variable_indexes(name, value, where))
            elif inst.keyword == "WORKDIR":
                target = expand(inst.args.strip(), values, self.df.escape, keep_unknown=True).value
                workdir = posixpath.normpath(posixpath.join(workdir, target))
            elif inst.keyword in ("COPY", "ADD") and copied_from(inst) is None:
                words = list(inst.json_args) if inst.json_args else [expand(w, values, self.df.escape, keep_unknown=True).value for w in split_words(inst.args, self.df.escape)]
                if len(words) >= 2:
                    dest = posixpath.join(workdir, words[-1])
                    for doc in inst.heredocs:
                        target = dest if not words[-1].endswith("/") else posixpath.join(dest, doc.name)
                        heredoc_files[posixpath.normpath(target)] = (doc, inst)
                    copies.append(([w for w in words[:-1] if not w.startswith("<<")], words[-1], workdir))
            elif inst.keyword == "RUN":
                mounts = bind_mounts(inst, workdir)
                files = ContextFiles(self.context, copies, mounts, workdir, clones, heredoc_files)
                commands, truncated = self._commands(inst, values)
                for cmd, line in commands:
                    self._command(cmd, line, stage, in_image, values, files, inventory)
                for name, value in settings_ending_with_run(inst.args, commands, TRACKED_BUILD_ENV, _builds, values):
                    inventory.env.append(EnvVar(name, value, Origin.RUN_ONLY, self._loc(inst.line, stage)))
                size = len(inst.args) + sum(len(doc.body) for doc in inst.heredocs)
                if size > MAX_RUN_TEXT:
                    inventory.problems.append(ReadProblem(_too_long(size), self._loc(inst.line, stage)))
                elif truncated:
                    inventory.problems.append(ReadProblem(TRUNCATED_RUN, self._loc(inst.line, stage)))

    def _commands(self, inst: Instruction, values: Mapping[str, str]) -> tuple[list[tuple[SimpleCommand, int]], bool]:
        """Every simple command of a RUN with its line; True when reading stopped early."""
        out: list[tuple[SimpleCommand, int]] = []
        if len(inst.args) + sum(len(doc.body) for doc in inst.heredocs) > MAX_RUN_TEXT:
            return out, True
        env = dict(values)
        if inst.json_args is not None:
            argv = list(inst.json_args)
            if argv and argv[0].rsplit("/", 1)[-1] in _SHELL_EXES and len(argv) >= 3 and argv[1].startswith("-") and "c" in argv[1]:
                script = split_commands(argv[2], env, arch=_ARCH)
                return [(cmd, inst.line) for cmd in script], script.truncated
            if argv:
                out.append((SimpleCommand(tuple(argv), 0, (), env, " ".join(argv)), inst.line))
            return out, False
        outer = split_commands(inst.args, env, arch=_ARCH)
        truncated = outer.truncated
        script_docs = list(inst.heredocs)
        for cmd in outer:
            if script_docs and cmd.argv and _stdin_shell(cmd.argv):
                continue  # `RUN bash <<EOF`: the heredoc is the script, read below
            out.append((cmd, inst.line_of(cmd.offset)))
        if not outer or all(_stdin_shell(c.argv) for c in outer):
            for doc in script_docs:
                script = split_commands(doc.body, env, arch=_ARCH)
                truncated = truncated or script.truncated
                out += [(cmd, doc.line + doc.body.count("\n", 0, cmd.offset)) for cmd in script]
        return out, truncated

    def _command(self, cmd: SimpleCommand, line: int, stage: Stage, in_image: bool, values: Mapping[str, str],
                 files: ContextFiles, inventory: Inventory) -> None:
        argv = list(cmd.argv)
        exe = argv[0].rsplit("/", 1)[-1] if argv else ""
        self.work.setdefault(stage.label, ([], []))[0].append(exe)
        loc = _in_branch(self._loc(line, stage), cmd)
        if exe == "cd" and len(argv) >= 2:
            files.script.cwd = posixpath.normpath(posixpath.join(files.script.cwd, argv[1]))
            return
        if exe == "git" and "clone" in argv:
            record_clone(argv, files.script)
            return
        for name, value in build_settings(cmd, values):
            inventory.env.append(EnvVar(name, value, Origin.RUN, loc))
        if re.fullmatch(r"python(\d+(\.\d+)?)?", exe) and len(argv) >= 3 and argv[1] == "setup.py" and argv[2] in ("install", "develop", "bdist_wheel", "build_ext"):
            self._source_build(files.script.cwd, "setup.py", argv, cmd, loc, in_image, files, inventory)
            return
        if re.fullmatch(r"python(\d+(\.\d+)?)?", exe) and len(argv) >= 2 and argv[1].endswith("use_existing_torch.py"):
            # vLLM's script that drops torch from its own requirement files: later builds keep the image's torch
            inventory.installs.append(InstallCommand("python", (), ("use_existing_torch",), cmd.text or " ".join(argv), loc))
            return
        if disables_vllm_free_memory_check(argv):  # recorded like an install: the line changes what the image runs
            inventory.installs.append(InstallCommand(exe, (), (VLLM_FREE_MEMORY_CHECK_EDIT,), cmd.text or " ".join(argv), loc))
            return
        if exe == "uv" and len(argv) >= 2 and argv[1] == "sync":
            # uv sync installs the lock; with no uv.lock copied in, it resolves pyproject.toml (and writes the lock)
            locked = files.resolve("uv.lock") is not None
            name, module = ("uv.lock", "locks") if locked else ("pyproject.toml", "pyproject")
            self._read_project_file(name, module, in_image, files, loc, stage, inventory, cmd)
            return
        install_argv, wheel_only = _as_install(_resolvable(argv))
        parsed = parse_install_command(install_argv, loc)
        if parsed is None:
            return
        _pinned_to_variables(argv, parsed)
        in_image = in_image and not wheel_only  # `pip wheel`: built into a folder, not installed
        if parsed.command.tool in ("pip", "uv"):
            # PIP_*/UV_* index variables set for this command (prefix or export) count like its own index options
            for name in INDEX_VARIABLES:
                if name in cmd.env and cmd.env[name] != values.get(name):
                    parsed.indexes.extend(variable_indexes(name, cmd.env[name], loc))
            parsed.indexes[:] = [replace(i, url=NAMED_INDEX.sub("", i.url)) for i in parsed.indexes]  # uv --index name=url
        if (parsed.command.tool in ("pip", "uv") and any(re.fullmatch(r"\.(\[[^\]]*\])?", w) for w in argv if not w.startswith("-"))
                and repo_of(files.script.cwd, files.script) is None):  # `pip install .` or `.[extra,...]`
            self._read_project_file("pyproject.toml", "pyproject", in_image, files, loc, stage, inventory, None, argv)
        self._add_install(parsed, cmd, loc, in_image, files, inventory, stage)

    def _add_install(self, parsed: InstallParse, cmd: SimpleCommand, loc: Location, in_image: bool,
                     files: ContextFiles, inventory: Inventory, stage: Stage) -> None:
        role_override = None if in_image else Role.BUILD
        text = cmd.text or parsed.command.text
        packages = [p if role_override is None or p.role != "requirement" else replace(p, role=role_override) for p in parsed.packages]
        names = list(parsed.command.packages)
        # local folders (`pip install .`, `pip install ./xformers`) inside a cloned repository
        if parsed.command.tool in ("pip", "uv"):
            for word in _local_paths(cmd.argv):
                repo = repo_of(posixpath.normpath(posixpath.join(files.script.cwd, word)), files.script)
                if repo is not None:
                    name, url = repo
                    pkg = Package(name=name, url=f"git+{url}" if not url.startswith("git+") else url, role=role_override or Role.REQUIREMENT,
                                  editable="-e" in cmd.argv or "--editable" in cmd.argv, no_deps=parsed.command.no_deps, location=loc)
                    packages.append(pkg)
                    names.append(name)
        inventory.installs.append(replace(parsed.command, packages=tuple(names), text=text))
        inventory.packages.extend(packages)
        inventory.indexes.extend(parsed.indexes)
        inventory.problems.extend(parsed.problems)
        for listed, role in ((parsed.requirement_files, Role.REQUIREMENT), (parsed.constraint_files, Role.CONSTRAINT)):
            for name in listed:
                self._read_listed_file(name, role, role_override, files, loc, stage, inventory)

    def _read_listed_file(self, name: str, role: Role, role_override: Role | None, files: ContextFiles, loc: Location,
                          stage: Stage, inventory: Inventory) -> None:
        """Read a ``-r``/``-c`` file that the build copied (or bind-mounted) from the context."""
        if (inline := files.inline(name)) is not None:
            self._read_inline_file(inline, name, role, role_override, loc, stage, inventory)
            return
        found = files.resolve(name)
        if found is None:
            self.work.setdefault(stage.label, ([], []))[1].append(name)
            return
        try:
            sub = requirements.read(found, self._text_options())
        except Exception as exc:  # an unreadable included file is a problem at the RUN line
            message = getattr(exc, "message", str(exc))
            inventory.problems.append(ReadProblem(f"cannot read {name} (from {found}): {message}", loc))
            return
        inventory.packages.extend(replace(pkg, role=_included_role(pkg.role, role, role_override), location=_under(pkg.location, loc))
                                  for pkg in sub.packages)
        inventory.indexes.extend(replace(i, location=_under(i.location, loc)) for i in sub.indexes)
        inventory.installs.extend(replace(c, location=loc) for c in sub.installs if c.tool == "requirements" and c.options)
        inventory.problems.extend(sub.problems)
        inventory.pragmas.extend(sub.pragmas)

    def _read_inline_file(self, doc: Heredoc, name: str, role: Role, role_override: Role | None, loc: Location, stage: Stage,
                          inventory: Inventory) -> None:
        """A requirements file written by ``COPY <<EOF``, located at its lines in the Dockerfile."""
        with tempfile.TemporaryDirectory(prefix="envcheck-heredoc-") as tmp:
            # the file's own name where it is a plain one (not `.`, `..`, too long for the file system)
            base = posixpath.basename(name)
            path = Path(tmp) / (base if re.fullmatch(r"(?!\.\.?$)[\w.+-]{1,128}", base, re.ASCII) else "requirements.txt")
            try:
                path.write_text(doc.body, encoding="utf-8", errors="surrogatepass")
                sub = requirements.read(path, self._text_options())
            except Exception as exc:  # reported at the RUN line; the rest of the Dockerfile is still read
                inventory.problems.append(ReadProblem(f"cannot read the heredoc {name}: {getattr(exc, 'message', exc)}", loc))
                return

        def here(where: Location | None) -> Location:
            if where is None or where.path != str(path) or where.line is None:
                return loc
            return replace(loc, line=doc.line + where.line - 1)

        inventory.packages.extend(replace(pkg, role=_included_role(pkg.role, role, role_override), location=here(pkg.location))
                                  for pkg in sub.packages)
        inventory.indexes.extend(replace(i, location=here(i.location)) for i in sub.indexes)
        inventory.problems.extend(replace(p, location=here(p.location)) for p in sub.problems)

    def _text_options(self) -> ReadOptions:
        return ReadOptions(max_text_bytes=self.options.max_text_bytes, with_lock=False, root=self.context)

    def _read_project_file(self, name: str, module: str, in_image: bool, files: ContextFiles, loc: Location, stage: Stage,
                           inventory: Inventory, cmd: SimpleCommand | None, argv: list[str] | None = None) -> None:
        """``uv sync`` reads uv.lock, ``pip install .`` pyproject.toml, with the extras and groups asked."""
        from envcheck.scopes import install_scopes, scopes_asked

        found = files.resolve(name)
        if found is None:
            self.work.setdefault(stage.label, ([], []))[1].append(name)
            return
        try:
            sub = importlib.import_module(f"envcheck.sources.{module}").read(found, self._text_options())
        except Exception as exc:  # a broken project file is a problem at the RUN line, the rest is still read
            inventory.problems.append(ReadProblem(f"cannot read {name} (from {found}): {getattr(exc, 'message', exc)}", loc))
            return
        sub = install_scopes(sub, *scopes_asked(list(cmd.argv) if cmd is not None else argv or []))
        role_override = None if in_image else Role.BUILD
        for pkg in sub.packages:
            new_role = role_override if role_override is not None and pkg.role in ("requirement", "lock") else pkg.role
            inventory.packages.append(replace(pkg, role=new_role, location=_under(pkg.location, loc)))
        inventory.indexes.extend(replace(i, location=_under(i.location, loc)) for i in sub.indexes)
        inventory.wheels.extend(replace(w, location=_under(w.location, loc)) for w in sub.wheels)
        inventory.problems.extend(sub.problems)
        inventory.pragmas.extend(sub.pragmas)
        if cmd is not None:
            options = tuple(w for w in cmd.argv[2:] if w.startswith("-"))
            names = tuple(p.name for p in sub.packages)
            inventory.installs.append(InstallCommand(tool="uv", packages=names, options=options,
                                                     text=cmd.text, location=loc))

    def _source_build(self, cwd: str, tool: str, argv: list[str], cmd: SimpleCommand, loc: Location, in_image: bool,
                      files: ContextFiles, inventory: Inventory) -> None:
        repo = repo_of(cwd, files.script)
        if repo is None:
            return
        name, url = repo
        role = Role.REQUIREMENT if in_image else Role.BUILD
        inventory.packages.append(Package(name=name, url=f"git+{url}", role=role, location=loc))
        inventory.installs.append(InstallCommand(tool=tool, packages=(name,), options=(), text=cmd.text or " ".join(argv), location=loc))


def _in_branch(loc: Location, cmd: SimpleCommand) -> Location:
    if cmd.tolerated:
        loc = replace(loc, tolerated=True)
    if cmd.branch is None:
        return loc
    return replace(loc, branch=cmd.branch.describe(), fallback=cmd.branch.fallback)


def _under(where: Location | None, loc: Location) -> Location:
    """A fact's location in a file a RUN read (-r file, pyproject), with the RUN's stage and branch."""
    if where is None:
        return loc
    return replace(where, stage=loc.stage, branch=loc.branch, fallback=loc.fallback, outside_image=loc.outside_image,
                   tolerated=loc.tolerated)


def shipped_packages(ref: str, location: Location | None) -> list[Package]:
    """vLLM an image's tag names, and torch, flash-attn and triton a known CUDA 13 NGC base contains (CUDA 12
    bases: G1-cuda12-base)."""
    facts = safe_describe(ref)
    if facts is None:
        return []
    out: list[Package] = []
    if facts.vllm is not None:  # what pip installs over it must meet that vLLM's pins (G9-pin-conflict)
        out.append(Package(name="vllm", version=facts.vllm, specifier=f"=={facts.vllm}", installed=True, role=Role.INSTALLED, location=location))
    if not facts.ngc_torch or facts.cuda_major is None or facts.cuda_major < 13:
        return out
    torch = facts.torch
    if torch is not None and "+" in torch:
        out.append(Package(name="torch", version=torch, specifier=f"=={torch}", installed=True, role=Role.INSTALLED, location=location))
    if facts.flash_attn is not None or facts.family == "ngc-pytorch":
        version = facts.flash_attn if facts.flash_attn and facts.flash_attn[0].isdigit() else None
        out.append(Package(name="flash-attn", version=version, installed=True, role=Role.INSTALLED, location=location))
    if facts.triton is not None:
        out.append(Package(name="triton", version=facts.triton, installed=True, role=Role.INSTALLED, location=location))
    return out


def _as_install(argv: list[str]) -> tuple[list[str], bool]:
    """``pip wheel X`` read as ``pip install X``, and True: its packages are built, not installed."""
    for i, word in enumerate(argv):
        if word == "wheel" and i > 0 and re.fullmatch(r"pip(\d+(\.\d+)?)?", argv[i - 1].rsplit("/", 1)[-1]):
            return [*argv[:i], "install", *argv[i + 1 :]], True
        if not (word.startswith("-") or i == 0 or word == "pip" or (i == 1 and argv[0].rsplit("/", 1)[-1].startswith("python"))):
            break
    return argv, False


def _setting_line(inst: Instruction, name: str) -> int:
    """The physical line of ``name``'s setting in a (continued) ENV or ARG instruction."""
    m = re.search(rf"(?:^|\s){re.escape(name)}(?=[=\s]|$)", inst.args)
    return inst.line_of(m.start() + (m.group(0)[:1].isspace())) if m else inst.line


def build_settings(cmd: SimpleCommand, known: Mapping[str, str]) -> list[tuple[str, str]]:
    """GPU-target settings a build command runs with that differ from the stage's (env, -D, CMAKE_ARGS)."""
    argv = list(cmd.argv)
    if not _builds(argv):
        return []
    cmake = argv[0].rsplit("/", 1)[-1] == "cmake"
    if cmake and argv[1:2] and argv[1] in ("--build", "--install", "-E"):
        return []  # only cmake's configure step reads GPU targets
    found = [(name, cmd.env[name]) for name in TRACKED_BUILD_ENV if name in cmd.env and cmd.env[name] != known.get(name)]
    words = argv[1:] if cmake else []
    if not cmake and "CMAKE_ARGS" in cmd.env and cmd.env["CMAKE_ARGS"] != known.get("CMAKE_ARGS"):
        words += split_words(cmd.env["CMAKE_ARGS"])  # read by pip builds (scikit-build, llama-cpp-python), not by cmake
    for i, word in enumerate(words):
        if word == "-D" and i + 1 < len(words):
            word = "-D" + words[i + 1]
        m = _CMAKE_ARCH_FLAG.match(word)
        value = m.group(1).strip("\"'") if m else None
        if value is not None and value != known.get("CMAKE_CUDA_ARCHITECTURES"):  # an ARG passed on: reported where set
            found.append(("CMAKE_CUDA_ARCHITECTURES", value))
    return found


def _builds(argv: list[str]) -> bool:
    exe = argv[0].rsplit("/", 1)[-1] if argv else ""
    return bool(re.fullmatch(r"(pip\d?(\.\d+)?|python\d?(\.\d+)?|uv|conda|mamba|micromamba|make|cmake|ninja)", exe))


def _resolvable(argv: list[str]) -> list[str]:
    """Words with shell variables or command substitutions (``$(...)``, backquotes) we could not resolve:
    keep the package name, drop the rest."""
    out: list[str] = []
    for word in argv:
        if "$" not in word and "`" not in word:
            out.append(word)
            continue
        if not out and INTERPRETER_PATH.fullmatch(word):  # `$VENV/bin/pip install ...`: pip, wherever it lives
            out.append(word.rsplit("/", 1)[-1])
            continue
        m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._\-]*(?:\[[^\]$`]*\])?)\s*(?:==|>=|<=|~=|!=|<|>|@)", word)
        if m and "$" not in m.group(1) and "`" not in m.group(1):
            out.append(m.group(1))
        elif out and out[-1] in VALUE_OPTIONS:
            out.pop()  # an option whose value we cannot know (`--retries "$N"`, `-i "$MIRROR"`)
    return out


# `torch==${TORCH_VERSION}` with the variable unset here: an exact pin whose version the input does not say.
_VARIABLE_PIN = re.compile(r"([A-Za-z0-9][A-Za-z0-9._\-]*)(?:\[[^\]$`]*\])?\s*===?\s*(\$\{?[A-Za-z_][A-Za-z0-9_]*\}?)")


def _pinned_to_variables(argv: list[str] | tuple[str, ...], parsed: InstallParse) -> None:
    """Mark the packages ``argv`` pins to an unset variable: pinned, to a version this input does not know."""
    pins = {canonical(m.group(1)): m.group(2) for word in argv if (m := _VARIABLE_PIN.fullmatch(word))}
    if pins:
        parsed.packages = [replace(p, version_from=pins[p.name]) if p.name in pins and not p.version else p
                           for p in parsed.packages]


_PATH_VALUED_OPTIONS = frozenset({
    "-r", "--requirement", "-c", "--constraint", "-f", "--find-links", "-t", "--target", "--prefix", "--root",
    "--src", "--cache-dir", "--log", "--report", "-w", "--wheel-dir", "-d", "--dest", "--build-constraint",
    "--overrides", "--override", "--python", "-p",
})


def _local_paths(argv: tuple[str, ...]) -> list[str]:
    """Arguments pip reads as local folders: ``.``, ``./x``, ``/x``, ``a/b`` (pip's own rule: a path separator)."""
    found: list[str] = []
    after_option = ""
    for word in argv[1:]:
        # the value of -r/-c/-f/--target...: a requirement file or a folder pip reads, not a project it builds
        if after_option in _PATH_VALUED_OPTIONS:
            after_option = ""
            continue
        after_option = word
        if word.startswith("-") or "://" in word or "@" in word or re.search(r"[=<>~!;\[]", word):
            continue
        if word in (".", "..") or "/" in word:
            found.append(word)
    return found


_NOP = re.compile(r"^/bin/sh -c #\(nop\)\s+(.*)$", re.S)
_BUILDKIT_SUFFIX = re.compile(r"\s*# buildkit\s*$")
_ARGS_PREFIX = re.compile(r"^\|(\d+)((?:\s+[A-Za-z_][A-Za-z0-9_]*=\S*)*)\s+(.*)$", re.S)
_SHELL_PREFIX = re.compile(r"^((?:/usr)?/bin/(?:ba|da|z)?sh)((?:\s+-[A-Za-z]+|\s+-o\s+\S+)*)\s+-c\s+(.*)$", re.S)
_HISTORY_NAME = re.compile(r"(?:^|\s)([A-Za-z_][A-Za-z0-9_]*)=")


def _history_env_pairs(inst: Instruction) -> list[tuple[str, str]]:
    """History prints ENV values unquoted (``ENV LIST=8.0 9.0``): a pair runs until the next ``NAME=``."""
    starts = list(_HISTORY_NAME.finditer(inst.args))
    if not starts:
        return env_pairs(inst, "\\")
    ends = [m.start() for m in starts[1:]] + [len(inst.args)]
    return [(m.group(1), _unquoted(inst.args[m.end() : end].strip()))
            for m, end in zip(starts, ends, strict=True)]


def _unquoted(value: str) -> str:
    return value[1:-1] if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'" else value


def inventory_from_history(created_by: list[str], origin: str) -> Inventory:
    """Facts from ``history[].created_by`` (legacy builder and BuildKit), located at ``origin!history[N]``."""
    inventory = Inventory()
    env: dict[str, str] = {}
    for index, raw in enumerate(created_by):
        loc = Location(origin, member=f"history[{index}]")
        text = _BUILDKIT_SUFFIX.sub("", raw or "").strip()
        if m := _NOP.match(text):
            text = m.group(1).strip()
        keyword, _, rest = text.partition(" ")
        upper = keyword.upper()
        if upper in ("ENV", "ARG") and (m or keyword.isupper()):
            inst = Instruction(keyword=upper, args=rest.strip(), line=0, end_line=0)
            try:
                if upper == "ENV":
                    for name, value in _history_env_pairs(inst):
                        value = expand(value, env, keep_unknown=True).value
                        env[name] = value
                        inventory.env.append(EnvVar(name, value, Origin.ENV, loc))
                else:
                    for word in split_words(inst.args):
                        name, eq, value = word.partition("=")
                        if eq:
                            inventory.env.append(EnvVar(name, expand(value, env).value, Origin.ARG, loc))
            except DockerfileSyntaxError as exc:
                inventory.problems.append(ReadProblem(f"history entry {index}: {exc.message}", loc))
            continue
        if m:
            continue  # other metadata steps: CMD, LABEL, ADD file:... in /, WORKDIR
        if upper == "RUN":
            text = rest.strip()
        elif upper in ("COPY", "ADD", "WORKDIR", "LABEL", "CMD", "ENTRYPOINT", "EXPOSE", "USER", "VOLUME", "SHELL", "HEALTHCHECK", "STOPSIGNAL", "ONBUILD", "MAINTAINER"):
            continue
        step_env = dict(env)
        if a := _ARGS_PREFIX.match(text):
            step_env.update(word.partition("=")[::2] for word in a.group(2).split())
            text = a.group(3)
        s = _SHELL_PREFIX.match(text)
        script = s.group(3) if s else text
        if len(script) > MAX_RUN_TEXT:
            inventory.problems.append(ReadProblem(f"history entry {index}: {_too_long(len(script))}", loc))
            continue
        commands = split_commands(script, step_env)
        if commands.truncated:
            inventory.problems.append(ReadProblem(f"history entry {index}: {TRUNCATED_RUN}", loc))
        for cmd in commands:
            parsed = parse_install_command(_resolvable(list(cmd.argv)), _in_branch(loc, cmd))
            if parsed is None:
                continue
            _pinned_to_variables(cmd.argv, parsed)
            inventory.installs.append(replace(parsed.command, text=cmd.text or parsed.command.text))
            inventory.packages.extend(parsed.packages)
            inventory.indexes.extend(parsed.indexes)
            inventory.problems.extend(parsed.problems)
        for cmd in commands:
            for name, value in build_settings(cmd, env):
                inventory.env.append(EnvVar(name, value, Origin.RUN, _in_branch(loc, cmd)))
    return inventory
