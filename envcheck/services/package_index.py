"""A package-index client: the simple API (PEP 691 JSON, PEP 503 HTML), PEP 658 metadata and HTTP range reads
of wheels (:class:`RemoteFile`), each request under a deadline and a size limit, every URL shown through
:func:`redact`. Failing to reach the index is a ServiceError; a wrong answer (404, bad hash) a
:class:`FileProblem`, kept as data."""

from __future__ import annotations

import contextlib
import hashlib
import html.parser
import io
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit, urlunsplit

from envcheck.config import env
from envcheck.errors import ServiceError

if TYPE_CHECKING:  # requests is imported on the first request: a warm `--resolve` run makes none
    import requests

USER_AGENT = "envcheck-resolve/0.1 (python-requests)"
JSON_TYPE = "application/vnd.pypi.simple.v1+json"
ACCEPT_SIMPLE = f"{JSON_TYPE}, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01"
DEFAULT_DEADLINE = 30.0  # seconds for one request: connecting, the headers and the body (ENVCHECK_HTTP_TIMEOUT)
DEFAULT_RUN_DEADLINE = 300.0  # seconds for all of one run's index reads and resolver runs (ENVCHECK_RESOLVE_TIMEOUT)
READ_TIMEOUT = 20.0
MAX_PAGE_BYTES = 32 << 20  # a project page (torch's lists thousands of files)
MAX_METADATA_BYTES = 4 << 20
MAX_FALLBACK_BYTES = 64 << 20  # a server that ignores Range: read the whole file only up to this size
BLOCK = 64 << 10
MAX_READAHEAD = 8 << 20
CACHE_BYTES = 24 << 20  # blocks a RemoteFile keeps in memory (several are read at once: resolution/facts.py)
MAX_READ_BYTES = 256 << 20  # one read of a remote file (a zip central directory claiming more is refused)


