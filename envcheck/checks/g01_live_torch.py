"""G1 over the live torch probe (preflight, containers, images): torch imports with the environment's own
interpreter and reports the Spark's CUDA major."""

from __future__ import annotations

from collections.abc import Iterator

from envcheck import kinds
from envcheck.checks.g01_cuda_abi import FIX_CU130
from envcheck.model import Finding, Status
from envcheck.rules import CheckContext, check, rule

LIVE_TORCH = rule(
    "G1-live-torch", "G1", "torch does not import, or reports the wrong CUDA major, in this environment", Status.FAIL,
    """preflight imports torch with the environment's own interpreter in a child process with a timeout and
    reads torch.version.cuda. An import that segfaults or fails with an undefined CUDA symbol is G1's
    symptom itself; a torch.version.cuda whose major differs from the Spark's CUDA 13 links the wrong
    libraries. NGC builds report 13.x without a +cu130 tag, which passes.""",
    FIX_CU130, (*kinds.LIVE_KINDS, "image"))


@check(LIVE_TORCH)
def live_torch(ctx: CheckContext) -> Iterator[Finding]:
    """G1 over the live torch probe: crash/import error FAIL, wrong CUDA major FAIL, timeout WARN."""
    host = ctx.inventory.host
    torch = host.torch
    if torch is None:
        if host.python is not None and host.python.status == "absent":
            yield LIVE_TORCH.finding("no python3 to probe: cannot check torch", status=Status.SKIP)
        return
    python = (host.python.executable if host.python is not None else None) or "python3"
    status = torch.status
    stage = "initialising CUDA" if torch.stage == "cuda-init" else "importing torch"
    evidence = {k: v for k in ("status", "stage", "signal", "error", "version", "cuda") if (v := getattr(torch, k)) is not None}
    if status == "absent":
        yield LIVE_TORCH.finding(f"torch is not installed for {python}", status=Status.SKIP)
    elif status == "crashed":
        yield LIVE_TORCH.finding(f"{python} crashed ({torch.signal}) {stage}", evidence=evidence)
    elif status in ("import-error", "error"):
        yield LIVE_TORCH.finding(f"{stage} failed: {torch.error or 'no message'}", evidence=evidence)
    elif status == "timeout":
        yield LIVE_TORCH.finding(f"{stage} did not finish within {torch.timeout_s} s", evidence=evidence, status=Status.WARN)
    elif status == "ok":
        version, cuda = torch.version, torch.cuda
        if not cuda:
            yield LIVE_TORCH.finding(f"torch {version} is not a CUDA build (torch.version.cuda is None)", evidence=evidence)
            return
        try:
            major = int(str(cuda).split(".")[0])
        except ValueError:
            yield LIVE_TORCH.finding(f"torch {version} reports an unreadable CUDA version {cuda!r}", evidence=evidence, status=Status.WARN)
            return
        listed = host.nvidia_smi.gpus if host.nvidia_smi is not None else ()
        if major != ctx.profile.cuda_major:
            yield LIVE_TORCH.finding(f"torch {version} is built for CUDA {cuda}; {ctx.profile.name} needs CUDA {ctx.profile.cuda_major}", evidence=evidence)
        elif torch.cuda_available is False and listed:
            hidden = ctx.inventory.env_value("CUDA_VISIBLE_DEVICES")
            why = f" (CUDA_VISIBLE_DEVICES={hidden!r})" if hidden is not None else " (driver too old for CUDA 13, or no device access)"
            yield LIVE_TORCH.finding(
                f"torch {version} imports but torch.cuda.is_available() is False while nvidia-smi lists {len(listed)} GPU(s){why}",
                evidence=evidence, status=Status.WARN)
        else:
            yield LIVE_TORCH.passed(f"torch {version} imports; torch.version.cuda {cuda}", **evidence)
