"""What a version string, distribution name or index URL says about the CUDA build behind it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from envcheck import knowledge
from envcheck.model import Package
from envcheck.profile import Profile

if TYPE_CHECKING:
    from packaging.markers import Marker
    from packaging.version import Version

_LOCAL_CUDA = re.compile(r"(?:^|[.+])cu(\d{2,3})(?:$|[.])")
_LOCAL_ROCM = re.compile(r"(?:^|[.+])rocm\d")
_CONDA_CUDA_LABEL = re.compile(r"(?:^|/)label/cuda-(\d+)\.\d+")
_INDEX_TAG = re.compile(r"/whl/(?:nightly/|test/)?(cu\d{2,3}|cpu|rocm[\d.]+|xpu)(?:/|$)")
# Any other index whose path names a CUDA build as a whole segment (pypi.jetson-ai-lab.dev/sbsa/cu128,
# /jp6/cu126, a mirror's /cu121/simple): three digits only, so a host (cu12.example) or a word (cu128-notes) is not one
_PATH_CUDA_TAG = re.compile(r"cu1\d\d")


@dataclass(frozen=True)
class CudaBuild:
    """The CUDA build a version or URL names: ``cuda_major`` None with ``flavor`` cpu/rocm/unknown."""

    flavor: str  # cuda | cpu | rocm | xpu | unknown
    cuda_major: int | None
    detail: str  # e.g. "+cu128", "NGC 25.09", "cu130 index"


def cuda_from_tag(tag: str) -> int | None:
    """``cu128`` -> 12, ``cu130`` -> 13, ``cu118`` -> 11."""
    if not (m := re.fullmatch(r"cu(\d{2,3})", tag)):
        return None
    digits = m.group(1)
    return int(digits[:-1]) if len(digits) == 3 else int(digits[0])


def build_of_version(version: str | None) -> CudaBuild | None:
    if not version or "+" not in version:
        return None
    local = version.split("+", 1)[1]
    ngc = ngc_release(version)
    if ngc is not None:
        first = knowledge.first_cuda13_ngc_release()
        major = 13 if knowledge.release_month(ngc) >= knowledge.release_month(first) else 12
        return CudaBuild("cuda", major, f"NGC {ngc}")
    if m := _LOCAL_CUDA.search(local):
        tag = f"cu{m.group(1)}"
        return CudaBuild("cuda", cuda_from_tag(tag), f"+{tag}")
    if local.startswith("cpu"):
        return CudaBuild("cpu", None, "+cpu")
    if _LOCAL_ROCM.search(local) or local.startswith("rocm"):
        return CudaBuild("rocm", None, f"+{local}")
    return None


def ngc_release(version: str | None) -> str | None:
    """``2.9.0a0+50eac811a6.nv25.09`` -> ``25.09``; None for other versions."""
    if not version:
        return None
    m = re.search(knowledge.load("torch_builds")["ngc"]["version_pattern"], version)
    return f"{m.group(1)}.{int(m.group(2)):02d}" if m else None


def build_of_index(url: str) -> CudaBuild | None:
    """What a package index serves: ``download.pytorch.org/whl/cu128`` -> CUDA 12; None if it says nothing."""
    if url.startswith("uv-torch-backend:"):
        tag = url.split(":", 1)[1]
        if tag == "auto":
            return None
        major = cuda_from_tag(tag)
        return CudaBuild("cuda" if major else ("cpu" if tag == "cpu" else "unknown"), major, f"uv --torch-backend={tag}")
    if label := _CONDA_CUDA_LABEL.search(url):  # conda: nvidia/label/cuda-12.4.0 holds that release
        return CudaBuild("cuda", int(label.group(1)), f"conda channel label cuda-{label.group(1)}")
    m = _INDEX_TAG.search(url.rstrip("/") + "/")
    if not m:
        return _path_cuda_tag(url)
    tag = m.group(1)
    if tag == "cpu":
        return CudaBuild("cpu", None, "CPU-only index")
    if tag.startswith("rocm"):
        return CudaBuild("rocm", None, f"{tag} index")
    if tag == "xpu":
        return CudaBuild("xpu", None, "xpu index")
    return CudaBuild("cuda", cuda_from_tag(tag), f"{tag} index")


def is_pypi(url: str) -> bool:
    """Whether ``url`` is PyPI's simple index (a lock entry's or uv source's ``https://pypi.org/simple``)."""
    return url.rstrip("/").lower() in ("https://pypi.org/simple", "https://pypi.python.org/simple")


def torch_index(url: str) -> bool:
    """Whether ``url`` is shaped like PyTorch's wheel index (``.../whl/cu130``): torch and its partners only
    (a CUDA tag elsewhere in a path, ``wheels.vllm.ai/0.11.2/cu130``, is not one)."""
    return _INDEX_TAG.search(url.rstrip("/") + "/") is not None


def _path_cuda_tag(url: str) -> CudaBuild | None:
    """The CUDA build the last path segment of an index URL that names one says (``.../sbsa/cu128`` -> 12)."""
    try:
        path = urlsplit(url).path
    except ValueError:
        return None
    tags = [seg for seg in path.split("/") if _PATH_CUDA_TAG.fullmatch(seg)]
    if not tags:
        return None
    return CudaBuild("cuda", cuda_from_tag(tags[-1]), f"{tags[-1]} index")