class FileProblem(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


_RUN_STARTED: list[float] = []  # when this process first asked an index or started uv


def run_left(total: float | None = None) -> float:
    """Seconds left of the run's deadline for index reads and resolver runs, counted from this process's
    first: many slow hosts or RUN lines never add up past it."""
    if not _RUN_STARTED:
        _RUN_STARTED.append(time.monotonic())
    return (total or run_seconds()) - (time.monotonic() - _RUN_STARTED[0])


def host_of(url: str) -> str:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return url
    return f"{parts.scheme}://{(parts.hostname or '').lower()}:{port or (443 if parts.scheme == 'https' else 80)}"


def redact(url: str) -> str:
    """``url`` with its userinfo and query values named like secrets as ``***``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparsable URL>"
    netloc = parts.netloc
    if "@" in netloc:
        netloc = "***@" + netloc.rsplit("@", 1)[1]

    def hidden(item: str) -> str:
        key = item.split("=", 1)[0]
        secret = ("token", "key", "secret", "password", "sig", "auth", "credential")
        return f"{key}=***" if any(w in key.lower() for w in secret) else item

    query = "&".join(map(hidden, parts.query.split("&"))) if parts.query else ""
    text = urlunsplit((parts.scheme, netloc, parts.path, query, ""))
    return "".join(ch if ch.isprintable() else "?" for ch in text)


@dataclass(frozen=True)
class IndexFile:
    filename: str
    url: str
    sha256: str | None = None
    size: int | None = None
    metadata: bool = False  # PEP 658/714: `<url>.metadata` is offered
    metadata_sha256: str | None = None
    yanked: bool = False


@dataclass
class Traffic:
    requests: int = 0
    bytes: int = 0


@dataclass
class IndexClient:
    deadline: float = field(default_factory=lambda: _env_float("ENVCHECK_HTTP_TIMEOUT", DEFAULT_DEADLINE))
    traffic: Traffic = field(default_factory=Traffic)
    run_deadline: float | None = None  # seconds for all of this process's reads (None: ENVCHECK_RESOLVE_TIMEOUT or 300)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self.slow_hosts: set[str] = set()  # hosts that let a deadline pass: not asked again in this run
        self._credentials: dict[str, tuple[str, str]] = {}  # origin -> (user, password), from the index URLs given
        # Threads share the client (files are read in parallel): each thread keeps its own session (kept-alive
        # connections per host), and a host is asked by one thread at a time until it has answered once in time,
        # so a host that never answers costs one deadline, not one per thread.
        self._local = threading.local()
        self._answered: set[str] = set()
        self._first_asks: dict[str, threading.Lock] = {}

    def use_credentials_of(self, index_url: str) -> None:
        """Send ``index_url``'s user and password with every credential-less request to its origin, as pip
        does (a resolver's lock drops them: its files would answer 401); kept in memory only, never shown."""
        from urllib.parse import unquote
        try:
            parts = urlsplit(index_url.strip())
        except ValueError:
            return
        if parts.username is None or parts.scheme not in ("http", "https"):
            return
        self._credentials.setdefault(host_of(index_url.strip()), (unquote(parts.username), unquote(parts.password or "")))

    def _auth_for(self, url: str) -> tuple[str, str] | None:
        try:
            if urlsplit(url).username is not None:
                return None  # the URL's own credentials (requests sends them)
        except ValueError:
            return None
        return self._credentials.get(host_of(url))

    def _session(self) -> requests.Session:
        session: requests.Session | None = getattr(self._local, "session", None)
        if session is None:
            import requests

            from envcheck.services.http_deadline import WatchingAdapter
            session = requests.Session()
            session.headers["User-Agent"] = USER_AGENT
            adapter = WatchingAdapter()
            session.mount("http://", adapter)
            session.mount("https://", adapter)
            self._local.session = session
        return session

    @contextlib.contextmanager
    def _first_ask(self, host: str) -> Iterator[None]:
        if host in self._answered:
            yield
            return
        with self._lock:
            gate = self._first_asks.setdefault(host, threading.Lock())
        with gate:
            yield

    def _count(self, nbytes: int, requests_made: int = 0) -> None:
        with self._lock:
            self.traffic.bytes += nbytes
            self.traffic.requests += requests_made

    @contextlib.contextmanager
    def _get(self, url: str, headers: dict[str, str] | None = None) -> Iterator[requests.Response]:
        host = host_of(url)
        with self._first_ask(host):
            try:
                with self._request(url, host, headers) as resp:
                    yield resp
            except FileProblem:
                self._answered.add(host)  # a wrong answer is still an answer in time
                raise
            self._answered.add(host)

    @contextlib.contextmanager
    def _request(self, url: str, host: str, headers: dict[str, str] | None) -> Iterator[requests.Response]:
        import requests

        from envcheck.services.http_deadline import Deadline
        shown = redact(url)
        if host in self.slow_hosts:
            raise ServiceError(f"{shown}: not asked: {redact(host)} did not answer within {self.deadline:g} s earlier in this run")
        left = run_left(self.run_deadline)
        if left <= 0:
            raise ServiceError(f"{shown}: not asked: the run's {run_seconds():g} s "
                               "for index reads passed (ENVCHECK_RESOLVE_TIMEOUT)")
        deadline = min(self.deadline, left)
        watch = Deadline(deadline)
        try:
            try:
                with watch.current():
                    resp = self._session().get(url, headers=headers or {}, stream=True, allow_redirects=True,
                                               auth=self._auth_for(url), timeout=(min(10.0, deadline), min(READ_TIMEOUT, deadline)))
            except (requests.exceptions.RequestException, OSError) as exc:
                if watch.fired or isinstance(exc, requests.exceptions.Timeout):
                    self.slow_hosts.add(host)
                    raise ServiceError(f"{shown}: no answer {self._within(deadline)} ({type(exc).__name__}); "
                                       "check the index URL and the network") from None
                # every requests error is an OSError
                raise ServiceError(f"{shown}: cannot connect ({_reason(exc)}); check the index URL, the "
                                   "proxy settings and the network") from None
            self._count(0, 1)
            resp.envcheck_deadline = watch  # type: ignore[attr-defined]
            try:
                yield resp
            except ServiceError as exc:
                if not watch.fired:
                    raise
                self.slow_hosts.add(host)
                raise ServiceError(f"{shown}: the answer did not finish {self._within(deadline)}") from exc
            finally:
                resp.close()
        finally:
            watch.cancel()

    def _within(self, deadline: float) -> str:
        if deadline < self.deadline:
            return ("before the run's deadline for index reads passed "
                    f"(ENVCHECK_RESOLVE_TIMEOUT={run_seconds():g} s)")
        return f"within {self.deadline:g} s (ENVCHECK_HTTP_TIMEOUT)"

    def _body(self, resp: requests.Response, url: str, limit: int) -> bytes:
        import requests
        declared = resp.headers.get("Content-Length")
        if declared and declared.isdigit() and int(declared) > limit:
            raise FileProblem(f"{redact(url)}: the answer is {int(declared)} bytes, more than the {limit} envcheck reads")
        out = bytearray()
        watch = getattr(resp, "envcheck_deadline", None)
        try:
            for chunk in resp.iter_content(BLOCK):
                out += chunk
                self._count(len(chunk))
                if len(out) > limit:
                    raise FileProblem(f"{redact(url)}: the answer is more than the {limit} bytes envcheck reads")
                if watch is not None and watch.fired:
                    break
        except (requests.exceptions.RequestException, OSError) as exc:
            if watch is None or not watch.fired:
                raise ServiceError(f"{redact(url)}: the answer broke off ({_reason(exc)})") from None
        if watch is not None and watch.fired:
            raise ServiceError(f"{redact(url)}: the answer did not finish within {self.deadline:g} s (ENVCHECK_HTTP_TIMEOUT)")
        return bytes(out)

    def fetch(self, url: str, limit: int, headers: dict[str, str] | None = None) -> tuple[bytes, str]:
        with self._get(url, headers) as resp:
            _check_status(resp.status_code, url)
            return self._body(resp, url, limit), resp.headers.get("Content-Type", "")

    def project_files(self, index_url: str, project: str) -> list[IndexFile]:
        from envcheck.inspect.wheel_tags import canonical
        url = index_url.rstrip("/") + "/" + canonical(project) + "/"
        body, ctype = self.fetch(url, MAX_PAGE_BYTES, {"Accept": ACCEPT_SIMPLE})
        if ctype.split(";")[0].strip() == JSON_TYPE or body.lstrip()[:1] == b"{":
            return parse_json_page(body, url)
        return parse_html_page(body.decode("utf-8", "replace"), url)

    def metadata(self, file_url: str, sha256: str | None = None) -> bytes | None:
        try:
            body, _ = self.fetch(_without_fragment(file_url) + ".metadata", MAX_METADATA_BYTES)
        except FileProblem:
            return None
        if sha256 and hashlib.sha256(body).hexdigest() != sha256.lower():
            raise FileProblem(f"{redact(file_url)}.metadata: its sha256 does not match the index's")
        return body

    def read_range(self, url: str, start: int, end: int) -> tuple[bytes, int | None, bool]:
        """Bytes ``start..end`` (inclusive) of ``url``, the total size if told, and whether Range was honoured
        (if not, the whole file up to MAX_FALLBACK_BYTES)."""
        with self._get(url, {"Range": f"bytes={start}-{end}", "Accept-Encoding": "identity"}) as resp:
            if resp.status_code == 416:
                raise FileProblem(f"{redact(url)}: the server refused the byte range {start}-{end} (416)")
            _check_status(resp.status_code, url)
            if resp.status_code == 206:
                total = _total_of(resp.headers.get("Content-Range", ""))
                return self._body(resp, url, end - start + 1 + BLOCK), total, True
            length = resp.headers.get("Content-Length")
            total = int(length) if length and length.isdigit() else None
            return self._body(resp, url, MAX_FALLBACK_BYTES), total, False


def _check_status(status: int, url: str) -> None:
    """5xx and 401/403 are ServiceErrors (the index is unusable), any other 4xx a FileProblem (this file is)."""
    if status >= 500:
        raise ServiceError(f"{redact(url)}: the server answered {status}; try again later")
    if status in (401, 403):
        raise ServiceError(f"{redact(url)}: access refused ({status}); check the credentials for this index (netrc, keyring, URL)")
    if status >= 400:
        raise FileProblem(f"{redact(url)}: the server answered {status}")


def _env_float(name: str, default: float) -> float:
    try:
        value = float(env(name) or "")
    except ValueError:
        return default
    return value if value > 0 else default


def run_seconds() -> float:
    return _env_float("ENVCHECK_RESOLVE_TIMEOUT", DEFAULT_RUN_DEADLINE)


def _reason(exc: BaseException) -> str:
    text = str(exc)
    for word in ("Connection refused", "Name or service not known", "Temporary failure in name resolution", "timed out",
                 "Connection reset", "No route to host", "certificate verify failed", "Remote end closed"):
        if word in text:
            return word
    return type(exc).__name__


def _total_of(content_range: str) -> int | None:
    total = content_range.rpartition("/")[2].strip()
    return int(total) if total.isdigit() else None


def _without_fragment(url: str) -> str:
    return url.split("#", 1)[0]


def parse_json_page(body: bytes, page_url: str) -> list[IndexFile]:
    try:
        data = json.loads(body)
    except ValueError as exc:
        raise FileProblem(f"{redact(page_url)}: not a JSON project page ({exc})") from None
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, list):
        raise FileProblem(f"{redact(page_url)}: the JSON project page has no file list")
    out = []
    for item in files:
        if not isinstance(item, dict) or not isinstance(item.get("filename"), str) or not isinstance(item.get("url"), str):
            continue
        hashes: dict[str, Any] = item["hashes"] if isinstance(item.get("hashes"), dict) else {}
        meta = item.get("core-metadata", item.get("data-dist-info-metadata", False))
        meta_hash = meta.get("sha256") if isinstance(meta, dict) else None
        size = item.get("size")
        out.append(IndexFile(
            filename=item["filename"], url=urljoin(page_url, item["url"]),
            sha256=str(hashes.get("sha256")).lower() if hashes.get("sha256") else None,
            size=size if isinstance(size, int) else None,
            metadata=bool(meta), metadata_sha256=str(meta_hash) if meta_hash else None,
            yanked=bool(item.get("yanked"))))
    return out


class _Anchors(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[dict[str, str | None], str]] = []
        self._attrs: dict[str, str | None] | None = None
        self._text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._attrs = dict(attrs)
            self._text = ""

    def handle_data(self, data: str) -> None:
        if self._attrs is not None:
            self._text += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._attrs is not None:
            self.found.append((self._attrs, self._text.strip()))
            self._attrs = None


def parse_html_page(text: str, page_url: str) -> list[IndexFile]:
    parser = _Anchors()
    parser.feed(text)
    out = []
    for attrs, label in parser.found:
        href = attrs.get("href")
        if not href:
            continue
        url = urljoin(page_url, href)
        filename = label or url.split("#")[0].rsplit("/", 1)[-1]
        meta = attrs.get("data-core-metadata", attrs.get("data-dist-info-metadata"))
        fragment = url.partition("#")[2]
        out.append(IndexFile(
            filename=filename, url=_without_fragment(url),
            sha256=fragment[len("sha256="):].lower() if fragment.startswith("sha256=") else None,
            metadata=meta is not None and meta != "false",
            metadata_sha256=meta[len("sha256="):] if meta and meta.startswith("sha256=") else None,
            yanked="data-yanked" in attrs))
    return out


class RemoteFile(io.RawIOBase):
    """A remote file read by HTTP ranges for ``zipfile``: blocks in a bounded LRU, sequential reads doubling
    the read-ahead up to MAX_READAHEAD; from a server that ignores Range, the first answer holds the whole
    file."""

    def __init__(self, client: IndexClient, url: str, size: int | None = None) -> None:
        super().__init__()
        self.client = client
        self.url = url
        self.pos = 0
        self._blocks: OrderedDict[int, bytes] = OrderedDict()
        self._whole: bytes | None = None
        self._last_end = -1
        self._readahead = BLOCK
        self.ranged = True
        if size is None:
            tail, total, ranged = client.read_range(url, 0, BLOCK - 1)
            self._take(0, tail, total, ranged)
            if total is None:
                raise FileProblem(f"{redact(url)}: the server did not say how big the file is")
            size = total
        self.size = size

    def _take(self, start: int, data: bytes, total: int | None, ranged: bool) -> None:
        if not ranged:
            self.ranged = False
            self._whole = data
            if total is not None and len(data) < total:
                raise FileProblem(f"{redact(self.url)}: the server ignores Range requests and the file ({total} bytes) is "
                                  f"bigger than the {MAX_FALLBACK_BYTES} bytes envcheck downloads instead")
            return
        for i in range(0, len(data), BLOCK):
            self._put((start + i) // BLOCK, data[i:i + BLOCK])

    def _put(self, index: int, data: bytes) -> None:
        self._blocks[index] = data
        self._blocks.move_to_end(index)
        while len(self._blocks) * BLOCK > CACHE_BYTES:
            self._blocks.popitem(last=False)

    def prefetch(self, start: int, end: int) -> None:
        """Bytes ``start`` to ``end`` (exclusive) into the block cache in one request, unless all are
        there."""
        end = min(self.size, end, start + MAX_READAHEAD)
        if self._whole is not None or end <= start:
            return
        first, last = start // BLOCK, (end - 1) // BLOCK
        if all(i in self._blocks for i in range(first, last + 1)):
            return
        self._fetch(first * BLOCK, min(self.size, (last + 1) * BLOCK) - 1)

    def _fetch(self, lo: int, hi: int) -> None:
        data, total, ranged = self.client.read_range(self.url, lo, hi)
        if ranged and len(data) != hi - lo + 1:
            raise FileProblem(f"{redact(self.url)}: asked for bytes {lo}-{hi}, got {len(data)} bytes")
        self._take(lo, data, total, ranged)

    def downloaded_sha256(self) -> str | None:
        return hashlib.sha256(self._whole).hexdigest() if self._whole is not None else None

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos}.get(whence, self.size)
        self.pos = max(0, base + offset)
        return self.pos

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            size = self.size - self.pos
        data = self.read_at(self.pos, size)
        self.pos += len(data)
        return data

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)

    def read_at(self, offset: int, size: int) -> bytes:
        end = min(self.size, offset + size)
        if end <= offset:
            return b""
        if end - offset > MAX_READ_BYTES:  # a zip directory or header that claims more is not read
            raise FileProblem(f"{redact(self.url)}: a read of {end - offset} bytes at {offset} was asked for, more than the "
                              f"{MAX_READ_BYTES} envcheck reads at once")
        if self._whole is not None:
            return self._whole[offset:end]
        first, last = offset // BLOCK, (end - 1) // BLOCK
        missing = [i for i in range(first, last + 1) if i not in self._blocks]
        if missing:
            sequential = offset == self._last_end
            self._readahead = min(MAX_READAHEAD, self._readahead * 2) if sequential else BLOCK
            lo = missing[0] * BLOCK
            self._fetch(lo, min(self.size, max((missing[-1] + 1) * BLOCK, lo + self._readahead)) - 1)
            if self._whole is not None:
                return self._whole[offset:end]
        self._last_end = end
        out = bytearray()
        for i in range(first, last + 1):
            block = self._blocks.get(i)
            if block is None:  # evicted while assembling a very large read
                block, _, _ = self.client.read_range(self.url, i * BLOCK, min(self.size, (i + 1) * BLOCK) - 1)
            else:
                self._blocks.move_to_end(i)
            out += block
        skip = offset - first * BLOCK
        return bytes(out[skip:skip + end - offset])
