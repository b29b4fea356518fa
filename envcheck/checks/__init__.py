"""Checks: one module per gotcha (G1..G10) plus ``arch`` for CPU-architecture mismatch.

Each module declares its rules with :func:`envcheck.rules.rule` and registers pure check functions
with :func:`envcheck.rules.check`. Importing this package registers them all.
"""

from envcheck.checks import (  # noqa: F401
    arch,
    drift,
    g01_cuda_abi,
    g02_flash_attn,
    g03_memory,
    g04_power,
    g05_bandwidth,
    g06_shared_memory,
    g07_gpu_arch,
    g08_playbooks,
    g09_drift,
    g10_parallelism,
)
