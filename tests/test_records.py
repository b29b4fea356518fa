"""envcheck.records.record behaves as dataclasses.dataclass (issue 18: it compiles one function per class
instead of six): the model classes against their twins built by dataclasses from the same source, on the H200
whole-environment inventory, and every field feature on a small class."""

from __future__ import annotations

import copy
import dataclasses
import gzip
import inspect
import json
import math
import pickle
import sys
import types
from collections.abc import Iterator
from dataclasses import field
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO

from envcheck import model
from envcheck.records import record


@pytest.fixture()
def model_twin() -> Iterator[types.ModuleType]:
    twin = _twin(model)
    yield twin
    del sys.modules[twin.__name__]


def _twin(module: types.ModuleType) -> types.ModuleType:
    """``module`` executed again (as a module of its own, listed in sys.modules) with each @record replaced by
    the dataclass it stands for."""
    source = Path(str(module.__file__)).read_text(encoding="utf-8")
    source = source.replace("@record(frozen=False)\n", "@dataclasses.dataclass\n").replace("@record\n", "@dataclasses.dataclass(frozen=True)\n")
    assert "@record" not in source
    twin = types.ModuleType(f"{module.__name__}_twin")
    twin.__dict__["dataclasses"] = dataclasses
    sys.modules[twin.__name__] = twin
    exec(compile(source, str(module.__file__), "exec"), twin.__dict__)
    return twin


def _records(module: types.ModuleType) -> list[str]:
    return [name for name, value in vars(module).items()
            if isinstance(value, type) and dataclasses.is_dataclass(value) and value.__module__ == module.__name__]


def test_model_records_behave_as_their_dataclass_twins(model_twin: types.ModuleType) -> None:
    twin = model_twin
    assert _records(model) and _records(model) == _records(twin)
    data = json.loads(gzip.decompress((REPO / "fixtures/device/h200/folder-inventory.json.gz").read_bytes()))
    ours, theirs = model.Inventory.from_json(data), twin.Inventory.from_json(data)
    assert repr(ours) == repr(theirs).replace(f"{twin.__name__}.", f"{model.__name__}.")
    pairs = list(zip(ours.binaries[:60] + ours.packages[:60], theirs.binaries[:60] + theirs.packages[:60], strict=True))
    for (a, ta), (b, tb) in zip(pairs, pairs[1:] + pairs[:1], strict=True):
        assert repr(a) == repr(ta) and hash(a) == hash(ta)
        assert (a == b, a == a, a != b) == (ta == tb, ta == ta, ta != tb)
        assert dataclasses.replace(a, size=1) == a if hasattr(a, "size") and a.size == 1 else True
    for name in _records(model):
        ours_cls, their_cls = getattr(model, name), getattr(twin, name)
        assert [f.name for f in dataclasses.fields(ours_cls)] == [f.name for f in dataclasses.fields(their_cls)]
        assert _signature(ours_cls) == _signature(their_cls), name
        assert (ours_cls.__hash__ is None) == (their_cls.__hash__ is None), name
    loc, their_loc = model.Location("a", line=1), twin.Location("a", line=1)
    assert {loc: 1}[model.Location("a", line=1)] == 1 and hash(loc) == hash(their_loc)
    finding = model.Finding("r", "G1", model.Status.FAIL, "m", evidence={"x": 1})
    assert finding == dataclasses.replace(finding, evidence={"y": 2})  # evidence: compare=False, as declared
    with pytest.raises(TypeError):
        hash(model.Inventory())
    for value in (loc, ours.binaries[0], ours.packages[0], finding, ours):
        assert pickle.loads(pickle.dumps(value)) == value and copy.deepcopy(value) == value


def _signature(cls: type) -> list[tuple[str, Any, Any]]:
    """Parameter names, kinds and defaults (a default factory's marker object differs by design)."""
    return [(p.name, p.kind, "factory" if type(p.default).__name__ in ("object", "_HAS_DEFAULT_FACTORY_CLASS") else p.default)
            for p in inspect.signature(cls).parameters.values()]


def _item(decorate: Any, frozen: bool = True) -> type:
    @decorate
    class Item:
        a: int
        b: str = "x"
        c: list[int] = field(default_factory=list)
        d: dict[str, int] = field(default_factory=dict, compare=False, hash=False, repr=False)
        e: float = 0.0
        f: int = field(default=7, init=False)
        g: list[str] = field(default_factory=lambda: ["g"], init=False, repr=False)
        h: Any = field(default=None, hash=False)

        def __post_init__(self) -> None:
            if frozen:
                object.__setattr__(self, "f", self.f + self.a)
            else:
                self.f = self.f + self.a

        def total(self) -> int:
            return self.a + self.f

    return Item


