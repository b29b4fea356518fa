"""Fuzz what a registry or user hands the client as text: image references, WWW-Authenticate challenges,
manifest media types, and the Docker config file that holds credentials."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import main, scratch_dir, write_input

with atheris.instrument_imports(include=["envcheck"]):
    from envcheck.errors import EnvcheckError
    from envcheck.inspect.image_reference import Reference, parse_reference
    from envcheck.services.registry.auth import (
        Challenge,
        credentials_from_docker_config,
        parse_challenge,
        token_url,
    )
    from envcheck.services.registry.client import media_type_of

FOLDER = scratch_dir()
EXTRA = [
    b'nvcr.io/nvidia/pytorch:25.09-py3',
    b'localhost:5000/team/img@sha256:' + b'a' * 64,
    b'Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/ubuntu:pull"',
    b'Basic realm="registry", charset="UTF-8"',
    b'{"auths": {"localhost:5000": {"auth": "dXNlcjpwYXNz"}}, "credHelpers": {}}',
    b'{"mediaType": "application/vnd.oci.image.index.v1+json", "manifests": []}',
]


def target(data: bytes) -> None:
    text = data.decode("utf-8", errors="replace")
    try:
        ref = parse_reference(text)
        assert isinstance(ref, Reference) and ref.repository
        str(ref), ref.api_host, ref.is_loopback
    except EnvcheckError:
        pass
    challenge = parse_challenge(text)
    assert challenge is None or isinstance(challenge, Challenge)
    if challenge is not None:
        with contextlib.suppress(EnvcheckError):
            token_url(challenge, "repository:x:pull")
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    if isinstance(body, dict):
        assert isinstance(media_type_of(body, text[:40]), str)
        # Helpers are programs: the harness must not start whatever a mutated name says.
        body.pop("credHelpers", None)
        body.pop("credsStore", None)
        write_input(FOLDER, "config.json", json.dumps(body).encode())
        try:
            credentials_from_docker_config("localhost:5000", FOLDER)
            credentials_from_docker_config("docker.io", FOLDER)
        except EnvcheckError:
            pass


if __name__ == "__main__":
    main("registry_text", target, (), [], EXTRA, max_len=1024)
