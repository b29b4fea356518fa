"""Installer command lines and requirement strings, read the way pip, uv and conda read them (shared by the
requirements and Dockerfile sources, so both produce the same facts)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from packaging.requirements import InvalidRequirement, Requirement

from envcheck.inspect.wheel_tags import canonical, parse_wheel_name
from envcheck.model import IndexOption, InstallCommand, Location, Package, PackageIndex, ReadProblem, Role
from envcheck.redaction import is_secret_name

# pip install options that take a value (both spellings); everything else starting with '-' is a flag.
VALUE_OPTIONS = {
    "-r", "--requirement", "-c", "--constraint", "-i", "--index-url", "--extra-index-url", "-f",
    "--find-links", "-e", "--editable", "-t", "--target", "--prefix", "--root", "--platform",
    "--python-version", "--implementation", "--abi", "--only-binary", "--no-binary", "--trusted-host",
    "--config-settings", "-C", "--global-option", "--build-option", "--progress-bar", "--upgrade-strategy",
    "--src", "--root-user-action", "--cache-dir", "--log", "--timeout", "--retries", "--proxy", "--cert",
    "--client-cert", "--exists-action", "--python", "-p", "--index-strategy", "--torch-backend",
    "--default-index", "--index", "--override", "--keyring-provider", "--resolution", "--prerelease",
    "--extra", "--group", "--report", "-w", "--wheel-dir", "--use-feature", "--use-deprecated", "--dry-run-report",
}
_INDEX_OPTIONS = {
    "-i": IndexOption.INDEX_URL, "--index-url": IndexOption.INDEX_URL, "--default-index": IndexOption.INDEX_URL,
    "--extra-index-url": IndexOption.EXTRA_INDEX_URL, "--index": IndexOption.EXTRA_INDEX_URL,
    "-f": IndexOption.FIND_LINKS, "--find-links": IndexOption.FIND_LINKS,
}
_CONDA_VALUE_OPTIONS = {"-c", "--channel", "-n", "--name", "-p", "--prefix", "--file", "--override-channels-x"}
_CONDA_TO_PYPI = {"pytorch": "torch", "pytorch-gpu": "torch", "pytorch-cuda": "pytorch-cuda", "cuda-version": "cuda-version"}


@dataclass
class InstallParse:
    command: InstallCommand
    packages: list[Package] = field(default_factory=list)
    indexes: list[PackageIndex] = field(default_factory=list)
    requirement_files: list[str] = field(default_factory=list)
    constraint_files: list[str] = field(default_factory=list)
    problems: list[ReadProblem] = field(default_factory=list)


def installer_of(argv: list[str]) -> tuple[str, int] | None:
    """(tool, index of the first argument after the install verb) if ``argv`` is an install command."""
    if not argv:
        return None
    exe = argv[0].rsplit("/", 1)[-1]
    i = 1
    if re.fullmatch(r"python(\d+(\.\d+)?)?", exe):  # python -m pip install / python -m uv pip install
        while i < len(argv) and argv[i].startswith("-") and argv[i] != "-m":
            i += 1
        if i + 1 >= len(argv) or argv[i] != "-m":
            return None
        exe, i = argv[i + 1], i + 2
    verb = argv[i] if i < len(argv) else None
    if re.fullmatch(r"pip(\d+(\.\d+)?)?", exe):
        tool = "pip"
    elif exe == "uv" and verb == "add":
        return ("uv", i + 1)
    elif exe == "uv" and verb == "pip":
        tool, i = "uv", i + 1
    elif exe in ("conda", "mamba", "micromamba"):
        tool = exe
    else:
        return None
    while i < len(argv) and argv[i].startswith("-"):
        i += 2 if argv[i] in VALUE_OPTIONS and "=" not in argv[i] else 1
    if i < len(argv) and argv[i] in ("install", "create"):
        return (tool, i + 1)
    return None


def parse_install_command(argv: list[str], location: Location | None) -> InstallParse | None:
    """Parse one shell-split installer command; None when ``argv`` installs nothing."""
    found = installer_of(argv)
    if found is None:
        return None
    tool, start = found
    result = InstallParse(InstallCommand(tool=tool, packages=(), text=" ".join(argv), location=location))
    options: list[str] = []
    words = iter(argv[start:])
    conda = tool in ("conda", "mamba", "micromamba")
    for word in words:
        if conda and word.startswith("-"):
            opt, eq, inline = word.partition("=")
            if opt in _CONDA_VALUE_OPTIONS:
                channel = inline if eq else next(words, "")
                if opt in ("-c", "--channel"):
                    result.indexes.append(PackageIndex(channel, IndexOption.CONDA_CHANNEL, location))
                options.append(f"{opt}={channel}")
            else:
                options.append(opt)
        elif word.startswith("-") and word != "-":
            opt, eq, inline = word.partition("=")
            if opt.startswith("-") and not opt.startswith("--") and len(opt) > 2 and opt[:2] in VALUE_OPTIONS and not eq:
                opt, inline, eq = opt[:2], opt[2:], "="  # -rrequirements.txt
            if opt in VALUE_OPTIONS:
                value = inline if eq else next(words, None)
                if value is None:
                    result.problems.append(ReadProblem(f"option {opt} needs a value", location))
                    break
                options.append(f"{opt}={value}")
                _apply_value_option(opt, value, result, location, tool)
            else:
                options.append(opt)
                if not eq and opt.startswith("--") and is_secret_name(opt[2:]):
                    next(words, None)  # `--password X`, `--token X`: pip has no such option; X is a credential, no package
        else:
            pkg = _conda_package(word, location) if conda else parse_requirement_text(word, location)
            if isinstance(pkg, ReadProblem):
                result.problems.append(pkg)
            elif pkg is not None:
                result.packages.append(pkg)
    if "--no-deps" in options and not conda:
        result.packages = [replace(p, no_deps=True) for p in result.packages]
    elif not conda and _replaces_torch_through_partner(options, result.packages):
        # `pip install -U torchvision` / `--force-reinstall torchvision`: its newest release pins the newest torch,
        # which pip installs over the one present: an unpinned torch of this command
        result.packages.append(Package(name="torch", location=location))
    result.command = InstallCommand(tool=tool, packages=tuple(p.name for p in result.packages),
                                    options=tuple(options), text=" ".join(argv), location=location)
    return result


def _replaces_torch_through_partner(options: list[str], packages: list[Package]) -> bool:
    from envcheck.model import REPLACING_OPTIONS
    return (any(o.split("=", 1)[0] in REPLACING_OPTIONS for o in options) and all(p.name != "torch" for p in packages)
            and any(p.name in ("torchvision", "torchaudio") and not p.version and not p.url for p in packages))


def _apply_value_option(opt: str, value: str, result: InstallParse, location: Location | None,
                        tool: str) -> None:
    if opt in _INDEX_OPTIONS:
        if tool == "pip" and _INDEX_OPTIONS[opt] is IndexOption.INDEX_URL:
            # pip keeps the last -i/--index-url of a command: `--index-url .../cu130 -i <mirror>` installs from the mirror
            result.indexes = [i for i in result.indexes if i.option is not IndexOption.INDEX_URL]
        result.indexes.append(PackageIndex(value, _INDEX_OPTIONS[opt], location))
    elif opt in ("-r", "--requirement"):
        result.requirement_files.append(value)
    elif opt in ("-c", "--constraint", "--override"):
        result.constraint_files.append(value)
    elif opt in ("-e", "--editable"):
        pkg = parse_requirement_text(value, location, role=Role.REQUIREMENT)
        if isinstance(pkg, Package):
            result.packages.append(replace(pkg, editable=True))
    elif opt == "--torch-backend" and tool == "uv":
        # uv's --torch-backend=cu126 picks the PyTorch index for that CUDA build.
        result.indexes.append(PackageIndex(f"uv-torch-backend:{value}", IndexOption.INDEX_URL, location))


def _conda_package(word: str, location: Location | None) -> Package | ReadProblem:
    spec = word.split("::", 1)[-1]
    m = re.match(r"^([A-Za-z0-9_.\-]+)\s*(?:(==|=|>=|<=|>|<|!=)\s*([^\s=]+?))?(?:=[^=\s]+)?$", spec)
    if not m:
        return ReadProblem(f"cannot read conda package spec {shown(word)}", location)
    raw_name, op, version = m.group(1), m.group(2), m.group(3)
    if (problem := long_number(spec)) is not None:
        return ReadProblem(f"cannot read conda package spec {shown(word)}: {problem}", location)
    name = _CONDA_TO_PYPI.get(raw_name.lower(), canonical(raw_name))
    exact = version if op in ("=", "==") and version and "*" not in version else None
    return Package(name=name, version=exact, specifier=f"{op or ''}{version or ''}", role=Role.CONDA,
                   location=location)


_PER_REQUIREMENT_OPTION = re.compile(r"(?<!\s)\s+--?(?:hash|global-option|config-settings|install-option)\b")
_GIT_NAME = re.compile(r"/([A-Za-z0-9_.\-]+?)(?:\.git)?(?:@[^/#]*)?(?:#.*)?$")
# A wheel file named by a shell glob (`flash_attn-*.whl`): its distribution name is all that can be read.
_GLOB_WHEEL = re.compile(r"(?:^|/)([A-Za-z0-9][A-Za-z0-9_.]*)-[^/\s]*[*?][^/\s]*\.whl$")
# Repository names whose package name differs (flash-attention's repo builds the flash-attn distribution).
_REPO_TO_PACKAGE = {"flash-attention": "flash-attn"}


def parse_requirement_text(text: str, location: Location | None, role: Role = Role.REQUIREMENT, installed: bool = False) -> Package | ReadProblem | None:
    """One requirement as pip reads it (PEP 508, ``name @ url``, a wheel, a VCS URL); None for a path."""
    text = text.strip()
    if not text:
        return None
    if (problem := long_number(text)) is not None:
        return ReadProblem(f"invalid requirement {shown(text)}: {problem}", location)
    # `pkg==1 --hash=sha256:...`; (?<!\s): a 100 KB run of spaces is scanned once, not once per offset
    text = _PER_REQUIREMENT_OPTION.split(text)[0].strip()
    wheel = parse_wheel_name(text.split(";", 1)[0].strip()) if ".whl" in text else None
    if wheel is not None and " @ " not in text:
        return Package(name=wheel.name, version=wheel.version, specifier=f"=={wheel.version}", url=text, installed=installed, role=role, location=location)
    if "://" not in text and ("*" in text or "?" in text) and (glob := _GLOB_WHEEL.search(text)):  # flash_attn-*.whl
        return Package(name=canonical(glob.group(1)), url=text, installed=installed, role=role, location=location)
    lowered = text.lower()
    if lowered.startswith(("git+", "hg+", "svn+", "bzr+", "http://", "https://", "file:")) and " @ " not in text:
        egg = re.search(r"[#&]egg=([A-Za-z0-9_.\-]+)", text)
        if egg:
            name = egg.group(1)
        else:
            m = _GIT_NAME.search(text.split("#", 1)[0])
            if not m:
                return ReadProblem(f"cannot tell which distribution {shown(text)} installs", location)
            name = m.group(1)
            for suffix in (".tar.gz", ".zip", ".tar.bz2", ".tgz"):
                if name.endswith(suffix):
                    name = re.sub(r"-\d.*$", "", name[: -len(suffix)])
        cname = _REPO_TO_PACKAGE.get(canonical(name), canonical(name))
        return Package(name=cname, url=text, installed=installed, role=role, location=location)
    local = re.sub(r"\[[^\]]*\]$", "", text)  # a local project with extras: `.[cu130]`, `./pkg[train]`
    if local in (".", "..") or local.startswith(("./", "../", "/")) or local.endswith(("/",)):
        return None
    try:
        req = Requirement(text)
    except InvalidRequirement as exc:
        return ReadProblem(f"invalid requirement {_excerpt_to_error(text, str(exc))}: {str(exc).splitlines()[0][:200]}", location)
    version = None
    specs = list(req.specifier)
    if len(specs) == 1 and specs[0].operator in ("==", "===") and "*" not in specs[0].version:
        version = specs[0].version
    url = req.url
    if url and (w := parse_wheel_name(url)) is not None:
        version = version or w.version
    return Package(name=canonical(req.name), version=version, specifier=str(req.specifier),
                   extras=tuple(sorted(req.extras)), marker=str(req.marker) if req.marker else None, url=url,
                   installed=installed, role=role, location=location)


# No version pip can install has a number this long; Python refuses to convert one past 4300 digits.
MAX_VERSION_DIGITS = 64
_LONG_NUMBER = re.compile(rf"\d{{{MAX_VERSION_DIGITS + 1},}}")


def long_number(text: str) -> str | None:
    """Why ``text`` cannot hold a version (a run of more than MAX_VERSION_DIGITS digits), or None."""
    m = _LONG_NUMBER.search(text)
    if m is None:
        return None
    return f"a number of {m.end() - m.start()} digits is not a version (at most {MAX_VERSION_DIGITS} digits are read)"


def shown(text: str, limit: int = 120) -> str:
    """``text`` quoted for a message, cut to ``limit`` characters, credentials masked."""
    from envcheck.redaction import redact

    if len(text) <= limit:
        return repr(redact(text))
    return f"{redact(text[:limit])!r}... ({len(text)} characters)"


def _excerpt_to_error(text: str, error: str, limit: int = 40) -> str:
    """An invalid requirement up to where packaging stopped (its caret), at most ``limit`` characters: enough
    to find the line, never a whole line of a file that is not a requirements file (``-r /etc/shadow``)."""
    lines = error.splitlines()
    stop = limit
    if len(lines) >= 3 and lines[-1].strip().endswith("^"):
        stop = min(limit, max(1, len(lines[-1].rstrip()) - 4))  # the caret line is indented like the quoted text
    return shown(text, stop)


INDEX_VARIABLES = {
    "PIP_INDEX_URL": IndexOption.INDEX_URL, "PIP_EXTRA_INDEX_URL": IndexOption.EXTRA_INDEX_URL, "PIP_FIND_LINKS": IndexOption.FIND_LINKS,
    "UV_INDEX_URL": IndexOption.INDEX_URL, "UV_DEFAULT_INDEX": IndexOption.INDEX_URL, "UV_EXTRA_INDEX_URL": IndexOption.EXTRA_INDEX_URL,
    "UV_INDEX": IndexOption.EXTRA_INDEX_URL, "UV_TORCH_BACKEND": IndexOption.INDEX_URL,
}
NAMED_INDEX = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*=(?=[A-Za-z][A-Za-z0-9+.\-]*://)")


def variable_indexes(name: str, value: str, location: Location | None) -> list[PackageIndex]:
    option = INDEX_VARIABLES.get(name)
    return [] if option is None else [PackageIndex(url, option, location) for url in index_entries(name, value)]


def index_entries(name: str, value: str) -> list[str]:
    """The index URLs a pip/uv variable holds (``UV_INDEX``'s ``name=url`` without the name;
    ``UV_TORCH_BACKEND`` read like ``--torch-backend``)."""
    if name == "UV_TORCH_BACKEND":
        return [f"uv-torch-backend:{value.strip()}"] if value.strip() else []
    return [NAMED_INDEX.sub("", entry) for entry in value.split()]
