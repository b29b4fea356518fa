"""A small OCI distribution client: auth challenges, retries, manifest negotiation, verified blobs.

HTTPS unless loopback or --insecure-registry (as dockerd). A per-read timeout alone lets a slow-loris server
hold envcheck forever, so each request and its retries share an overall deadline enforced by a watchdog; every
body read whole has a size limit counted after decoding, so a small gzip answer cannot inflate into memory.
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import re
import time
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import requests

from envcheck.errors import ServiceError
from envcheck.inspect.image_reference import Reference, is_loopback_host
from envcheck.services.http_deadline import Deadline, WatchingAdapter
from envcheck.services.registry.auth import Challenge, Credentials, TokenCache, parse_challenge, token_url

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_SCHEMA1 = ("application/vnd.docker.distribution.manifest.v1+prettyjws", "application/vnd.docker.distribution.manifest.v1+json")
INDEX_TYPES = (OCI_INDEX, DOCKER_LIST)
MANIFEST_TYPES = (OCI_MANIFEST, DOCKER_MANIFEST)
ACCEPT_ALL = ", ".join((OCI_INDEX, DOCKER_LIST, OCI_MANIFEST, DOCKER_MANIFEST))

MAX_MANIFEST_BYTES = 4 << 20  # the distribution spec's suggested manifest limit
MAX_CONFIG_BYTES = 64 << 20
MAX_TOKEN_BYTES = 1 << 20  # a token answer (JWTs are a few KiB)
MAX_TOKEN_CHARS = 64 << 10  # the token itself, sent back in every request's Authorization header
_TOKEN_TEXT = re.compile(r"[\x21-\x7e]+")  # printable ASCII without blanks: what a header value can carry
MAX_ERROR_BYTES = 64 << 10  # an error answer: only its first error's code and message are shown
ACCEPT_ENCODING = "gzip, deflate"  # what _decoder reads; documents are decoded with their limits applied to the result
RETRY_STATUSES = (429, 500, 502, 503, 504)
DEFAULT_DEADLINE = 300.0  # seconds for one request and its answer (ENVCHECK_HTTP_TIMEOUT, --http-timeout)
LAYER_SECONDS_PER_MIB = 1.0  # a layer stream's deadline grows by this much per MiB (a 1 MiB/s floor)
MAX_REDIRECTS = 10
USER_AGENT = "envcheck-image/0.1 (python-requests)"


def sha256_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def media_type_of(body: Any, header: str | None) -> str:
    """Its own ``mediaType``, else a known Content-Type, else its shape: the digest covers the document,
    not the header, so a proxy's wrong Content-Type must not change how it is read."""
    header = (header or "").split(";", 1)[0].strip()
    declared = body.get("mediaType") if isinstance(body, dict) else None
    if isinstance(declared, str) and declared in (*INDEX_TYPES, *MANIFEST_TYPES, *DOCKER_SCHEMA1):
        return declared
    if header in (*INDEX_TYPES, *MANIFEST_TYPES, *DOCKER_SCHEMA1):
        return header
    if not isinstance(body, dict):
        return header or "unknown"
    if isinstance(declared, str) and declared:
        return declared
    if body.get("schemaVersion") == 1:
        return DOCKER_SCHEMA1[0]
    if "manifests" in body:
        return OCI_INDEX
    if "layers" in body or "config" in body:
        return OCI_MANIFEST
    return header or "unknown"


@dataclass
class Manifest:
    """A fetched manifest or index: raw bytes, parsed body, media type and verified digest."""

    raw: bytes
    body: dict[str, Any]
    media_type: str
    digest: str

    @property
    def is_index(self) -> bool:
        return self.media_type in INDEX_TYPES


