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
