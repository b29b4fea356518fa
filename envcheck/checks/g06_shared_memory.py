"""G6: one global unified-memory pool shared by every process."""

from __future__ import annotations
