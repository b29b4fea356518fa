"""G8: official playbooks that ship broken."""

from __future__ import annotations

from collections.abc import Iterator

from envcheck import kinds
from envcheck.checks.host_facts import is_live
from envcheck.model import Finding, Status
from envcheck.rules import CheckContext, check, rule

PLAYBOOKS_URL = "https://github.com/NVIDIA/dgx-spark-playbooks/issues"

PLAYBOOK_ISSUES = rule(
    "G8-playbook-issues", "G8", "Recent open issues of the official DGX Spark playbooks", Status.INFO,
    """Official DGX Spark playbooks have shipped broken; the stack moves faster than the docs. Offline,
    preflight cannot check and says where to look (SKIP). With --online it lists the newest open issues of
    github.com/NVIDIA/dgx-spark-playbooks through the public GitHub API (no token) as INFO, to compare
    with the playbook you are about to trust.""",
    """Read the recent issues of github.com/NVIDIA/dgx-spark-playbooks before trusting a recipe for an
    expensive run.""",
    inputs=kinds.LIVE_KINDS)


@check(PLAYBOOK_ISSUES)
def playbook_issues(ctx: CheckContext) -> Iterator[Finding]:
    playbooks = ctx.inventory.host.playbooks
    if not is_live(ctx) or playbooks is None:  # None: not read by preflight (a container probe)
        return
    url = playbooks.url or PLAYBOOKS_URL
    if playbooks.status == "ok":
        issues = playbooks.issues or ()
        if not issues:
            yield PLAYBOOK_ISSUES.info(f"no open issues at {url}", url=url)
        for issue in issues:
            created = (issue.created_at or "")[:10]
            title = " ".join((issue.title or "").split())[:100]
            yield PLAYBOOK_ISSUES.info(f"#{issue.number} {title} ({created})", url=issue.url, number=issue.number)
    elif playbooks.status == "error":
        yield PLAYBOOK_ISSUES.finding(f"{playbooks.error}; check {url}", status=Status.SKIP)
    else:
        yield PLAYBOOK_ISSUES.finding(f"offline: check {url} before trusting a playbook (--online lists them)", status=Status.SKIP)
