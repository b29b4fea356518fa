"""Checks: one module per gotcha (G1..G10) plus ``arch``. The engine imports only the modules that serve the
target's kind (:data:`MODULES`; a test holds it to the registered checks), so one requirements file loads
neither the ELF nor the live-host checks."""

from __future__ import annotations

import importlib

from envcheck import kinds

_PACKAGES = (*kinds.DEPENDENCY_FILES, "dockerfile", "wheel", *kinds.ENVIRONMENTS)
_LIVE = kinds.LIVE_KINDS
_LAUNCHES = kinds.LAUNCH_FILES  # files whose launch commands G3, G6 and G10 read

# check module -> the rule inputs its checks serve (envcheck.kinds names; "any" = every target).
MODULES: dict[str, tuple[str, ...]] = {
    "envcheck.checks.arch": (*_PACKAGES, "elf"),
    "envcheck.checks.g01_cuda_abi": _PACKAGES,
    "envcheck.checks.g01_binaries": kinds.BINARY_KINDS,
    "envcheck.checks.g01_live_torch": (*_LIVE, "image"),
    "envcheck.checks.g01_base_images": ("dockerfile",),
    "envcheck.checks.g01_wheel_builds": (*kinds.DEPENDENCY_FILES, "dockerfile"),
    "envcheck.checks.g02_flash_attn": _PACKAGES,
    "envcheck.checks.g03_memory": (*_LIVE, *_LAUNCHES),
    "envcheck.checks.g04_power": _LIVE,
    "envcheck.checks.g05_bandwidth": ("any",),
    "envcheck.checks.g06_shared_memory": (*_LIVE, *_LAUNCHES, "dockerfile"),
    "envcheck.checks.g07_gpu_arch": ("requirements", "pyproject", "lock", "dockerfile", *kinds.BINARY_KINDS),
    "envcheck.checks.g07_triton": (*kinds.DEPENDENCY_FILES, "wheel", *kinds.ENVIRONMENTS),
    "envcheck.checks.g08_playbooks": _LIVE,
    "envcheck.checks.g09_drift": _PACKAGES,
    "envcheck.checks.g09_served": ("requirements", "pyproject", "dockerfile"),
    "envcheck.checks.g10_parallelism": (*_LIVE, *_LAUNCHES),
}
# Modules with rules but no checks: `envcheck diff` and `preflight --baseline/--twin` call their comparisons.
RULES_ONLY = ("envcheck.checks.drift",)


def load_all() -> None:
    for module in (*MODULES, *RULES_ONLY):
        importlib.import_module(module)
