"""Compose files (``compose.yaml``, ``docker-compose*.yml``): what each service runs and on which image.

Values are interpolated from the ``.env`` beside the file, never the shell envcheck runs in, so a check means
the same everywhere; ``extends``, ``include`` and ``profiles`` are followed (MAX_FILES, MAX_EXTENDS)."""

from __future__ import annotations

import itertools
import re
import shlex
from dataclasses import replace
from pathlib import Path
from typing import Any

from envcheck.errors import InputError, UsageError
from envcheck.inspect import shell_words
from envcheck.inspect.device_query import device_query
from envcheck.inspect.image_reference import parse_reference
from envcheck.inspect.launch import image_entrypoint
from envcheck.inspect.pip_args import variable_indexes
from envcheck.inspect.yaml_tree import Scalar, YamlError, YList, YMap, line_of, load_all
from envcheck.knowledge.base_images import ml_image
from envcheck.limits import read_regular
from envcheck.model import BaseImage, EnvVar, Inventory, Location, Origin, ReadProblem
from envcheck.readings import launches_from_json
from envcheck.sources import ReadOptions, move_locations, referenced, shell
from envcheck.sources.requirements import read_text_file, text_limit

KIND = "compose"
MAX_FILES = 20  # the compose file, the files it includes and those its services extend
MAX_EXTENDS = 10  # extends chains; compose itself refuses cycles
MAX_SERVICES = 1_000  # services read from one compose file and its includes; real ones have a few dozen
_BRACES = re.compile(r"\$\{|\}")
_VAR = re.compile(r"\$(?:(\$)|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])|(?=\}))|([A-Za-z_][A-Za-z0-9_]*))")


_SERVICES = re.compile(r"(?m)^services\s*:\s*$")
_IMAGE_OR_BUILD = re.compile(r"(?m)^\s+(image|build)\s*:")
SNIFF_LIMIT = 1 << 20  # how far past the head a file with top-level services: is searched for its first image/build


def sniff(path: Path, head: bytes) -> bool:
    text = "" if b"\x00" in head else head.decode("utf-8", "replace")  # binary junk matches no pattern
    if not _SERVICES.search(text):
        return False
    if _IMAGE_OR_BUILD.search(text):
        return True
    # top-level services: with no image/build in the head: long x- anchors or commented-out services can push the
    # first service that runs past it, so the rest of the file (bounded) decides
    try:
        data, _stat = read_regular(path, SNIFF_LIMIT)
    except OSError:
        return False
    return b"\x00" not in data and bool(_IMAGE_OR_BUILD.search(data.decode("utf-8", "replace")))


def read(path: Path, options: ReadOptions) -> Inventory:
    reader = _Compose(path, options)
    inventory = Inventory()
    document = reader.load(path, inventory)
    if document is None:
        return inventory
    services = reader.services(path, document, inventory, depth=0)
    if len(services) > MAX_SERVICES:  # 20,000 services (2 MB) took 18 s and 540 MB, a finding or more each
        name, (first, file) = next((n, s) for k, (n, s) in enumerate(services.items()) if k == MAX_SERVICES)
        inventory.problems.append(ReadProblem(f"more than {MAX_SERVICES} services: {name} and those after it were not read",
                                              Location(str(file), line=line_of(first))))
        services = dict(itertools.islice(services.items(), MAX_SERVICES))
    launches: list[dict[str, Any]] = []
    # images a service of this file builds (build: + image: naming the result): others that run them run its build
    reader.built = {str(s.get("image")) for s, _file in services.values() if s.get("build") is not None and isinstance(s.get("image"), str)}
    for name, (service, file) in services.items():
        reader.service(name, service, file, inventory, launches)
    if launches:
        inventory.host = replace(inventory.host, launch=launches_from_json(launches))
    return inventory


MAX_INTERPOLATION_DEPTH = 64  # ${A:-${B:-...}} in one value; real files nest two or three (as in a Dockerfile)


class _NestedTooDeep(Exception):
    def __init__(self, line: int | None = None) -> None:
        super().__init__(f"variable substitution nested more than {MAX_INTERPOLATION_DEPTH} levels deep")
        self.line = line


