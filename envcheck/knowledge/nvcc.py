"""Which CUDA toolkit first compiles for a GPU target (data: ``nvcc_targets.toml``)."""

from __future__ import annotations

from functools import lru_cache

from envcheck.knowledge import load


@lru_cache(maxsize=1)
def _first() -> dict[str, tuple[tuple[int, int], str]]:
    out: dict[str, tuple[tuple[int, int], str]] = {}
    for row in load("nvcc_targets")["target"]:
        major, minor = row["first_nvcc"].split(".")[:2]
        for target in row["targets"]:
            out[target] = ((int(major), int(minor)), row["source"])
    return out


def first_nvcc(target: str) -> tuple[tuple[int, int], str] | None:
    """((major, minor) of the first toolkit that targets ``target`` (``sm_121a``), its source), or None."""
    return _first().get(target.lower())


def unknown_to(cuda: str, targets: list[str]) -> list[tuple[str, str, str]]:
    """(target, first toolkit, source) for each of ``targets`` the nvcc of CUDA ``cuda`` (``12.6``) cannot
    compile for; empty when ``cuda`` names no minor version (which 12.x cannot be told)."""
    parts = cuda.split(".")
    if len(parts) < 2 or not parts[0].isdigit() or not parts[1].isdigit():
        return []
    have = (int(parts[0]), int(parts[1]))
    return [(target, f"{found[0][0]}.{found[0][1]}", found[1]) for target in targets
            if (found := first_nvcc(target)) is not None and have < found[0]]
