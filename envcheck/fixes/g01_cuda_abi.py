"""G1 fixes: CUDA 12 PyTorch indexes, +cu12x torch pins, CUDA 12 library distributions, nvidia/cuda:12 bases,
each to the CUDA 13 counterpart envcheck's knowledge tables name (else left alone, or refused with the
reason)."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from envcheck import knowledge
from envcheck.fixes import FixRequest, Refused
from envcheck.fixes.requirements_text import name_pattern
from envcheck.knowledge.builds import build_of_index
from envcheck.model import PINS_ONLY, Edit, Inventory, per_inventory

# The PyTorch index of CUDA 11/12 builds, as --index-url, PIP_INDEX_URL, a uv index or a wheel URL's folder
# (with credentials too: only the build part of the path changes).
_TORCH_INDEX = re.compile(r"(?P<head>https?://(?:[^\s/@'\"]+@)?download\.pytorch\.org/whl/(?:nightly/|test/)?)"
                          r"(?P<build>cu1[0-2]\d)(?=[/\s\"'#;,\]]|$)")


@per_inventory
def _stuck(inventory: Inventory) -> Refused | None:
    """Refused for a CUDA 11/12 mirror or private index this input uses, of which envcheck cannot know whether
    it serves cu130 builds: a pin and its index move together or not at all (docs/fix.md)."""
    for url in (index.url for index in inventory.indexes):
        build = build_of_index(url)
        if build is None or build.flavor != "cuda" or build.cuda_major is None or build.cuda_major >= 13:
            continue
        if not _TORCH_INDEX.search(url):
            host = urlsplit(url).hostname or "an index envcheck does not know"
            return Refused(f"the CUDA 12 index on {host} is not download.pytorch.org, and envcheck cannot "
                           "know whether it serves cu130 builds: the index and the +cu12x pins it serves "
                           "must move together, so neither is changed; change them by hand (or point the "
                           "index at https://download.pytorch.org/whl/cu130)")
    return None


_LOCAL_CU = re.compile(r"\+cu1[0-2]\d$")


def cu130_release(version: str) -> bool:
    """Whether the PyTorch index has a cu130 build of torch ``version`` (knowledge/torch_builds.toml)."""
    from packaging.version import InvalidVersion, Version
    first = knowledge.load("torch_builds")["pytorch_index"]["first_cu130_release"]
    try:
        return Version(version.split("+")[0]) >= Version(first)
    except InvalidVersion:
        return False


def cuda12_index(request: FixRequest) -> list[Edit] | Refused | None:
    """A cu11x/cu12x PyTorch index URL -> the cu130 one (not removal: a pinned torch < 2.11 from PyPI is
    CPU-only on aarch64, the cu130 index serves every torch from 2.9 on). Refused when the same input pins a
    torch older than 2.9 or a torchvision/torchaudio (their cu130 releases are not in envcheck's tables): the
    index and the pin must move together."""
    if (pinned := _pinned_without_cu130(request.inventory)) is not None:
        return pinned
    start, end = request.region
    if request.kind == "pyproject":  # a [[tool.uv.index]] table: its url = line follows the header
        following = re.compile(r"^\s*\[", re.MULTILINE).search(request.source.text, end)
        end = following.start() if following else len(request.source.text)
    if (stuck := _stuck(request.inventory)) is not None:
        return stuck
    edits = [request.source.edit(m.start("build"), m.end("build"), "cu130")
             for m in _TORCH_INDEX.finditer(request.source.text, start, end)]
    lines = request.finding.evidence.get("lines")
    pins = [m for line in (lines if isinstance(lines, list) else []) if isinstance(line, int)
            for m in name_pattern("torch").finditer(request.source.text, *request.source.logical_span(line))]
    if edits and (request.kind == "dockerfile" or pins):
        # a +cu12x torch pin this index serves moves with it (the refusal above made sure of a cu130 build)
        edits += [e for m in [*(request.matches(name_pattern("torch")) if request.kind == "dockerfile" else []), *pins]
                  if (e := _cu130_local(request, m)) is not None]
    return edits or None


@per_inventory
def _pinned_without_cu130(inventory: Inventory) -> Refused | None:
    for pkg in inventory.packages:
        pinned = pkg.name in ("torch", "torchvision", "torchaudio") and pkg.version and pkg.role not in PINS_ONLY
        if pinned and (pkg.name != "torch" or not cu130_release(pkg.version or "")):
            return Refused(f"{pkg.name}=={pkg.version} is pinned too, and envcheck knows of no cu130 build of it: "
                           "change the pin and the index together by hand")
    return None


def _cu130_local(request: FixRequest, torch: re.Match[str], version: str | None = None) -> Edit | None:
    """``+cu1xx`` -> ``+cu130`` in a torch requirement's specifier (only where its version is ``version``, if
    given)."""
    spec = torch.group("spec") or ""
    local = re.search(r"\+cu1[0-2]\d(?![\w.])", spec)
    if local is None or (version is not None and spec[:local.start()].strip().lstrip("=~<>!").strip() != version):
        return None
    at = torch.start("spec") + local.start()
    return request.source.edit(at, at + len(local.group()), "+cu130")


def local_version(request: FixRequest) -> list[Edit] | Refused | None:
    """torch==X+cu12x -> torch==X+cu130 where the cu130 index has that release (torch >= 2.9.0); other
    packages and older releases: no certain fix. Refused when a CUDA 12 index that cannot move serves it."""
    version = str(request.finding.evidence.get("version") or "")
    if request.finding.evidence.get("package") != "torch" or not _LOCAL_CU.search(version) or not cu130_release(version):
        return None
    if (stuck := _stuck(request.inventory)) is not None:
        return stuck
    edits = [e for m in request.matches(name_pattern("torch"))
             if (e := _cu130_local(request, m, version.split("+")[0])) is not None]
    return edits or None


def cuda12_distribution(request: FixRequest) -> list[Edit] | Refused | None:
    """nvidia-*-cu12 -> the CUDA 13 distribution from knowledge/nvidia_distributions.toml (toolkit parts drop the
    suffix and take the table's CUDA 13 specifier; cudnn, nccl, ... become -cu13); cupy-cuda12x -> cupy-cuda13x.
    A pinned version of a renamed distribution is refused: envcheck's tables do not list the releases of the
    CUDA 13 distribution."""
    name = str(request.finding.evidence.get("package") or "")
    m = re.fullmatch(r"(?P<base>.+)-(?P<prefix>cu|cuda)1[0-2](?P<x>x?)", name)
    if m is None:
        return None
    base, prefix, x = m.group("base"), m.group("prefix"), m.group("x")
    rows = {row["name"]: row for row in knowledge.load("nvidia_distributions")["unsuffixed"]}
    row_spec = rows.get(base, {}).get("cuda13") if prefix == "cu" else None
    edits = []
    for found in request.matches(name_pattern(name)):
        spec = found.group("spec")
        if isinstance(row_spec, str):
            replacement = base + (found.group("extras") or "") + row_spec
            text = request.source.text
            if request.kind == "dockerfile" and text[found.start() - 1:found.start()] not in ("'", '"'):
                replacement = f"'{replacement}'"  # a bare >= in a shell command is a redirection
            edits.append(request.source.edit(found.start("name"), found.end(), replacement))
        elif spec:
            return Refused(f"{found.group('name')}{spec.strip()} is pinned, and envcheck's tables do not say which releases "
                           f"{base}-{prefix}13{x} has; change the name and the pin by hand")
        else:
            edits.append(request.source.edit(found.start("name"), found.end("name"), f"{base}-{prefix}13{x}"))
    return edits or None


_CUDA_TAG = re.compile(r"(?<![\w./-])(?:(?:docker\.io/|nvcr\.io/)?nvidia/cuda):(?P<version>1[0-2]\.\d+(?:\.\d+)?)"
                       r"-(?P<flavor>[a-z]+\d*(?:-[a-z]+)*)-(?P<os>[a-z]+\d+(?:\.\d+)?)(?=[\s@\"']|$)")
_CUDNN_MAJOR = re.compile(r"cudnn(?P<major>\d+)-(?P<rest>[a-z-]+)")
_FROM = re.compile(r"\s*FROM\s", re.IGNORECASE)
# Where an image is named in the other kinds that carry one: a compose service's or a container's `image:` value.
_IMAGE_KEY = re.compile(r"\s*(?:-\s+)?image:\s*[\"']?(?:docker\.io/)?\s")
_BASE_KEY = {"compose": _IMAGE_KEY, "kubernetes": _IMAGE_KEY}


def cuda12_base(request: FixRequest) -> list[Edit] | Refused | None:
    """``FROM nvidia/cuda:12.x-FLAVOR-OS`` (a compose service's or a Kubernetes container's ``image:``) -> the CUDA 13 tag of the same flavour and OS from
    knowledge/cuda_image_tags.toml (``cudnn9-`` tags count as ``cudnn-``). Every other case says why it is
    left: a flavour/OS without a CUDA 13 tag in the table, a cuDNN 8 tag (CUDA 13 images carry cuDNN 9), a tag
    built from build arguments, an NGC framework image (its CUDA 13 release changes the framework too)."""
    loc = request.finding.location
    start, end = request.source.line_span(loc.line if loc and loc.line else 1)
    rows = knowledge.load("cuda_image_tags")["cuda13"]
    text = request.source.text
    for m in _CUDA_TAG.finditer(text, start, end):
        if not _BASE_KEY.get(request.kind, _FROM).match(text[start:m.start()] + " "):
            continue
        flavor, system = m.group("flavor"), m.group("os")
        cudnn = _CUDNN_MAJOR.fullmatch(flavor)
        if cudnn is not None and cudnn.group("major") != "9":
            return Refused(f"{flavor} carries cuDNN {cudnn.group('major')}, and the CUDA 13 images carry cuDNN 9 only "
                           f"(nvidia/cuda:13.0.1-cudnn-{cudnn.group('rest')}-{system}): check that the project works "
                           "with cuDNN 9, then change the tag by hand")
        wanted = f"cudnn-{cudnn.group('rest')}" if cudnn is not None else flavor
        row = next((r for r in rows if (r["flavor"], r["os"]) == (wanted, system)), None)
        if row is not None:
            replacement = f"{row['version']}-{wanted}" if wanted != flavor else row["version"]
            end_at = m.end("flavor") if wanted != flavor else m.end("version")
            return [request.source.edit(m.start("version"), end_at, replacement)]
        known = sorted({f"{r['flavor']}-{r['os']}" for r in rows})
        return Refused(f"envcheck knows no CUDA 13 tag of nvidia/cuda for {flavor} on {system} (it knows "
                       f"{', '.join(known)}): pick a CUDA 13 base by hand")
    image = str(request.finding.evidence.get("image") or "")
    line = text[start:end]
    if "$" in line:
        return Refused("the base image is built from build arguments: change their default (or the --build-arg) by hand")
    if image.startswith("nvcr.io/nvidia/"):
        return Refused(f"{image} is an NGC framework image: its CUDA 13 release brings another framework release too, "
                       "so envcheck does not pick one (see the fix above)")
    return None
