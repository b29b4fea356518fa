"""A loopback package index for the tests: the simple API (PEP 503 HTML and PEP 691 JSON), PEP 658 metadata
files, HTTP Range (and a mode that ignores it), and faults (404, wrong hashes, slow answers).

Wheels are built here as real zip files holding real ELF files (the checked-in fixtures/binaries, built by
fixtures/build_binaries.sh with gcc/nvcc); sdists are real tar.gz files. uv resolves against it like any index.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import tarfile
import threading
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from conftest import FIXTURES

BINARIES = FIXTURES / "binaries"
AARCH64 = "py3-none-manylinux_2_28_aarch64"


@dataclass
class Dist:
    """One file the index serves."""

    filename: str
    data: bytes
    metadata: bytes | None = None  # served as <file>.metadata (PEP 658) when set
    listed_sha256: str | None = None  # what the page says (default: the real hash)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


def metadata_text(name: str, version: str, requires: tuple[str, ...] = ()) -> bytes:
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}", *(f"Requires-Dist: {r}" for r in requires)]
    return ("\n".join(lines) + "\n\n").encode()


def build_wheel(name: str, version: str, requires: tuple[str, ...] = (), members: dict[str, Path | bytes] | None = None,
                tag: str = AARCH64, stored: tuple[str, ...] = ()) -> Dist:
    """A real wheel: dist-info (METADATA, WHEEL, RECORD) plus ``members`` (ELF fixtures by path, or bytes).

    Members named in ``stored`` are stored uncompressed (read in place by range requests); others are deflated.
    """
    dist = f"{name.replace('-', '_')}-{version}"
    meta = metadata_text(name, version, requires)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(f"{name.replace('-', '_')}/__init__.py", "")
        for member, content in (members or {}).items():
            data = content.read_bytes() if isinstance(content, Path) else content
            zf.writestr(zipfile.ZipInfo(member), data, zipfile.ZIP_STORED if member in stored else zipfile.ZIP_DEFLATED)
        zf.writestr(f"{dist}.dist-info/METADATA", meta)
        zf.writestr(f"{dist}.dist-info/WHEEL", f"Wheel-Version: 1.0\nGenerator: envcheck-tests\nRoot-Is-Purelib: false\nTag: {tag}\n")
        zf.writestr(f"{dist}.dist-info/RECORD", "")
    return Dist(f"{dist}-{tag}.whl", buf.getvalue(), meta)


def build_sdist(name: str, version: str, requires: tuple[str, ...] = ()) -> Dist:
    """A real sdist with PKG-INFO (uv reads its metadata without building it)."""
    base = f"{name.replace('-', '_')}-{version}"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for member, text in ((f"{base}/PKG-INFO", metadata_text(name, version, requires)),
                             (f"{base}/pyproject.toml", b'[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n')):
            info = tarfile.TarInfo(member)
            info.size = len(text)
            tf.addfile(info, io.BytesIO(text))
    return Dist(f"{base}.tar.gz", buf.getvalue())


@dataclass
class PackageIndex:
    """The served projects and the fault switches (changed by tests while it runs)."""

    projects: dict[str, list[Dist]] = field(default_factory=dict)
    honour_range: bool = True
    html: bool = False  # PEP 503 HTML pages instead of PEP 691 JSON
    delay: float = 0.0  # seconds before every answer
    missing: set[str] = field(default_factory=set)  # filenames answered with 404
    drip_headers: float = 0.0  # files: the status line, then one header byte every this many seconds, never ending
    drip_body: float = 0.0  # files: the headers, then one body byte every this many seconds, never ending
    auth: tuple[str, str] | None = None  # basic credentials every request must carry (401 otherwise)
    endless_pages: bool = False  # project pages: an HTML page that never ends, written as fast as it is read
    requests: list[str] = field(default_factory=list)
    bytes_sent: int = 0
    server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}/simple/"

    def add(self, project: str, *dists: Dist) -> None:
        self.projects.setdefault(project, []).extend(dists)

    def file(self, filename: str) -> Dist | None:
        return next((d for ds in self.projects.values() for d in ds if d.filename == filename), None)

    def file_url(self, filename: str) -> str:
        return self.url.replace("/simple/", f"/files/{filename}")


def _handler(index: PackageIndex) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _send(self, status: int, body: bytes, ctype: str = "application/octet-stream", extra: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for k, v in (extra or {}).items():
                self.send_header(k, v)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)
                index.bytes_sent += len(body)

        def do_HEAD(self) -> None:
            self.do_GET()

        def _drip(self, head: bytes, every: float) -> None:
            """A slowloris answer: ``head`` at once, then a byte every ``every`` seconds until the client leaves."""
            try:
                self.wfile.write(head)
                for _ in range(int(600 / every)):
                    self.wfile.write(b"a")
                    self.wfile.flush()
                    time.sleep(every)
            except OSError:
                pass
            self.close_connection = True

        def _endless(self) -> None:
            row = b'<a href="/files/x-1.0.tar.gz#sha256=' + b"0" * 64 + b'">x-1.0.tar.gz</a><br/>\n'
            chunk = row * ((1 << 20) // len(row))
            try:
                self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n\r\n<html><body>\n")
                for _ in range(64 << 10):  # 64 GiB at most
                    self.wfile.write(chunk)
            except OSError:
                pass
            self.close_connection = True

        def do_GET(self) -> None:
            index.requests.append(f"{self.command} {self.path} {self.headers.get('Range', '')}".strip())
            if index.delay:
                time.sleep(index.delay)
            if index.auth is not None:
                expected = "Basic " + base64.b64encode(f"{index.auth[0]}:{index.auth[1]}".encode()).decode()
                if self.headers.get("Authorization") != expected:
                    return self._send(401, b"credentials needed", extra={"WWW-Authenticate": 'Basic realm="test"'})
            path = self.path.split("?")[0]
            if path.startswith("/files/") and index.drip_headers:
                return self._drip(b"HTTP/1.1 200 OK\r\nX-Slow: ", index.drip_headers)
            if path.startswith("/files/") and index.drip_body:
                asked = re.fullmatch(r"bytes=(\d+)-(\d+)", self.headers.get("Range", "")) or re.match(r"(0)-(65535)", "0-65535")
                assert asked is not None
                start, end = int(asked.group(1)), int(asked.group(2))
                return self._drip(f"HTTP/1.1 206 Partial Content\r\nContent-Length: {end - start + 1}\r\n"
                                  f"Content-Range: bytes {start}-{end}/{1 << 30}\r\n\r\n".encode(), index.drip_body)
            m = re.fullmatch(r"/simple/([^/]+)/?", path)
            if m and index.endless_pages:
                return self._endless()
            if m:
                return self._page(m.group(1))
            if path in ("/simple/", "/simple"):
                return self._send(200, "".join(f'<a href="{p}/">{p}</a>' for p in index.projects).encode(), "text/html")
            m = re.fullmatch(r"/files/([^/]+?)(\.metadata)?", path)
            if not m:
                return self._send(404, b"not found")
            dist = index.file(m.group(1))
            if dist is None or dist.filename in index.missing:
                return self._send(404, b"not found")
            if m.group(2):
                return self._send(200, dist.metadata, "text/plain") if dist.metadata is not None else self._send(404, b"no metadata")
            return self._file(dist.data)

        def _page(self, project: str) -> None:
            dists = index.projects.get(project)
            if dists is None:
                return self._send(404, b"no such project")
            base = index.url.replace("/simple/", "/files/")
            if index.html:
                links = []
                for d in dists:
                    meta = f' data-core-metadata="sha256={hashlib.sha256(d.metadata).hexdigest()}"' if d.metadata else ""
                    links.append(f'<a href="{base}{d.filename}#sha256={d.listed_sha256 or d.sha256}"{meta}>{d.filename}</a><br/>')
                return self._send(200, f"<html><body>{''.join(links)}</body></html>".encode(), "text/html")
            files = [{"filename": d.filename, "url": base + d.filename, "hashes": {"sha256": d.listed_sha256 or d.sha256},
                      "size": len(d.data), "core-metadata": {"sha256": hashlib.sha256(d.metadata).hexdigest()} if d.metadata else False}
                     for d in dists]
            body = json.dumps({"meta": {"api-version": "1.1"}, "name": project, "files": files}).encode()
            return self._send(200, body, "application/vnd.pypi.simple.v1+json")

        def _file(self, data: bytes) -> None:
            rng = self.headers.get("Range")
            m = re.fullmatch(r"bytes=(\d*)-(\d*)", rng or "")
            if not index.honour_range or not m:
                return self._send(200, data, extra={"Accept-Ranges": "none" if not index.honour_range else "bytes"})
            if m.group(1):
                start, end = int(m.group(1)), int(m.group(2)) if m.group(2) else len(data) - 1
            else:
                start, end = max(0, len(data) - int(m.group(2))), len(data) - 1
            end = min(end, len(data) - 1)
            if start >= len(data):
                return self._send(416, b"", extra={"Content-Range": f"bytes */{len(data)}"})
            return self._send(206, data[start:end + 1], extra={"Content-Range": f"bytes {start}-{end}/{len(data)}", "Accept-Ranges": "bytes"})

    return Handler


def serve(index: PackageIndex) -> Iterator[PackageIndex]:
    """Run ``index`` on a loopback port until the generator is closed."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(index))
    server.daemon_threads = True
    index.server = server
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield index
    finally:
        server.shutdown()
        server.server_close()


