"""G7: GPU code that can run on sm_121, and the sm_121a (NVFP4) path."""

from __future__ import annotations