@dataclass
class RegistryClient:
    """Talks to one registry for one repository; counts the HTTP requests it makes."""

    ref: Reference
    credentials: Credentials | None = None
    insecure: Iterable[str] = ()
    timeout: tuple[float, float] = (10.0, 60.0)
    retries: int = 4
    backoff: float = 0.5
    max_wait: float = 60.0
    deadline: float = DEFAULT_DEADLINE  # overall seconds for one request and its answer (see the module doc)
    tokens: TokenCache = field(default_factory=TokenCache)
    requests_made: int = 0
    session: requests.Session = field(default_factory=requests.Session)

    def __post_init__(self) -> None:
        self.session.headers["User-Agent"] = USER_AGENT
        self.session.headers["Accept-Encoding"] = ACCEPT_ENCODING
        self.session.max_redirects = MAX_REDIRECTS
        self.session.hooks["response"].append(_bound_redirect_body)
        for prefix in ("http://", "https://"):
            self.session.mount(prefix, WatchingAdapter())
        if self.ref.is_loopback:
            # A proxy from HTTPS_PROXY cannot reach this machine's loopback; never send loopback traffic to it.
            self.session.trust_env = False
        self._auth_header: str | None = None
        insecure = set(self.insecure)
        plain = self.ref.is_loopback or self.ref.registry in insecure or self.ref.hostname in insecure
        self.base = f"{'http' if plain else 'https'}://{self.ref.api_host}/v2/"

    @property
    def scope(self) -> str:
        return f"repository:{self.ref.repository}:pull"

    def _sleep_before_retry(self, attempt: int, response: requests.Response | None, until: float, budget: float,
                            what: str, host: str) -> None:
        """Retry-After or exponential backoff, never past ``until``: a longer wait ends the request."""
        wait = self.backoff * (2**attempt)
        header = response.headers.get("Retry-After") if response is not None else None
        asked = False
        if header:
            try:
                wait, asked = float(header), True
            except ValueError:
                try:
                    when = email.utils.parsedate_to_datetime(header)
                    wait, asked = when.timestamp() - time.time(), True
                except (TypeError, ValueError):
                    pass
        wait = max(wait, 0.0) if wait == wait else 0.0  # NaN: no wait
        left = until - time.monotonic()
        if wait >= left or (asked and wait > self.max_wait):
            status = f"HTTP {response.status_code}" if response is not None else "a failed attempt"
            if asked:
                asked_for = f"asked envcheck to wait {str(header).strip()[:40]!r} before asking again (Retry-After)"
                if wait >= left:
                    raise ServiceError(f"{host} answered {status} for {what} and {asked_for}, past the {budget:g} s "
                                       "deadline of the request: try later, or raise the limit with --http-timeout or "
                                       "ENVCHECK_HTTP_TIMEOUT")
                raise ServiceError(f"{host} answered {status} for {what} and {asked_for}, longer than the "
                                   f"{self.max_wait:g} s envcheck waits between tries: try later")
            raise _deadline_error(f"{host} did not give a usable answer for {what} (last: {status})", budget)
        time.sleep(min(wait, self.max_wait))

    def _send(self, method: str, url: str, what: str, headers: dict[str, str] | None = None,
              auth: tuple[str, str] | None = None, data: dict[str, str] | None = None,
              extra_seconds: float = 0.0, until: float | None = None) -> requests.Response:
        """One streamed request, retried on 429/5xx and network errors; all attempts share the deadline
        ``until``, and a passed deadline is not retried (it is the user's bound on the wait)."""
        budget = self.deadline + extra_seconds
        until = until if until is not None else time.monotonic() + budget
        attempt = 0
        host = _host_of(url)
        while True:
            left = until - time.monotonic()
            if left <= 0:
                raise _deadline_error(f"{host} did not finish answering the request for {what}", budget)
            self.requests_made += 1
            watchdog = Deadline(left, budget)
            try:
                with watchdog.current():
                    response = self.session.request(method, url, headers=headers, stream=True, timeout=self.timeout,
                                                    auth=auth, data=data, allow_redirects=True)
            except (requests.RequestException, ValueError) as exc:  # ValueError: a bad redirect Location, ...
                watchdog.cancel()
                if isinstance(exc, requests.exceptions.SSLError):
                    raise ServiceError(f"TLS error talking to {host} for {what}: {_short(exc)}. If this "
                                       "registry serves plain HTTP, name it with --insecure-registry "
                                       f"{self.ref.registry}; if it uses a private certificate authority, "
                                       "name its certificate with REQUESTS_CA_BUNDLE") from None
                if isinstance(exc, requests.TooManyRedirects):
                    raise ServiceError(f"{host} redirected the request for {what} more than "
                                       f"{self.session.max_redirects} times (a redirect loop); the registry "
                                       "or a proxy in between is misconfigured") from None
                if watchdog.fired:
                    raise _deadline_error(f"{host} did not finish answering the request for {what}", budget) from None
                if not isinstance(exc, (requests.ConnectionError, requests.Timeout)):
                    raise ServiceError(f"{host} sent an answer for {what} that could not be used: "
                                       f"{type(exc).__name__}: {_short(exc)}") from None
                if attempt >= min(self.retries, 2):
                    reason = "timed out" if isinstance(exc, requests.Timeout) else "connection failed"
                    raise ServiceError(f"{host} could not be reached ({reason}) while fetching {what}: "
                                       f"{_short(exc)}. Check the registry address, the network and HTTPS_PROXY.") from None
                self._sleep_before_retry(attempt, None, until, budget, what, host)
                attempt += 1
                continue
            if response.status_code in RETRY_STATUSES and attempt < self.retries:
                watchdog.cancel()
                response.close()
                self._sleep_before_retry(attempt, response, until, budget, what, host)
                attempt += 1
                continue
            response.envcheck_watchdog = watchdog  # type: ignore[attr-defined]
            return response

    def _authorize(self, response: requests.Response, what: str, until: float) -> bool:
        """Answer a 401 challenge; True when a new Authorization header is worth a retry."""
        header = response.headers.get("WWW-Authenticate", "")
        challenge = parse_challenge(header)
        if challenge is None:
            if header.strip():
                raise ServiceError(f"{self.ref.registry} answered HTTP 401 for {what} with a WWW-Authenticate challenge "
                                   f"envcheck cannot read ({header[:120]!r}); the registry or a proxy in between is "
                                   "misconfigured")
            return False
        creds = self.credentials
        if challenge.scheme == "basic":
            if creds is None or not (creds.username or creds.password):
                raise ServiceError(f"{self.ref.registry} requires a login for {what} (Basic auth) and no credentials were "
                                   "found: run `docker login`, or pass --username and --password-stdin")
            header = creds.basic_header()
        elif challenge.scheme != "bearer":
            raise ServiceError(f"{self.ref.registry} asked for unsupported authentication scheme {challenge.scheme!r} "
                               f"(HTTP 401 for {what}); envcheck speaks Bearer and Basic, as docker pull does")
        else:
            key = (challenge.params.get("realm", ""), challenge.params.get("service", ""), self.scope)
            token = self.tokens.get(key)
            if token is None or f"Bearer {token}" == self._auth_header:
                token = self._fetch_token(challenge, key, until)
            header = f"Bearer {token}"
        if header == self._auth_header:
            return False
        self._auth_header = header
        return True

    def _fetch_token(self, challenge: Challenge, key: tuple[str, str, str], until: float) -> str:
        try:
            url = token_url(challenge, self.scope)
        except ServiceError as exc:
            raise ServiceError(f"{self.ref.registry}: {exc.message} (HTTP 401 challenge); the registry or a proxy in "
                               "between is misconfigured") from None
        self._refuse_downgrade(url)
        creds = self.credentials
        what = f"a token for {self.scope}"
        if creds is not None and creds.identity_token:
            form = {"grant_type": "refresh_token", "refresh_token": creds.identity_token, "client_id": "envcheck",
                    "scope": self.scope, "service": challenge.params.get("service", "")}
            response = self._send("POST", challenge.params["realm"], what, data=form, until=until)
        else:
            auth = (creds.username, creds.password) if creds is not None and (creds.username or creds.password) else None
            response = self._send("GET", url, what, auth=auth, until=until)
        try:
            if response.status_code in (401, 403):
                who = f"the credentials from {creds.origin or 'the command line'}" if creds else "an anonymous request"
                raise ServiceError(f"the token server of {self.ref.registry} refused {who} (HTTP {response.status_code}) "
                                   f"for {self.scope}: check the user name and password (docker login), or whether this "
                                   "image needs a login at all")
            if response.status_code != 200:
                raise ServiceError(f"the token server of {self.ref.registry} answered HTTP {response.status_code} for {what}")
            raw = _read_limited(response, MAX_TOKEN_BYTES, f"the token server's answer ({_host_of(url)}) for {what}")
            try:
                data = json.loads(raw)
                token = data.get("token") or data.get("access_token")
                expires = float(data.get("expires_in") or 60)
            except (ValueError, AttributeError, TypeError, UnicodeDecodeError, RecursionError, OverflowError):
                raise ServiceError(f"the token server of {self.ref.registry} did not answer with the JSON of a token") from None
        finally:
            _close(response)
        if not isinstance(token, str) or not token:
            raise ServiceError(f"the token server of {self.ref.registry} answered without a token")
        if len(token) > MAX_TOKEN_CHARS or not _TOKEN_TEXT.fullmatch(token):
            # it goes into an Authorization header: a newline or a megabyte there fails every later request
            raise ServiceError(f"the token server of {self.ref.registry} answered with a token that cannot be sent back "
                               f"({len(token):,} characters; a token is at most {MAX_TOKEN_CHARS:,} printable ASCII characters)")
        self.tokens.put(key, token, 60.0 if expires != expires else expires)  # NaN: the default
        return token

    def _refuse_downgrade(self, realm: str) -> None:
        """Refuse a plain-HTTP token realm named by an HTTPS registry (loopback excepted): credentials and
        tokens would travel in clear text, undoing the registry's TLS."""
        parts = urlsplit(realm)
        if self.base.startswith("https://") and parts.scheme == "http" and not is_loopback_host(parts.hostname or ""):
            raise ServiceError(f"{self.ref.registry} is reached over HTTPS but its 401 challenge names a plain-HTTP token "
                               f"server (http://{_host_port(parts)}); envcheck refuses to send credentials or token "
                               "requests there in clear text. Fix the registry's token realm (auth.token.realm), or name "
                               f"the registry with --insecure-registry {self.ref.registry} if it is meant to be plain HTTP")

    def get(self, path: str, what: str, headers: dict[str, str] | None = None, extra_seconds: float = 0.0,
            until: float | None = None) -> requests.Response:
        """GET ``/v2/<path>`` streamed, with authentication; ServiceError on any answer but 2xx."""
        url = self.base + path
        until = until if until is not None else time.monotonic() + self.deadline + extra_seconds
        for _ in range(3):
            merged = dict(headers or {})
            if self._auth_header:
                merged["Authorization"] = self._auth_header
            response = self._send("GET", url, what, headers=merged, extra_seconds=extra_seconds, until=until)
            try:
                again = response.status_code == 401 and self._authorize(response, what, until)
            except BaseException:
                _close(response)
                raise
            if not again:
                break
            _close(response)
        if response.status_code < 300:
            return response
        self._raise_for(response, what)
        raise AssertionError("unreachable")  # pragma: no cover

    def _raise_for(self, response: requests.Response, what: str) -> None:
        status = response.status_code
        detail = _error_detail(response)
        _close(response)
        where = f"{self.ref.registry}/{self.ref.repository}"
        if status == 401:
            anonymous = self.credentials is None or not (self.credentials.username or self.credentials.identity_token)
            if self._auth_header is None or anonymous:
                raise ServiceError(f"{where}: {what} needs authentication (HTTP 401){detail}: run `docker login "
                                   f"{self.ref.registry}` or pass --username/--password-stdin")
            raise ServiceError(f"{where}: the registry rejected the credentials for {what} (HTTP 401){detail}; "
                               "check the user name and password")
        if status == 403:
            raise ServiceError(f"{where}: access to {what} denied (HTTP 403){detail}; the account may lack pull access")
        if status == 404:
            raise ServiceError(f"{where}: {what} not found (HTTP 404){detail}; check the name and tag. Some registries "
                               "(nvcr.io) also answer 404 or 401 when a login is needed")
        if status == 429:
            raise ServiceError(f"{where}: still rate-limited (HTTP 429) after {self.retries} retries for {what}; try later")
        raise ServiceError(f"{where}: the registry answered HTTP {status} for {what}{detail}")

    def manifest(self, reference: str | None = None) -> Manifest:
        """Fetch the manifest or index at ``reference`` (tag or digest), accepting every media type."""
        reference = reference or self.ref.reference
        what = f"manifest {reference}"
        accept = ACCEPT_ALL
        for _ in range(2):
            try:
                raw, response = self._document(f"{self.ref.repository}/manifests/{reference}", what, MAX_MANIFEST_BYTES,
                                               {"Accept": accept})
                break
            except ServiceError as exc:
                # distribution 2.8 answers 404 when an OCI index exists but Accept lacks its type; some
                # proxies rewrite Accept, so ask again for the index type alone.
                if "OCI index found" in exc.message and accept != OCI_INDEX:
                    accept = OCI_INDEX
                    continue
                raise
        content_type = response.headers.get("Content-Type")
        header_digest = response.headers.get("Docker-Content-Digest") or ""
        digest = sha256_digest(raw)
        expected = reference if reference.startswith("sha256:") else header_digest
        where = f"{self.ref.registry}/{self.ref.repository}: {what}"
        if expected.startswith("sha256:") and expected != digest:
            raise ServiceError(f"{where} has digest {digest}, expected {expected}: "
                               "the content was altered in transit or by the registry")
        try:
            body = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ServiceError(f"{where} is not JSON ({exc}; Content-Type {content_type or 'none'}); the "
                               "registry or a proxy in between sent something else") from None
        if not isinstance(body, dict):
            raise ServiceError(f"{where} is JSON but not an object")
        media_type = media_type_of(body, content_type)
        if media_type not in (*INDEX_TYPES, *MANIFEST_TYPES, *DOCKER_SCHEMA1):
            raise ServiceError(f"{where} is JSON but neither an image manifest nor an index (media type "
                               f"{media_type[:80]!r}, Content-Type {content_type or 'none'}); the registry "
                               "or a proxy in between sent something else")
        if media_type in DOCKER_SCHEMA1:
            raise ServiceError(f"{where} is a legacy schema 1 manifest, which carries no image config; "
                               "envcheck reads schema 2 and OCI images only")
        return Manifest(raw=raw, body=body, media_type=media_type, digest=digest)

    def blob(self, digest: str, limit: int = MAX_CONFIG_BYTES, what: str = "") -> bytes:
        """A small blob (an image config) read whole and verified against its digest."""
        what = what or f"blob {digest[:19]}"
        data, _ = self._document(f"{self.ref.repository}/blobs/{digest}", what, limit)
        verify_digest(data, digest, f"{self.ref.registry}/{self.ref.repository} {what}")
        return data

    def open_blob(self, digest: str, what: str = "", size: int | None = None) -> VerifiedStream:
        """A streaming reader over a blob that checks the digest (and size) once it reaches the end."""
        what = what or f"blob {digest[:19]}"
        extra = (size or 0) / (1 << 20) * LAYER_SECONDS_PER_MIB
        response = self.get(f"{self.ref.repository}/blobs/{digest}", what, extra_seconds=extra)
        where = f"{self.ref.registry}/{self.ref.repository} {what}"
        reader = _ResponseReader(response, where)
        return VerifiedStream(reader, digest, where, size=size, on_close=lambda: _close(response))

    def _document(self, path: str, what: str, limit: int, headers: dict[str, str] | None = None) -> tuple[bytes, requests.Response]:
        """GET a small document whole; a stream broken midway is asked for again (nothing of it was used)."""
        attempt = 0
        until = time.monotonic() + self.deadline
        while True:
            response = self.get(path, what, headers, until=until)
            try:
                with response:
                    return _read_limited(response, limit, f"{self.ref.registry}/{self.ref.repository} {what}"), response
            except _BrokenStream:
                if attempt >= min(self.retries, 2):
                    raise
                self._sleep_before_retry(attempt, None, until, self.deadline, what, self.ref.registry)
                attempt += 1
            finally:
                _finish(response)  # also when the body was too big or broke: its deadline timer ends now


