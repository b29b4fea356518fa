"""Records: dataclasses that compile one function each instead of six.

``dataclasses.dataclass`` writes each class's ``__init__``, ``__repr__``, ``__eq__``, ``__hash__``,
``__setattr__`` and ``__delattr__`` as source text and compiles it while the module is imported: 264
functions, about a third of envcheck's own run time for a small folder scan (issue 18). :func:`record` compiles
only ``__init__`` (per-object speed matters there) and gives the rest as closures over the class's fields,
behaving as the generated ones do (Python 3.10-3.12): equal when of the same class and the compared fields
are equal as one tuple, the hash of the hashed fields' tuple, the dataclass repr (``...`` for a recursive
one), unhashable when not frozen, ``FrozenInstanceError`` on assignment to a frozen one. ``dataclasses``
still sees a dataclass (``fields``, ``replace``, ``asdict``). ``tests/test_records.py`` holds all of it
against the classes ``dataclasses.dataclass`` builds from the same definitions.
"""

from __future__ import annotations

import dataclasses
import reprlib
import sys
from collections.abc import Callable
from operator import attrgetter
from typing import TYPE_CHECKING, Any, TypeVar, overload

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
elif sys.version_info >= (3, 11):
    from typing import dataclass_transform
else:  # Python 3.10: the marker only matters to type checkers
    def dataclass_transform(**_: Any) -> Callable[[Any], Any]:
        return lambda decorated: decorated

_T = TypeVar("_T", bound=type)


@overload
def record(cls: _T, /) -> _T: ...
@overload
def record(*, frozen: bool = True) -> Callable[[_T], _T]: ...
@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, dataclasses.Field))
def record(cls: Any = None, /, *, frozen: bool = True) -> Any:
    """``@dataclass(frozen=True)`` (``@record(frozen=False)``: ``@dataclass``), compiled once per class.

    Refused (use ``@dataclass``): a class that writes ``__init__``, ``__eq__``, ``__hash__``, ``__repr__``,
    ``__setattr__`` or ``__delattr__`` itself, ``InitVar`` or keyword-only fields."""

    def wrap(target: Any) -> Any:
        own = _OWN & {k for k, v in vars(target).items() if v is not None}
        if own:
            raise TypeError(f"record {target.__qualname__} defines {', '.join(sorted(own))}: use @dataclass")
        made = dataclasses.dataclass(target, init=False, repr=False, eq=False, frozen=False)
        fields = dataclasses.fields(made)
        if any(f.kw_only for f in fields) or any(
                isinstance(v, dataclasses.InitVar) or v is dataclasses.InitVar
                for v in getattr(made, "__annotations__", {}).values()):
            raise TypeError(f"record {target.__qualname__}: keyword-only and InitVar fields are not supported")
        made.__init__ = _init(made, fields)
        _share(made, fields, frozen)
        # replaced() may copy the fields: every field is an init field and __init__ does nothing else
        made.__record_copyable__ = (not hasattr(made, "__post_init__") and all(f.init for f in fields)
                                    and "__slots__" not in vars(made), frozenset(f.name for f in fields))
        return made

    return wrap if cls is None else wrap(cls)


_OWN = frozenset({"__init__", "__eq__", "__hash__", "__repr__", "__setattr__", "__delattr__"})
_FACTORY = object()  # a field with a default_factory was not passed


def _init(cls: Any, fields: tuple[dataclasses.Field[Any], ...]) -> Any:
    """The ``__init__`` dataclass(frozen=True) writes: each field set with object.__setattr__, defaults and
    default factories as dataclass applies them, then ``__post_init__`` if the class has one."""
    names: dict[str, Any] = {"__setattr": object.__setattr__, "__factory": _FACTORY}
    params, lines = [], []
    for f in fields:
        if f.default_factory is not dataclasses.MISSING:
            names[f"__factory_{f.name}"] = f.default_factory
            if f.init:
                params.append(f"{f.name}=__factory")
                value = f"__factory_{f.name}() if {f.name} is __factory else {f.name}"
            else:
                value = f"__factory_{f.name}()"
        elif f.init:
            if f.default is not dataclasses.MISSING:
                names[f"__default_{f.name}"] = f.default
                params.append(f"{f.name}=__default_{f.name}")
            else:
                params.append(f.name)
            value = f.name
        elif f.default is not dataclasses.MISSING:
            names[f"__default_{f.name}"] = f.default
            value = f"__default_{f.name}"
        else:
            continue  # init=False without a default: not set (as dataclass)
        lines.append(f"  __setattr(self, {f.name!r}, {value})")
    if hasattr(cls, "__post_init__"):
        lines.append("  self.__post_init__()")
    source = f"def __init__(self, {', '.join(params)}):\n" + ("\n".join(lines) or "  pass") + "\n"
    if not params:
        source = source.replace("(self, )", "(self)")
    exec(compile(source, f"<record {cls.__qualname__}>", "exec"), names)  # our own text, as dataclasses does
    init = names["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


_O = TypeVar("_O")


def replaced(obj: _O, /, **changes: Any) -> _O:
    """``dataclasses.replace(obj, **changes)``, for a record whose fields are all init fields and that has no
    ``__post_init__`` ten times faster (its field values copied, then ``changes``; a folder scan sets the
    distribution of each of 900 binaries); any other object goes to ``dataclasses.replace``."""
    copyable, names = getattr(obj.__class__, "__record_copyable__", (False, frozenset()))
    if not copyable or not changes.keys() <= names:
        return dataclasses.replace(obj, **changes)  # type: ignore[type-var]
    new = object.__new__(obj.__class__)
    values = new.__dict__
    values.update(obj.__dict__)
    values.update(changes)
    return new


def field_values(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """A function giving the tuple of ``names``' values of an object (attrgetter: C speed)."""
    if len(names) > 1:
        return attrgetter(*names)
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return lambda obj: ()


def _share(cls: Any, fields: tuple[dataclasses.Field[Any], ...], frozen: bool) -> None:
    compared = field_values(tuple(f.name for f in fields if f.compare))
    shown = tuple(f.name for f in fields if f.repr)

    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return compared(self) == compared(other)
        return NotImplemented

    @reprlib.recursive_repr()
    def __repr__(self: Any) -> str:
        return f"{self.__class__.__qualname__}({', '.join(f'{name}={getattr(self, name)!r}' for name in shown)})"

    cls.__eq__ = __eq__
    cls.__repr__ = __repr__
    if frozen:
        hashed = field_values(tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash)))

        def __hash__(self: Any) -> int:
            return hash(hashed(self))

        field_names = frozenset(f.name for f in fields)

        def __setattr__(self: Any, name: str, value: Any) -> None:
            if type(self) is cls or name in field_names:
                raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
            super(cls, self).__setattr__(name, value)

        def __delattr__(self: Any, name: str) -> None:
            if type(self) is cls or name in field_names:
                raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
            super(cls, self).__delattr__(name)

        cls.__hash__ = __hash__
        cls.__setattr__ = __setattr__
        cls.__delattr__ = __delattr__
    else:
        cls.__hash__ = None  # as dataclass(eq=True): mutable records are not hashable
    for name in ("__eq__", "__repr__", "__hash__", "__setattr__", "__delattr__"):
        method = vars(cls).get(name)
        if method is not None:
            method.__qualname__ = f"{cls.__qualname__}.{name}"
