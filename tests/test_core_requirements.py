"""The requirements/freeze, pyproject and lock sources on real files in pip's full syntax."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_envcheck

from envcheck.model import Inventory
from envcheck.sources import ReadOptions, detect, requirements

OPTS = ReadOptions()


def _write(tmp: Path, name: str, text: str | bytes) -> Path:
    path = tmp / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_full_pip_syntax(tmp_path: Path) -> None:
    _write(tmp_path, "base.txt", "numpy==2.1.0 \\\n    --hash=sha256:0123456789abcdef\n")
    _write(tmp_path, "constraints.txt", "transformers==4.57.1\n")
    req = _write(tmp_path, "requirements.txt", "\n".join([
        "# comment line",
        "-r base.txt",
        "-c constraints.txt",
        "--extra-index-url https://download.pytorch.org/whl/cu130",
        "-f https://example.org/wheels/",
        "torch==2.9.0+cu130 ; platform_system == 'Linux'  # trailing comment",
        "transformers",
        "-e git+https://github.com/unslothai/unsloth.git@main#egg=unsloth",
        "flash-attn @ git+https://github.com/Dao-AILab/flash-attention.git@v2.7.4",
        "requests[socks]>=2.31,<3",
        "",
    ]))
    inv = requirements.read(req, OPTS)
    names = {p.name: p for p in inv.packages}
    assert names["numpy"].version == "2.1.0" and names["numpy"].location.path.endswith("base.txt")
    assert names["transformers"].role in ("constraint", "requirement")
    assert any(p.name == "transformers" and p.role == "constraint" and p.version == "4.57.1" for p in inv.packages)
    assert names["torch"].version == "2.9.0+cu130" and names["torch"].marker and names["torch"].location.line == 6
    assert names["unsloth"].editable
    assert names["flash-attn"].url.startswith("git+")
    assert names["requests"].extras == ("socks",)
    assert [(i.option, i.url) for i in inv.indexes] == [
        ("extra-index-url", "https://download.pytorch.org/whl/cu130"), ("find-links", "https://example.org/wheels/")]
    assert not inv.problems


def test_include_cycle_and_missing_include_are_problems_with_lines(tmp_path: Path) -> None:
    _write(tmp_path, "a.txt", "-r b.txt\ntorch==2.11.0\n")
    _write(tmp_path, "b.txt", "-r a.txt\n-r missing.txt\n")
    inv = requirements.read(tmp_path / "a.txt", OPTS)
    messages = [(p.message, p.location.line if p.location else None) for p in inv.problems]
    assert any("cycle" in m for m, _ in messages)
    assert any("missing.txt" in m and line == 2 for m, line in messages)
    assert [p.name for p in inv.packages] == ["torch"]


def test_bad_line_is_error_with_line_and_rest_is_checked(tmp_path: Path) -> None:
    req = _write(tmp_path, "requirements.txt", "torch==2.5.1+cu121\nfoo===bar baz!!\n--no-such-option\ntransformers==4.57.1\n")
    proc = run_envcheck("--format", "json", str(req))
    data = json.loads(proc.stdout)
    findings = data["targets"][0]["findings"]
    errors = [f for f in findings if f["status"] == "ERROR"]
    assert {e["location"]["line"] for e in errors} == {2, 3}
    assert any(f["rule"] == "G1-cuda12-local-version" for f in findings)
    assert proc.returncode == 2  # an unreadable part outranks findings


def test_binary_junk_empty_and_non_utf8(tmp_path: Path) -> None:
    junk = _write(tmp_path, "requirements-junk.txt", b"\x7fELF\x00\x01\x02garbage")
    empty = _write(tmp_path, "requirements-empty.txt", "")
    latin = _write(tmp_path, "requirements-latin1.txt", "torch==2.11.0  # caf\xe9\n".encode("latin-1"))
    good = _write(tmp_path, "requirements.txt", "torch==2.11.0\n")
    proc = run_envcheck("--format", "json", str(junk), str(empty), str(latin), str(good))
    assert "Traceback" not in proc.stderr
    data = json.loads(proc.stdout)
    by = {t["target"]: t["findings"] for t in data["targets"]}
    junk_err = [f for f in by[str(junk)] if f["status"] == "ERROR"]
    assert junk_err and "NUL byte at offset" in junk_err[0]["message"]
    assert not [f for f in by[str(empty)] if f["status"] == "ERROR"]
    latin_err = [f for f in by[str(latin)] if f["status"] == "ERROR"]
    assert latin_err and latin_err[0]["location"]["line"] == 1 and "UTF-8" in latin_err[0]["message"]
    assert any(f["rule"] == "G1-torch-build" and f["status"] == "PASS" for f in by[str(latin)])
    assert any(f["rule"] == "G1-torch-build" and f["status"] == "PASS" for f in by[str(good)])


def test_huge_file_is_refused_not_read(tmp_path: Path) -> None:
    big = tmp_path / "requirements.txt"
    with big.open("wb") as fh:
        fh.truncate(requirements.MAX_BYTES + 1)
    proc = run_envcheck("--format", "json", str(big))
    data = json.loads(proc.stdout)
    assert "over the" in data["targets"][0]["findings"][0]["message"]
    assert proc.returncode == 2


def test_freeze_output_is_an_installed_set(tmp_path: Path) -> None:
    freeze = _write(tmp_path, "pip-freeze.txt", "torch==2.10.0a0+b558c986e8.nv25.11\nflash_attn==2.7.4.post1\n"
                    "transformer_engine @ file:///opt/transformer_engine\n")
    inv = requirements.read(freeze, OPTS)
    assert inv.context == "installed"
    assert all(p.installed for p in inv.packages)


def test_pyproject_dependencies_groups_and_uv_indexes(tmp_path: Path) -> None:
    from envcheck.sources import pyproject

    path = _write(tmp_path, "pyproject.toml", '''[project]
name = "x"
version = "0"
dependencies = ["torch==2.8.0", "peft"]
[project.optional-dependencies]
train = ["flash-attn==2.7.4.post1"]
[dependency-groups]
dev = ["pytest"]
[[tool.uv.index]]
name = "cu128"
url = "https://download.pytorch.org/whl/cu128"
''')
    inv: Inventory = pyproject.read(path, OPTS)
    assert {p.name for p in inv.packages} >= {"torch", "peft", "flash-attn", "pytest"}
    flash = next(p for p in inv.packages if p.name == "flash-attn")
    assert flash.location.line == 6
    assert inv.indexes[0].url.endswith("cu128") and inv.indexes[0].location.line == 11


def test_pyproject_syntax_error_names_the_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "pyproject.toml", '[project]\nname = "x"\ndependencies = ["torch"\n')
    proc = run_envcheck("--format", "json", str(path))
    data = json.loads(proc.stdout)
    err = data["targets"][0]["findings"][0]
    assert err["status"] == "ERROR" and err["location"]["line"] >= 3
    assert proc.returncode == 2


def test_kind_detection(tmp_path: Path) -> None:
    assert detect(_write(tmp_path, "requirements-dev.txt", "torch\n")) == "requirements"
    assert detect(_write(tmp_path, "deps.lst", "torch==2.11.0\nnumpy>=2\n")) == "requirements"
    assert detect(_write(tmp_path, "sub/pyproject.toml", "[project]\n")) == "pyproject"
    assert detect(_write(tmp_path, "uv.lock", "version = 1\n")) == "uv-lock"
    assert detect(_write(tmp_path, "pylock.toml", "lock-version = '1.0'\n")) == "pylock"
    assert detect(_write(tmp_path, "notes.md", "# Hello\nThis is prose, not requirements.\n")) is None


@pytest.mark.parametrize(("name", "text", "said"), [
    ("uv.lock", "", "uv.lock is empty: not a uv lock file (uv refuses it too)"),
    ("uv.lock", "# nothing\n", "uv.lock is empty: not a uv lock file"),
    ("uv.lock", 'revision = 3\n[[package]]\nname = "a"\n', "uv.lock has no top-level `version`: not a uv lock file"),
    ("pylock.toml", "", "pylock.toml is empty: not a PEP 751 lock file (pip and uv refuse it too)"),
    ("pylock.gpu.toml", '[[packages]]\nname = "a"\n', "pylock.gpu.toml has no top-level `lock-version`"),
])
def test_an_empty_or_headless_lock_is_an_error_not_a_clean_lock(tmp_path: Path, name: str, text: str, said: str) -> None:
    """uv refuses an empty uv.lock (missing field `version`): envcheck reports it as it reports any file it
    cannot read (ERROR, exit 2), in every format, not PASS with exit 0."""
    (tmp_path / name).write_text(text, encoding="utf-8")
    done = run_envcheck("-f", "json", name, cwd=tmp_path)
    (finding,) = [f for t in json.loads(done.stdout)["targets"] for f in t["findings"]]
    assert (done.returncode, finding["rule"], finding["status"]) == (2, "input-error", "ERROR"), done.stdout
    assert said in finding["message"] and finding["fix"].startswith("Write the lock again")
    folder = run_envcheck(".", cwd=tmp_path)  # found in a walk: the same
    assert folder.returncode == 2 and said in folder.stdout
