"""The ``container`` input: what an image's own python3 reports to envcheck's collector run inside it;
without a python3 of 3.10 or newer, a static look at the exported filesystem (METADATA, ELF files)."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import re
import tarfile
import tempfile
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from envcheck.errors import ServiceError
from envcheck.model import BaseImage, Inventory, Location, ReadProblem
from envcheck.readings import ContainerReading, ContainerRun, Hardening
from envcheck.services.docker_engine import engine_client, ensure_image, short_error
from envcheck.services.docker_runner import (
    MAX_STDOUT,
    MIN_PYTHON,
    PYTHON_TAG,
    ContainerOptions,
    ProbeRun,
    exported_filesystem,
    run_probe,
    sweep_orphans,
)
from envcheck.sources import ReadOptions, module_for, move_locations

if TYPE_CHECKING:
    from docker import DockerClient

KIND = "container"


def read_container(image: str, options: ContainerOptions | None = None,
                   client: DockerClient | None = None) -> Inventory:
    options = options or ContainerOptions()
    if client is None:
        with contextlib.closing(engine_client()) as own:
            return read_container(image, options, own)
    image_obj = ensure_image(client, image, options.pull)
    sweep_orphans(client)
    run = run_probe(client, image, options, image_obj)
    if run.permission_denied and options.user is None:
        # the interpreter is kept from other users (a 0700 /root): root, still with no capabilities or network
        run = run_probe(client, image, dataclasses.replace(options, user="0:0"), image_obj)
    where = Location(image)
    if run.no_python or run.python_too_old:
        inventory = static_look(client, image, image_obj)
        why = ("has no python3 on its PATH" if run.no_python else f"has Python {run.python}"
               f" ({run.python_path}); the collector needs Python {MIN_PYTHON[0]}.{MIN_PYTHON[1]} or newer")
        inventory.problems.insert(0, ReadProblem(
            f"image {image} {why}, so the live checks (torch, flash-attn, sonames, GPU) did not run; a static"
            f" look at its filesystem found {len(inventory.packages)} distributions and"
            f" {len(inventory.binaries)} ELF files", where))
    elif run.permission_denied:
        inventory = Inventory(context="installed", problems=[ReadProblem(
            f"user {run.user} may not run python3 in {image}; pass --user with a user that can", where)])
    elif run.timed_out:
        inventory = Inventory(context="installed", problems=[ReadProblem(
            f"the collector in {image} did not finish within {options.timeout:g} s; the container was killed "
            "(raise --timeout for images with very large site-packages)", where)])
    else:
        inventory = _inventory_from_output(image, run)
    inventory.context = "installed"
    if not options.gpus and inventory.host.nvidia_smi is not None and inventory.host.nvidia_smi.status == "not-run":
        inventory.host = replace(inventory.host, nvidia_smi=None)  # no GPU was given: the GPU lines say "not run" (SKIP), not "failed"
    inventory.images.append(_image_fact(image, image_obj))
    if inventory.host.container is None and (run.no_python or run.python_too_old):
        # the static look has no live container markers; the target is a container image all the same
        inventory.host = replace(inventory.host, container=ContainerReading("docker", (f"{image} is a container image (static look)",)))
    inventory.host = replace(inventory.host, container_run=ContainerRun(
        image=image, user=run.user, gpus=run.gpus, python=run.python, python_path=run.python_path, exit_code=run.exit_code,
        seconds=round(run.seconds, 3),
        hardened=Hardening(network="none", read_only_rootfs=True, cap_drop="ALL", no_new_privileges=True,
                           memory=options.memory, pids=options.pids),
    ))
    return inventory


def _image_fact(image: str, image_obj: Any) -> BaseImage:
    attrs = image_obj.attrs or {}
    arch, os_name = attrs.get("Architecture"), attrs.get("Os")
    platform = f"{os_name}/{arch}" + (f"/{attrs['Variant']}" if attrs.get("Variant") else "") if arch and os_name else None
    return BaseImage(ref=image, platform=platform, location=Location(image))


def _inventory_from_output(image: str, run: ProbeRun) -> Inventory:
    """Anything wrong with the probe's JSON is a ReadProblem, never a crash."""
    text = run.stdout.decode("utf-8", "replace")
    tail = _stderr_tail(run.stderr)

    def failed(message: str, **where: Any) -> Inventory:
        problem = ReadProblem(f"the collector in {image} {message}", Location(image, **where))
        return Inventory(problems=[problem])

    if run.facts.get("killed") and not text.strip():
        return failed("was killed (exit status 137): it ran out of memory under the container's limit (raise "
                      f"--memory, now {run.facts.get('memory', '?')}) or was killed from outside envcheck")
    if run.facts.get("stdout_truncated"):
        return failed(f"printed more than {MAX_STDOUT >> 20} MiB; that is not a collector's result",
                      member="stdout", offset=MAX_STDOUT)
    if not text.strip():
        return failed(f"exited with status {run.exit_code} and printed no result"
                      + (f"; its last error output: {tail}" if tail else ""), member="stdout")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        # the document is the last line; a sitecustomize or a noisy .pth file may have printed before it
        last = text.rstrip().rsplit("\n", 1)[-1]
        with contextlib.suppress(json.JSONDecodeError):
            data = json.loads(last) if last.startswith("{") else None
            if isinstance(data, dict):
                return _validated(data, image, run, tail)
        said = f"; its last error output: {tail}" if tail else ""
        return failed(f"printed a result that is not valid JSON ({exc.msg} at line {exc.lineno}, column "
                      f"{exc.colno}); exit status {run.exit_code}{said}",
                      member="stdout", line=exc.lineno, offset=exc.pos)
    if not isinstance(data, dict):
        return failed(f"printed JSON of type {type(data).__name__}, not an object", member="stdout", offset=0)
    return _validated(data, image, run, tail)


