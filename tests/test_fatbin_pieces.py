"""A section's fatbin search in pieces (``fatbin.scan_piece``, joined by ``fatbin.search``: how worker processes
share cuFFT's 265 MiB ``.ldata``) must give exactly the plain search's answer (``fatbin.scan_containers``): the
same containers, the same records spent, the same error at the same offset. Generated sections hold what
makes pieces and the whole disagree: containers that cross the cuts, fake containers inside payloads that
reach past their container, invalid hits, unaligned magics, zero padding, junk, a last container whose
entries run past the section end, and budgets that run out; each is cut at random."""

from __future__ import annotations

import itertools
import random
import struct
from collections.abc import Callable

from fuzz_strategies import PROPERTY_SETTINGS, hang_guard
from hypothesis import given
from hypothesis import strategies as st

from envcheck.inspect import fatbin
from envcheck.inspect.elf import BytesSource, MalformedBinary

_ENTRY = struct.Struct("<HHIQIIHHIIIQ")


def _entry(rnd: random.Random, payload: bytes, kind: int | None = None) -> bytes:
    header = rnd.choice((64, 64, 64, 72, 120))
    kind = rnd.choice((1, 2, 2, 8)) if kind is None else kind
    flags = rnd.choice((0, 0, fatbin.FLAG_ARCH_SPECIFIC, fatbin.FLAG_FAMILY))
    head = _ENTRY.pack(kind, 0x101, header, len(payload), 0, 0, rnd.choice((0, 8)), rnd.choice((8, 9)),
                       rnd.choice((75, 80, 90, 100, 120, 121)), 0, 0, flags)
    return head + bytes(header - len(head)) + payload


def _container(entries: list[bytes], claim: int | None = None) -> bytes:
    body = b"".join(entries)
    return fatbin.MAGIC_V1 + struct.pack("<Q", len(body) if claim is None else claim) + body


def _payload(rnd: random.Random, at: int) -> bytes:
    """An entry's payload starting at section offset ``at``: zeros, junk, or a fake container inside (at an
    8-aligned offset), sometimes one that claims to reach past the container it sits in."""
    size = rnd.choice((0, 8, 40, 64, 200, 1000, 3000))
    choice = rnd.random()
    if choice < 0.3 or size < 200:
        return bytes(size) if rnd.random() < 0.5 else rnd.randbytes(size)
    inner_at = (at + rnd.randrange(0, size - 150)) // 8 * 8 + 8 - at  # 8-aligned in the section (at is aligned)
    reach = rnd.choice((16, 64, size, 2 * size, 3000))  # its one entry's payload: maybe far past this container
    head = _ENTRY.pack(2, 0x101, 64, reach, 0, 0, 0, 9, rnd.choice((80, 90)), 0, 0, 0)
    inner = fatbin.MAGIC_V1 + struct.pack("<Q", 64 + reach) + head + bytes(64 - len(head))  # only its headers are here
    if choice < 0.5:
        inner = fatbin.MAGIC_V1 + rnd.randbytes(72)  # a hit that is no container
    blob = bytearray(rnd.randbytes(size) if choice < 0.7 else bytes(size))
    blob[inner_at : inner_at + len(inner)] = inner[: max(0, size - inner_at)]
    return bytes(blob[:size])


def _section(rnd: random.Random) -> tuple[bytes, int, int]:
    """(the bytes of a file, the section's start, its size): the section is followed by more bytes."""
    start = rnd.randrange(0, 24)
    data = bytearray(rnd.randbytes(start))
    for _ in range(rnd.randrange(1, 40)):
        data += bytes((-len(data)) % 8) if rnd.random() < 0.9 else b""
        what = rnd.random()
        if what < 0.65:  # a container of one or more entries
            entries = []
            at = len(data) + 16
            for _ in range(rnd.choice((1, 1, 1, 2, 3))):
                entries.append(_entry(rnd, _payload(rnd, at + 64)))
                at += len(entries[-1])
            data += _container(entries)
        elif what < 0.75:
            data += bytes(rnd.choice((8, 64, 1000)))
        elif what < 0.85:
            data += rnd.randbytes(rnd.randrange(1, 300))
        elif what < 0.9:
            data += fatbin.MAGIC_V1 + _entry(rnd, b"", kind=rnd.choice((5, 2)))[:rnd.choice((8, 64))]  # invalid hits
        elif what < 0.95:
            data += b"\0\0\0" + fatbin.MAGIC_V1  # an unaligned magic
        else:
            data += _container([], claim=0)  # an empty container
    size = len(data) - start
    if rnd.random() < 0.4:  # cut: the last container's entries run past the section end
        size = rnd.randrange(0, size + 1)
    return bytes(data) + rnd.randbytes(200), start, size


Search = Callable[[fatbin.RecordBudget, list[int]], list[fatbin.Container]]