def interpolate(text: str, values: dict[str, str], errors: list[str], depth: int = 0) -> str:
    """``text`` with compose's ``${...}`` forms replaced; ``${VAR?msg}`` with VAR unset adds to ``errors``."""
    out: list[str] = []
    i = 0
    while (m := _VAR.search(text, i)) is not None:
        out.append(text[i:m.start()])
        i = m.end()
        if m.group(1) or m.group(4):  # $$ or $VAR
            out.append("$" if m.group(1) else values.get(m.group(4), ""))
            continue
        name, op = m.group(2), m.group(3) or ""
        end = _closing(text, m.end())
        if end < 0:  # unterminated: compose refuses it; keep the text
            out.append(text[m.start():])
            return "".join(out)
        if op and depth >= MAX_INTERPOLATION_DEPTH:
            raise _NestedTooDeep
        word = interpolate(text[m.end():end], values, errors, depth + 1) if op else ""
        value = values.get(name)
        empty = value is None or (op.startswith(":") and value == "")
        if op.endswith("?") and empty:
            unset = "not set or empty" if op.startswith(":") else "not set"
            errors.append(f"{name} is {unset}: {word or 'required variable'}")
        if op.endswith("-"):
            out.append(word if empty else value or "")
        elif op.endswith("+"):
            out.append("" if empty else word)
        else:
            out.append(value or "")
        i = end + 1
    out.append(text[i:])
    return "".join(out)


def _closing(text: str, start: int) -> int:
    """The index of the ``}`` closing a ``${`` whose body starts at ``start``; -1 if none."""
    depth = 1
    for m in _BRACES.finditer(text, start):
        depth += 1 if m.group() == "${" else -1
        if depth == 0:
            return m.start()
    return -1


def dotenv(folder: Path) -> dict[str, str]:
    """``KEY=VALUE`` lines of the ``.env`` file in ``folder`` (quotes removed, ``export`` allowed)."""
    try:
        data, _stat = read_regular(folder / ".env", 1 << 20)
    except OSError:
        return {}
    values: dict[str, str] = {}
    for raw in data.decode("utf-8", "replace").splitlines():
        line = raw.strip().removeprefix("export ").strip()
        if not line or line.startswith("#"):
            continue
        key, eq, value = line.partition("=")
        if not eq or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", key.strip()):
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        else:
            value = value.split(" #", 1)[0].rstrip()
        values[key.strip()] = value
    return values


class _Service(YMap):
    """A service put together by ``extends``: each key remembers the file it is written in."""
    def __init__(self, line: int) -> None:
        super().__init__(line)
        self.files: dict[str, Path] = {}


