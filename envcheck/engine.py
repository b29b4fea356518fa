"""The engine: read each target, run every check over its inventory, apply suppressions. Never prints."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace

from envcheck import rules, scopes
from envcheck.config import Config
from envcheck.errors import EnvcheckError, InputError, ServiceError
from envcheck.model import Finding, Inventory, Location, ReadProblem, Report, Status, TargetResult
from envcheck.options import RunOptions
from envcheck.profile import Profile, load_profile


@dataclass(frozen=True)
class Target:
    """One thing to check: its name as the user gave it, its kind, and how to read it."""

    name: str
    kind: str
    read: Callable[[], Inventory]


def read_safely(target: Target, debug: bool = False) -> Inventory:
    """Read a target; every failure becomes a ReadProblem, so one bad target never stops the run."""
    try:
        return target.read()
    except ServiceError as exc:
        return Inventory(problems=[ReadProblem(exc.message, Location(target.name), service=True)])
    except InputError as exc:
        where = Location(exc.path or target.name, line=exc.line, offset=exc.offset)
        return Inventory(problems=[ReadProblem(exc.message, where, fix=exc.fix)])
    except EnvcheckError as exc:
        return Inventory(problems=[ReadProblem(exc.message, Location(target.name))])
    except Exception as exc:  # a reader bug or an unforeseen input: this target is an ERROR, the others go on
        if debug:
            raise
        return Inventory(problems=[ReadProblem(f"could not read {target.name}: {type(exc).__name__}: {exc}", Location(target.name))])


def evaluate(inventory: Inventory, profile: Profile, kind: str, options: RunOptions | None = None,
             debug: bool = False) -> list[Finding]:
    """Every finding the checks for ``kind`` yield for ``inventory``, problems first.

    Only the checks whose rules apply to ``kind`` run (their modules are imported now, see
    :func:`envcheck.rules.checks_for`). A check that breaks on unexpected facts costs only its own
    findings: it becomes one ERROR finding naming the check, and every other check still runs (``debug``
    re-raises instead).
    """
    findings: list[Finding] = []
    for problem in inventory.problems:
        rule = rules.SERVICE_ERROR if problem.service else rules.INPUT_SKIPPED if problem.note else rules.INPUT_ERROR
        findings.append(rule.finding(problem.message, problem.location, fix=problem.fix or None))

    def run_checks(scoped: Inventory) -> list[Finding]:
        out: list[Finding] = []
        ctx = rules.CheckContext(inventory=scoped, profile=profile, kind=kind, options=options or RunOptions())
        for check in rules.checks_for(kind, ("wheel",) if scoped.resolved else ()):
            try:
                out.extend(check.fn(ctx))
            except Exception as exc:
                if debug:
                    raise
                out.append(rules.INTERNAL_ERROR.finding(
                    f"check {check.name} failed on this input: {type(exc).__name__}: {exc}",
                    evidence={"check": check.name},
                ))
        return out

    # Extras and dependency groups are opt-in: each is judged in its own scope (envcheck.scopes).
    from envcheck.knowledge.builds import installs_on

    findings.extend(scopes.judge_scopes(inventory, run_checks, lambda p: installs_on(p, profile)))
    return _distinct(_branch_aware(f) for f in findings)


def _branch_aware(finding: Finding) -> Finding:
    """A finding about a command that runs only in a shell branch says so; in a fallback (it runs only
    when the main path fails) a FAIL is a WARN: it is the recipe's second path, not what it does."""
    loc = finding.location
    if loc is None or not loc.branch:
        return finding
    status = Status.WARN if loc.fallback and finding.status is Status.FAIL else finding.status
    return replace(finding, status=status, message=f"{finding.message}; {loc.branch}")


def _distinct(findings: Iterable[Finding]) -> list[Finding]:
    """Each finding once: the same rule, status, location and message reached twice (a file read directly
    and again through a Dockerfile that copies it, two checks meeting on one fact) is one finding."""
    seen: set[tuple[str, Status, Location | None, str]] = set()
    out: list[Finding] = []
    for finding in findings:
        key = (finding.rule, finding.status, finding.location, finding.message)
        if key not in seen:
            seen.add(key)
            out.append(finding)
    return out


