"""PEP 508 markers combined and negated as text: uv picks a package's source by marker and falls back to the
default indexes where none holds, and PEP 508 has no ``not``, so that is written by De Morgan."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

_INVERSE = {"==": "!=", "!=": "==", "<": ">=", ">=": "<", ">": "<=", "<=": ">", "in": "not in", "not in": "in"}


def all_of(*markers: str | None) -> str | None:
    """The conjunction of ``markers`` (None: no condition)."""
    parts = [m for m in markers if m]
    if len(parts) <= 1:
        return parts[0] if parts else None
    return " and ".join(f"({m})" for m in parts)


def negated(marker: str) -> str | None:
    """A marker that holds exactly where ``marker`` does not; None when it cannot be written (``~=``, ``===``)."""
    parsed = _parsed(marker)
    return None if parsed is None else _negate(parsed)


def _parsed(marker: str) -> list[Any] | None:
    from packaging.markers import InvalidMarker, Marker

    try:
        return Marker(marker)._markers
    except InvalidMarker:
        return None


def _alternatives(items: list[Any]) -> list[list[Any]]:
    """A parsed marker as its ``or`` alternatives, each the list of terms joined by ``and`` (``and`` binds tighter)."""
    alternatives: list[list[Any]] = [[]]
    for item in items:
        if item == "or":
            alternatives.append([])
        elif item != "and":
            alternatives[-1].append(item)
    return alternatives


def _negate(items: list[Any]) -> str | None:
    # "a and b or c" is "(a and b) or c": not(...) is "(not a or not b) and not c" (De Morgan, by precedence)
    alternatives = _alternatives(items)
    negated_alternatives: list[str] = []
    for terms in alternatives:
        negated_terms = [_negate_term(term) for term in terms]
        if None in negated_terms:
            return None
        joined = " or ".join(t for t in negated_terms if t is not None)
        negated_alternatives.append(f"({joined})" if len(negated_terms) > 1 and len(alternatives) > 1 else joined)
    return " and ".join(negated_alternatives)


def _negate_term(term: Any) -> str | None:
    if isinstance(term, list):
        inner = _negate(term)
        return None if inner is None else f"({inner})"
    left, op, right = term
    inverse = _INVERSE.get(op.value)
    if inverse is None:
        return None
    return f"{_term(left)} {inverse} {_term(right)}"


def _term(node: Any) -> str:
    text = str(node.value)
    if type(node).__name__ == "Variable":
        return text
    return repr(text) if "'" not in text else f'"{text}"'


@lru_cache(maxsize=4096)
def with_extras(marker: str, active: frozenset[str]) -> bool | str:
    """``marker`` with every ``extra`` comparison (and pylock.toml's ``'x' in extras``, as ``extras:x``)
    decided by ``active``: True, False, or the rest as text. uv.lock's ``extra == 'extra-10-proj-cu128'``
    names are internal and must never reach a user: decided per scope, they leave only the platform part."""
    parsed = _parsed(marker)
    return marker if parsed is None else _decide(parsed, active)


def _decide(items: list[Any], active: frozenset[str]) -> bool | str:
    alternatives = _alternatives(items)
    kept_alternatives: list[str] = []
    for terms in alternatives:
        kept: list[str] = []
        for term in terms:
            value = _decide(term, active) if isinstance(term, list) else _decide_term(term, active)
            if value is False:
                break
            if value is not True:
                kept.append(f"({value})" if isinstance(term, list) else value)
        else:  # no term is False
            if not kept:
                return True  # one alternative always holds
            kept_alternatives.append(" and ".join(kept))
    if len(kept_alternatives) <= 1:
        return kept_alternatives[0] if kept_alternatives else False
    return " or ".join(f"({a})" if " and " in a else a for a in kept_alternatives)


def _decide_term(term: Any, active: frozenset[str]) -> bool | str:
    left, op, right = term
    names = [type(n).__name__ for n in (left, right)]
    if "Variable" in names:
        variable = str((left if names[0] == "Variable" else right).value)
        value = str((right if names[0] == "Variable" else left).value)
        if variable == "extra" and op.value in ("==", "!="):
            return bool((value in active) == (op.value == "=="))
        if variable in ("extras", "dependency_groups") and op.value in ("in", "not in"):
            # PEP 751 (pylock.toml): 'cu128' in extras, 'dev' in dependency_groups
            return bool((f"{variable}:{value}" in active) == (op.value == "in"))
    return f"{_term(left)} {op.value} {_term(right)}"
