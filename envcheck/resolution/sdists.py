"""Why only a source archive fits the target: a pure-Python project (no wheel for any machine) or compiled code
with no wheel for this machine. Read from the index's project page when the run may ask it, else from
``knowledge/wheels.toml``; unknown stays unknown."""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

from envcheck.errors import ServiceError
from envcheck.inspect.wheel_tags import parse_wheel_name
from envcheck.resolution.context import Chosen, ResolveContext
from envcheck.services.package_index import FileProblem

NO_WHEEL_ANYWHERE = "no wheel for any machine (a pure-Python or platform-independent source)"
_PYPI = "https://pypi.org/simple"


def sdist_reason(item: Chosen, ctx: ResolveContext) -> str:
    reason = item.reason
    if not reason.startswith(("wheels only for", "built from a source tree")):
        platforms = _wheel_platforms(item, ctx)
        if platforms is not None:
            reason = f"wheels only for {', '.join(sorted(platforms)[:6])}" if platforms else NO_WHEEL_ANYWHERE
    # wheels for no machine, only another Python's (langdetect 1.0.9: py2-none-any) are pure Python as well
    return NO_WHEEL_ANYWHERE if reason == "wheels only for any" else reason


def _wheel_platforms(item: Chosen, ctx: ResolveContext) -> set[str] | None:
    if not ctx.settings.offline:
        from envcheck.resolution.uv import settings_index_urls
        for index in settings_index_urls(ctx.settings) or [_PYPI]:
            if "://" not in index or index.startswith("file:"):
                continue
            try:
                files = ctx.client.project_files(index, item.name)
            except (FileProblem, ServiceError):
                continue
            if files:
                parsed = [w for f in files if (w := parse_wheel_name(f.filename))]
                # "any" (langdetect's py2-none-any) is pure Python for another interpreter, not a machine
                here = {p for w in parsed if _same(w.version, item.version) for p in w.platforms if p != "any"}
                # a release without wheels of a project whose other releases ship machine wheels is compiled code
                return here or {p for w in parsed for p in w.platforms if p != "any"}
    from envcheck.knowledge import wheels
    rel = (wheels.release(item.name, item.version) or wheels.older_than_window(item.name, item.version)) if item.version else None
    if rel is None or rel.aarch64 != "sdist":
        return None
    return {"x86_64"} if rel.x86_64 else set()


def _same(a: str, b: str | None) -> bool:
    if b is None:
        return True
    try:
        return Version(a) == Version(b)
    except InvalidVersion:
        return a == b