def _validated(data: dict[str, Any], image: str, run: ProbeRun, tail: str) -> Inventory:
    from envcheck.sources.host import inventory_from_probe

    inventory: Inventory = inventory_from_probe(data, image)  # validates; bad fields become problems
    # paths inside the container become members of the image (IMAGE!/usr/lib/...), as in a static look
    move_locations(inventory, lambda loc: loc if loc is None or not loc.path.startswith("/") or loc.member
                   else dataclasses.replace(loc, path=image, member=loc.path),
                   "packages", "binaries", "env", "problems")
    if run.exit_code not in (0, None):
        inventory.problems.append(ReadProblem(
            f"the collector in {image} exited with status {run.exit_code}" + (f": {tail}" if tail else ""),
            Location(image)))
    return inventory


def _stderr_tail(stderr: str, lines: int = 3) -> str:
    kept = [line for line in stderr.splitlines() if line.strip() and not line.startswith(PYTHON_TAG)]
    return " | ".join(kept[-lines:])[:500]


_LIBRARY_NAME = re.compile(r"\.so(\.\d+)*$")
_SITE_DIRS = ("site-packages", "dist-packages")
_MAX_MEMBER = 1 << 30


def static_look(client: DockerClient, image: str, image_obj: Any = None) -> Inventory:
    """What a created (never started) container's exported filesystem shows to the folder reader."""
    inventory = Inventory(context="installed")
    with tempfile.TemporaryDirectory(prefix="envcheck-export-") as scratch:
        root = Path(scratch) / "fs"
        root.mkdir()
        kept = 0
        try:
            with exported_filesystem(client, image) as stream:
                kept = _extract_relevant(stream, root)
        except (ServiceError, tarfile.TarError, OSError) as exc:
            why = exc.message if isinstance(exc, ServiceError) else short_error(exc)
            inventory.problems.append(ReadProblem(
                f"could not export the filesystem of {image} for a static look: {why}", Location(image)))
        if kept:
            _read_exported(root, inventory, image)
    return inventory


def _extract_relevant(stream: io.RawIOBase, root: Path) -> int:
    """Copy what the folder reader needs (metadata, ELF files) out of a tar stream; returns how many."""
    kept = 0
    with tarfile.open(fileobj=io.BufferedReader(stream, 1 << 20), mode="r|") as tar:
        for member in tar:
            if not member.isfile() or member.size > _MAX_MEMBER:
                continue
            path = PurePosixPath(member.name.lstrip("./").lstrip("/"))
            if ".." in path.parts or not path.parts:
                continue
            in_site = any(part in _SITE_DIRS for part in path.parts)
            # site-packages and CUDA/NVIDIA library folders, as the live collector reads: not the image's libc
            cuda_folder = any(part.startswith("cuda") or "nvidia" in part for part in path.parts[:-1])
            if not (in_site or cuda_folder):
                continue
            metadata = in_site and len(path.parts) >= 2 and path.parts[-2].endswith(".dist-info") \
                and path.name in ("METADATA", "RECORD")
            library = bool(_LIBRARY_NAME.search(path.name))
            if not (metadata or library or (in_site and member.size >= 64)):
                continue
            fh = tar.extractfile(member)
            if fh is None:
                continue
            head = fh.read(8)
            if not metadata and not head.startswith((b"\x7fELF", b"!<arch>\n")):
                continue
            local = root.joinpath(*path.parts)
            local.parent.mkdir(parents=True, exist_ok=True)
            with local.open("wb") as out:
                out.write(head)
                while chunk := fh.read(1 << 20):
                    out.write(chunk)
            kept += 1
    return kept


def _read_exported(root: Path, inventory: Inventory, image: str) -> None:
    found = module_for("folder").read(root, ReadOptions(kind="folder", use_cache=False))
    prefix = str(root)

    def inside(path: str) -> str:
        return "/" + path[len(prefix):].lstrip("/") if path.startswith(prefix) else path

    def relocate(location: Location | None) -> Location:
        if location is None:
            return Location(image)
        return dataclasses.replace(location, path=image, member=inside(location.path))

    move_locations(found, relocate, "packages", "problems")
    inventory.packages.extend(found.packages)
    inventory.binaries.extend(dataclasses.replace(b, path=inside(b.path), location=Location(image, member=inside(b.path)))
                              for b in found.binaries)
    inventory.problems.extend(found.problems)