def _hasher(digest: str, what: str) -> tuple[Any, str]:
    algorithm, _, expected = digest.partition(":")
    if algorithm not in ("sha256", "sha512"):
        raise ServiceError(f"{what}: unsupported digest algorithm {algorithm!r}")
    return hashlib.new(algorithm), expected


def verify_digest(data: bytes, digest: str, what: str) -> None:
    hasher, expected = _hasher(digest, what)
    hasher.update(data)
    if hasher.hexdigest() != expected:
        raise ServiceError(f"{what}: content does not match its digest {digest} (got {hasher.name}:{hasher.hexdigest()}); "
                           "the data was corrupted in transit or in the registry")


class _BrokenStream(ServiceError):
    """The connection broke or ended early while a body was read."""


class _ResponseReader:
    """``read(n)`` over a streamed body; a cut connection or a passed deadline is a ServiceError."""

    def __init__(self, response: requests.Response, what: str) -> None:
        self._raw = response.raw
        self._what = what
        self._expected = int(response.headers.get("Content-Length") or -1)
        self._watchdog: Deadline | None = getattr(response, "envcheck_watchdog", None)
        self.read_bytes = 0

    def read(self, size: int = -1) -> bytes:
        try:
            data: bytes = self._raw.read(size if size >= 0 else None, decode_content=False)
        except Exception as exc:  # urllib3 raises ProtocolError/IncompleteRead/ReadTimeoutError on a cut stream
            self._raise_deadline()
            raise _BrokenStream(f"the connection broke while reading {self._what} after {self.read_bytes} bytes: "
                                f"{_short(exc)}") from None
        self.read_bytes += len(data)
        if not data and size != 0:
            self._raise_deadline()
            self.finish()
            if 0 <= self.read_bytes < self._expected:
                raise _BrokenStream(f"the stream of {self._what} ended after {self.read_bytes} of {self._expected} bytes")
        return data

    def finish(self) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()

    def _raise_deadline(self) -> None:
        if self._watchdog is not None and self._watchdog.fired:
            raise _deadline_error(f"{self._what} did not arrive in full", self._watchdog.seconds)