def _suppression(finding: Finding, inventory: Inventory, config: Config) -> str | None:
    """The reason ``finding`` is suppressed, or None. ERROR findings are never suppressed."""
    if finding.status is Status.ERROR:
        return None
    for key in (finding.rule, finding.gotcha):
        if key in config.ignores:
            return config.ignores[key]
    loc = finding.location
    if loc is not None and loc.line is not None:
        for pragma in inventory.pragmas:
            if (
                pragma.location.path == loc.path
                and pragma.location.line == loc.line
                and (finding.rule in pragma.rules or finding.gotcha in pragma.rules)
            ):
                return pragma.reason or "inline pragma"
    return None


def ignored(finding: Finding, ignores: Mapping[str, str]) -> str | None:
    """Why ``finding`` is ignored by its rule id or gotcha (``--ignore``, config), or None; never an ERROR."""
    if finding.status is Status.ERROR:
        return None
    return next((ignores[key] for key in (finding.rule, finding.gotcha) if key in ignores), None)


def apply_ignores(findings: Iterable[Finding], ignores: Mapping[str, str]) -> tuple[list[Finding], list[tuple[Finding, str]]]:
    """The findings kept, and the ignored ones with their reasons."""
    kept: list[Finding] = []
    suppressed: list[tuple[Finding, str]] = []
    for finding in findings:
        reason = ignored(finding, ignores)
        if reason is None:
            kept.append(finding)
        else:
            suppressed.append((finding, reason))
    return kept, suppressed


def judge(target: Target, inventory: Inventory, profile: Profile, config: Config, debug: bool = False) -> TargetResult:
    """Findings for one already-read inventory, with config overrides and suppressions applied."""
    result = TargetResult(target=target.name, kind=target.kind, inventory=inventory)
    for finding in evaluate(inventory, profile, target.kind, config.options, debug):
        override = config.severity.get(finding.rule)
        if override and finding.status not in (Status.PASS, Status.INFO, Status.ERROR):
            finding = replace(finding, status=Status[override])
        reason = _suppression(finding, inventory, config)
        if reason is None:
            result.findings.append(finding)
        else:
            result.suppressed.append((finding, reason))
    return result


def exit_code(findings: Iterable[Finding], threshold: Status | None) -> int:
    """3 a service was unreachable; 2 a target was unreadable; 1 findings at/above the threshold; else 0."""
    findings = list(findings)
    if any(f.rule == rules.SERVICE_ERROR_ID for f in findings):
        return 3
    if any(f.status is Status.ERROR for f in findings):
        return 2
    if threshold is not None and any(
        f.status.rank >= threshold.rank and f.status not in (Status.SKIP, Status.INFO) for f in findings
    ):
        return 1
    return 0


def run(targets: Iterable[Target], config: Config, debug: bool = False) -> Report:
    """Check every target and return the report (with its exit code)."""
    profile = load_profile(config.profile)
    report = Report(profile=profile.name)
    for target in targets:
        inventory = read_safely(target, debug)
        report.targets.append(judge(target, inventory, profile, config, debug))
    _owned_once(report.targets)
    from envcheck import fixes

    fixes.attach(report, config.options)  # the edits `envcheck --fix` would make, for every format to show
    report.exit_code = exit_code(report.findings, config.fail_threshold)
    return report


def _owned_once(results: list[TargetResult]) -> None:
    """A finding about a file that is itself a target belongs to that target: a Dockerfile that COPYs the
    project's pyproject.toml or requirements.txt does not repeat the findings that file's own target has."""
    import os

    def real(path: str) -> str:
        try:
            return os.path.realpath(path)
        except (OSError, ValueError):
            return path

    owners = {real(r.target): r for r in results}
    if len(owners) < 2:
        return
    for result in results:
        own = real(result.target)
        kept = []
        for finding in result.findings:
            path = finding.location.path if finding.location else None
            owner = owners.get(real(path)) if path else None
            line = finding.location.line if finding.location else None
            if owner is not None and real(path or "") != own and any(
                    (f.rule, f.status, f.message, f.location.line if f.location else None)
                    == (finding.rule, finding.status, finding.message, line) for f in owner.findings):
                continue
            kept.append(finding)
        result.findings[:] = kept
