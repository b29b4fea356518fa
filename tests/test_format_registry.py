"""The format registry: --format choices come from envcheck.formats.FORMATS, and adding a format is one module
plus one row (the recipe in docs/design.md), with stdout and stderr decided by the format, not the CLI."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from envcheck import cli, formats

THROWAWAY = '''
"""A throwaway format: one line per finding; findings of failing status are repeated on stderr."""

from envcheck.formats import Rendered
from envcheck.model import Report, Status


def render(report: Report, verbosity: int = 0) -> Rendered:
    lines = [f"{f.rule} {f.status.value}" for f in report.findings]
    loud = tuple(f"LOUD {f.rule}" for f in report.findings if f.status is Status.FAIL)
    return Rendered("\\n".join(lines) + "\\n", loud)
'''


@pytest.fixture
def requirements(tmp_path: Path) -> Path:
    path = tmp_path / "requirements.txt"
    path.write_text("torch==2.5.1+cu121\n")
    return path


def test_a_new_format_is_one_module_and_one_row(tmp_path: Path, requirements: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "envcheck_throwaway_format.py").write_text(THROWAWAY)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(formats.FORMATS, "lines", formats.Format("lines", "envcheck_throwaway_format", "one line per finding"))

    assert cli.main(["-f", "lines", str(requirements)]) == 1
    out, err = capsys.readouterr()
    assert "G1-cuda12-local-version FAIL" in out.splitlines()
    assert "LOUD G1-cuda12-local-version" in err.splitlines()

    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert "lines: one line per finding" in " ".join(capsys.readouterr().out.split())


def test_an_unknown_format_is_a_usage_error(requirements: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main(["-f", "lines", str(requirements)])
    assert exit_.value.code == 2
    assert "invalid choice: 'lines'" in capsys.readouterr().err


def test_every_row_names_a_module_with_render() -> None:
    for fmt in formats.FORMATS.values():
        module = Path(formats.__file__).parent / (fmt.module.rsplit(".", 1)[1] + ".py")
        tree = ast.parse(module.read_text(encoding="utf-8"))
        assert any(isinstance(n, ast.FunctionDef) and n.name == "render" for n in tree.body), fmt.name


def test_the_cli_knows_no_format_by_name() -> None:
    """cli.py reads the registry; no format's module or internals are named there."""
    text = Path(cli.__file__).read_text(encoding="utf-8")
    assert not [m for m in formats.FORMATS.values() if m.module in text]
    assert "other_lines" not in text and "preflight_format" not in text