def _answer(run: Search, limit: int) -> tuple[object, ...]:
    """What a search gives: (all containers' offsets, the distinct modules' sections and images in order,
    records left), or the error and records left."""
    budget = fatbin.RecordBudget(limit)
    taken: list[int] = []
    try:
        with hang_guard():
            modules = run(budget, taken)
    except MalformedBinary as exc:
        return ("error", exc.message, exc.offset, budget.left)
    return (taken, [(m.section, fatbin.images(m)) for m in modules], budget.left)


def _cuts(rnd: random.Random, first: int, end: int) -> list[int]:
    """Random 8-aligned cuts strictly inside ``(first, end)``."""
    inside = range(first + 8, end, 8)
    return sorted(rnd.sample(inside, min(len(inside), rnd.choice((1, 2, 5, 20, 80))))) if inside else []


@PROPERTY_SETTINGS
@given(rnd=st.randoms(use_true_random=False), limit=st.sampled_from([fatbin.MAX_RECORDS, 3, 10, 40]))
def test_pieces_join_into_the_whole_search(rnd: random.Random, limit: int) -> None:
    data, start, size = _section(rnd)
    src = BytesSource(data)
    end = start + size
    first = start + (-start) % 8

    def whole(budget: fatbin.RecordBudget, taken: list[int]) -> list[fatbin.Container]:
        found = fatbin.scan_containers(src, start, size, ".ldata", chunk=rnd.choice((64, 4096)), budget=budget)
        taken.extend(c.offset for c in found)
        return fatbin.distinct_modules(found)

    expected = _answer(whole, limit)
    assert _answer(lambda budget, taken: fatbin.search(src, start, size, ".ldata", budget, None, taken), limit) == expected
    for _ in range(3):
        bounds = [first, *_cuts(rnd, first, end), end] if end > first else [first, end]
        window = rnd.choice((64, 200, 4 << 20))
        piece_limit = rnd.choice((fatbin.MAX_RECORDS, limit))  # workers search with the whole budget
        pieces: list[fatbin.Piece | None] = [fatbin.scan_piece(src, a, b, end, ".ldata", piece_limit, window)
                                             for a, b in itertools.pairwise(bounds)]

        def joined(budget: fatbin.RecordBudget, taken: list[int], pieces: list[fatbin.Piece | None] = pieces,
                   ) -> list[fatbin.Container]:
            return fatbin.search(src, start, size, ".ldata", budget, pieces, taken)

        assert _answer(joined, limit) == expected, bounds


def test_cuts_inside_containers_are_met_again() -> None:
    """The case the join exists for, on purpose: a container holding a fake container that reaches past it,
    cut right inside: the piece after the cut takes the fake one, the whole search does not."""
    rnd = random.Random(7)
    real = [_container([_entry(rnd, bytes(64), kind=2)]) for _ in range(6)]
    fake = _container([_entry(rnd, bytes(480), kind=2)])  # reaches over the next two real containers
    outer = _container([_entry(rnd, bytes(8) + fake[:200] + bytes(56), kind=2)])
    data = b"".join([real[0], outer, *real[1:]]) + bytes(64)
    src = BytesSource(data)
    cut = data.index(fake[:96])  # the fake container's header starts the second piece
    pieces: list[fatbin.Piece | None] = [fatbin.scan_piece(src, 0, cut, len(data), ".ldata"),
                                         fatbin.scan_piece(src, cut, len(data), len(data), ".ldata")]
    second = pieces[1]
    assert second is not None and second.hits[0] == cut and second.kinds[0] >= 0  # it took the fake container
    taken: list[int] = []
    fatbin.search(src, 0, len(data), ".ldata", fatbin.RecordBudget(), pieces, taken)
    assert taken == [c.offset for c in fatbin.scan_containers(src, 0, len(data), ".ldata")]
    assert len(taken) == 7 and cut not in taken


def test_pieces_that_do_not_cover_the_section_are_not_joined() -> None:
    """A piece missing (its worker could not open the file) or not matching the section (the file changed):
    the section is searched whole, with the same answer."""
    rnd = random.Random(3)
    data = b"".join(_container([_entry(rnd, bytes(rnd.choice((8, 64))))]) for _ in range(20))
    src = BytesSource(data)
    half = len(data) // 16 * 8
    good = [fatbin.scan_piece(src, 0, half, len(data), ".ldata"), fatbin.scan_piece(src, half, len(data), len(data), ".ldata")]
    expected = [c.offset for c in fatbin.scan_containers(src, 0, len(data), ".ldata")]
    for pieces in (good, [good[0], None], [good[1]], [good[0], good[0]], good[:1]):
        taken: list[int] = []
        budget = fatbin.RecordBudget()
        fatbin.search(src, 0, len(data), ".ldata", budget, list(pieces), taken)
        assert taken == expected and budget.left == fatbin.MAX_RECORDS - 40
