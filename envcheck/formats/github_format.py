"""GitHub Actions workflow commands: ``::error file=...,line=...,title=...::message``."""

from __future__ import annotations

from envcheck.model import Report, Status

_LEVEL = {Status.ERROR: "error", Status.FAIL: "error", Status.WARN: "warning"}


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render(report: Report, verbosity: int = 0) -> str:
    lines = []
    for target in report.targets:
        for f in target.findings:
            level = _LEVEL.get(f.status) or ("notice" if verbosity > 0 and f.status is Status.INFO else None)
            if level is None:
                continue
            props = []
            if f.location is not None:
                props.append(f"file={_escape_property(f.location.path)}")
                if f.location.line is not None:
                    props.append(f"line={f.location.line}")
            props.append(f"title={_escape_property(f'{f.gotcha} {f.rule}')}")
            message = f.message + (f" Fix: {f.fix}" if f.fix else "")
            lines.append(f"::{level} {','.join(props)}::{_escape_data(message)}")
    return "\n".join(lines) + ("\n" if lines else "")