class _Compose:
    def __init__(self, path: Path, options: ReadOptions) -> None:
        self.root = path
        self.options = options
        self.files = 0
        self.values = dotenv(path.parent)
        self.dockerfiles: set[tuple[str, tuple[tuple[str, str], ...], str]] = set()
        self.included: set[Path] = set()
        self.lines: dict[str, list[str]] = {}  # each compose file's lines: where a command's flags are written
        self.built: set[str] = set()  # images services of this file build

    def load(self, path: Path, inventory: Inventory) -> YMap | None:
        """The first document of a compose file, interpolated; problems go to ``inventory``."""
        self.files += 1
        if self.files > MAX_FILES:
            inventory.problems.append(ReadProblem(f"more than {MAX_FILES} compose files through include/extends; {path} was not read",
                                                  Location(str(self.root))))
            return None
        text, problems = read_text_file(path, text_limit(self.options))
        inventory.problems.extend(problems)
        self.lines[str(path)] = text.splitlines()
        try:
            documents = load_all(text)
        except YamlError as exc:
            if path == self.root:
                raise InputError(f"{path}: {exc.message}", str(path), exc.line) from None
            inventory.problems.append(ReadProblem(f"{path}: {exc.message}", Location(str(path), line=exc.line)))
            return None
        document = next((d for d in documents if d is not None), None)
        if document is None:
            return None
        if not isinstance(document, YMap):
            inventory.problems.append(ReadProblem("a compose file is a mapping (services: ...)", Location(str(path), line=line_of(document))))
            return None
        errors: list[tuple[int, str]] = []
        try:
            result = self._interpolated(document, errors)
        except _NestedTooDeep as exc:
            if path == self.root:
                raise InputError(f"{path}: {exc}", str(path), exc.line) from None
            inventory.problems.append(ReadProblem(f"{path}: {exc}", Location(str(path), line=exc.line)))
            return None
        for line, message in errors:
            # a note: such variables are usually secrets kept out of the repository (an uncommitted .env)
            inventory.problems.append(ReadProblem(f"docker compose needs a value here ({message}); envcheck read it as empty",
                                                  Location(str(path), line=line), note=True))
        return result if isinstance(result, YMap) else None

    def _interpolated(self, value: Any, errors: list[tuple[int, str]]) -> Any:
        if isinstance(value, YMap):
            copy = YMap(value.line)
            for key, item in value.items():
                copy[key] = self._interpolated(item, errors)
                copy.key_lines[key] = value.line_of(key)
            return copy
        if isinstance(value, YList):
            seq = YList(value.line)
            seq.extend(self._interpolated(item, errors) for item in value)
            return seq
        if isinstance(value, Scalar) and "$" in value:
            found: list[str] = []
            try:
                text = interpolate(str(value), self.values, found)
            except _NestedTooDeep:
                raise _NestedTooDeep(value.line) from None
            errors.extend((value.line, message) for message in found)
            return Scalar(text, value.line, value.null, value.style_block)
        return value

    def services(self, path: Path, document: YMap, inventory: Inventory, depth: int) -> dict[str, tuple[YMap, Path]]:
        found: dict[str, tuple[YMap, Path]] = {}
        includes = document.get("include")
        for item in includes if isinstance(includes, YList) else []:
            names = item.get("path") if isinstance(item, YMap) else item
            for name in names if isinstance(names, YList) else [names]:
                if not isinstance(name, str) or not name or depth >= 5:
                    continue
                other = referenced(path.parent, name)
                if other.resolve() in self.included or other.resolve() == self.root.resolve():
                    inventory.problems.append(ReadProblem(f"include: {name} is already included (a cycle); docker compose refuses it",
                                                          Location(str(path), line=line_of(name))))
                    continue
                if not other.is_file():
                    inventory.problems.append(ReadProblem(f"include: {name} is not a file next to {path.name}", Location(str(path), line=line_of(name))))
                    continue
                self.included.add(other.resolve())
                if (sub := self.load(other, inventory)) is not None:
                    found.update(self.services(other, sub, inventory, depth + 1))
        services = document.get("services")
        if isinstance(services, YMap):
            for name, service in services.items():
                if isinstance(service, YMap):
                    found[name] = (self._extended(service, services, path, inventory, 0), path)
        return found

    def _extended(self, service: YMap, siblings: YMap, path: Path, inventory: Inventory, depth: int) -> YMap:
        spec = service.get("extends")
        if spec is None:
            return service
        if depth >= MAX_EXTENDS:
            inventory.problems.append(ReadProblem(f"extends goes more than {MAX_EXTENDS} levels deep", Location(str(path), line=line_of(spec))))
            return service
        base_name = spec.get("service") if isinstance(spec, YMap) else spec
        file = spec.get("file") if isinstance(spec, YMap) else None
        base: Any = None
        if isinstance(file, str) and file:
            other = referenced(path.parent, file)
            document = self.load(other, inventory) if other.is_file() else None
            if document is None:
                inventory.problems.append(ReadProblem(f"extends: cannot read {file}", Location(str(path), line=line_of(spec))))
                return service
            pool = document.get("services")
            base = pool.get(str(base_name)) if isinstance(pool, YMap) else None
            if isinstance(base, YMap) and isinstance(pool, YMap):
                base = self._extended(base, pool, other, inventory, depth + 1)
        else:
            base = siblings.get(str(base_name))
            if isinstance(base, YMap) and base is not service:
                base = self._extended(base, siblings, path, inventory, depth + 1)
        if not isinstance(base, YMap) or base is service:
            inventory.problems.append(ReadProblem(f"extends: no service {base_name!s}", Location(str(path), line=line_of(spec))))
            return service
        merged = _Service(service.line)
        for source, source_path in ((base, path if not isinstance(file, str) or not file else referenced(path.parent, file)), (service, path)):
            for key, value in source.items():
                if key != "extends":
                    merged[key] = value
                    merged.key_lines[key] = source.line_of(key)
                    merged.files[key] = source.files.get(key, source_path) if isinstance(source, _Service) else source_path
        return merged

    def service(self, name: str, service: YMap, file: Path, inventory: Inventory, launches: list[dict[str, Any]]) -> None:
        profiles = service.get("profiles")
        branch = (f"only with the compose profile {', '.join(map(str, profiles))} (it starts only when asked for)"
                  if isinstance(profiles, YList) and profiles else None)

        def file_of(key: str) -> Path:
            return service.files.get(key, file) if isinstance(service, _Service) else file

        def at(key: str, line: int | None = None) -> Location:  # a service is reported as a stage named after it
            return Location(str(file_of(key)), line=line or service.line_of(key), branch=branch, stage=name, on_request=bool(branch))

        image = service.get("image")
        build = service.get("build")
        platform = service.get("platform")
        command_file = file_of("command") if "command" in service else file_of("entrypoint")
        before = len(launches)
        command = self._commands(name, service, command_file, inventory, launches, branch, str(image) if isinstance(image, str) else "")
        if len(launches) == before and uses_gpu(service):
            # a GPU service whose server envcheck cannot read from a command (Ollama, llama.cpp images started by
            # their own entrypoint): it takes what it needs of the one pool, with no cap that envcheck can see
            where = at("image") if "image" in service else at("build")
            cap = _memory_limit(service)  # mem_limit: the container's cgroup cap, which unified memory counts too
            # the image's own entrypoint may take its tensor-parallel size from the environment (TENSOR_PARALLEL_SIZE=2)
            tp = [(value, line) for key, value, line in _environment(service.get("environment"))
                  if _TP_ENV.fullmatch(key) and value.strip().isdigit()]
            launches.append({"origin": where.path, "line": where.line, "tool": str(image) if isinstance(image, str) else name,
                             "service": name, "memory": None, "uncapped": cap is None,
                             "settings": [{"key": "tensor_parallel_size", "value": v, "line": ln} for v, ln in tp[-1:]],
                             **({"tp": int(tp[-1][0])} if tp else {}),
                             **({"memory_cap_gb": cap} if cap is not None else {}), **({"optional": True} if branch else {})})
        for launch in launches[before:]:
            if exclusive := _exclusive(service, launch):
                launch["exclusive"] = exclusive
        if build is not None:
            self._build(name, build, file_of("build"), inventory, at("build"), platform if isinstance(platform, str) else None)
        elif isinstance(image, Scalar) and image and not image.null and str(image) not in self.built:
            try:
                parse_reference(image)
            except UsageError as exc:
                inventory.problems.append(ReadProblem(f"service {name}: image {image}: {exc.message}", at("image")))
            else:
                if len(launches) > before or uses_gpu(service) or isinstance(platform, str) or ml_image(str(image)):
                    inventory.images.append(BaseImage(ref=str(image), platform=str(platform) if isinstance(platform, str) and platform else None,
                                                      location=at("image"), stage=name, stages=(name,), runs=device_query(command)))
                    # NGC's torch, flash-attn: what pip keeps (imported here: discovery sniffs YAML with this module)
                    from envcheck.sources.dockerfile import shipped_packages

                    inventory.packages.extend(shipped_packages(str(image), at("image")))
        for key, value, line in _environment(service.get("environment")):
            loc = at("environment", line)
            inventory.env.append(EnvVar(key, value, Origin.ENV, loc))
            inventory.indexes.extend(variable_indexes(key, value, loc))

    def _commands(self, name: str, service: YMap, file: Path, inventory: Inventory, launches: list[dict[str, Any]],
                  branch: str | None, image: str) -> str:
        """Read entrypoint and command; the text when the image's entrypoint is no known server, else ""."""
        words: list[str] = []
        line = last = None  # the first and the last key that carries words (`entrypoint: []` carries none)
        for key in ("entrypoint", "command"):
            value = service.get(key)
            if isinstance(value, YList):
                written = [str(v) for v in value]
            elif isinstance(value, Scalar) and not value.null:
                try:
                    written = shell_words.split(value)
                except ValueError:
                    written = value.split()
            else:
                continue
            if written:
                words += written
                line, last = line or service.line_of(key), service.line_of(key)
        if not words or line is None:
            return ""
        text = shlex.join(words)
        entry = image_entrypoint(image)

        def where(_line: int) -> Location:  # a compose command is one value: every fact is at its key
            return Location(str(file), line=line, branch=branch, stage=name, on_request=bool(branch))

        sub = shell.read_script(text, str(file), file.parent, self.options, where)
        for facts in ("packages", "indexes", "installs", "env", "problems"):
            getattr(inventory, facts).extend(getattr(sub, facts))
        extra: dict[str, object] = {"service": f"service {name}", **({"optional": True, "branch": branch} if branch else {})}  # not started by default
        found = shell.launches(text, str(file), where, entry=entry, extra=extra)
        port = next(iter(shell.option_values(words, "--port")), None)
        for launch in found if port else []:
            launch["port"] = port
        lines = self.lines.get(str(file), [])
        for launch in found:  # a command value is one text: each flag is on the file line it is written on
            for setting in launch.get("settings", []):
                setting["line"] = _flag_line(lines, line, last or line, str(setting.get("key", ""))) or setting.get("line")
        launches.extend(found)
        return "" if entry and "entrypoint" not in service else text

    def _build(self, name: str, build: Any, file: Path, inventory: Inventory, loc: Location, platform: str | None) -> None:
        from envcheck.sources import dockerfile

        spec = build if isinstance(build, YMap) else YMap(line_of(build))
        context_text = str(build) if isinstance(build, Scalar) else str(spec.get("context") or ".")
        if re.match(r"^[a-z][a-z0-9+.-]*://|^git@", context_text):
            inventory.problems.append(ReadProblem(f"build context {context_text} is remote; its Dockerfile was not read", loc, note=True))
            return
        context = referenced(file.parent, context_text)
        args = {key: value for key, value, _line in _environment(spec.get("args"))}
        target = str(spec.get("target") or "")
        options = replace(self.options, build_args=args, target=target or None)
        inline = spec.get("dockerfile_inline")
        if isinstance(inline, Scalar) and not inline.null:  # the Dockerfile is this file's text, at its lines
            sub = _restaged(dockerfile.read_text(str(inline), str(file), context, options), name)
            first = inline.line + (1 if inline.style_block else 0)  # a block scalar starts below its `|`

            def moved(loc: Location | None) -> Location | None:
                if loc is None or loc.path != str(file) or loc.line is None:
                    return loc
                return replace(loc, line=first + loc.line - 1)

            for facts in ("images", "packages", "indexes", "installs", "env", "problems"):
                getattr(inventory, facts).extend(getattr(move_locations(sub, moved, facts), facts))
            return
        recipe = referenced(context, str(spec.get("dockerfile") or "Dockerfile"))
        key = (str(recipe), tuple(sorted(args.items())), target)
        if key in self.dockerfiles:
            return
        self.dockerfiles.add(key)
        if not recipe.is_file():
            inventory.problems.append(ReadProblem(f"build: no Dockerfile at {recipe}; it was not checked", loc, note=True))
            return
        try:
            sub = dockerfile.read(recipe, options, context)
        except InputError as exc:
            inventory.problems.append(ReadProblem(f"build: {exc.message}", loc))
            return
        if platform:
            sub.images[:] = [replace(i, platform=i.platform or platform) for i in sub.images]
        inventory.extend(_restaged(sub, name))


