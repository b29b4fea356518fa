"""SARIF 2.1.0 for code scanning: rules from the registry in ``tool.driver.rules``, results with line numbers."""

from __future__ import annotations

import json
from typing import Any

from envcheck import __version__, rules
from envcheck.model import Finding, Report, Status

_LEVEL = {Status.ERROR: "error", Status.FAIL: "error", Status.WARN: "warning", Status.INFO: "note"}
HELP_URI = "https://github.com/envcheck/envcheck/blob/main/docs/rules.md"


def _rule_descriptor(rule: rules.Rule) -> dict[str, Any]:
    return {
        "id": rule.id, "name": rule.id.replace("-", "_"),
        "shortDescription": {"text": f"{rule.gotcha}: {rule.title}"},
        "fullDescription": {"text": rule.explanation},
        "help": {"text": f"{rule.explanation}\n\nFix: {rule.fix}", "markdown": f"{rule.explanation}\n\n**Fix:** {rule.fix}"},
        "helpUri": f"{HELP_URI}#{rule.id.lower()}",
        "defaultConfiguration": {"level": _LEVEL.get(rule.severity, "warning")},
        "properties": {"gotcha": rule.gotcha, "tags": [rule.gotcha, "dgx-spark", *(["policy"] if rule.policy else [])],
                       "policy": rule.policy},
    }


def artifact_uri(path: str, base: str | None = None) -> str:
    """A path under ``base`` (the checkout, in CI) as a relative URI reference, which code scanning resolves
    against the checkout; any other absolute path as a ``file://`` URI; percent-encoded either way. A URL is
    its own URI."""
    from pathlib import PurePosixPath
    from urllib.parse import quote
    if path.startswith(("https://", "http://")):  # a remote wheel (envcheck URL, --resolve): already a URI
        return path
    pure = PurePosixPath(path)
    if pure.is_absolute() and base is not None and pure.is_relative_to(base):
        pure = pure.relative_to(base)
    if pure.is_absolute():
        return pure.as_uri()
    return quote(pure.as_posix(), safe="/")  # PurePosixPath drops "./" only: ".github" stays ".github"


def _fix(finding: Finding, base: str) -> dict[str, Any]:
    """What ``envcheck --fix`` changes, as byte spans of the file."""
    changes: dict[str, list[dict[str, Any]]] = {}
    for edit in finding.edits:
        changes.setdefault(edit.path, []).append({
            "deletedRegion": {"byteOffset": edit.offset, "byteLength": edit.length},
            "insertedContent": {"text": edit.replacement}})
    return {"description": {"text": finding.fix or "envcheck --fix"},
            "artifactChanges": [{"artifactLocation": {"uri": artifact_uri(path, base)}, "replacements": edits}
                                for path, edits in changes.items()]}


def sarif_data(report: Report) -> dict[str, Any]:
    import os
    base = os.getcwd()
    all_rules = list(rules.iter_rules())
    index = {r.id: i for i, r in enumerate(all_rules)}
    results = []
    for target in report.targets:
        for f in target.findings:
            level = _LEVEL.get(f.status)
            if level is None or f.status is Status.INFO:
                continue
            loc = f.location
            path = loc.path if loc is not None else target.target
            physical: dict[str, Any] = {"artifactLocation": {"uri": artifact_uri(path, base)}}
            if loc is not None and loc.line is not None:
                physical["region"] = {"startLine": loc.line}
            result: dict[str, Any] = {
                "ruleId": f.rule, "level": level,
                "message": {"text": f.message + (f" Fix: {f.fix}" if f.fix else "")},
                "locations": [{"physicalLocation": physical}],
                "properties": {"gotcha": f.gotcha, "status": f.status.value, "policy": f.policy},
            }
            if f.rule in index:
                result["ruleIndex"] = index[f.rule]
            if loc is not None and loc.member:
                result["locations"][0]["logicalLocations"] = [{"name": loc.member, "kind": "member"}]
            if f.edits:
                result["fixes"] = [_fix(f, base)]
            results.append(result)
    driver = {"name": "envcheck", "version": __version__, "semanticVersion": __version__,
              "informationUri": "https://github.com/envcheck/envcheck",
              "rules": [_rule_descriptor(r) for r in all_rules]}
    run = {"tool": {"driver": driver}, "results": results, "properties": {"profile": report.profile}}
    return {"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0", "runs": [run]}


def render(report: Report, verbosity: int = 0) -> str:
    return json.dumps(sarif_data(report), indent=2) + "\n"
