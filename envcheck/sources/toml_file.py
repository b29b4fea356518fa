"""Reading a TOML input file (pyproject.toml, uv.lock, pylock.toml): bounded like every text input, and every
syntax error an input error at its line."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from envcheck import toml
from envcheck.errors import InputError
from envcheck.sources.requirements import MAX_BYTES, read_text_file


def parse_toml(path: Path, max_bytes: int = MAX_BYTES) -> tuple[dict[str, Any], str]:
    """The parsed TOML and its text; a syntax error raises InputError with the line."""
    text, problems = read_text_file(path, max_bytes)
    if problems:
        raise InputError(problems[0].message, str(path), line=problems[0].location.line if problems[0].location else None)
    try:
        return toml.loads(text), text
    except toml.TOMLDecodeError as exc:
        line = getattr(exc, "lineno", None)
        if line is None:
            m = re.search(r"line (\d+)", str(exc))
            # tomllib says "(at end of document)" for an unterminated value: that is the last line.
            line = int(m.group(1)) if m else (len(text.splitlines()) or 1) if "end of document" in str(exc) else None
        raise InputError(f"{path} is not valid TOML: {exc}", str(path), line=line) from exc
    except RecursionError:  # tomllib recurses once per nested array or inline table
        raise InputError(f"{path}: arrays or inline tables nested too deeply to read", str(path)) from None
    except ValueError as exc:  # a number past Python's integer digit limit
        raise InputError(f"{path} cannot be read: {str(exc)[:200]}", str(path)) from None