def pypi_torch_build(specifier: str, version: str | None, machine: str) -> tuple[CudaBuild, str] | None:
    """What PyPI serves for torch on ``machine`` for this pin/specifier: judged by the newest release allowed."""
    data = knowledge.load("torch_builds")
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version
    chosen: Version | None = None
    try:
        if version:
            chosen = Version(version.split("+", 1)[0])
        else:
            spec = SpecifierSet(specifier or "")
            allowed = [Version(v) for v in pypi_torch_releases() if Version(v) in spec]
            if not allowed:
                return None
            chosen = max(allowed)
    except (InvalidVersion, InvalidSpecifier):
        return None
    for row in data["pypi"]:
        if chosen in SpecifierSet(row["versions"]) and (found := _pypi_row(row, str(chosen), machine)) is not None:
            return found
    return None


def pypi_torch_releases() -> list[str]:
    """Torch releases on PyPI as far as envcheck knows them: torch_builds.toml's list and wheels.toml's."""
    from packaging.version import Version

    from envcheck.knowledge import wheels
    listed = {str(v) for v in knowledge.load("torch_builds")["pypi_releases"]["versions"]}
    listed |= {r.version for r in wheels.releases("torch") if not Version(r.version).is_prerelease}
    return sorted(listed, key=Version)


def _pypi_row(row: dict[str, Any], chosen: str, machine: str) -> tuple[CudaBuild, str] | None:
    flavor, detail = str(row.get(machine, "unknown")), f"PyPI torch {chosen} on {machine}"
    if flavor == "cpu":
        return CudaBuild("cpu", None, detail), str(row["source"])
    return (CudaBuild("cuda", int(flavor), detail), str(row["source"])) if flavor.isdigit() else None


def distribution_cuda_major(pkg: Package) -> tuple[int, str] | None:
    """(CUDA major, why) for distributions that carry CUDA libraries; None when the name says nothing."""
    data = knowledge.load("nvidia_distributions")
    name = pkg.name
    for suffix, major in data["suffix"].items():
        if name.endswith(suffix) and (name.startswith(("nvidia-", "cuda-")) or name.count("-") >= 1):
            return int(major), f"the distribution name ends in {suffix}"
    for row in data["pattern"]:
        if m := re.match(row["regex"], name):
            return int(m.group(1)), f"the distribution name {name} names CUDA {m.group(1)}"
    row = _unsuffixed().get(name)
    if row is not None and pkg.version:
        for key, value in row.items():
            if key.startswith("cuda") and key[4:].isdigit():
                held = _version_in(pkg.version, value)
                if held is None:
                    return None  # not a version
                if held:
                    return int(key[4:]), f"{name} {pkg.version} is the CUDA {key[4:]} release line ({row['source']})"
        if "cuda12" not in row:
            return 12, f"{name} {pkg.version} is outside the CUDA 13 release line ({row['cuda13']}), so it is an older CUDA build"
    return None


def _version_in(version: str, specifier: str) -> bool | None:
    """``Version(version) in SpecifierSet(specifier)``; None: not a version."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version
    try:
        return Version(version) in SpecifierSet(specifier)
    except InvalidVersion:
        return None


@lru_cache(maxsize=1)
def _unsuffixed() -> dict[str, dict[str, Any]]:
    return {row["name"]: row for row in knowledge.load("nvidia_distributions")["unsuffixed"]}


def installs_on(pkg: Package, profile: Profile, extras: tuple[str, ...] = ("",)) -> bool:
    return not pkg.marker or _marker_holds(pkg.marker, tuple(sorted(profile.marker_env.items())), extras)


@lru_cache(maxsize=16384)
def _marker_holds(text: str, env_items: tuple[tuple[str, str], ...], extras: tuple[str, ...]) -> bool:
    """Cached: a uv.lock repeats the same few markers over thousands of packages, and every check asks."""
    # imported here: an installed environment's packages carry no markers and never need the parser
    from packaging.markers import InvalidMarker, Marker
    try:
        marker = Marker(text)
    except InvalidMarker:
        return True
    for extra in extras:
        env = dict(env_items)
        env["extra"] = extra
        try:
            if marker.evaluate(env):
                return True
        except ValueError:  # a name the profile lacks, an undefined comparison (`~= "3"`): the source says so
            return True
    return False


def requirement_applies(marker: Marker | None, profile: Profile) -> bool:
    return marker is None or _marker_holds(str(marker), tuple(sorted(profile.marker_env.items())), ("",))


def unsuffixed_distribution(name: str) -> dict[str, Any] | None:
    """The row of a CUDA distribution without a -cuXX suffix (``nvidia-cublas``: its lines per major)."""
    return _unsuffixed().get(name)


def first_cu130_torch() -> str:
    return str(knowledge.load("torch_builds")["pytorch_index"]["first_cu130_release"])


def wheels_only_index(url: str) -> str | None:
    """The source of the fact that ``url``, PyTorch's wheel index, holds no source archives; None for other indexes."""
    index = knowledge.load("torch_builds")["pytorch_index"]
    return str(index["wheels_only_source"]) if torch_index(url) and index.get("wheels_only") else None


def cu130_aarch64_arch_list() -> tuple[str, str]:
    """(TORCH_CUDA_ARCH_LIST of PyTorch's cu130 linux/aarch64 wheels, its source)."""
    index = knowledge.load("torch_builds")["pytorch_index"]
    return str(index["cu130_aarch64_arch_list"]), str(index["cu130_arch_source"])


def first_pypi_cuda_torch(major: int, machine: str = "aarch64") -> str:
    for row in knowledge.load("torch_builds")["pypi"]:
        if str(row.get(machine)) == str(major) and str(row["versions"]).startswith(">="):
            return str(row["versions"])[2:]
    raise LookupError(f"torch_builds.toml has no PyPI row with CUDA {major} wheels for {machine}")
