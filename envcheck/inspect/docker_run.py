"""``docker run`` / ``podman run`` command lines: which image runs, on which platform, with GPUs, running what.
The first word that is neither an option nor an option's value is the image; an option not listed as taking a
value (``docker run --help``, Docker 28, and podman's) is taken as a flag."""

from __future__ import annotations

import re
from dataclasses import dataclass

_VALUED = frozenset({
    "-a", "--attach", "--add-host", "--annotation", "--blkio-weight", "--blkio-weight-device", "-c", "--cpu-shares",
    "--cap-add", "--cap-drop", "--cgroup-parent", "--cgroupns", "--cidfile", "--cpu-period", "--cpu-quota",
    "--cpu-rt-period", "--cpu-rt-runtime", "--cpus", "--cpuset-cpus", "--cpuset-mems", "--device",
    "--device-cgroup-rule", "--device-read-bps", "--device-read-iops", "--device-write-bps", "--device-write-iops",
    "--dns", "--dns-option", "--dns-search", "--domainname", "--entrypoint", "-e", "--env", "--env-file", "--expose",
    "--gpus", "--group-add", "--health-cmd", "--health-interval", "--health-retries", "--health-start-interval",
    "--health-start-period", "--health-timeout", "-h", "--hostname", "--ip", "--ip6", "--ipc", "--isolation",
    "--kernel-memory", "-l", "--label", "--label-file", "--link", "--link-local-ip", "--log-driver", "--log-opt",
    "--mac-address", "-m", "--memory", "--memory-reservation", "--memory-swap", "--memory-swappiness", "--mount",
    "--name", "--network", "--net", "--network-alias", "--oom-score-adj", "--pid", "--pids-limit", "--platform",
    "-p", "--publish", "--pull", "--restart", "--runtime", "--security-opt", "--shm-size", "--stop-signal",
    "--stop-timeout", "--storage-opt", "--sysctl", "--tmpfs", "--ulimit", "-u", "--user", "--userns", "--uts",
    "-v", "--volume", "--volume-driver", "--volumes-from", "-w", "--workdir", "--arch", "--os", "--variant",
    "--hooks-dir", "--secret", "--chrootdirs", "--env-merge", "--gidmap", "--uidmap",
    "--init-path", "--pod", "--requires", "--seccomp-policy", "--sdnotify", "--systemd", "--timeout", "--tz",
    "--umask", "--passwd-entry",
})


# Options that follow a variable of collected options, never a program the container runs (`-m` would be llama.cpp's).
_RUN_ONLY = frozenset({"--entrypoint", "--gpus", "-e", "--env", "--env-file", "-v", "--volume", "--mount", "--device",
                       "--network", "--net", "--ipc", "--shm-size", "--ulimit", "--cap-add", "--restart", "--runtime",
                       "--privileged", "--rm", "--init"})
_OPTIONS_VARIABLE = re.compile(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?")


@dataclass(frozen=True)
class ContainerRun:
    image: str
    platform: str | None
    gpus: bool
    command: tuple[str, ...]
    entrypoint: str | None
    env: tuple[tuple[str, str], ...] = ()  # -e/--env NAME=VALUE (a bare NAME takes the caller's value: left out)


def parse_run(argv: list[str]) -> ContainerRun | None:
    """``argv`` as a container run (``docker [container] run``, ``podman run``, ``nvidia-docker run``)."""
    i = _after_verb(argv, "run")
    if i is None:
        return None
    platform: str | None = None
    entrypoint: str | None = None
    gpus = argv[0].rsplit("/", 1)[-1] == "nvidia-docker"
    env: list[tuple[str, str]] = []
    while i < len(argv):
        word = argv[i]
        if word == "--":
            i += 1
            break
        if not word.startswith("-") or word == "-":
            if _OPTIONS_VARIABLE.fullmatch(word) and i + 1 < len(argv) and argv[i + 1].partition("=")[0] in _RUN_ONLY:
                i += 1  # `$MOUNT_ARGS -e A=1 ... IMAGE`: options the script collected in a variable, not the image
                continue
            break
        name, eq, value = word.partition("=")
        if name in _VALUED and not eq:
            value = argv[i + 1] if i + 1 < len(argv) else ""
            i += 1
        if name == "--platform":
            platform = value
        elif _asks_gpu(name, value):
            gpus = True
        elif name == "--entrypoint":
            entrypoint = value
        if name in ("-e", "--env") and "=" in value:
            key, _, setting = value.partition("=")
            env.append((key, setting))
        i += 1
    if i >= len(argv):
        return None
    return ContainerRun(argv[i], platform or None, gpus, tuple(argv[i + 1:]), entrypoint, tuple(env))


def _after_verb(argv: list[str], verb: str) -> int | None:
    """The index after ``docker [container] <verb>`` (podman, nvidia-docker too), or None."""
    if not argv or argv[0].rsplit("/", 1)[-1] not in ("docker", "podman", "nvidia-docker"):
        return None
    i = 2 if len(argv) > 1 and argv[1] == "container" else 1
    return i + 1 if i < len(argv) and argv[i] == verb else None


def _asks_gpu(name: str, value: str) -> bool:
    """--gpus, --runtime nvidia, --device nvidia.com/gpu=all (CDI), -e NVIDIA_VISIBLE_DEVICES=..."""
    return (name == "--gpus" or (name == "--runtime" and value == "nvidia") or (name == "--device" and value.startswith("nvidia.com/gpu"))
            or (name in ("-e", "--env") and value.startswith("NVIDIA_VISIBLE_DEVICES=")))


_EXEC_VALUED = frozenset({"-e", "--env", "--env-file", "-u", "--user", "-w", "--workdir", "--detach-keys"})


def exec_command(argv: list[str]) -> tuple[str, ...] | None:
    """The command a ``docker [container] exec [options] CONTAINER CMD ...`` (``kubectl exec POD -- CMD``) runs."""
    if argv[:1] and argv[0].rsplit("/", 1)[-1] in ("kubectl", "oc") and argv[1:2] == ["exec"] and "--" in argv:
        return tuple(argv[argv.index("--") + 1:]) or None
    i = _after_verb(argv, "exec")
    if i is None:
        return None
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "-":
        name, eq, _value = argv[i].partition("=")
        i += 2 if name in _EXEC_VALUED and not eq else 1
    if i + 1 >= len(argv):  # the container, then at least one word of command
        return None
    return tuple(argv[i + 1:])
