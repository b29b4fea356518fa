"""What a host script's probes of the machine's CUDA print on a DGX Spark: ``$(nvcc --version | grep release |
awk '{print $6}' | cut -d. -f1 | tr -d V)`` is ``13``, so ``[[ "$CUDA_MAJOR" -ge 13 ]]`` is decided where a script
picks its wheel index from the host's toolkit. Only a script that runs on the Spark itself asks (a Dockerfile's
``nvcc`` is its base image's): the shell source sets :data:`HOST_TOOLS` while it reads one."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

# DGX OS ships the CUDA 13.0 toolkit (nvcc 13.0.88) and driver 580.95.05 (docs/research/spark-facts.md §1, §9: the
# NGC 25.x images on the Spark report CUDA_VERSION=13.0.2, NVVM_VERSION=13.0.88, CUDA_DRIVER_VERSION=580.95.05).
# The exact lines are INFERRED from the formats those releases print.
_NVCC = ("nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2025 NVIDIA Corporation\n"
         "Cuda compilation tools, release 13.0, V13.0.88\nBuild cuda_13.0.r13.0/compiler.36424714_0\n")
_SMI = ("| NVIDIA-SMI 580.95.05              Driver Version: 580.95.05      CUDA Version: 13.0     |\n"
        "|   0  NVIDIA GB10                    On  |   0000000F:01:00.0  On |                  N/A |\n")
_OUTPUTS = {("nvcc", "--version"): _NVCC, ("nvcc", "-V"): _NVCC, ("nvidia-smi",): _SMI}

HOST_TOOLS: ContextVar[bool] = ContextVar("host_tools", default=False)


@contextmanager
def on_host() -> Iterator[None]:
    """Within: command substitutions probing the CUDA toolkit answer as on a DGX Spark."""
    token = HOST_TOOLS.set(True)
    try:
        yield
    finally:
        HOST_TOOLS.reset(token)


def host_probe(command: str) -> str | None:
    """What ``$(command)`` gives on a Spark when ``command`` is ``nvcc --version`` or ``nvidia-smi`` piped through
    grep, awk, cut, tr, sed, head or tail as scripts use them; None for anything else (or outside a host script)."""
    if not HOST_TOOLS.get() or ("nvcc" not in command and "nvidia-smi" not in command):
        return None
    try:
        stages = [shlex.split(stage) for stage in _pipes(command)]
    except ValueError:
        return None
    if not stages or not stages[0]:
        return None
    text = _OUTPUTS.get((stages[0][0].rsplit("/", 1)[-1], *stages[0][1:]))
    for argv in stages[1:]:
        if text is None or not argv:
            return None
        text = _filter(argv, text)
    return None if text is None else text.rstrip("\n")


def _pipes(command: str) -> list[str]:
    """``command`` cut at the pipes outside quotes."""
    parts, quote, start = [], "", 0
    for i, ch in enumerate(command):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "|" and command[i - 1:i] != "|" and command[i + 1:i + 2] != "|":
            parts.append(command[start:i])
            start = i + 1
    return [*parts, command[start:]]


def _filter(argv: list[str], text: str) -> str | None:
    name, args = argv[0].rsplit("/", 1)[-1], argv[1:]
    lines = text.splitlines()
    if name in ("grep", "egrep"):
        return _grep(args, lines)
    if name in ("awk", "gawk", "mawk"):
        return _awk(args, lines)
    if name == "cut" and (m := re.fullmatch(r"-d(.)-f(\d+)|-f(\d+)-d(.)", "".join(args))):
        sep, field = (m.group(1), int(m.group(2))) if m.group(1) is not None else (m.group(4), int(m.group(3)))
        return "".join(_nth(line.split(sep), field) + "\n" for line in lines)
    if name == "tr" and len(args) == 2 and args[0] == "-d":
        return re.sub(f"[{re.escape(args[1])}]", "", text)
    if name == "sed":
        return _sed(args, lines)
    if name in ("head", "tail") and (m := re.fullmatch(r"-n?(\d+)", "".join(args) or "-10")):
        count = int(m.group(1))
        kept = lines[:count] if name == "head" else lines[-count:]
        return "".join(line + "\n" for line in kept)
    if name == "xargs" and not args:
        return " ".join(text.split()) + "\n"
    return None


def _nth(fields: list[str], n: int) -> str:
    return fields[n - 1] if 0 < n <= len(fields) else ""


def _grep(args: list[str], lines: list[str]) -> str | None:
    only, flags, patterns = False, 0, []
    for arg in args:
        if re.fullmatch(r"-[oPEiFw]+", arg):
            only = only or "o" in arg
            flags |= re.I if "i" in arg else 0
            if "F" in arg or "w" in arg:
                return None
        elif arg.startswith("-"):
            return None
        else:
            patterns.append(arg)
    if len(patterns) != 1:
        return None
    try:
        found = re.compile(_python_regex(patterns[0]), flags)
    except re.error:
        return None
    out = []
    for line in lines:
        for m in found.finditer(line) if only else [found.search(line)]:
            if m is not None:
                out.append((m.group("kept") if "kept" in found.groupindex else m.group(0)) if only else line)
    return "".join(line + "\n" for line in out)


def _python_regex(pattern: str) -> str:
    """A grep/sed pattern as Python's: ``\\K`` keeps what follows (PCRE), ``\\(``/``\\)`` group (BRE)."""
    if "\\K" in pattern:
        before, after = pattern.split("\\K", 1)
        return f"(?<={before})(?P<kept>{after})" if re.fullmatch(r"[\w ,.:]*", before) else f"{before}(?P<kept>{after})"
    return pattern.replace("\\(", "(").replace("\\)", ")").replace("\\+", "+")


def _awk(args: list[str], lines: list[str]) -> str | None:
    sep = None
    if args and args[0].startswith("-F"):
        sep = args[0][2:] or (args[1] if len(args) > 1 else None)
        args = args[1:] if args[0][2:] else args[2:]
    m = re.fullmatch(r"\s*(?:/(.*)/\s*)?\{\s*print\s+\$(\d+)\s*;?\s*\}\s*", args[0]) if len(args) == 1 else None
    if m is None or (sep is not None and len(sep) != 1):
        return None
    where = re.compile(m.group(1)) if m.group(1) else None
    field = int(m.group(2))
    return "".join(_nth(line.split(sep) if sep else line.split(), field) + "\n"
                   for line in lines if where is None or where.search(line))


def _sed(args: list[str], lines: list[str]) -> str | None:
    quiet = "-n" in args
    scripts = [a for a in args if not a.startswith("-")]
    if len(scripts) != 1 or any(a not in ("-n", "-E", "-r") for a in args if a.startswith("-")):
        return None
    m = re.fullmatch(r"s(.)(.*?)\1(.*?)\1(p?)g?", scripts[0])
    if m is None:
        return None
    try:
        pattern = re.compile(_python_regex(m.group(2)))
    except re.error:
        return None
    out = []
    for line in lines:
        new, count = pattern.subn(m.group(3).replace("&", "\\g<0>"), line)
        out += [new] * ((not quiet) + bool(count and m.group(4)))
    return "".join(line + "\n" for line in out)
