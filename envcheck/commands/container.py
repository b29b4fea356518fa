"""``envcheck container IMAGE``: run envcheck's collector inside IMAGE and check what it reports."""

from __future__ import annotations

import argparse
from typing import Any

from envcheck import engine
from envcheck.config import Config
from envcheck.errors import UsageError
from envcheck.services.docker_engine import PULL_POLICIES
from envcheck.services.docker_runner import ContainerOptions, device_requests
from envcheck.sources.container import KIND, read_container

HELP = "start an image (hardened, no network) and check the environment inside it with its own python3"
DEFAULT_FORMAT = "text"

EPILOG = """\
IMAGE is any image the Docker engine can run (pulled first when it is missing; see --pull). The engine
is the one your environment names: DOCKER_HOST (unix://, tcp:// with DOCKER_TLS_VERIFY/DOCKER_CERT_PATH,
ssh://user@spark), else DOCKER_CONTEXT or the Docker CLI's current context, else the local socket.

envcheck copies its pure-Python collector into a fresh volume of the container (the image is never
modified) and runs it with the image's own python3 (3.10 or newer). The container has no network, a
read-only root filesystem with a small /tmp, no capabilities, no-new-privileges, memory and pids limits,
runs as nobody unless the image names a non-root USER or you pass --user, is killed after --timeout
seconds, and is always removed. Without --gpus the GPU readings (nvidia-smi, torch CUDA init) are SKIP.
An image without python3, or with one older than 3.10, gets an ERROR saying so plus what a static look
at its filesystem shows. Exit code 3 when the engine cannot be reached."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("image", metavar="IMAGE", help="image name or id, e.g. nvcr.io/nvidia/pytorch:25.11-py3")
    parser.add_argument("--gpus", default=None, metavar="GPUS",
                        help="give the container GPUs as `docker run --gpus` does: all, a count, or device ids "
                             "(0,1); needed for the GPU readings (capability, torch CUDA init)")
    parser.add_argument("--timeout", type=float, default=120.0, metavar="SECONDS",
                        help="kill the container after this many seconds (default 120)")
    parser.add_argument("--user", default=None, metavar="UID[:GID]",
                        help="user to run the collector as (default: the image's non-root USER, else nobody)")
    parser.add_argument("--pull", choices=PULL_POLICIES, default="missing",
                        help="pull the image: missing (default), always, or never")
    parser.add_argument("--memory", default="4g", metavar="SIZE",
                        help="memory limit of the container (default 4g; torch imports need a few GB)")


def build(args: argparse.Namespace, config: Config) -> list[engine.Target]:
    image: str = args.image.strip()
    if not image:
        raise UsageError("IMAGE is empty")
    if args.timeout is not None and args.timeout <= 0:
        raise UsageError(f"--timeout must be positive, not {args.timeout:g}")
    defaults = ContainerOptions()
    return [container_target(image, gpus=args.gpus or None, user=args.user or None,
                             pull=args.pull or defaults.pull,
                             timeout=args.timeout if args.timeout is not None else defaults.timeout,
                             memory=args.memory or defaults.memory)]


def container_target(image: str, **opts: Any) -> engine.Target:
    """Checks ``image`` by running the collector inside it; ``opts``: :class:`ContainerOptions` fields."""
    options = ContainerOptions(**{k: v for k, v in opts.items() if v is not None})
    if options.pull not in PULL_POLICIES:
        raise UsageError(f"pull must be one of {', '.join(PULL_POLICIES)}, not {options.pull!r}")
    device_requests(options.gpus)  # a malformed --gpus is a usage error before anything starts
    return engine.Target(name=image, kind=KIND, read=lambda: read_container(image, options))