def _restaged(sub: Inventory, service: str) -> Inventory:
    """Stage labels named after the service (``vllm/0``): services' Dockerfiles must not share stage 0."""

    def label(stage: str | None) -> str | None:
        return f"{service}/{stage}" if stage is not None else None

    def moved(loc: Location | None) -> Location | None:
        return replace(loc, stage=label(loc.stage)) if loc is not None and loc.stage is not None else loc

    move_locations(sub, moved, "images", "packages", "indexes", "installs", "wheels", "env", "problems")
    sub.images[:] = [replace(i, stage=label(i.stage), stages=tuple(f"{service}/{s}" for s in i.stages)) for i in sub.images]
    return sub


def uses_gpu(service: YMap) -> bool:
    if service.get("gpus") is not None or str(service.get("runtime") or "") == "nvidia":
        return True
    if any(key == "NVIDIA_VISIBLE_DEVICES" for key, _value, _line in _environment(service.get("environment"))):
        return True
    devices: Any = service
    for step in ("deploy", "resources", "reservations", "devices"):
        devices = devices.get(step) if isinstance(devices, YMap) else None
    for device in devices if isinstance(devices, YList) else []:
        if isinstance(device, YMap) and (str(device.get("driver") or "") == "nvidia" or "gpu" in [str(c) for c in device.get("capabilities") or []]):
            return True
    return False


