"""The rule registry: every rule's id, gotcha, default severity, explanation and fix, in one place.

Check modules (``envcheck.checks.*``) declare their rules with :func:`rule` next to the function that
yields findings for them, and register that function with :func:`check`. ``envcheck rules``, the SARIF
rule table, ``docs/rules.md`` and the pre-commit hooks are all generated from this registry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from envcheck.model import Finding, Location, Status

if TYPE_CHECKING:
    from envcheck.model import Inventory
    from envcheck.profile import Profile


@dataclass(frozen=True)
class Rule:
    """A named verdict envcheck can reach. ``severity`` is the status it reports when it fires."""

    id: str
    gotcha: str
    title: str
    severity: Status
    explanation: str
    fix: str
    inputs: tuple[str, ...] = ()  # input kinds it applies to: requirements, dockerfile, binary, ...

    def finding(
        self,
        message: str,
        location: Location | None = None,
        evidence: Mapping[str, Any] | None = None,
        status: Status | None = None,
        fix: str | None = None,
    ) -> Finding:
        """A finding of this rule; status defaults to the rule's severity, fix to the rule's fix."""
        chosen = status or self.severity
        return Finding(
            rule=self.id,
            gotcha=self.gotcha,
            status=chosen,
            message=message,
            location=location,
            evidence=dict(evidence or {}),
            fix=(self.fix if fix is None else fix) if chosen not in (Status.PASS, Status.INFO) else (fix or ""),
        )

    def passed(self, message: str, location: Location | None = None, **evidence: Any) -> Finding:
        """A PASS finding: the facts this rule looks at were present and fine."""
        return self.finding(message, location, evidence, status=Status.PASS)

    def info(self, message: str, location: Location | None = None, **evidence: Any) -> Finding:
        """An INFO finding: a raw reading or context, never a failure."""
        return self.finding(message, location, evidence, status=Status.INFO)


@dataclass(frozen=True)
class CheckContext:
    """What a check may look at: the inventory, the target profile, and run options."""

    inventory: Inventory
    profile: Profile
    kind: str  # input kind of the target: requirements, dockerfile, wheel, folder, image, host, ...
    options: Mapping[str, Any] = field(default_factory=dict)  # e.g. nvfp4=True, expect_bandwidth=...


CheckFn = Callable[[CheckContext], Iterable[Finding]]

RULES: dict[str, Rule] = {}
CHECKS: list[CheckFn] = []

# Rules the engine itself reports: reading problems are findings, not exceptions.
READ_ERROR_ID = "input-error"
SERVICE_ERROR_ID = "service-error"


def rule(
    id: str,
    gotcha: str,
    title: str,
    severity: Status,
    explanation: str,
    fix: str,
    inputs: tuple[str, ...] = (),
) -> Rule:
    """Declare a rule and add it to the registry (ids are unique and stable)."""
    if id in RULES:
        raise ValueError(f"rule {id} declared twice")
    declared = Rule(id, gotcha, title, severity, " ".join(explanation.split()), " ".join(fix.split()), inputs)
    RULES[id] = declared
    return declared


def check(fn: CheckFn) -> CheckFn:
    """Register a check function: ``fn(ctx) -> iterable of findings``. Checks are pure: no I/O."""
    CHECKS.append(fn)
    return fn


def load_all() -> None:
    """Import every check module so its rules and checks are registered."""
    import envcheck.checks  # noqa: F401  (imports its submodules)


def iter_rules(selector: str | None = None) -> Iterator[Rule]:
    """Rules in gotcha order; ``selector`` is a rule id, a gotcha (G2, ARCH) or None for all."""
    load_all()
    order = {g: i for i, g in enumerate(("G1", "G2", "G3", "G4", "G5", "G6", "G7", "G8", "G9", "G10", "ARCH", "ENVCHECK"))}
    for r in sorted(RULES.values(), key=lambda r: (order.get(r.gotcha, 99), r.id)):
        if selector is None or selector.upper() in (r.gotcha, r.id.upper()) or selector == r.id:
            yield r


INPUT_ERROR = rule(
    READ_ERROR_ID,
    "ENVCHECK",
    "A target or part of it could not be read",
    Status.ERROR,
    """envcheck could not read this input (or one line, member or section of it), so nothing it
    contains was checked. The message names the file and the line, byte offset or member.""",
    """Fix or remove the broken input; the message says what could not be read and where.""",
)
SERVICE_ERROR = rule(
    SERVICE_ERROR_ID,
    "ENVCHECK",
    "A service needed for the check was unreachable",
    Status.ERROR,
    """A registry, Docker engine or API that this check needs did not answer or refused access, so
    the target could not be checked. envcheck exits with code 3.""",
    """Check the network, credentials (docker login / --username) and DOCKER_HOST, then run again.""",
)
INTERNAL_ERROR = rule(
    "internal-error",
    "ENVCHECK",
    "A check failed on unexpected input",
    Status.ERROR,
    """One of envcheck's checks raised an error on facts it did not expect. Its findings for this target are
    missing; every other check still ran. This is a bug in envcheck: please report it with the input.""",
    """Run again with --debug for a traceback and report it; meanwhile review this target by hand.""",
)