def standard_index() -> PackageIndex:
    """The projects most tests use."""
    index = PackageIndex()
    # A clean aarch64 extension (a real aarch64 library from the torch wheel), stored: read in place by ranges.
    index.add("cleanext", build_wheel("cleanext", "1.0", ("helper>=1",), {"cleanext/lib/libclean.so": BINARIES / "aarch64_libtorch_global_deps.so"},
                                      stored=("cleanext/lib/libclean.so",)))
    index.add("helper", build_wheel("helper", "1.0", tag="py3-none-any"), build_wheel("helper", "2.0", tag="py3-none-any"))
    # CUDA 12-linked extension (G1), deflated: inflated from its start.
    index.add("cuda12ext", build_wheel("cuda12ext", "1.0", (), {"cuda12ext/_C.so": BINARIES / "libext_cuda12.so"}))
    # GPU code for sm_80 only (G7), stored.
    index.add("sm80ext", build_wheel("sm80ext", "1.0", (), {"sm80ext/kernels.so": BINARIES / "gpu_sm80.so"}, stored=("sm80ext/kernels.so",)))
    # Only a source archive (a CUDA-extension name from the knowledge table and a plain one).
    index.add("xformers", build_sdist("xformers", "0.0.35"))
    index.add("plainsrc", build_sdist("plainsrc", "1.0"))
    # Pure Python whose only wheel is for Python 2 (langdetect 1.0.9): the sdist is picked, and builds anywhere.
    index.add("py2src", build_wheel("py2src", "1.0", tag="py2-none-any"), build_sdist("py2src", "1.0"))
    # Only a Windows wheel: no file for linux/aarch64.
    index.add("winonly", build_wheel("winonly", "1.0", tag="py3-none-win_amd64"))
    # A conflict in metadata: alpha 1.0 needs beta==1.0.
    index.add("alpha", build_wheel("alpha", "1.0", ("beta==1.0",), tag="py3-none-any"))
    index.add("beta", build_wheel("beta", "1.0", tag="py3-none-any"), build_wheel("beta", "2.0", tag="py3-none-any"))
    # A stand-in torch (pure Python) and packages that need it loosely or exactly (NGC stages keep or replace theirs).
    index.add("torch", build_wheel("torch", "2.14.1", ("fakedep>=1",), tag="py3-none-any"))
    index.add("fakedep", build_wheel("fakedep", "1.0", tag="py3-none-any"))
    index.add("needs-torch", build_wheel("needs-torch", "1.0", ("torch>=2.0",), tag="py3-none-any"))
    index.add("pins-torch", build_wheel("pins-torch", "1.0", ("torch==2.14.1",), tag="py3-none-any"))
    return index
