"""Hypothesis strategies and the hang guard shared by the tests/test_fuzz_*.py property tests.

Inputs are the real fixtures and examples, mutated (bytes deleted, inserted, duplicated, flipped), plus
grammar-built lines from the formats' own vocabulary, so the properties reach deep into each parser.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parent.parent

# Generous: a parser that needs this long on an input of a few KB is hanging, not slow.
HANG_SECONDS = 10

PROPERTY_SETTINGS = settings(
    # 120 per property in the suite; ENVCHECK_FUZZ_EXAMPLES=5000 for a deeper run by hand.
    max_examples=int(os.environ.get("ENVCHECK_FUZZ_EXAMPLES", "120")),
    deadline=None,  # no timed assertions; the hang guard below catches runaway inputs instead
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
    derandomize=False,
)


class Hang(Exception):
    """An input kept a parser busy for more than HANG_SECONDS."""


@contextlib.contextmanager
def hang_guard(seconds: int = HANG_SECONDS) -> Iterator[None]:
    """Raise :class:`Hang` in the main thread if the body runs longer than ``seconds`` (a hang, not a benchmark)."""

    def alarm(signum: int, frame: object) -> None:
        raise Hang(f"no answer within {seconds} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def seed_bytes(*patterns: str, limit: int = 64 << 10) -> list[bytes]:
    """Contents of the repository files matching ``patterns`` (cut to ``limit`` bytes)."""
    found: list[bytes] = []
    for pattern in patterns:
        for path in sorted(REPO.glob(pattern)):
            if path.is_file():
                found.append(path.read_bytes()[:limit])
    assert found, f"no seed files match {patterns}"
    return found


@st.composite
def mutated(draw: st.DrawFn, seeds: list[bytes], max_edits: int = 8) -> bytes:
    """One of ``seeds`` with a few random edits: delete, insert, duplicate or overwrite a byte range."""
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(0, max_edits))):
        op = draw(st.sampled_from(("delete", "insert", "duplicate", "overwrite", "interesting")))
        at = draw(st.integers(0, len(data)))
        if op == "delete" and data:
            del data[at : at + draw(st.integers(1, 64))]
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=32))
        elif op == "duplicate" and data:
            start = draw(st.integers(0, len(data) - 1))
            data[at:at] = data[start : start + draw(st.integers(1, 256))]
        elif op == "overwrite" and data:
            chunk = draw(st.binary(min_size=1, max_size=8))
            data[at : at + len(chunk)] = chunk
        elif op == "interesting" and len(data) >= 8:
            # Integers that break size and offset fields: 0, -1, huge, just past the end.
            value = draw(st.sampled_from((0, 0xFFFFFFFF, 0x7FFFFFFF, 0xFFFFFFFFFFFFFFFF, len(data), len(data) + 1, 1 << 40)))
            width = draw(st.sampled_from((2, 4, 8)))
            pos = min(at, len(data) - width)
            data[pos : pos + width] = (value & ((1 << (8 * width)) - 1)).to_bytes(width, "little")
    return bytes(data)


def lines_of(*patterns: str) -> list[str]:
    """Non-empty lines of the text files matching ``patterns``."""
    out: list[str] = []
    for data in seed_bytes(*patterns):
        out.extend(line for line in data.decode("utf-8", "replace").splitlines() if line.strip())
    return out


NASTY_TEXT = st.text(
    alphabet=st.sampled_from(list("\\ \t\"'$#{}[]();&|<>=@:!~*,.+-_/\n\r\x00\x0b\x0c\u2028\ufeffaZ09é€")), max_size=60
)


@st.composite
def text_file(draw: st.DrawFn, lines: list[str]) -> str:
    """A text file made of real lines, nasty fragments, and real lines with nasty fragments spliced in."""
    parts: list[str] = []
    for _ in range(draw(st.integers(0, 25))):
        kind = draw(st.integers(0, 2))
        if kind == 0:
            parts.append(draw(st.sampled_from(lines)))
        elif kind == 1:
            parts.append(draw(NASTY_TEXT))
        else:
            line = draw(st.sampled_from(lines))
            at = draw(st.integers(0, len(line)))
            parts.append(line[:at] + draw(NASTY_TEXT) + line[at:])
    newline = draw(st.sampled_from(("\n", "\r\n", "\r")))
    return newline.join(parts) + draw(st.sampled_from(("", newline, "\\", "\\" + newline)))


# Reported crashes not yet fixed by their owners (fuzz/harness.py keeps the one list).
sys.path.insert(0, str(REPO / "fuzz"))
from harness import KNOWN_CRASHES  # noqa: E402


def known_crash(exc: BaseException) -> bool:
    """Is ``exc`` one of the reported, not yet fixed crashes (see KNOWN_CRASHES)?"""
    import traceback

    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/envcheck/" in f.filename.replace("\\", "/")]
    if not frames:
        return False
    inner = frames[-1]
    return (type(exc).__name__, Path(inner.filename).name, inner.name) in KNOWN_CRASHES
