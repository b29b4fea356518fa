"""The knowledge files: every one holds to its schema, every source can be followed, one fact lives once."""

from __future__ import annotations

import json
import re
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO

from envcheck import knowledge
from envcheck.errors import KnowledgeError
from envcheck.knowledge.schema import SCHEMAS, validate

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

FILES = sorted(p.stem for p in (REPO / "envcheck" / "knowledge").glob("*.toml"))


def raw(name: str) -> dict[str, Any]:
    data: dict[str, Any] = tomllib.loads((REPO / "envcheck" / "knowledge" / f"{name}.toml").read_text(encoding="utf-8"))
    return data


def test_every_knowledge_file_has_a_schema_and_holds_to_it() -> None:
    assert sorted(SCHEMAS) == FILES
    for name in FILES:
        validate(name, raw(name))
        assert knowledge.load(name) == raw(name)


def _first_row(data: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return next((k, v[0]) for k, v in data.items() if isinstance(v, list) and v and isinstance(v[0], dict))


@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("damage", ["unknown key", "no source", "wrong type", "missing required"])
def test_a_broken_row_fails_loudly(name: str, damage: str) -> None:
    """Each class of damage, in a real row of each file, is refused with the file, the row and the key."""
    data = raw(name)
    table, row = _first_row(data)
    if damage == "unknown key":
        row["sorce"] = "typo"
        expected = "unknown key 'sorce'"
    elif damage == "no source":
        del row["source"]
        expected = "missing 'source'"
    elif damage == "wrong type":
        key = next(k for k, v in row.items() if isinstance(v, str) and k != "source")
        row[key] = 3
        expected = f"{key!r} must be a str, not int"
    else:
        key = next(k for k in SCHEMAS[name][table].required)  # type: ignore[union-attr]
        del row[key]
        expected = f"missing {key!r}"
    with pytest.raises(KnowledgeError) as err:
        validate(name, data)
    assert f"envcheck/knowledge/{name}.toml: [[{table}]] row 1" in err.value.message
    assert expected in err.value.message


def test_a_broken_table_or_top_level_value_fails_loudly() -> None:
    data = raw("torch_builds")
    data["ngc"]["first_cuda13_release"] = "25.08"  # the fact lives in ngc_tags.toml only
    with pytest.raises(KnowledgeError, match=r"torch_builds.toml: \[ngc\]: unknown key 'first_cuda13_release'"):
        validate("torch_builds", data)
    data = raw("ngc_tags")
    data["first_cuda13_pytorch"] = 25.08
    with pytest.raises(KnowledgeError, match="'first_cuda13_pytorch' must be a str, not float"):
        validate("ngc_tags", data)
    data = raw("cuda_sonames")
    data["library"][0]["cuda"] = [12, "13"]
    with pytest.raises(KnowledgeError, match="'cuda' must be a list of integers"):
        validate("cuda_sonames", data)
    with pytest.raises(KnowledgeError, match="no schema"):
        validate("not_a_file", {})


def sources(value: Any, path: str = "") -> list[tuple[str, str]]:
    """(where, text) of every source in a knowledge document: ``source``, ``*_source`` and ``[meta] sources``."""
    found: list[tuple[str, str]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if (key == "source" or key.endswith("_source")) and isinstance(item, str):
                found.append((f"{path}.{key}", item))
            elif key == "sources" and isinstance(item, list):
                found.extend((f"{path}.sources[{i}]", s) for i, s in enumerate(item))
            else:
                found.extend(sources(item, f"{path}.{key}"))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found.extend(sources(item, f"{path}[{i}]"))
    return found


def followable(text: str, repo: Path) -> bool:
    """A source starts with an http(s) URL or the path of a file in the repository (then says what was read)."""
    first = text.split()[0].rstrip(":,;") if text.split() else ""
    if re.fullmatch(r"https?://[^\s/]+\.[^\s/]+(/\S*)?", first):
        return True
    return bool(first) and not first.startswith(("/", "..")) and (repo / first.split("#", 1)[0]).is_file()


def test_every_source_can_be_followed() -> None:
    found = [(f"{name}.toml{where}", text) for name in FILES for where, text in sources(raw(name))]
    facts = json.loads(resources.files("envcheck.knowledge").joinpath("wheel_facts.json").read_text(encoding="utf-8"))
    found += [(f"wheel_facts.json{where}", text) for where, text in sources(facts["files"])]
    assert len(found) > 150
    assert [f"{where}: {text}" for where, text in found if not followable(text, REPO)] == []


def test_the_source_check_refuses_what_a_reader_cannot_follow(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "note.md").write_text("x")
    assert followable("https://pypi.org/project/torch/2.10.0/: METADATA", tmp_path)
    assert followable("docs/note.md §1.1: a table row", tmp_path)
    assert not followable("spark-facts.md §1.1: a note outside the repository", tmp_path)
    assert not followable("docs/missing.md §2", tmp_path)
    assert not followable("../shared/research/spark-facts.md §1", tmp_path)
    assert not followable("ftp://example.org/x", tmp_path)
    assert not followable("", tmp_path)


def test_the_first_cuda13_ngc_release_is_one_fact() -> None:
    """It lives in ngc_tags.toml only; the rules' prose quotes it from there."""
    from envcheck.checks import g01_base_images, g01_cuda_abi, g09_drift

    first = knowledge.first_cuda13_ngc_release()
    texts = [r.explanation + r.fix for r in (g01_base_images.CUDA12_BASE, g01_cuda_abi.LOCAL_VERSION, g09_drift.UNKNOWN_BASE)]
    assert all(first in t for t in texts)
    occurrences = [name for name in FILES if re.search(r"first_cuda13_(release|pytorch)\s*=", (REPO / "envcheck" / "knowledge" / f"{name}.toml").read_text())]
    assert occurrences == ["ngc_tags"]


def test_torch_releases_in_g1_prose_come_from_the_data() -> None:
    from envcheck.checks import g01_cuda_abi
    from envcheck.knowledge.builds import first_cu130_torch, first_pypi_cuda_torch

    assert first_cu130_torch() == raw("torch_builds")["pytorch_index"]["first_cu130_release"]
    pypi = first_pypi_cuda_torch(13)
    assert [r["versions"] for r in raw("torch_builds")["pypi"] if r["aarch64"] == "13"] == [f">={pypi}"]
    assert f"torch >= {pypi} from PyPI" in g01_cuda_abi.CPU_BUILD.fix
    assert f"older than {pypi}" in g01_cuda_abi.CPU_BUILD.explanation
    assert f"torch=={first_cu130_torch()}+cu130" in g01_cuda_abi.TORCH_BUILD.fix
    with pytest.raises(LookupError, match="no PyPI row with CUDA 99"):
        first_pypi_cuda_torch(99)
