"""A repository's tags (``GET /v2/<name>/tags/list``), page by page through ``Link`` headers (RFC 8288).

A ``Link`` is followed only to this repository's tags list on the same registry (the request carries the
registry's credentials), and a page named again ends the listing (a loop).
"""

from __future__ import annotations

import json
import re
from urllib.parse import parse_qsl, urlencode, urlsplit

from envcheck.errors import ServiceError
from envcheck.services.registry.client import RegistryClient

PAGE_SIZE = 1000  # asked per page; registries may send fewer (distribution caps ``n`` at 1000 by default)
MAX_PAGE_BYTES = 4 << 20
MAX_PAGES = 1000
MAX_TAGS = 100_000
_TAG = re.compile(r"[\w][\w.-]{0,127}\Z")
_LINK = re.compile(r"<([^>]*)>\s*((?:;\s*[^;,]*)*)")


def next_link(header: str) -> str | None:
    """The target of the ``rel="next"`` link in a ``Link`` header, or None."""
    for match in _LINK.finditer(header or ""):
        for param in match.group(2).split(";"):
            key, _, value = param.partition("=")
            if key.strip().lower() == "rel" and "next" in value.strip().strip('"').lower().split():
                return match.group(1).strip()
    return None


def list_tags(client: RegistryClient, page_size: int = PAGE_SIZE) -> tuple[list[str], int]:
    """Every tag of the repository in the registry's order (each once), and the invalid names skipped."""
    repo = client.ref.repository
    where = f"{client.ref.registry}/{repo}"
    path = f"/v2/{repo}/tags/list"
    query: dict[str, str] = {"n": str(page_size)}
    seen_queries: set[str] = set()
    tags: list[str] = []
    known: set[str] = set()
    skipped = 0
    for page in range(MAX_PAGES):
        encoded = urlencode(sorted(query.items()))
        if encoded in seen_queries:
            break  # a registry whose next page is one it already sent: stop rather than loop
        seen_queries.add(encoded)
        what = f"the tags list (page {page + 1})"
        raw, response = client._document(f"{repo}/tags/list?{encoded}", what, MAX_PAGE_BYTES)
        try:
            body = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ServiceError(f"{where}: {what} is not JSON ({exc}); the registry or a proxy in between sent something else") from None
        names = body.get("tags") if isinstance(body, dict) else None
        names = [] if names is None else names  # distribution's "tags": null: a repository without tags
        if not isinstance(names, list):
            raise ServiceError(f"{where}: {what} has no list of tags")
        for name in names:
            if not isinstance(name, str) or not _TAG.match(name):
                skipped += 1
                continue
            if name not in known:
                known.add(name)
                tags.append(name)
        if len(tags) > MAX_TAGS:
            raise ServiceError(f"{where}: more than {MAX_TAGS} tags; envcheck catalog stops here (select fewer "
                               "with a repository that holds fewer tags)")
        link = next_link(response.headers.get("Link", ""))
        if not link:
            return tags, skipped
        parts = urlsplit(link)
        if parts.scheme or parts.netloc:
            base = urlsplit(client.base)
            if (parts.scheme, parts.netloc) != (base.scheme, base.netloc):
                raise ServiceError(f"{where}: the next page of the tags list is on another server ({parts.netloc[:80]!r}); "
                                   "envcheck follows tag pages only on the registry itself")
        if parts.path != path:
            raise ServiceError(f"{where}: the next page of the tags list points elsewhere ({parts.path[:120]!r}); "
                               f"expected {path}")
        query = dict(parse_qsl(parts.query))
    raise ServiceError(f"{where}: the tags list did not end after {MAX_PAGES} pages")
