"""G10: tensor parallelism across two Sparks."""

from __future__ import annotations
