"""One small error hierarchy. Messages say what was read, what was wrong, and what to do."""

from __future__ import annotations


class EnvcheckError(Exception):
    """Base of every expected failure; the CLI prints ``message`` without a traceback."""
    exit_code = 2

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UsageError(EnvcheckError):
    """The command line, a config file or a profile is wrong."""


class InputError(EnvcheckError):
    """A target could not be read or parsed, at ``path`` (``line``, ``offset``) where known."""

    def __init__(self, message: str, path: str | None = None, line: int | None = None, offset: int | None = None,
                 fix: str = "") -> None:
        super().__init__(message)
        self.path = path
        self.line = line
        self.offset = offset
        self.fix = fix  # what to do, when it is more precise than "fix or remove the broken input"


def missing_extra(needed_by: str, package: str, extra: str, otherwise: str = "") -> InputError:
    """An optional dependency that is not installed, said one way for every extra of pyproject.toml (ssh:
    paramiko, resolve: uv), with one exit code (2: this machine's setup, not a service that failed)."""
    install = f"pip install 'envcheck-spark[{extra}]'"
    return InputError(f"{needed_by} needs {package}, which is not installed here: {install}",
                      fix=f"Install envcheck's {extra} extra where envcheck runs ({install}){otherwise}.")


class ServiceError(EnvcheckError):
    """A registry, Docker engine or web API could not be reached or refused us."""
    exit_code = 3


class KnowledgeError(EnvcheckError):
    """A shipped knowledge file (``envcheck/knowledge/*.toml``) breaks its schema: a bug in the release."""


class ReadingError(Exception):
    """What a reader in ``envcheck/inspect/`` raises for what it cannot read, and where. Not an
    ``EnvcheckError``: the calling source makes it a ``ReadProblem`` or ``InputError`` naming the file."""

    def __init__(self, message: str, line: int | None = None, offset: int | None = None, member: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.offset = offset
        self.member = member
