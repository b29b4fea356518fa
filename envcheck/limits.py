"""Limits on what envcheck reads from untrusted inputs, and the defaults a user can raise.

Compressed inputs (wheels, image layers, ``docker save`` archives) are bounded by an expansion ratio:
the uncompressed bytes envcheck will produce from an input are at most ``--max-expansion`` times its
compressed size (never below :data:`EXPANSION_FLOOR`). Real wheels and layers expand 2-5x (24x for the
most compressible member of the torch wheel); a decompression bomb 1000x. docs/limits.md lists every
limit and how to raise it.
"""

from __future__ import annotations

MAX_TEXT_BYTES = 16 * 1024 * 1024  # one text input or config file (--max-text-size, ENVCHECK_MAX_TEXT_SIZE)
DEFAULT_MAX_EXPANSION = 100.0  # uncompressed / compressed; real layers are 2-5x, a gzip bomb 1000x
EXPANSION_FLOOR = 16 << 20  # small inputs may expand more than the ratio: never limit below this


def expansion_limit(compressed_size: int | None, ratio: float) -> int | None:
    """The most uncompressed bytes an input of ``compressed_size`` may produce (None: no limit)."""
    if compressed_size is None or ratio <= 0:
        return None
    return max(int(compressed_size * ratio), EXPANSION_FLOOR)
