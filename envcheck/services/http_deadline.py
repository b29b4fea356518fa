"""One overall deadline per HTTP request, body included: a per-read timeout alone lets a server that drips a
byte every few seconds hold envcheck for ever. When a :class:`Deadline` passes, the sockets of the connections
that sent under it are shut down, so a blocked ``recv`` returns at once; a connection reused by a later
request (a newer use number) is left alone."""

from __future__ import annotations

import contextlib
import socket
import threading
import weakref
from collections.abc import Iterator
from typing import Any

from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

_CURRENT = threading.local()  # the Deadline of the request this thread is sending, if any


class Deadline:
    """Shuts down the sockets of the connections registered with it ``seconds`` from now, unless cancelled
    (``budget``: the whole deadline, for messages, when ``seconds`` is what is left of it)."""

    def __init__(self, seconds: float, budget: float | None = None) -> None:
        self.seconds = budget if budget is not None else seconds
        self.fired = False
        self._uses: list[tuple[weakref.ref[HTTPConnection], int]] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(max(seconds, 0.0), self._fire)
        self._timer.daemon = True
        self._timer.start()

    @contextlib.contextmanager
    def current(self) -> Iterator[Deadline]:
        _CURRENT.deadline = self
        try:
            yield self
        finally:
            _CURRENT.deadline = None

    def cancel(self) -> None:
        self._timer.cancel()

    def _watch(self, connection: HTTPConnection) -> None:
        with self._lock:
            self._uses.append((weakref.ref(connection), getattr(connection, "_envcheck_use", 0)))
            fired = self.fired
        if fired:
            _shut(connection)

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            uses = list(self._uses)
        for ref, use in uses:
            connection = ref()
            if connection is not None and getattr(connection, "_envcheck_use", 0) == use:
                _shut(connection)


def _shut(connection: HTTPConnection) -> None:
    sock = getattr(connection, "sock", None)
    if sock is not None:
        with contextlib.suppress(OSError):  # socket.socket's own shutdown: on an SSLSocket it leaves the TLS object be
            socket.socket.shutdown(sock, socket.SHUT_RDWR)


def _sending(connection: HTTPConnection) -> None:
    connection._envcheck_use = getattr(connection, "_envcheck_use", 0) + 1  # type: ignore[attr-defined]
    deadline: Deadline | None = getattr(_CURRENT, "deadline", None)
    if deadline is not None:
        deadline._watch(connection)


class _WatchedHTTPConnection(HTTPConnection):
    def request(self, *args: Any, **kwargs: Any) -> None:
        _sending(self)
        super().request(*args, **kwargs)


class _WatchedHTTPSConnection(HTTPSConnection):
    def request(self, *args: Any, **kwargs: Any) -> None:
        _sending(self)
        super().request(*args, **kwargs)


class _WatchedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _WatchedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


_POOLS = {"http": _WatchedHTTPPool, "https": _WatchedHTTPSPool}


class WatchingAdapter(HTTPAdapter):
    """requests' adapter with connections a :class:`Deadline` can find (direct and through a proxy)."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _POOLS

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        manager.pool_classes_by_scheme = _POOLS
        return manager
