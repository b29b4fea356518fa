"""G5: plan on 180-192 GB/s sustained, not the 273 GB/s spec."""

from __future__ import annotations
