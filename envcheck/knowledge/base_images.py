"""What a base image reference says about the image: NGC release, CUDA, torch, arm64, flash-attn, triton.
Lookups in ``knowledge/ngc_tags.toml``; what the tag only lets us infer is ``inferred=True``, never silent."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any

from envcheck import knowledge
from envcheck.errors import UsageError
from envcheck.inspect.image_reference import DEFAULT_REGISTRY, parse_reference
from envcheck.knowledge import release_month

_YYMM = re.compile(r"^(\d{2})\.(\d{2})(?:\.post\d+)?(?:-|$)")


@dataclass(frozen=True)
class BaseFacts:
    ref: str
    repository: str  # registry-qualified for non-Hub images: nvcr.io/nvidia/pytorch; Hub: ubuntu, pytorch/pytorch
    tag: str | None  # None: no tag written (Docker uses latest)
    digest: str | None
    family: str  # ngc-pytorch | ngc-vllm | ngc | cuda | other
    release: str | None = None  # YY.MM for NGC tags
    known: bool = False  # a row in the table matched
    cuda: str | None = None  # "13.0", "12.8", "12" ...
    torch: str | None = None
    flash_attn: str | None = None
    triton: str | None = None
    vllm: str | None = None  # the vLLM release the image carries (NGC [[vllm]] rows, [[vllm_image]] tags)
    arm64: bool | None = None
    amd64_only: bool = False
    platform_note: str = ""  # where the arm64 image is instead, for an amd64-only tag (knowledge/ngc_tags.toml)
    ngc_torch: bool = False  # ships NVIDIA's PyTorch build (a0 pre-release, /etc/pip/constraint.txt)
    inferred: bool = False
    source: str = ""
    note: str = ""  # what was inferred, in words

    @property
    def cuda_major(self) -> int | None:
        return int(self.cuda.split(".")[0]) if self.cuda else None

    @property
    def floating(self) -> bool:
        """``latest``, no tag, or a moving tag: the image changes under the same Dockerfile."""
        return self.digest is None and (self.tag is None or self.tag in ("latest", "nightly") or self.tag.startswith(("latest-", "nightly-")))


def pip_constraint_protects(facts: BaseFacts) -> bool:
    """Whether pip in this NGC image refuses to replace its torch (PIP_CONSTRAINT, ``pip_constraint_from``
    on); True where the release is unknown: nothing is claimed about a tag the table cannot place."""
    if not facts.ngc_torch or facts.release is None:
        return facts.ngc_torch
    first = str(knowledge.load("ngc_tags")["pip_constraint_from"])
    return release_month(facts.release) >= release_month(first)


def cuda_runtime_only(facts: BaseFacts) -> bool:
    """Whether the image is the 'base' flavour of nvidia/cuda: the CUDA runtime (cudart) and nothing else of CUDA's user
    space, no math libraries, no nvcc (https://hub.docker.com/r/nvidia/cuda: "base: Includes the CUDA runtime (cudart)")."""
    return facts.family == "cuda" and re.match(r"\d+(?:\.\d+)*-base-", facts.tag or "") is not None


def describe(ref: str) -> BaseFacts:
    parsed = parse_reference(ref)
    repo, written = parsed.repository, ref.split("@", 1)[0]
    hub = parsed.registry == DEFAULT_REGISTRY
    name = repo.removeprefix("library/") if hub else f"{parsed.registry}/{repo}"
    tag = parsed.tag if written.rfind(":") > written.rfind("/") else None  # None: no tag written
    table = knowledge.load("ngc_tags")
    base: dict[str, Any] = {"ref": ref, "repository": name, "tag": tag, "digest": parsed.digest}
    if parsed.registry == "nvcr.io" and repo.startswith("nvidia/"):
        return _ngc(base, repo, tag, table)
    if name in table["cuda_images"]["repos"]:
        return _cuda_image(base, tag, table["cuda_images"], table["cuda_images"]["source"])
    for row in table.get("amd64_only", []):
        if name == row["repo"] and _amd64_only_tag(row, tag):
            facts = _tag_text(base, tag, table)
            return BaseFacts(**{**facts.__dict__, "amd64_only": True, "arm64": False,
                                "source": "; ".join(s for s in (facts.source, row["source"]) if s),
                                "platform_note": str(row.get("note", "")).format(repo=name, tag=tag),
                                "inferred": facts.inferred or bool(row.get("inferred", False))})
    facts = _tag_text(base, tag, table)
    for row in table.get("vllm_image", []):
        if name == row["repo"] and (m := re.match(row["tag_pattern"], tag or "")):
            return BaseFacts(**{**facts.__dict__, "vllm": m.group("vllm"), "inferred": facts.inferred or bool(row.get("inferred")),
                                "source": "; ".join(s for s in (facts.source, row["source"]) if s)})
    return facts


def _cuda_image(base: dict[str, Any], tag: str | None, spec: dict[str, Any], unnamed: str) -> BaseFacts:
    """nvidia/cuda (Hub or NGC): the CUDA its tag names; ``unnamed``: the source for a tag naming none."""
    if m := re.match(spec["tag_pattern"], tag or ""):
        return BaseFacts(**base, family="cuda", known=True, cuda=f"{m.group(1)}.{m.group(2)}",
                         arm64=bool(spec["arm64"]), source=spec["source"])
    return BaseFacts(**base, family="cuda", note=f"tag {tag or '(none)'} does not name a CUDA version",
                     source=unnamed)


def _amd64_only_tag(row: dict[str, Any], tag: str | None) -> bool:
    """Whether an ``amd64_only`` row covers ``tag``: every tag, or those its ``tag_pattern`` matches (and whose
    ``version`` group is older than ``before``). A tag the row cannot place is not claimed."""
    pattern = row.get("tag_pattern")
    if pattern is None:
        return True
    m = re.match(str(pattern), tag or "")
    if m is None:
        return False
    before = row.get("before")
    if before is None:
        return True
    try:
        return _release(m.group("version")) < _release(str(before))
    except (ValueError, IndexError):
        return False


def _release(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def _tag_text(base: dict[str, Any], tag: str | None, table: dict[str, Any]) -> BaseFacts:
    spec = table["tag_text"]
    for pattern in spec["patterns"]:
        m = re.search(pattern, tag or "")
        if m:
            major = int(m.group(1))
            if major in (10, 11, 12, 13, 14):
                return BaseFacts(**base, family="other", cuda=str(major), inferred=True, source=spec["source"],
                                 note=f"CUDA {major} read from the tag text {tag!r}")
    return BaseFacts(**base, family="other")


def _ngc(base: dict[str, Any], short: str, tag: str | None, table: dict[str, Any]) -> BaseFacts:
    ngc_torch = short in table["ngc_torch_repos"]
    family = {"nvidia/pytorch": "ngc-pytorch", "nvidia/vllm": "ngc-vllm"}.get(short, "ngc")
    if short == "nvidia/cuda":
        return _cuda_image(base, tag, table["cuda_images"], "")
    named = _cuda_in_tag(tag)
    if named is not None:  # cuda-dl-base:25.03-cuda12.8-devel-ubuntu24.04: the tag says it
        m_named = _YYMM.match(tag or "")
        return BaseFacts(**base, family=family, release=f"{m_named.group(1)}.{m_named.group(2)}" if m_named else None, known=True,
                         cuda=named, ngc_torch=ngc_torch, source=f"the tag {tag!r} names CUDA {named}")
    m = _YYMM.match(tag or "")
    if not m:
        return BaseFacts(**base, family=family, ngc_torch=ngc_torch, note=f"tag {tag or '(none)'} is not an NGC YY.MM release")
    release = f"{m.group(1)}.{m.group(2)}"
    facts = partial(BaseFacts, **base, family=family, release=release, ngc_torch=ngc_torch)
    variant = _release_variant(short, tag or "", release, table)
    if variant is not None:
        return facts(**variant)
    family_key = short.removeprefix("nvidia/") if family == "ngc" else family.removeprefix("ngc-")
    rows = table.get(family_key, []) if family_key in ("pytorch", "vllm", "tensorflow") else []
    for row in rows:
        if row["tag"] == release:
            torch, inferred, source = row.get("torch"), bool(row.get("inferred", False)), str(row["source"])
            if torch is None and family == "ngc-vllm":
                # NGC vLLM images are built on the PyTorch image of the same release (spark-facts.md §1.3)
                same = next((r for r in table.get("pytorch", []) if r["tag"] == release), None)
                if same is not None and same.get("torch"):
                    torch, inferred = same["torch"], True
                    source += f"; torch from nvidia/pytorch:{release} (vLLM images are built on it: inferred)"
            return facts(known=True, cuda=row.get("cuda"), torch=torch, flash_attn=row.get("flash_attn"),
                         triton=row.get("triton"), vllm=row.get("vllm"), arm64=row.get("arm64"), inferred=inferred, source=source)
    first = str(table["first_cuda13_pytorch"])
    newest: str | None = max((str(r["tag"]) for r in rows), key=release_month, default=None)
    if short in table["monthly_release_repos"] and short != "nvidia/pytorch":
        same = next((r for r in table.get("pytorch", []) if r["tag"] == release and r.get("cuda")), None)
        if same is not None:
            note = (f"NGC release {release} is CUDA {same['cuda']} in every framework container of that month, "
                    f"as nvidia/pytorch:{release}")
            return facts(known=True, cuda=str(same["cuda"]), inferred=True,
                         source=f"{table['release_cuda_source']}; {same['source']}", note=note)
    if short in table["monthly_release_repos"] or short in table["built_on_pytorch"] or family == "ngc-vllm":
        if release_month(release) < release_month(first):
            note = f"{release} is older than {first}, the first NGC release on CUDA 13, so it is a CUDA 12 (or older) image"
            return facts(cuda="12", inferred=True, source=table["first_cuda13_source"], note=note)
        known_text = f"newer than the newest release envcheck knows ({newest})" if newest and release_month(release) > release_month(newest) else "not in the table"
        note = f"{release} is {known_text}; releases from {first} on are CUDA 13, so CUDA 13 is inferred"
        return facts(cuda="13", inferred=True, source=table["first_cuda13_source"], note=note)
    return facts(inferred=True, note=f"no table for {short}; its CUDA cannot be told from the tag {release}")


def _cuda_in_tag(tag: str | None) -> str | None:
    """``12.8`` for a tag that names its CUDA (``25.03-cuda12.8-devel-ubuntu24.04``), else None."""
    m = re.search(r"(?:^|[-_.])cuda(\d{2})\.(\d)", tag or "")
    return f"{m.group(1)}.{m.group(2)}" if m else None


def _release_variant(repo: str, tag: str, release: str, table: dict[str, Any]) -> dict[str, Any] | None:
    """Facts for a variant that does not follow its month's CUDA (tritonserver's -trtllm- builds), or None."""
    for row in table.get("release_variant_row", []):
        if row["repo"] == repo and row["tag_contains"] in tag and row["tag"] == release:
            return {"known": True, "cuda": str(row["cuda"]), "source": str(row["source"])}
    for variant in table.get("release_variant", []):
        if variant["repo"] == repo and variant["tag_contains"] in tag:
            first = str(variant["first_cuda13"])
            major = "13" if release_month(release) >= release_month(first) else "12"
            note = (f"{variant['tag_contains'].strip('-')} builds of {repo} reach CUDA 13 only at {first}, "
                    f"so {release} is CUDA {major}")
            return {"cuda": major, "inferred": True, "source": str(variant["source"]), "note": note}
    return None


def safe_describe(ref: str) -> BaseFacts | None:
    try:
        return describe(ref)
    except UsageError:
        return None


def in_stage(stage: str | None) -> str:
    """``stage 'builder': `` for messages (empty when the fact has no stage)."""
    return f"stage {stage!r}: " if stage else ""


def is_arm64(platform: str | None) -> bool | None:
    """True/False for a ``--platform`` value naming arm64 or another architecture; None when unset."""
    if not platform:
        return None
    parts = platform.lower().split("/")
    arch = parts[1] if len(parts) > 1 else parts[0]
    return arch in ("arm64", "aarch64", "arm64v8")


def local_build(ref: str) -> bool:
    """Whether no registry can serve ``ref``: a one-word name (``vllm-node:latest``) that is not one of
    Docker's official images (``knowledge/docker_official_images.toml``): only a local build tagged it."""
    written = ref.split("@", 1)[0]
    name = written.rsplit(":", 1)[0] if ":" in written else written
    if not name or "/" in name or "$" in name or name != name.lower():
        return False
    return name not in _official_images()


def third_party(facts: BaseFacts) -> bool:
    """An image envcheck's tables say nothing about: not NVIDIA's (NGC, nvidia/cuda), not one of Docker's official
    images (python, ubuntu), whose contents are known. What a third-party image ships (torch, vLLM) is not told."""
    return facts.family == "other" and facts.repository not in _official_images()


@lru_cache(maxsize=1)
def _official_images() -> frozenset[str]:
    return frozenset(str(n) for row in knowledge.load("docker_official_images")["official"] for n in row["names"])


def jetson_image(facts: BaseFacts) -> dict[str, Any] | None:
    """The ``[[jetson]]`` row of knowledge/ngc_tags.toml an image matches (built for a Jetson GPU), or None."""
    for row in knowledge.load("ngc_tags").get("jetson", []):
        if re.search(row["repo"], facts.repository) and re.search(row.get("tag", ""), facts.tag or ""):
            return dict(row)
    return None


def ml_image(ref: str) -> bool:
    """An image envcheck's knowledge says something about (NGC, nvidia/cuda, amd64-only ML images): judged whatever
    the service asks for. Other images of services without a GPU (databases, web UIs, curl) are not the Spark's concern."""
    facts = safe_describe(ref)
    return facts is not None and (facts.family != "other" or facts.amd64_only or jetson_image(facts) is not None)
