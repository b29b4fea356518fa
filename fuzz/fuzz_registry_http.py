"""Fuzz the registry client over real HTTP on loopback: a server in this process answers every request for
the image with the fuzzed status, headers and body (manifest/index JSON, WWW-Authenticate challenges,
Content-Type, Docker-Content-Digest, Retry-After, token-server JSON). URLs in headers are pointed back at
the loopback server, so nothing leaves the machine; lengths are set by the server so no read waits."""

from __future__ import annotations

import gzip
import os
import re
import sys
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import main

with atheris.instrument_imports(include=["envcheck"]):
    from envcheck.errors import EnvcheckError
    from envcheck.inspect import image_reference  # noqa: F401  (instrumented before use)
    from envcheck.model import Inventory
    from envcheck.services.registry import auth, client  # noqa: F401
    from envcheck.sources.image import ImageOptions, read_image

STATUSES = (200, 200, 200, 200, 401, 401, 403, 404, 429, 500, 503, 206, 204, 302)
_HOP = re.compile(r"^(content-length|transfer-encoding|connection|keep-alive|location)$", re.I)
_URL = re.compile(r"https?://[^/\s\"',]*")


class _State:
    status = 200
    headers: tuple[tuple[str, str], ...] = ()
    body = b""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def _answer(self) -> None:
        if self.path == "/v2/":
            status, headers, body = 200, [("Content-Type", "application/json")], b"{}"
        else:
            status, headers, body = _State.status, _State.headers, _State.body
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_HEAD = _answer


# Anything that still names another host (a realm rebuilt from escapes) goes to a dead loopback proxy.
os.environ.update(HTTP_PROXY="http://127.0.0.1:9", HTTPS_PROXY="http://127.0.0.1:9", NO_PROXY="127.0.0.1")
SERVER = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
SERVER.daemon_threads = True
threading.Thread(target=SERVER.serve_forever, daemon=True).start()
HOST = f"127.0.0.1:{SERVER.server_address[1]}"
OPTIONS = ImageOptions(retries=0, backoff=0.0, use_cache=False)


def target(data: bytes) -> None:
    if not data:
        return
    head, _, body = data[1:].partition(b"\n\n")
    headers = []
    for line in head.decode("latin-1").split("\n")[:20]:
        name, sep, value = line.partition(":")
        name = name.strip()
        if sep and re.fullmatch(r"[A-Za-z0-9-]{1,40}", name) and not _HOP.match(name):
            value = _URL.sub(f"http://{HOST}", value.strip().replace("\r", ""))
            headers.append((name, value))
    _State.status, _State.headers, _State.body = STATUSES[data[0] % len(STATUSES)], tuple(headers), body
    inventory = read_image(f"{HOST}/fuzz/app:1.0", OPTIONS)
    assert isinstance(inventory, Inventory)


SEEDS = [
    b"\x00Content-Type: application/vnd.oci.image.index.v1+json\n\n"
    b'{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": [{"mediaType": '
    b'"application/vnd.oci.image.manifest.v1+json", "digest": "sha256:' + b"0" * 64 + b'", "size": 10, '
    b'"platform": {"architecture": "arm64", "os": "linux"}}]}',
    b"\x04WWW-Authenticate: Bearer realm=\"https://auth.example/token\",service=\"registry\",scope=\"repository:fuzz/app:pull\"\n\n"
    b'{"errors": [{"code": "UNAUTHORIZED", "message": "authentication required"}]}',
    b"\x00Content-Type: application/vnd.docker.distribution.manifest.v2+json\nDocker-Content-Digest: sha256:" + b"1" * 64 + b"\n\n"
    b'{"schemaVersion": 2, "config": {"digest": "sha256:' + b"2" * 64 + b'", "size": 5}, "layers": []}',
    b"\x08Retry-After: 1\n\n{}",
    b'\x00\n\n{"token": "x", "expires_in": "soon"}',
    # issue 13: compressed answers (decoded with their limits), waits past the deadline, encodings not asked for
    b"\x07Content-Encoding: gzip\nContent-Type: application/json\n\n"
    + gzip.compress(b'{"errors": [{"code": "MANIFEST_UNKNOWN", "message": "manifest unknown"}]}', mtime=0),
    b"\x00Content-Encoding: gzip\n\n" + gzip.compress(bytes(3 << 20), mtime=0),
    b"\x00Content-Encoding: deflate\n\n" + zlib.compress(b'{"schemaVersion": 2, "layers": []}'),
    b"\x00Content-Encoding: gzip\n\n\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xffnot deflate",
    b"\x00Content-Encoding: br\n\n{}",
    b"\x08Retry-After: 99999\n\n{}",
    b"\x08Retry-After: Fri, 31 Dec 2100 23:59:59 GMT\n\n{}",
]

if __name__ == "__main__":
    main("registry_http", target, (EnvcheckError,), [], SEEDS, max_len=4096)
