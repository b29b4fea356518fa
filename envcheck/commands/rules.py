"""``envcheck rules [ID|GOTCHA]``: list every rule, or explain one rule or gotcha (text, JSON or Markdown)."""

from __future__ import annotations

import argparse
import json

from envcheck import rules
from envcheck.errors import UsageError

HELP = "List every rule, or explain one rule or gotcha."


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("selector", nargs="?", help="a rule id (G1-cuda12-index), a gotcha (G2, ARCH) or policy (the policy rules)")
    parser.add_argument("-f", "--format", choices=("text", "json", "markdown"), default="text")


def run(args: argparse.Namespace) -> str:
    selected = list(rules.iter_rules(args.selector))
    if not selected:
        raise UsageError(rules.unknown_selector(args.selector) or f"no rule or gotcha named {args.selector!r}; `envcheck rules` lists them")
    if args.format == "json":
        data = [{"id": r.id, "gotcha": r.gotcha, "title": r.title, "severity": r.severity.value, "explanation": r.explanation,
                 "fix": r.fix, "policy": r.policy} for r in selected]
        return json.dumps(data, indent=2) + "\n"
    if args.format == "markdown":
        from envcheck.formats.rules_doc import markdown
        return markdown(selected)
    detailed = args.selector is not None
    lines = []
    for r in selected:
        lines.append(f"{r.id:34} {r.gotcha:8} {r.severity.value:5} {r.title}" + (" (policy)" if r.policy else ""))
        if detailed:
            lines.append(f"    {r.explanation}")
            lines.append(f"    Fix: {r.fix}\n")
    return "".join(line + "\n" for line in lines)