class VerifiedStream:
    """A file-like reader that hashes what passes through and raises at EOF if the digest is wrong."""

    def __init__(self, source: Any, digest: str | None, what: str, size: int | None = None, on_close: Any = None) -> None:
        # digest None: only compute it (``digest()`` after the end), for streams whose digest is learnt later.
        self._hash, self._expected = _hasher(digest or "sha256:", what)
        self._source = source
        self._digest = digest or ""
        self._what = what
        self._size = size
        self._on_close = on_close
        self.bytes_read = 0
        self.verified = False

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        data: bytes = self._source.read(size)
        if data:
            self._hash.update(data)
            self.bytes_read += len(data)
            if self._size is not None and self.bytes_read > self._size:
                # a stream longer than its descriptor says is wrong whatever follows: stop reading it now
                raise ServiceError(f"{self._what}: more than the {self._size} bytes the manifest says")
        elif size != 0 and not self.verified:
            self._check()
        return data

    def digest(self) -> str:
        """The digest of what has been read so far (the whole blob once it is drained)."""
        return f"{self._hash.name}:{self._hash.hexdigest()}"

    def drain(self) -> None:
        """Read (and hash) whatever the consumer left unread, then verify."""
        while self.read(1 << 20):
            pass

    def _check(self) -> None:
        if self._size is not None and self.bytes_read != self._size:
            raise ServiceError(f"{self._what}: got {self.bytes_read} bytes, the manifest says {self._size}")
        if self._expected and self._hash.hexdigest() != self._expected:
            raise ServiceError(f"{self._what}: content does not match its digest {self._digest}; the data was "
                               "corrupted in transit or in the registry")
        self.verified = True

    def close(self) -> None:
        if self._on_close is not None:
            self._on_close()

    def __enter__(self) -> VerifiedStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _read_limited(response: requests.Response, limit: int, what: str) -> bytes:
    """The whole body, decoded, at most ``limit`` bytes after decoding (a gzip bomb stops at the limit)."""
    reader = _ResponseReader(response, what)
    decoder = _decoder(response.headers.get("Content-Encoding", ""), what)
    out = bytearray()
    encoding = response.headers.get("Content-Encoding", "").strip()[:20]
    try:
        while True:
            chunk = reader.read(1 << 16)
            if not chunk:
                break
            if decoder is None:
                out += chunk
            while decoder is not None and chunk and len(out) <= limit:
                try:  # max_length keeps each step's output small; the rest of the input waits in unconsumed_tail
                    out += decoder.decompress(chunk, limit + 1 - len(out))
                except zlib.error as exc:
                    raise ServiceError(f"{what} is not valid {encoding!r} data ({exc}); the server or a proxy in between "
                                       "sent something else") from None
                chunk = decoder.unconsumed_tail
            if len(out) > limit:
                raise ServiceError(f"{what} is larger than {_size(limit)} (counted after decompression); refusing to "
                                   "read it into memory")
        if decoder is not None:
            if not decoder.eof:
                raise _BrokenStream(f"the {encoding!r} data of {what} ended before its end")
            out += decoder.flush()
    finally:
        reader.finish()
    return bytes(out)


