"""Whether a container's command only asks the driver about the GPU (a smoke test): ``nvidia-smi`` and
``/dev/nvidia*`` come from the host driver, so such a container never loads its image's CUDA user space."""

from __future__ import annotations

from envcheck.inspect.shell import split_commands

# Commands that read the driver's view of the GPU: at least one must run.
_QUERIES = frozenset({"nvidia-smi", "nvidia-debugdump"})
# Commands that print, wait or list and load no CUDA library.
_HARMLESS = frozenset({"echo", "printf", "true", ":", "sleep", "ls", "cat", "uname", "hostname", "date", "env",
                       "printenv", "exit", "test", "["})
# Programs that compile code (a CUDA build needs one of them, nvcc or a build system driving it).
_COMPILERS = frozenset({"nvcc", "cmake", "make", "ninja", "meson", "bazel", "bazelisk", "gcc", "g++", "cc", "c++", "clang",
                        "clang++", "scons"})


def compilers(programs: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(p for p in programs if p in _COMPILERS or p.startswith(("gcc-", "g++-", "clang-")))


def device_query(text: str) -> str:
    """``text`` (a container's command) when all it runs is a device query, else "" (also when it cannot be
    read fully)."""
    commands = split_commands(text)
    if commands.truncated or not commands:
        return ""
    queried = False
    for command in commands:
        if not command.argv:
            continue
        name = command.argv[0].rsplit("/", 1)[-1]
        if name in _QUERIES or (name == "ls" and any(w.startswith("/dev/nvidia") for w in command.argv[1:])):
            queried = True
        elif name not in _HARMLESS:
            return ""
    return text if queried else ""