# The port a server listens on when its command names none (vLLM, SGLang defaults).
_DEFAULT_PORTS = {"vllm": "8000", "sglang": "30000"}


def _exclusive(service: YMap, launch: dict[str, Any]) -> list[str]:
    """What one container at a time can hold (container_name, a host-network port): G6 adds up only services
    that can run together."""
    held: list[str] = []
    name = service.get("container_name")
    if isinstance(name, Scalar) and not name.null and str(name):
        held.append(f"container_name {name}")
    port = launch.get("port") or _DEFAULT_PORTS.get(str(launch.get("tool") or ""))
    if str(service.get("network_mode") or "") == "host" and port:
        held.append(f"host port {port}")
    return held


_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?", re.I)


def _memory_limit(service: YMap) -> float | None:
    """``mem_limit: 6g`` (or ``deploy.resources.limits.memory``) in GB, None when not set or unreadable."""
    deploy = service.get("deploy")
    resources = deploy.get("resources") if isinstance(deploy, YMap) else None
    limits = resources.get("limits") if isinstance(resources, YMap) else None
    value = service.get("mem_limit") or (limits.get("memory") if isinstance(limits, YMap) else None)
    m = _SIZE.fullmatch(str(value).strip()) if isinstance(value, (Scalar, int)) and str(value).strip() else None
    if m is None:
        return None
    return float(m.group(1)) * float(1024 ** "bkmgt".index((m.group(2) or "b").lower())) / 1e9


