"""A repository of 24 tags on the loopback registry (tests/registry_fixtures.py), for `envcheck catalog`
and `envcheck merge`, and for benchmarks/bench_catalog.py.

``t00``..``t23``: even tags are CUDA 13 multi-arch indexes (amd64 + arm64, the arm64 config says
CUDA 13.0.2), odd tags are CUDA 12 images for amd64 only (a single manifest whose config says CUDA 12.6).
Every tag's arm64-or-only image has three layers: one base layer all tags share, one layer its CUDA
family shares, and one small layer of its own, so the catalog holds 72 layer references and 27 distinct
layers. Configs carry dates one day apart (``t00`` the oldest). Two more tags, ``latest`` and ``nightly``,
do not match ``t[0-9][0-9]``. The registry lists tags in pages (``?n=``), so pagination is exercised.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import registry_fixtures as rf

REPO = "fleet/train"
TAGS = [f"t{i:02d}" for i in range(24)]
OTHER_TAGS = ["latest", "nightly"]


@dataclass(frozen=True)
class FleetRepository:
    host: str
    repository: str  # host/fleet/train
    cuda13: tuple[str, ...]  # tags expected clean
    cuda12: tuple[str, ...]  # tags expected ARCH FAIL
    distinct_layers: int
    layer_references: int


def created(index: int) -> str:
    return f"2025-10-{index + 1:02d}T00:00:00Z"


def _layers(family: str, tag: str) -> list[rf.Layer]:
    base = rf.Layer(rf.tar_of({"etc/os-release": b"ID=ubuntu\nVERSION_ID=24.04\n",
                               f"{rf.DIST}/numpy-2.1.0.dist-info/METADATA": rf.metadata("numpy", "2.1.0")}))
    shared = rf.Layer(rf.tar_of({f"opt/{family}/README": f"{family} runtime files\n".encode() * 64}))
    own = rf.Layer(rf.tar_of({f"opt/app/{tag}.txt": f"built for {tag}\n".encode()}))
    return [base, shared, own]


_LOCK = threading.Lock()
_MADE: dict[str, FleetRepository] = {}


def fleet_repository(host: str | None = None) -> FleetRepository:
    """Push the 24 tags once per registry (the session's plain registry by default)."""
    host = host or rf.session_registry()
    with _LOCK:
        if host in _MADE:
            return _MADE[host]
        pusher = rf.Pusher(host)
        cuda13, cuda12 = [], []
        for index, tag in enumerate(TAGS + OTHER_TAGS):
            day = created(index % 28)
            if index % 2 == 0:
                env = ["PATH=/usr/local/cuda/bin:/usr/bin", "CUDA_VERSION=13.0.2"]
                arm = rf.push_image(pusher, REPO, f"{tag}-arm64", {**rf.config_for("arm64", env), "created": day},
                                    _layers("cuda13", tag))
                amd = rf.push_image(pusher, REPO, f"{tag}-amd64", {**rf.config_for("amd64", env), "created": day},
                                    _layers("cuda13-amd64", tag))
                rf.push_index(pusher, REPO, tag, [({"architecture": "amd64", "os": "linux"}, amd),
                                                  ({"architecture": "arm64", "os": "linux"}, arm)])
                cuda13.append(tag)
            else:
                env = ["PATH=/usr/local/cuda/bin:/usr/bin", "CUDA_VERSION=12.6.2"]
                rf.push_image(pusher, REPO, tag, {**rf.config_for("amd64", env), "created": day}, _layers("cuda12", tag))
                cuda12.append(tag)
        made = FleetRepository(host=host, repository=f"{host}/{REPO}",
                               cuda13=tuple(t for t in cuda13 if t in TAGS), cuda12=tuple(t for t in cuda12 if t in TAGS),
                               distinct_layers=1 + 2 + len(TAGS), layer_references=3 * len(TAGS))
        _MADE[host] = made
        return made
