"""Which entry of an image index (a manifest list) is the platform asked for."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def iter_platforms(index: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(os/arch[/variant], descriptor)`` for each child of an index, skipping attestation entries."""
    for entry in index.get("manifests") or []:
        if not isinstance(entry, dict):
            continue
        platform = entry.get("platform") or {}
        annotations = entry.get("annotations") or {}
        if annotations.get("vnd.docker.reference.type") == "attestation-manifest":
            continue
        os_name = str(platform.get("os", "unknown"))
        arch = str(platform.get("architecture", "unknown"))
        if os_name == "unknown" and arch == "unknown":
            continue
        yield f"{os_name}/{arch}" + (f"/{platform['variant']}" if platform.get("variant") else ""), entry


def platform_matches(wanted: str, offered: str) -> bool:
    """``linux/arm64`` matches ``linux/arm64`` and ``linux/arm64/v8`` (v8 is arm64's only variant)."""
    w, o = wanted.split("/"), offered.split("/")
    if w[:2] != o[:2]:
        return False
    if len(w) > 2 and len(o) > 2:
        return w[2] == o[2]
    if len(w) > 2:  # wanted a variant, offered none: only arm64/v8 is implied
        return w[1] == "arm64" and w[2] == "v8"
    return True
