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
    """Every finding the checks for ``kind`` yield for ``inventory``, problems first. A check that breaks
    costs only its own findings: one ERROR finding names it, the others still run (``debug`` re-raises)."""
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
                    evidence={"check": check.name}))
        return out

    # Extras and dependency groups are opt-in: each is judged in its own scope (envcheck.scopes).
    from envcheck.knowledge.builds import installs_on
    findings.extend(scopes.judge_scopes(inventory, run_checks, lambda p: installs_on(p, profile), kind == "pyproject"))
    return _distinct(_branch_aware(f) for f in findings)


# A finding in what runs only when asked for (a compose service under a profile), or in a Dockerfile stage
# outside the built image (it cannot break the image), is one level lower.
_LOWER = {Status.FAIL: Status.WARN, Status.WARN: Status.INFO}


def _branch_aware(finding: Finding) -> Finding:
    """A finding about a command in a shell branch says so; in a fallback (run only when the main path
    fails) a FAIL is a WARN; in a compose service under a profile (``on_request``) it is one level lower."""
    loc = finding.location
    if loc is None or not loc.branch:
        return finding
    status = Status.WARN if loc.fallback and finding.status is Status.FAIL else finding.status
    if loc.on_request:
        status = _LOWER.get(status, status)
    return replace(finding, status=status, message=f"{finding.message}; {loc.branch}")


def _stage_aware(finding: Finding) -> Finding:
    """A finding in a Dockerfile stage outside the built image (``Location.outside_image``) one level lower,
    for every check: the legacy builder still builds it, and a stage left in a file is often used later."""
    loc = finding.location
    lowered = _LOWER.get(finding.status) if loc is not None and loc.outside_image else None
    if loc is None or lowered is None:
        return finding
    return replace(finding, status=lowered, message=finding.message + _outside_image(loc.stage))


def _unstaged(location: Location | None) -> Location | None:
    return None if location is None else replace(location, stage=None, outside_image=False)


def _outside_image(stage: str | None) -> str:
    return f"; stage {stage!r} is not part of the built image (the target neither builds on it nor copies or mounts from it)"


def _distinct(findings: Iterable[Finding]) -> list[Finding]:
    """Each finding once: the same rule, status, location and message reached twice (a file read directly
    and through a Dockerfile that copies it) is one finding."""
    unique: dict[tuple[str, Status, Location | None, str], Finding] = {}
    for f in findings:
        unique.setdefault((f.rule, f.status, f.location, f.message), f)
    return list(unique.values())


def _suppression(finding: Finding, inventory: Inventory, config: Config) -> str | None:
    """The reason ``finding`` is suppressed (by config or a pragma), or None; never an ERROR."""
    if finding.status is Status.ERROR:
        return None
    if (reason := ignored(finding, config.ignores)) is not None:
        return reason
    keys = _ignore_keys(finding)
    loc = finding.location
    if loc is not None and loc.line is not None:
        for pragma in inventory.pragmas:
            if pragma.location.path == loc.path and pragma.location.line == loc.line and any(
                    key.lower() in {r.lower() for r in pragma.rules} for key in keys):  # `ignore=g1` is G1, as --ignore
                return pragma.reason or "inline pragma"
    return None


def ignored(finding: Finding, ignores: Mapping[str, str]) -> str | None:
    """Why ``finding`` is ignored by its rule id or gotcha (``--ignore``, config), or None; never an ERROR."""
    if finding.status is Status.ERROR:
        return None
    return next((ignores[key] for key in _ignore_keys(finding) if key in ignores), None)


def _ignore_keys(finding: Finding) -> tuple[str, ...]:
    """The names that select ``finding`` in --ignore, config and pragmas (``policy`` for a policy rule's)."""
    return (finding.rule, finding.gotcha, rules.POLICY) if finding.policy else (finding.rule, finding.gotcha)


def apply_ignores(findings: Iterable[Finding], ignores: Mapping[str, str]) -> tuple[list[Finding], list[tuple[Finding, str]]]:
    """The findings kept, and the ignored ones with their reasons."""
    judged = [(finding, ignored(finding, ignores)) for finding in findings]
    kept = [f for f, reason in judged if reason is None]
    return kept, [(f, reason) for f, reason in judged if reason is not None]


def judge(target: Target, inventory: Inventory, profile: Profile, config: Config, debug: bool = False) -> TargetResult:
    """Findings for one already-read inventory, with config overrides and suppressions applied."""
    result = TargetResult(target=target.name, kind=target.kind, inventory=inventory)
    findings = evaluate(inventory, profile, target.kind, config.options, debug)
    # one cause met in a stage of the image and in one outside it (a file both install) is the image's finding
    in_image = {(f.rule, f.message, _unstaged(f.location)) for f in findings if f.location is not None and not f.location.outside_image}
    for finding in findings:
        if finding.location is not None and finding.location.outside_image and (
                finding.rule, finding.message, _unstaged(finding.location)) in in_image:
            continue
        override = config.severity.get(finding.rule)
        if override and finding.status not in (Status.PASS, Status.INFO, Status.ERROR):
            finding = replace(finding, status=Status[override])
        finding = _stage_aware(finding)
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
            f.status.rank >= threshold.rank and f.status not in (Status.SKIP, Status.INFO) for f in findings):
        return 1
    return 0


def run(targets: Iterable[Target], config: Config, debug: bool = False) -> Report:
    """Check every target and return the report (with its exit code)."""
    profile = load_profile(config.profile)
    report = Report(profile=profile.name, sm=profile.sm)
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
    project's requirements.txt does not repeat that file's own findings (one cause, one finding)."""
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
        kept: list[Finding] = []
        elsewhere: dict[str, int] = {}  # path -> findings left to its own target
        for finding in result.findings:
            path = finding.location.path if finding.location else None
            owner = owners.get(real(path)) if path else None
            if path and owner is not None and real(path) != own and any(_same_cause(finding, f) for f in owner.findings):
                elsewhere[path] = elsewhere.get(path, 0) + (finding.status not in (Status.PASS, Status.INFO))
                continue
            kept.append(finding)
        for path, count in elsewhere.items():
            if count:
                what = "1 finding" if count == 1 else f"{count} findings"
                kept.append(rules.INPUT_SKIPPED.finding(
                    f"{path} is judged as its own target in this run: {what} about it reported there, not repeated here",
                    Location(path)))
        result.findings[:] = kept


def _same_cause(view: Finding, own: Finding) -> bool:
    """Whether ``view`` (a finding another target reached through a file) is ``own`` (that file's target's):
    the same rule and line, level and words once the stage is named alike (a compose file says
    ``app/builder``) and a lowering by :func:`_stage_aware` is undone."""
    at, mine = view.location, own.location
    if view.rule != own.rule:
        return False
    if at is None or mine is None:
        return at is mine and (view.status, view.message) == (own.status, own.message)
    if at.line != mine.line:
        return False
    status, words = view.status, view.message
    if at.outside_image and not mine.outside_image:
        suffix = _outside_image(at.stage)
        if status is not _LOWER.get(own.status) or not words.endswith(suffix):
            return False
        status, words = own.status, words[: -len(suffix)]
    if status is not own.status:
        return False
    if at.stage == mine.stage or mine.stage is None:  # a requirements file has no stage of its own
        return words == own.message
    if at.stage is None or not at.stage.endswith("/" + mine.stage):
        return False
    return words.replace(f"stage '{at.stage}'", f"stage '{mine.stage}'") == own.message
