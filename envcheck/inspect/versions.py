"""Plain PEP 440 versions and version specifiers, compared without packaging.

An installed environment's versions are mostly plain releases (``2.11.0``, ``13.0.96``, ``2.11.0+cu130``,
``2.9.0.post0``), and the Requires-Dist clauses that name them plain comparisons (``>=13``, ``<0.51``,
``==2.11.*``, ``>=0.50.0dev0``). :func:`plain_contains` answers whether such a version meets such a
specifier exactly as ``packaging.specifiers.SpecifierSet(spec).contains(version, prereleases=True)`` does
(and ``version in SpecifierSet(spec)``, the same for a version that is no pre-release), and None wherever a
rule of PEP 440 could make the answers differ: the caller asks packaging then. Importing packaging's
specifiers costs a folder scan's start-up more than its checks take (with packaging 26.3 they bring
``packaging.tags``, ``platform``, ``logging`` and ``sysconfig``).
"""

from __future__ import annotations

import re
from functools import lru_cache

# A release without leading zeros (so its text is its canonical form), then a post-release, a local label.
# Numbers have at most 15 digits (Python refuses to read past 4,300; packaging is asked about such text).
_VERSION = re.compile(r"((?:0|[1-9][0-9]{0,14})(?:\.(?:0|[1-9][0-9]{0,14}))*)(?:\.post(0|[1-9][0-9]{0,14}))?(?:\+[a-z0-9]+(?:\.[a-z0-9]+)*)?")
# One clause: an operator, a release, then nothing, a wildcard (== and != only), or a pre- or developmental
# release marker (which sorts below the release).
_CLAUSE = re.compile(r"[ \t]*(==|!=|<=|>=|~=|<|>)[ \t]*([0-9]{1,15}(?:\.[0-9]{1,15})*)(\.\*|(?:a|b|rc)[0-9]{1,15}|\.?dev[0-9]{1,15})?[ \t]*")


def _release(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def _padded(left: tuple[int, ...], right: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    width = max(len(left), len(right))
    return left + (0,) * (width - len(left)), right + (0,) * (width - len(right))


@lru_cache(maxsize=4096)
def _plain_version(text: str) -> tuple[tuple[int, ...], int | None] | None:
    """(release, post-release number) of a plain version; None for anything else."""
    found = _VERSION.fullmatch(text)
    if found is None:
        return None
    post = found.group(2)
    return _release(found.group(1)), int(post) if post is not None else None


@lru_cache(maxsize=4096)
def _plain_clauses(text: str) -> tuple[tuple[str, tuple[int, ...], str], ...] | None:
    """The clauses of a plain specifier (operator, release, what follows it); None for any other text."""
    if not text.strip(" \t"):
        return ()
    clauses: list[tuple[str, tuple[int, ...], str]] = []
    for part in text.split(","):
        found = _CLAUSE.fullmatch(part)
        if found is None:
            return None
        operator, release, tail = found.group(1), found.group(2), found.group(3) or ""
        if tail == ".*" and operator not in ("==", "!="):
            return None  # `>=1.0.*` is no specifier: packaging refuses it
        numbers = _release(release)
        if operator == "~=":
            if tail or len(numbers) < 2:
                return None  # `~=1` is refused; `~=1.0rc1` is left to packaging
            # PEP 440: `~=V.N` is `>=V.N, ==V.*`
            clauses += [(">=", numbers, ""), ("==", numbers[:-1], ".*")]
            continue
        clauses.append((operator, numbers, tail))
    return tuple(clauses)


def plain_contains(version: str, specifier: str) -> bool | None:
    """Whether ``version`` meets every clause of ``specifier`` as packaging says it (pre-releases allowed);
    None when either is not plain (see the module's docstring)."""
    have = _plain_version(version)
    clauses = _plain_clauses(specifier)
    if have is None or clauses is None:
        return None
    release, post = have
    local = "+" in version
    for operator, wanted, tail in clauses:
        held = _clause_holds(release, post, local, operator, wanted, tail)
        if held is None:
            return None
        if not held:
            return False
    return True


def _clause_holds(release: tuple[int, ...], post: int | None, local: bool, operator: str, wanted: tuple[int, ...],
                  tail: str) -> bool | None:
    if tail == ".*":  # a prefix of the public version's release, zero-padded
        if post is not None and len(wanted) > len(release):
            return None
        mine = (release + (0,) * len(wanted))[: len(wanted)]
        return (mine == wanted) == (operator == "==")
    left, right = _padded(release, wanted)
    # Where the releases are equal, the order is: pre- and developmental releases, the release, post-releases.
    mine_rank = 0 if post is None else 1
    their_rank = -1 if tail else 0
    if left != right:
        before = left < right
    elif operator == ">":
        return None  # `>V` excludes V's post-releases and local versions: packaging's rules
    else:
        before = mine_rank < their_rank
    same = left == right and mine_rank == their_rank and (post is None)
    if operator == "==":
        return same
    if operator == "!=":
        return not same
    if operator == "<":
        return before
    if operator == "<=":
        return before or same
    if operator == ">=":
        return not before
    return not before and not same  # ">" with different releases


def is_plain_version(text: str) -> bool:
    """Whether ``text`` is a plain version (:func:`plain_contains` reads it; packaging accepts it, and prints
    it as it is written except a local label's numbers: ``1.0+cu.01`` is ``1.0+cu.1`` there)."""
    return _plain_version(text) is not None


def is_plain_specifier(text: str) -> bool:
    """Whether ``text`` is a plain specifier (:func:`plain_contains` reads it; packaging accepts it)."""
    return _plain_clauses(text) is not None