def _decoder(encoding: str, what: str) -> Any:
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return None
    if encoding in ("gzip", "x-gzip", "deflate"):
        return zlib.decompressobj(zlib.MAX_WBITS | 32)  # a gzip or zlib header, detected
    raise ServiceError(f"{what} came with Content-Encoding {encoding[:40]!r}, which envcheck does not decode (it asks "
                       f"for {ACCEPT_ENCODING}); the server or a proxy in between is misconfigured")


def _size(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit >> 10} KiB"


def _finish(response: requests.Response) -> None:
    watchdog: Deadline | None = getattr(response, "envcheck_watchdog", None)
    if watchdog is not None:
        watchdog.cancel()


def _close(response: requests.Response) -> None:
    _finish(response)
    response.close()


def _deadline_error(subject: str, seconds: float) -> ServiceError:
    return ServiceError(f"{subject} within {seconds:g} s (a stalled or very slow connection), so envcheck gave up; "
                        "raise the limit with --http-timeout or ENVCHECK_HTTP_TIMEOUT if the registry is just slow")


def _host_port(parts: Any) -> str:
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    try:
        return f"{host}:{parts.port}" if parts.port else host
    except ValueError:
        return host


def _host_of(url: str) -> str:
    return url.split("://", 1)[-1].split("/", 1)[0]


