"""The target platform as data. Checks judge against a profile, never against the machine envcheck runs on."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from envcheck import toml
from envcheck.errors import UsageError


@dataclass(frozen=True)
class Profile:
    """A target machine: CPU architecture, CUDA major, GPU compute capability, marker environment."""
    name: str
    description: str
    os: str  # linux
    machine: str  # ELF / uname machine: aarch64
    docker_arch: str  # OCI architecture: arm64
    cuda_major: int
    compute_capability: tuple[int, int]
    python_version: str  # for environment markers: the Python the platform's containers ship
    wheel_platforms: tuple[str, ...]  # platform tag suffixes that can install: manylinux_*_aarch64, linux_aarch64
    bandwidth_gbs: tuple[float, float]  # sustained planning range
    bandwidth_spec_gbs: float
    power_rating_w: float
    memory_gb: float = 0.0  # one machine's memory (unified: the pool CPU and GPU share); 0 = not said
    marker_env: dict[str, str] = field(default_factory=dict)
    # The largest share of memory one server may claim (vLLM --gpu-memory-utilization; on unified memory, of
    # the pool the OS and every process also use); 0 = no limit.
    serve_memory_fraction_max: float = 0.0
    gpus_per_node: int = 0  # 0 = not said; a tensor-parallel degree above it cannot stay on one machine

    @property
    def sm(self) -> int:
        """The GPU's SM number (12.1 -> 121)."""
        major, minor = self.compute_capability
        return major * 10 + minor

    @property
    def docker_platform(self) -> str:
        return f"{self.os}/{self.docker_arch}"


@functools.cache
def shipped_sms() -> tuple[int, ...]:
    """The GPU SMs of the shipped profiles: a binary reader searches on for GPU code when the usual places hold
    none that runs on any of them."""
    return tuple(sorted({load_profile(name).sm for name in _shipped()}))


def _shipped() -> list[str]:
    return sorted(p.name[:-5] for p in resources.files("envcheck.profiles").iterdir()
                  if p.name.endswith(".toml"))


def load_profile(name_or_path: str = "dgx-spark") -> Profile:
    """A shipped profile by name, or a profile TOML file by path."""
    path = Path(name_or_path)
    try:
        if path.is_file() and (path.suffix == ".toml" or name_or_path not in _shipped()):
            data = toml.loads(path.read_text(encoding="utf-8"))
        else:
            ref = resources.files("envcheck.profiles").joinpath(f"{name_or_path}.toml")
            if not ref.is_file():
                shipped = ", ".join(_shipped())
                looks = path.suffix == ".toml" or os.sep in name_or_path or path.exists()
                what = (f"profile {name_or_path}: " + ("is a folder" if path.is_dir() else "no such file")
                        if looks else f"unknown profile {name_or_path!r}")
                raise UsageError(f"{what}; --profile takes a shipped profile ({shipped}) or a profile TOML file")
            data = toml.load_shipped("envcheck.profiles", str(name_or_path))
    except (OSError, toml.TOMLDecodeError) as exc:
        raise UsageError(f"cannot read profile {name_or_path}: {exc}") from exc
    return _from_data(data, str(name_or_path))


def _from_data(data: dict[str, Any], origin: str) -> Profile:
    try:
        p = data["profile"]
        cc = tuple(int(x) for x in str(p["compute_capability"]).split("."))
        python_version = str(p["python_version"])
        marker_env = {
            "os_name": "posix", "sys_platform": p["os"], "platform_system": p["os"].capitalize(),
            "platform_machine": p["machine"], "platform_release": "", "platform_version": "",
            "implementation_name": "cpython", "platform_python_implementation": "CPython",
            "python_version": python_version, "python_full_version": python_version + ".0",
            "implementation_version": python_version + ".0"}
        return Profile(
            name=str(p["name"]), description=str(p.get("description", "")), os=str(p["os"]),
            machine=str(p["machine"]), docker_arch=str(p["docker_arch"]), cuda_major=int(p["cuda_major"]),
            compute_capability=(cc[0], cc[1]),
            python_version=python_version, wheel_platforms=tuple(p["wheel_platforms"]),
            bandwidth_gbs=(float(p["bandwidth_gbs"][0]), float(p["bandwidth_gbs"][1])),
            bandwidth_spec_gbs=float(p["bandwidth_spec_gbs"]), power_rating_w=float(p["power_rating_w"]),
            memory_gb=float(p.get("memory_gb", 0.0)), marker_env=marker_env,
            serve_memory_fraction_max=float(p.get("serve_memory_fraction_max", 0.0)),
            gpus_per_node=int(p.get("gpus_per_node", 0)))
    except (KeyError, ValueError, TypeError, IndexError) as exc:
        raise UsageError(f"profile {origin} is missing or has a bad field: {exc}") from exc
