"""G3: unified memory is double-counted (page cache, mmap, allocator)."""

from __future__ import annotations