@pytest.mark.parametrize("frozen", [True, False])
def test_every_field_feature_as_dataclass(frozen: bool) -> None:
    ours = _item(record if frozen else record(frozen=False), frozen)
    theirs = _item(dataclasses.dataclass(frozen=True) if frozen else dataclasses.dataclass, frozen)
    nan = math.nan
    args: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
        ((1,), {}), ((1, "x", [1]), {}), ((1,), {"d": {"k": 1}}), ((2,), {"e": nan}), ((2,), {"e": nan, "h": [1]}),
        ((1,), {"c": [1], "e": -0.0}), ((1, "y"), {"h": {"k": "v"}}),
    ]
    made = [(ours(*a, **k), theirs(*a, **k)) for a, k in args]
    for x, tx in made:
        assert repr(x) == repr(tx) and x.total() == tx.total() and x.g == tx.g and x.g is not tx.g
        assert dataclasses.asdict(x) == dataclasses.asdict(tx) and dataclasses.astuple(x) == dataclasses.astuple(tx)
        for y, ty in made:
            assert (x == y, x != y) == (tx == ty, tx != ty)
        assert (x == 5) == (tx == 5) and x.__eq__(tx) is NotImplemented
        if frozen:
            try:
                hashed = hash(tx)
            except TypeError:
                with pytest.raises(TypeError):
                    hash(x)
            else:
                assert hash(x) == hashed
            for action in (lambda o: setattr(o, "a", 3), lambda o: delattr(o, "a"), lambda o: setattr(o, "new", 1)):
                with pytest.raises(dataclasses.FrozenInstanceError) as mine:
                    action(x)
                with pytest.raises(dataclasses.FrozenInstanceError) as reference:
                    action(tx)
                assert str(mine.value) == str(reference.value)
        else:
            with pytest.raises(TypeError):
                hash(x)
            x.a = tx.a = 9
            assert x.a == 9
        changed = dataclasses.replace(x, b="z")
        assert repr(changed) == repr(dataclasses.replace(tx, b="z"))
        assert copy.deepcopy(x) == x if x.e == x.e else True
    with pytest.raises(TypeError):
        ours()
    with pytest.raises(TypeError):
        ours(1, 2, 3, 4, 5, 6, 7)
    assert [p.name for p in inspect.signature(ours).parameters.values()] == [p.name for p in inspect.signature(theirs).parameters.values()]


def test_recursive_repr_and_subclasses() -> None:
    @record(frozen=False)
    class Node:
        children: list[Any] = field(default_factory=list)

    @dataclasses.dataclass
    class Reference:
        children: list[Any] = field(default_factory=list)

    node, reference = Node(), Reference()
    node.children.append(node)
    reference.children.append(reference)
    assert repr(node).replace("Node", "X") == repr(reference).replace("Reference", "X") == "test_recursive_repr_and_subclasses.<locals>.X(children=[...])"

    @record
    class Base:
        a: int

    class Child(Base):
        pass

    child = Child(1)
    object.__setattr__(child, "extra", 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        child.a = 2  # type: ignore[misc]
    assert child != Base(1) and Base(1) == Base(1)


def test_a_class_with_its_own_methods_is_refused() -> None:
    with pytest.raises(TypeError, match="defines __eq__"):
        @record
        class Own:
            a: int

            def __eq__(self, other: object) -> bool:
                return True


RECORD_MODULES = ("envcheck.model", "envcheck.rules", "envcheck.formats", "envcheck.sources", "envcheck.config",
                  "envcheck.profile", "envcheck.engine", "envcheck.fixes", "envcheck.knowledge.schema",
                  "envcheck.inspect.elf", "envcheck.inspect.wheel_tags", "envcheck.knowledge.builds", "envcheck.kinds")


@pytest.mark.parametrize("name", RECORD_MODULES)
def test_each_record_class_has_its_dataclass_twins_fields_and_signature(name: str) -> None:
    import importlib

    module = importlib.import_module(name)
    twin = _twin(module)
    try:
        names = _records(module)
        assert names and names == _records(twin)
        for cls_name in names:
            ours, theirs = getattr(module, cls_name), getattr(twin, cls_name)
            assert [(f.name, f.compare, f.hash, f.repr, f.init) for f in dataclasses.fields(ours)] == \
                [(f.name, f.compare, f.hash, f.repr, f.init) for f in dataclasses.fields(theirs)]
            assert _signature(ours) == _signature(theirs), cls_name
            assert (ours.__hash__ is None) == (theirs.__hash__ is None), cls_name
    finally:
        del sys.modules[twin.__name__]


def test_replaced_is_dataclasses_replace() -> None:
    """records.replaced copies the fields of a plain record (no __post_init__, only init fields) and gives
    what dataclasses.replace gives; anything else goes to dataclasses.replace itself."""
    from envcheck.records import replaced

    binary = model.Binary("/p/lib.so", "x86_64", needed=("libc.so.6",))
    cases: list[tuple[Any, dict[str, Any]]] = [
        (binary, {"distribution": "torch"}), (binary, {"needed": (), "path": "/q"}), (binary, {}),
        (model.Location("a", line=3), {"line": 4}),
    ]
    for obj, changes in cases:
        before = repr(obj)
        got, reference = replaced(obj, **changes), dataclasses.replace(obj, **changes)
        assert got == reference and repr(got) == repr(reference) and hash(got) == hash(reference)
        assert got is not obj and repr(obj) == before
        with pytest.raises(dataclasses.FrozenInstanceError):
            got.path = "x"
    with pytest.raises(TypeError):
        replaced(binary, nope=1)
    item = _item(record)(1)  # __post_init__ and init=False fields: dataclasses.replace runs them
    assert repr(replaced(item, b="z")) == repr(dataclasses.replace(item, b="z"))
    assert replaced(item, a=5).f == dataclasses.replace(item, a=5).f == 12
