"""The run options: one typed object from the command line (and config file, environment) down."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RunOptions:
    """The run options below policy, layered like it (config file < environment < command line)."""
    nvfp4: bool = False  # --nvfp4 / nvfp4: WARN when no sm_121a kernels exist (NVFP4 is planned)
    deep_fatbin: bool = False  # --deep-fatbin / deep-fatbin: also find fatbins outside .nv_fatbin
    expect_bandwidth: float | None = None  # expect-bandwidth: the GB/s a plan assumes (G5)
    max_text_bytes: int | None = None  # --max-text-size / max-text-size (None: ENVCHECK_MAX_TEXT_SIZE or built-in)
    use_cache: bool = True  # False: --no-cache, nothing read from or written to envcheck's cache
