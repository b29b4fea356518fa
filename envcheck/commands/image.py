"""``envcheck image REF``: judge a registry (or local) image before pulling it."""

from __future__ import annotations

import argparse
import sys

from envcheck import engine
from envcheck.config import Config, env
from envcheck.errors import UsageError
from envcheck.inspect.image_reference import parse_reference
from envcheck.limits import DEFAULT_MAX_EXPANSION
from envcheck.profile import load_profile
from envcheck.services.registry.auth import Credentials
from envcheck.services.registry.client import DEFAULT_DEADLINE
from envcheck.sources.image import KIND, ImageOptions, looks_like_image, read_image

HELP = "check a container image from its registry metadata (and with --deep, its layers) without pulling it"
DEFAULT_FORMAT = "text"

EPILOG = """\
REF is a registry reference as `docker pull` takes it (nvcr.io/nvidia/pytorch:25.11-py3, ubuntu,
host:port/repo@sha256:...), or a local image: docker-daemon:NAME (an image in the Docker engine),
oci-layout:DIR[:TAG] (an OCI image layout folder), docker-archive:FILE.tar (docker save output).
Registries are reached over HTTPS; plain HTTP only for loopback and --insecure-registry hosts.
Credentials: --username with --password-stdin, else the Docker config (DOCKER_CONFIG, docker login,
credential helpers), else anonymous. Exit code 3 when a registry or engine could not be reached.
Every registry request has an overall deadline (--http-timeout, else ENVCHECK_HTTP_TIMEOUT, else
300 s; a layer gets one more second per MiB), so a stalled or trickling server cannot hold envcheck;
429/5xx answers and failed connections are retried a few times, redirects followed at most 10 times."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("ref", metavar="REF", help="image reference, or docker-daemon:/oci-layout:/docker-archive: path")
    parser.add_argument("--platform", default=None,
                        help="platform to select from a multi-platform image (default: the profile's, linux/arm64)")
    parser.add_argument("--deep", action="store_true",
                        help="also stream the layers: installed distributions and ELF files (CUDA sonames, GPU code)")
    add_registry_options(parser)
    parser.add_argument("--no-progress", action="store_true", help="no progress bar (it only shows on a terminal anyway)")
    parser.add_argument("--run", action="store_true",
                        help="pull the image and run the checks inside it (the same as `envcheck container REF`)")
    parser.add_argument("--gpus", default=None, metavar="all|N|IDS", help="with --run: give the container GPUs (GPU lines SKIP otherwise)")
    parser.add_argument("--timeout", type=float, default=None, metavar="SECONDS", help="with --run: kill the container after this long")


def add_registry_options(parser: argparse.ArgumentParser) -> None:
    """The options `envcheck image` and `envcheck catalog` share: credentials, plain HTTP, deadlines, --deep bounds."""
    parser.add_argument("--username", default=None, help="registry user name (with --password-stdin)")
    parser.add_argument("--password-stdin", action="store_true", help="read the registry password or token from stdin")
    parser.add_argument("--insecure-registry", action="append", default=[], metavar="HOST",
                        help="allow plain HTTP to this registry (repeatable; loopback is always allowed)")
    parser.add_argument("--deep-fatbin", action="store_true",
                        help="with --deep: also find fatbins stored outside .nv_fatbin (slower, not cached)")
    parser.add_argument("--max-expansion", type=float, default=DEFAULT_MAX_EXPANSION, metavar="RATIO",
                        help=f"with --deep: a layer may expand to RATIO times its compressed size (at least 16 MiB) "
                             f"before it is refused as a decompression bomb (default {DEFAULT_MAX_EXPANSION:g}; 0: no limit)")
    parser.add_argument("--http-timeout", type=float, default=None, metavar="SECONDS",
                        help="give up on a registry request that has not finished after this long (default: "
                             "ENVCHECK_HTTP_TIMEOUT, else 300; a layer gets one more second per MiB)")


def image_options(args: argparse.Namespace, config: Config, progress: bool, verbose: bool = False) -> ImageOptions:
    platform = args.platform or load_profile(config.profile).docker_platform
    if platform.count("/") not in (1, 2):
        raise UsageError(f"--platform {platform!r}: expected os/arch[/variant], e.g. linux/arm64")
    return ImageOptions(
        platform=platform, deep=bool(args.deep), credentials=_credentials(args),
        insecure_registries=tuple(args.insecure_registry), progress=progress, use_cache=config.options.use_cache,
        deep_fatbin=config.options.deep_fatbin, max_expansion=float(args.max_expansion),
        http_timeout=_http_timeout(args), verbose=verbose)


def _credentials(args: argparse.Namespace) -> Credentials | None:
    if args.password_stdin and not args.username:
        raise UsageError("--password-stdin needs --username")
    if args.username and not args.password_stdin:
        raise UsageError("--username needs --password-stdin (envcheck never takes a password as an argument)")
    if not args.username:
        return None
    password = sys.stdin.read()
    if password.endswith("\n"):
        password = password[:-1].rstrip("\r")
    if not password:
        raise UsageError("--password-stdin read an empty password")
    return Credentials(args.username, password, origin="--username/--password-stdin")


def _http_timeout(args: argparse.Namespace) -> float:
    text = args.http_timeout if args.http_timeout is not None else env("ENVCHECK_HTTP_TIMEOUT")
    if text is None or text == "":
        return DEFAULT_DEADLINE
    source = "--http-timeout" if args.http_timeout is not None else "ENVCHECK_HTTP_TIMEOUT"
    try:
        seconds = float(text)
    except ValueError:
        raise UsageError(f"{source}={text!r}: expected a number of seconds") from None
    if not seconds > 0 or seconds == float("inf"):
        raise UsageError(f"{source}={text!r}: expected a positive number of seconds")
    return seconds


def build(args: argparse.Namespace, config: Config) -> list[engine.Target]:
    ref_text: str = args.ref
    if args.run:
        from envcheck.commands.container import container_target
        if args.deep or args.username:
            raise UsageError("--run checks inside a running container: --deep and --username do not apply (use docker login)")
        return [container_target(ref_text, pull="missing", gpus=args.gpus, timeout=args.timeout)]
    if not looks_like_image(ref_text):
        _not_a_local_image(ref_text)
        parse_reference(ref_text)  # a malformed reference is a usage error (exit 2) before any network use
    options = image_options(args, config, progress=not args.no_progress, verbose=getattr(args, "verbose", 0) > 0)
    return [engine.Target(name=ref_text, kind=KIND, read=lambda: read_image(ref_text, options))]


def _not_a_local_image(ref: str) -> None:
    """``envcheck image ./out`` or ``image saved.tar``: a path on this machine names a local image only with its
    transport (oci-layout:, docker-archive:); without one it would be asked of Docker Hub (``out`` is
    docker.io/library/out). An image layout folder or a file is a usage error that names the spelling; another
    folder that is also a valid reference (``ubuntu``) stays a registry reference."""
    from pathlib import Path
    path = Path(ref)
    if path.is_dir() and ((path / "oci-layout").is_file() or (path / "index.json").is_file()):
        raise UsageError(f"{ref} is an OCI image layout folder here, not a registry reference: "
                         f"`envcheck image oci-layout:{ref}` reads it (oci-layout:DIR:TAG picks a tag)")
    if path.is_file():
        raise UsageError(f"{ref} is a file here, not a registry reference: a `docker save` archive is read as "
                         f"`envcheck image docker-archive:{ref}`; an OCI layout (oci-layout, index.json) as oci-layout:FOLDER "
                         "once unpacked; a Dockerfile or requirements file as `envcheck FILE`")
    if path.is_dir() and ref.startswith((".", "/", "~")):
        raise UsageError(f"{ref} is a folder here, not a registry reference: a project folder is checked as "
                         f"`envcheck {ref}`, an OCI image layout folder as `envcheck image oci-layout:{ref}`")
