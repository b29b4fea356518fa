"""Dockerfile fixes: FROM --platform=linux/amd64 removed, TORCH_CUDA_ARCH_LIST given 12.1, unsloth installed
with --no-deps on an NGC base; and the reason a flash-attn source build is left alone."""

from __future__ import annotations

import re

from envcheck.fixes import FixRequest, Refused
from envcheck.fixes.requirements_text import name_pattern
from envcheck.model import Edit

# What NVIDIA's Spark playbook installs with --no-deps; anything else on the same command needs its dependencies.
_UNSLOTH_SET = {"unsloth", "unsloth-zoo", "bitsandbytes"}
_PIP_INSTALL = re.compile(r"(?<![\w-])(?:pip3?(?:\.\d+)?|uv\s+pip|-m\s+pip)\s+install(?=\s)")


def base_platform(request: FixRequest) -> list[Edit] | None:
    """``FROM --platform=linux/amd64 IMAGE`` -> ``FROM IMAGE``: the build then takes the builder's platform,
    linux/arm64 on a Spark. Only a literal platform that is not arm64 is removed (not ``$BUILDPLATFORM``)."""
    platform = request.finding.evidence.get("platform")
    if not platform or "$" in str(platform):
        return None
    pattern = re.compile(r"(?i)^\s*FROM\s+(?P<flag>--platform=" + re.escape(str(platform)) + r"\s+)")
    loc = request.finding.location
    start, end = request.source.line_span(loc.line if loc and loc.line else 1)
    m = pattern.match(request.source.text, start, end)
    if m is None:
        return None
    return [request.source.edit(m.start("flag"), m.end("flag"), "")]


def arch_list(request: FixRequest) -> list[Edit] | None:
    """TORCH_CUDA_ARCH_LIST without sm_121 -> the same list with ``12.1`` added (and ``12.1a`` under
    ``--nvfp4``), separated as the list already is. Only a value written literally where the finding points."""
    value = str(request.finding.evidence.get("value") or "")
    if not value.strip():
        return None
    added = ["12.1", "12.1a"] if request.options.nvfp4 else ["12.1"]
    pattern = re.compile(r"(?<![\w$])TORCH_CUDA_ARCH_LIST(?:=|:?\s+)(?P<quote>[\"']?)(?P<value>" + re.escape(value) + r")(?P=quote)(?=\s|$|\\)")
    edits = []
    for m in request.matches(pattern):
        separator = ";" if ";" in value or not re.search(r"\s", value) else " "  # `KEY: 8.0 9.0` (YAML) keeps spaces
        edits.append(request.source.edit(m.end("value"), m.end("value"), "".join(separator + a for a in added)))
    return edits or None


def unsloth_no_deps(request: FixRequest) -> list[Edit] | Refused | None:
    """``pip install unsloth ...`` in a Dockerfile stage on an NGC base -> ``pip install --no-deps unsloth ...``
    (NVIDIA's Spark order: the stack comes from the container). Refused when the same command installs anything
    besides unsloth, unsloth_zoo and bitsandbytes (their dependencies would go too); on other bases the
    dependencies may be needed."""
    if request.kind != "dockerfile":
        return None
    loc = request.finding.location
    stage = loc.stage if loc else None
    bases = [i for i in request.inventory.images if stage in (i.stage, *i.stages)] if stage else list(request.inventory.images)
    if not bases or not all(i.ref.startswith("nvcr.io/nvidia/") for i in bases):
        return None
    line = loc.line if loc else None
    for command in request.inventory.installs:
        others = sorted(set(command.packages) - _UNSLOTH_SET)
        if "unsloth" in command.packages and command.location is not None and command.location.line == line and others:
            return Refused(f"the same command installs {', '.join(others)}: --no-deps would leave out their dependencies "
                           "too; install them first, then unsloth with --no-deps (NVIDIA's order), by hand")
    for m in request.matches(name_pattern("unsloth")):
        installs = [p for p in request.matches(_PIP_INSTALL) if p.end() <= m.start()]
        if not installs:
            continue
        between = request.source.text[installs[-1].end():m.start()]
        if re.search(r"[;&|]", between) or "--no-deps" in between:
            continue
        at = installs[-1].end()
        return [request.source.edit(at, at, " --no-deps")]
    return None


def flash_attn_build(request: FixRequest) -> Refused:
    """Never: removing flash-attn would drop a package the project uses; the finding says so and keeps its fix text."""
    return Refused("left as it is: removing flash-attn would drop a package the project uses; the fix above is a choice to make by hand")