# An environment variable that names a tensor-parallel size (TENSOR_PARALLEL_SIZE, VLLM_TENSOR_PARALLEL_SIZE, TP_SIZE)
_TP_ENV = re.compile(r"(?i)(?:[A-Z0-9]+_)?(?:TENSOR_PARALLEL_SIZE|TENSOR_PARALLEL_DEGREE|TP_SIZE)")


def _environment(value: Any) -> list[tuple[str, str, int]]:
    """``environment:`` / ``args:`` (mapping or ``KEY=VALUE`` list) with lines; a bare ``KEY`` is left out."""
    pairs: list[tuple[str, str, int]] = []
    if isinstance(value, YMap):
        pairs += [(k, str(v), value.line_of(k)) for k, v in value.items() if isinstance(v, Scalar) and not v.null]
    elif isinstance(value, YList):
        for item in value:
            key, eq, text = str(item).partition("=")
            if eq:
                pairs.append((key.strip(), text, line_of(item, value.line)))
    return pairs


_FLAG_LINES = 200  # a command's flags are looked for this many lines below its key


def _flag_line(lines: list[str], start: int, last: int, key: str) -> int | None:
    """The first line at or below ``start`` (1-based, up to _FLAG_LINES below ``last``, the command's last key)
    that writes the option ``key``."""
    flags = (f"--{key.replace('_', '-')}", f"--{key}")
    for number in range(max(start, 1), min(len(lines), last + _FLAG_LINES) + 1):
        if any(flag in lines[number - 1] for flag in flags):
            return number
    return None
