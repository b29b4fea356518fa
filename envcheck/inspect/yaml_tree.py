"""YAML documents as plain values that remember their lines (:class:`YMap`, :class:`YList`, :class:`Scalar`),
assembled iteratively from PyYAML's events; scalars stay text and merge keys (``<<: *common``) are applied.
Every input is untrusted: documents, depth and nodes are bounded, an alias counting as the subtree it names
(so a "billion laughs" stops at the budget), and nothing is constructed from tags.
"""

from __future__ import annotations

from typing import Any

from envcheck.errors import ReadingError

MAX_DOCUMENTS = 1000  # a rendered Helm chart has tens; kubectl's own limit on a file is far above real use
MAX_DEPTH = 64  # Kubernetes manifests nest about 12 deep (CronJob -> ... -> env valueFrom)
MAX_NODES = 200_000  # counted with aliases expanded; the largest rendered charts seen are a few 10 000


class YamlError(ReadingError, ValueError):
    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message, line=line)


class Scalar(str):
    """A scalar as written; ``null`` for ``~``, ``null`` and empty values."""

    line: int
    null: bool
    style_block: bool  # written as a block scalar (`|` or `>`): its text starts on the next line

    def __new__(cls, text: str, line: int, null: bool = False, style_block: bool = False) -> Scalar:
        value = super().__new__(cls, text)
        value.line = line
        value.null = null
        value.style_block = style_block
        return value


class YMap(dict[str, Any]):
    """A mapping with string keys; ``key_lines``: where each key is written."""

    def __init__(self, line: int) -> None:
        super().__init__()
        self.line = line
        self.key_lines: dict[str, int] = {}

    def line_of(self, key: str) -> int:
        return self.key_lines.get(key, self.line)


class YList(list[Any]):
    def __init__(self, line: int) -> None:
        super().__init__()
        self.line = line


def line_of(value: object, default: int = 1) -> int:
    line = getattr(value, "line", None)
    return line if isinstance(line, int) else default


_NULLS = frozenset({"", "~", "null", "Null", "NULL"})


def load_all(text: str, max_documents: int = MAX_DOCUMENTS, max_depth: int = MAX_DEPTH,
             max_nodes: int = MAX_NODES) -> list[Any]:
    """Every document of ``text`` (an empty document is None)."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    documents: list[Any] = []
    stack: list[tuple[YMap | YList, list[Any]]] = []  # open collections and, for maps, the pending key
    anchors: dict[str, tuple[Any, int, int]] = {}  # anchor -> (value, nodes, depth)
    sizes: list[tuple[int, int]] = []  # per open collection: (nodes so far, deepest depth below)
    nodes = 0
    root: list[Any] = []
    try:
        for event in yaml.parse(text, Loader=loader):
            line = event.start_mark.line + 1 if event.start_mark is not None else None
            if isinstance(event, yaml.DocumentStartEvent):
                if len(documents) >= max_documents:
                    raise YamlError(f"more than {max_documents} YAML documents; envcheck stops reading here", line)
                anchors.clear()
                root = []
                continue
            if isinstance(event, yaml.DocumentEndEvent):
                documents.append(root[0] if root else None)
                continue
            value: Any
            cost, deep = 1, 0
            if isinstance(event, yaml.AliasEvent):
                if event.anchor not in anchors:
                    raise YamlError(f"alias *{event.anchor} names no anchor defined before it", line)
                value, cost, deep = anchors[event.anchor]
            elif isinstance(event, yaml.ScalarEvent):
                text_value = str(event.value)
                plain = event.implicit[0] if isinstance(event.implicit, tuple) else bool(event.implicit)
                value = Scalar(text_value, line or 1, null=plain and not event.style and text_value in _NULLS,
                               style_block=event.style in ("|", ">"))
            elif isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                if len(stack) >= max_depth:
                    raise YamlError(f"YAML nested more than {max_depth} levels deep; envcheck stops reading here", line)
                opened: YMap | YList = YMap(line or 1) if isinstance(event, yaml.MappingStartEvent) else YList(line or 1)
                stack.append((opened, [getattr(event, "anchor", None)]))
                sizes.append((1, 0))
                nodes += 1
                if nodes > max_nodes:
                    raise YamlError(f"more than {max_nodes} YAML nodes (aliases counted as what they expand to)", line)
                continue
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                value, pending = stack.pop()
                cost, deep = sizes.pop()
                deep += 1
                if isinstance(value, YMap):
                    _merge(value)
                if pending[0]:
                    anchors[pending[0]] = (value, cost, deep)
                _add(stack, sizes, root, value, cost, deep, line)
                continue
            else:  # the stream's start and end
                continue
            if isinstance(event, yaml.ScalarEvent) and event.anchor:
                anchors[event.anchor] = (value, 1, 0)
            nodes += cost  # a scalar costs 1, an alias the nodes it names
            if isinstance(event, yaml.AliasEvent) and len(stack) + deep > max_depth:
                raise YamlError(f"alias *{event.anchor} nests past {max_depth} levels; envcheck stops "
                                "reading here", line)
            if nodes > max_nodes:
                raise YamlError(f"more than {max_nodes} YAML nodes (aliases counted as what they expand to)", line)
            _add(stack, sizes, root, value, cost, deep, line)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise YamlError(f"YAML syntax error: {exc.problem or exc.context}", mark.line + 1 if mark else None) from None
    except yaml.YAMLError as exc:
        raise YamlError(f"YAML error: {exc}") from None
    return documents


def _add(stack: list[tuple[YMap | YList, list[Any]]], sizes: list[tuple[int, int]], root: list[Any], value: Any,
         cost: int, deep: int, line: int | None) -> None:
    """Put a finished node into the open collection (a map takes a key, then its value)."""
    if not stack:
        root.append(value)
        return
    parent, pending = stack[-1]
    total, deepest = sizes[-1]
    sizes[-1] = (total + cost, max(deepest, deep))
    if isinstance(parent, YList):
        parent.append(value)
        return
    if len(pending) == 1:  # a key
        if isinstance(value, (YMap, YList)):
            raise YamlError("a mapping key that is itself a mapping or list; envcheck reads string keys only", line)
        pending.append(value)
        return
    key = pending.pop()
    name = str(key)
    parent[name] = value
    parent.key_lines[name] = line_of(key, parent.line)


def _merge(mapping: YMap) -> None:
    """``<<: *base`` (or a list of them): keys of the named maps that this map does not set itself."""
    merged = mapping.pop("<<", None)
    if merged is None:
        return
    mapping.key_lines.pop("<<", None)
    for source in (merged if isinstance(merged, YList) else [merged]):
        if not isinstance(source, YMap):
            raise YamlError("a merge key (<<) names something that is not a mapping", mapping.line)
        for key, value in source.items():
            if key not in mapping:
                mapping[key] = value
                mapping.key_lines[key] = source.line_of(key)
