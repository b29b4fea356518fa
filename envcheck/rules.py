"""The rule registry: check modules declare rules with :func:`rule` and register check functions with
:func:`check`; ``envcheck rules``, SARIF, ``docs/rules.md`` and the pre-commit hooks are generated from it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar, overload

from envcheck import kinds
from envcheck.model import Finding, Location, Status
from envcheck.options import RunOptions

if TYPE_CHECKING:
    from envcheck.fixes import Autofix
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
    inputs: tuple[str, ...] = ()  # input kinds it applies to (envcheck.kinds: a kind, "lock" or "any"); () = engine-only
    # The certain, local fix `envcheck --fix` applies (envcheck.fixes); None: the rule's findings are never edited.
    autofix: Autofix | None = field(default=None, compare=False, repr=False)
    # Policy advice (pin your packages), not a Spark fault: `--ignore policy` leaves its findings out.
    policy: bool = False

    def finding(self, message: str, location: Location | None = None,
                evidence: Mapping[str, Any] | None = None, status: Status | None = None,
                fix: str | None = None) -> Finding:
        """A finding of this rule; status defaults to the rule's severity, fix to the rule's fix."""
        chosen = status or self.severity
        fix = (self.fix if fix is None else fix) if chosen not in (Status.PASS, Status.INFO) else (fix or "")
        return Finding(rule=self.id, gotcha=self.gotcha, status=chosen, message=message, location=location,
                       evidence=dict(evidence or {}), fix=fix, policy=self.policy)

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
    options: RunOptions = field(default_factory=RunOptions)  # --nvfp4, expect-bandwidth, ...


CheckFn = Callable[[CheckContext], Iterable[Finding]]


@dataclass(frozen=True)
class Check:
    """A registered check function and the rule inputs it serves (the union of its rules' ``inputs``)."""
    fn: CheckFn
    inputs: tuple[str, ...]

    @property
    def name(self) -> str:
        return f"{self.fn.__module__}.{self.fn.__name__}"


RULES: dict[str, Rule] = {}
CHECKS: list[Check] = []

# Rules the engine itself reports: reading problems are findings, not exceptions.
READ_ERROR_ID = "input-error"
SERVICE_ERROR_ID = "service-error"
# The selector of every policy rule's findings in --ignore, `ignore = [...]` and pragmas (as ruff selects by prefix).
POLICY = "policy"


def rule(id: str, gotcha: str, title: str, severity: Status, explanation: str, fix: str,
         inputs: tuple[str, ...] = (), autofix: Autofix | None = None, policy: bool = False) -> Rule:
    """Declare a rule and add it to the registry (ids are unique and stable)."""
    if id in RULES:
        raise ValueError(f"rule {id} declared twice")
    unknown = [name for name in inputs if name not in kinds.RULE_INPUTS]
    if unknown:
        raise ValueError(f"rule {id}: unknown input kinds {unknown}; known: {', '.join(sorted(kinds.RULE_INPUTS))}")
    declared = Rule(id, gotcha, title, severity, " ".join(explanation.split()), " ".join(fix.split()), inputs, autofix, policy)
    RULES[id] = declared
    return declared


_Fn = TypeVar("_Fn", bound=CheckFn)


@overload
def check(fn: _Fn, /) -> _Fn: ...
@overload
def check(*declared: Rule) -> Callable[[_Fn], _Fn]: ...
def check(*declared: Any) -> Any:
    """Register a pure check function ``fn(ctx) -> iterable of findings``. ``@check(RULE_A, RULE_B)`` runs it
    only on targets whose kind one of those rules applies to; a bare ``@check`` runs on every target."""
    if len(declared) == 1 and not isinstance(declared[0], Rule):
        CHECKS.append(Check(declared[0], (kinds.ANY,)))
        return declared[0]
    if not declared or not all(isinstance(r, Rule) for r in declared):
        raise TypeError("@check takes the rules the check reports: @check(RULE_A, RULE_B)")
    names = tuple(dict.fromkeys(name for r in declared for name in r.inputs))

    def register(fn: _Fn) -> _Fn:
        CHECKS.append(Check(fn, names))
        return fn

    return register


def checks_for(kind: str, also: tuple[str, ...] = ()) -> list[Check]:
    """The registered checks for a target of ``kind`` and of the kinds ``also`` (``--resolve``: ``wheel``)."""
    from envcheck.checks import MODULES, RULES_ONLY
    for name in (kind, *also):
        load_for(name)
    # In the table's order, whatever order the modules were imported in (as when a target is checked alone).
    rank = {module: i for i, module in enumerate((*MODULES, *RULES_ONLY))}
    found = [c for c in CHECKS if any(kinds.applies(c.inputs, name) for name in (kind, *also))]
    return sorted(found, key=lambda c: rank.get(c.fn.__module__, len(rank)))


def load_for(kind: str) -> None:
    """Import the check modules that serve ``kind`` (all of them for a kind outside the table)."""
    import importlib

    from envcheck.checks import MODULES
    for module, inputs in MODULES.items():
        if kinds.applies(inputs, kind):
            importlib.import_module(module)


def load_all() -> None:
    import envcheck.checks
    envcheck.checks.load_all()


def iter_rules(selector: str | None = None) -> Iterator[Rule]:
    """Rules in gotcha order; ``selector``: a rule id, a gotcha (G2, ARCH), ``policy`` or None for all."""
    load_all()
    order = {g: i for i, g in enumerate(("G1", "G2", "G3", "G4", "G5", "G6", "G7", "G8", "G9", "G10", "ARCH", "ENVCHECK"))}
    for r in sorted(RULES.values(), key=lambda r: (order.get(r.gotcha, 99), r.id)):
        if selector is None or selector.upper() in (r.gotcha, r.id.upper()) or selector == r.id or (selector.lower() == POLICY and r.policy):
            yield r


def canonical_selector(selector: str) -> str | None:
    """The rule id, gotcha or ``policy`` that ``selector`` names in any case (``g1`` is ``G1``), or None."""
    from envcheck.model import ALL_GOTCHAS
    load_all()
    return {k.lower(): k for k in (*RULES, *ALL_GOTCHAS, "ENVCHECK", POLICY)}.get(selector.lower())


def unknown_selector(selector: str) -> str | None:
    """None when ``selector`` is a rule id, a gotcha or ``policy`` (in any case); else a sentence naming the closest one."""
    import difflib

    from envcheck.model import ALL_GOTCHAS
    if canonical_selector(selector) is not None:
        return None
    by_fold = {k.lower(): k for k in (*RULES, *ALL_GOTCHAS, "ENVCHECK", POLICY)}
    close = difflib.get_close_matches(selector.lower(), by_fold, n=1, cutoff=0.5)
    hint = f"; the closest is {by_fold[close[0]]!r}" if close else ""
    return f"unknown rule or gotcha {selector[:80]!r}{hint} (`envcheck rules` lists them)"


INPUT_ERROR = rule(
    READ_ERROR_ID, "ENVCHECK", "A target or part of it could not be read", Status.ERROR,
    """envcheck could not read this input (or one line, member or section of it), so nothing it
    contains was checked. The message names the file and the line, byte offset or member.""",
    """Fix or remove the broken input; the message says what could not be read and where.""",
)
SERVICE_ERROR = rule(
    SERVICE_ERROR_ID, "ENVCHECK", "A service needed for the check was unreachable", Status.ERROR,
    """A registry, Docker engine or API that this check needs did not answer or refused access, so
    the target could not be checked. envcheck exits with code 3.""",
    """Do what the message advises for that service; otherwise check that its address is right and reachable
    from here (DNS, proxy, network), then run again.""",
)
INPUT_SKIPPED = rule(
    "input-skipped", "ENVCHECK", "Part of a target was left out on purpose", Status.INFO,
    """envcheck left part of this input out on purpose and says what and why: in a folder, symbolic links
    that lead outside it are not followed (a link to / would make the scan walk the whole machine, and a
    scan of one environment must not judge another). A file this input reads that is also a target of the
    same run (the Dockerfile a compose file builds, the requirements file a Dockerfile copies) is judged in
    its own target: what it says is reported there once, not again here.""",
    """Nothing to fix if the left-out part is not part of the environment; otherwise check the folder the
    link leads to as its own target. A file judged as its own target needs nothing: read its findings there.""",
)
INTERNAL_ERROR = rule(
    "internal-error", "ENVCHECK", "A check failed on unexpected input", Status.ERROR,
    """One of envcheck's checks raised an error on facts it did not expect. Its findings for this target are
    missing; every other check still ran. This is a bug in envcheck: please report it with the input.""",
    """Run again with --debug for a traceback and report it; meanwhile review this target by hand.""",
)