def _error_detail(response: requests.Response) -> str:
    """': CODE message' from an error body; best effort, a bad body only loses the detail."""
    try:
        body = json.loads(_read_limited(response, MAX_ERROR_BYTES, "an error answer"))
        first = (body.get("errors") or [None])[0]
        if isinstance(first, dict):
            return f": {str(first.get('code', ''))[:80]} {str(first.get('message', ''))[:300]}".rstrip()
    except (ServiceError, ValueError, AttributeError, UnicodeDecodeError):
        pass
    return ""


def _bound_redirect_body(response: requests.Response, **_: Any) -> requests.Response:
    """A hook: requests reads a redirect's whole body before following it; read at most MAX_ERROR_BYTES."""
    if response.is_redirect:
        try:
            response.raw.read(MAX_ERROR_BYTES, decode_content=False)
            more = bool(response.raw.read(1, decode_content=False))
        except Exception:  # a broken redirect body is not worth an error: nothing in it is used
            more = True
        if more:
            response.raw.close()
        response._content = b""  # what requests then "consumes" before following the redirect
        response._content_consumed = True  # type: ignore[attr-defined]
    return response


def _short(exc: BaseException) -> str:
    text = str(exc)
    if "Connection refused" in text or "Errno 111" in text:
        return "connection refused"
    if "Connection reset" in text or "Errno 104" in text:
        return "connection reset by the server"
    if any(word in text for word in ("Name or service not known", "Temporary failure in name resolution",
                                     "No address associated with hostname", "NameResolutionError", "nodename nor servname")):
        return "its name could not be resolved (DNS: a typo in the registry name, or no DNS from here)"
    if "No route to host" in text or "Network is unreachable" in text:
        return "no route to it from here"
    return text[:300]
