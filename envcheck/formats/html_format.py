"""One self-contained HTML page per run (``--format html -o report.html``); what it shows: docs/html.md.

No network: inline styles, no fonts, images or external scripts. Every input string goes through
:func:`html.escape` after the render boundary (:func:`envcheck.formats.renderer`) masked secrets; no input
reaches a ``<style>`` or ``<script>`` element or an attribute other than escaped text.
"""

from __future__ import annotations

import html
import json
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from importlib import resources
from typing import TYPE_CHECKING, Any

from envcheck import __version__
from envcheck.inspect import fatbin_levels
from envcheck.inspect.fatbin import STANDARD_SECTIONS
from envcheck.model import ALL_GOTCHAS, Binary, Finding, Report, Status, TargetResult

if TYPE_CHECKING:
    from envcheck.readings import ImageFacts

# GPU code verdicts, worst first (the order problems sort by), and the words the page shows for them.
SM121_ORDER: dict[str | None, int] = {"none": 0, "ptx-jit": 1, "compatible": 2, "native": 3, None: 4}
SM121_WORDS: dict[str | None, str] = {"none": "none", "ptx-jit": "PTX-JIT", "compatible": "compatible",
                                      "native": "native", None: "no GPU code"}
# A fatbin outside the toolchain's sections is "hidden" (the deep scan found it in a data section, archive
# or compressed payload).
FATBIN_SECTIONS = frozenset(STANDARD_SECTIONS)
_QUIET = (Status.PASS, Status.INFO, Status.SKIP)
_HISTORY = re.compile(r"history\[(\d+)\]")

# Filter by text (report.js): rows and findings that do not contain the words typed are hidden. Data is never
# read from attributes, only from text nodes, so no input can reach the script.
_STYLE, _SCRIPT = (resources.files("envcheck.formats").joinpath(name).read_text(encoding="utf-8")
                   for name in ("report.css", "report.js"))


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _badge(status: Status) -> str:
    return f'<span class="badge s-{status.value}">{status.value}</span>'


def render(report: Report, verbosity: int = 0) -> str:
    """The report as one HTML5 page (no external resources)."""
    from envcheck import rules
    explanations = {r.id: r for r in rules.iter_rules()}
    out: list[str] = [
        "<!DOCTYPE html>", '<html lang="en">',
        '<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>envcheck report: {_e(', '.join(t.target for t in report.targets) or 'nothing checked')}</title>",
        f"<style>{_STYLE}</style></head>", "<body>", '<header><h1>envcheck report</h1>',
        f'<p class="meta">profile <b>{_e(report.profile)}</b> · envcheck {_e(__version__)} · '
        f"{len(report.targets)} target{'s' if len(report.targets) != 1 else ''} · exit code {report.exit_code}</p>",
        _band(report), *_compatibility(report), "</header>",
        '<input type="checkbox" id="showall"' + (" checked" if verbosity > 0 else "") + ">",
        '<label for="showall"> show passing and informational findings</label>',
        '<div class="controls"><label>Filter <input type="search" id="filter" placeholder="package, rule, file…"></label></div>',
        "<main>",
    ]
    for index, target in enumerate(report.targets):
        out.extend(_target(index, target, explanations, report.sm))
    if not report.targets:
        out.append('<p class="empty">Nothing was checked.</p>')
    out += ["</main>", f'<footer><p class="meta">envcheck {_e(__version__)}: rules are explained by '
            "<code>envcheck rules ID</code>.</p></footer>", f"<script>{_SCRIPT}</script>", "</body>", "</html>"]
    return "\n".join(out) + "\n"


def _band(report: Report) -> str:
    tiles = ['<nav class="band" aria-label="summary by gotcha">']
    for gotcha in ALL_GOTCHAS:
        statuses = [f.status for f in report.findings if f.gotcha == gotcha]
        worst = Status.worst(statuses)
        count = sum(1 for s in statuses if s is worst)
        what = f"{count} finding{'s' if count != 1 else ''}" if statuses else "not checked"
        tiles.append(f'<a class="tile s-{worst.value}" href="#{gotcha}"><b>{gotcha}</b>'
                     f"<span>{worst.value}</span><small>{what}</small></a>")
    tiles.append("</nav>")
    return "".join(tiles)


def _compatibility(report: Report) -> list[str]:
    """Targets x gotchas, each cell the worst status linked to the findings (more than one target only)."""
    if len(report.targets) < 2:
        return []
    out = ['<h2 id="matrix">Compatibility matrix</h2><table class="compat"><thead><tr><th>target</th>'
           + "".join(f"<th>{_e(g)}</th>" for g in ALL_GOTCHAS) + "</tr></thead><tbody>"]
    for index, target in enumerate(report.targets):
        worst = Status.worst((f.status for f in target.findings), Status.PASS)
        cells = [f'<th data-filter><a href="#t{index}">{_e(target.target)}</a> {_badge(worst)}</th>']
        for gotcha in ALL_GOTCHAS:
            statuses = [f.status for f in target.findings if f.gotcha == gotcha]
            if not statuses:
                cells.append('<td class="s-SKIP" title="not checked">–</td>')
                continue
            status = Status.worst(statuses)
            # passing findings are folded away (the "show passing" switch): link those to the target itself
            href = f"#t{index}" if status in _QUIET else f"#t{index}-{gotcha}"
            cells.append(f'<td class="s-{status.value}"><a href="{href}">{status.value}</a></td>')
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return out


def _target(index: int, target: TargetResult, explanations: Mapping[str, Any], sm: int) -> list[str]:
    worst = Status.worst((f.status for f in target.findings), Status.PASS)
    out = [f'<section class="target" id="t{index}">',
           f"<h2>{_badge(worst)} {_e(target.target)} <small>({_e(target.kind)})</small></h2>"]
    if target.kind in ("diff", "twins"):
        out.extend(_diff(target))
    if target.inventory.binaries:
        out.extend(_matrix(target.inventory.binaries, target.findings, sm))
    if (image := target.inventory.host.image) is not None:
        out.extend(_image(image, target.findings))
    out.extend(_findings(index, target, explanations))
    if target.suppressed:
        out.append("<h3>Suppressed</h3><ul>")
        for f, reason in target.suppressed:
            out.append(f"<li><code>{_e(f.rule)}</code> at {_e(f.location or target.target)}: {_e(reason)}</li>")
        out.append("</ul>")
    out.append("</section>")
    return out


def _findings(index: int, target: TargetResult, explanations: Mapping[str, Any]) -> list[str]:
    out = ["<h3>Findings by gotcha</h3>"]
    if not target.findings:
        out.append('<p class="empty">No findings.</p>')
    by_gotcha: dict[str, list[Finding]] = defaultdict(list)
    for f in target.findings:
        by_gotcha[f.gotcha].append(f)
    for gotcha in (*ALL_GOTCHAS, *sorted(set(by_gotcha) - set(ALL_GOTCHAS))):
        found = sorted(by_gotcha.get(gotcha, []), key=lambda f: -f.status.rank)
        if not found:
            continue
        loud = [f for f in found if f.status not in _QUIET]
        anchor = f' id="{gotcha}"' if index == 0 and gotcha in ALL_GOTCHAS else ""
        quiet = "" if loud else ' class="quiet"'
        own = f'<a id="t{index}-{_e(gotcha)}"></a>' if gotcha in ALL_GOTCHAS else ""  # the compatibility matrix's link
        out.append(f"<div{anchor}{quiet}>{own}<h4>{_e(gotcha)} {_badge(found[0].status)} "
                   f"<small>{len(loud)} to look at, {len(found) - len(loud)} passing or informational</small></h4>")
        out.extend(_finding(f, explanations.get(f.rule)) for f in found)
        out.append("</div>")
    return out


def _finding(f: Finding, rule: Any) -> str:
    quiet = " quiet" if f.status in _QUIET else ""
    parts = [f'<article class="finding s-{f.status.value}{quiet}" data-filter>{_badge(f.status)} '
             f"<code>{_e(f.rule)}</code> {_e(f.message)}"]
    if f.location is not None:
        parts.append(f'<div class="where">at <code>{_e(f.location)}</code>'
                     + (f" ({_e(f.location.branch)})" if f.location.branch else "") + "</div>")
    if f.fix and f.status not in _QUIET:
        parts.append(f'<div class="fix"><b>Fix:</b> {_e(f.fix)}</div>')
    if f.evidence:
        parts.append("<details><summary>Evidence</summary><pre>"
                     + _e(json.dumps(dict(f.evidence), indent=1, ensure_ascii=False, default=str)) + "</pre></details>")
    if rule is not None:
        parts.append(f"<details><summary>Why: {_e(rule.title)}</summary><p>{_e(rule.explanation)}</p>"
                     f"<p><b>Fix in general:</b> {_e(rule.fix)}</p></details>")
    parts.append("</article>")
    return "".join(parts)


def hidden_sections(binary: Binary) -> tuple[str, ...]:
    return tuple(s for s in binary.sections if s not in FATBIN_SECTIONS)


def package_of(binary: Binary) -> str:
    """The distribution that owns an ELF file, or its top folder under site-/dist-packages when no RECORD said."""
    if binary.distribution:
        return binary.distribution
    parts = binary.path.replace("\\", "/").split("/")
    for folder in ("site-packages", "dist-packages"):
        if folder in parts:
            rest = parts[len(parts) - parts[::-1].index(folder):]
            if len(rest) > 1:
                return f"{rest[0]}/ (no RECORD)"
    return "(no package)"


def _labels(values: Iterable[str]) -> str:
    return ", ".join(sorted(set(values), key=_arch_key)) or "—"


def _arch_key(label: str) -> tuple[int, str]:
    digits = re.search(r"(\d+)", label)
    return (int(digits.group(1)) if digits else 0, label)


def _level(b: Binary, sm: int) -> str | None:
    """How ``b`` runs on the profile's GPU: ``Binary.sm121`` is read for the GB10; another GPU is judged
    from the recorded modules (a reading without them: its images as one module), as G7 does."""
    if sm == fatbin_levels.GB10_SM or b.sm121 is None:
        return b.sm121
    return fatbin_levels.modules_level(b.modules or (" ".join((*b.sass, *b.ptx)),), sm)


def _matrix(binaries: list[Binary], findings: list[Finding], sm: int) -> list[str]:
    """Packages × what their ELF files need and carry for the profile's GPU, problems first."""
    worst_at: dict[tuple[str, str | None], Status] = {}
    for f in findings:
        if f.location is not None:
            key = (f.location.path, f.location.member)
            if key not in worst_at or f.status.rank > worst_at[key].rank:
                worst_at[key] = f.status
    groups: dict[str, list[Binary]] = defaultdict(list)
    for b in binaries:
        groups[package_of(b)].append(b)

    def status_of(b: Binary) -> Status:
        loc = b.location
        return worst_at.get((loc.path, loc.member) if loc else (b.path, None), Status.PASS)

    levels = {id(b): _level(b, sm) for b in binaries}
    rows = []
    for name, files in groups.items():
        status = Status.worst((status_of(b) for b in files), Status.PASS)
        gpu = [levels[id(b)] for b in files if levels[id(b)] is not None]
        level = min(gpu, key=lambda lv: SM121_ORDER.get(lv, 4)) if gpu else None
        rows.append((name, files, status, level))
    rows.sort(key=lambda r: (-r[2].rank, SM121_ORDER.get(r[3], 4), r[0]))
    gpu_files = sum(1 for b in binaries if levels[id(b)] is not None)
    target = f"sm_{sm}"
    out = [f"<h3>Binaries: {len(binaries)} ELF files in {len(rows)} packages, {gpu_files} with GPU code</h3>",
           '<table class="matrix"><thead><tr><th>status</th><th>package</th><th>ELF files</th><th>CUDA major</th>'
           f"<th>{target}</th><th>SASS</th><th>PTX</th><th>fatbins</th></tr></thead><tbody>"]
    for name, files, status, level in rows:
        majors = sorted({b.cuda_major for b in files if b.cuda_major is not None})
        hidden = sorted({s for b in files for s in hidden_sections(b)})
        fat = sum(1 for b in files if b.sections)
        fat_text = f"{fat} file{'s' if fat != 1 else ''}" if fat else "—"
        if hidden:
            fat_text += " " + _hidden(tuple(hidden))
        quiet = ' class="pkg quiet"' if status in _QUIET and level in ("native", "compatible", None) and not hidden else ' class="pkg"'
        cls = "nogpu" if level is None else level
        out.append(
            f"<tr{quiet} data-filter><td>{_badge(status)}</td><td><details><summary>{_e(name)}</summary>"
            + _files(files, status_of, levels) + "</details></td>"
            f'<td class="num">{len(files)}</td><td>{_e(", ".join(map(str, majors)) or "—")}</td>'
            f'<td class="sm-{cls}">{_e(SM121_WORDS.get(level, str(level)))}</td>'
            f'<td class="mono">{_e(_labels(s for b in files for s in b.sass))}</td>'
            f'<td class="mono">{_e(_labels(s for b in files for s in b.ptx))}</td><td>{fat_text}</td></tr>')
    out.append("</tbody></table>")
    out.append(f'<p class="meta">{target}: <b>native</b> SASS for {target}; <b>compatible</b> SASS of the '
               f"sm_{sm // 10 * 10} family that {target} runs; <b>PTX-JIT</b> only PTX the driver compiles "
               f"at first launch; <b>none</b> nothing that runs on {target}. A package shows its worst file. "
               "<b>hidden</b>: a fatbin found outside <code>.nv_fatbin</code>. Rows with nothing to look at "
               "are folded under the switch above.</p>")
    return out


def _files(files: list[Binary], status_of: Any, levels: Mapping[int, str | None]) -> str:
    ordered = sorted(files, key=lambda b: (-status_of(b).rank, SM121_ORDER.get(levels[id(b)], 4), b.path))
    rows = ['<table class="files"><tbody>']
    for b in ordered:
        rows.append(f"<tr><td>{_badge(status_of(b))}</td><td class=\"mono\">{_e(b.location or b.path)}</td>"
                    f"<td>{_e(b.cuda_major if b.cuda_major is not None else '—')}</td>"
                    f"<td>{_e(SM121_WORDS.get(levels[id(b)], str(levels[id(b)])))}</td>"
                    f'<td class="mono">{_e(_labels(b.sass))} / {_e(_labels(b.ptx))}</td>'
                    f"<td>{_hidden(hidden_sections(b))}</td></tr>")
    rows.append("</tbody></table>")
    return "".join(rows)


def _hidden(sections: tuple[str, ...]) -> str:
    return f'<span class="hidden-fatbin">hidden: {_e(", ".join(sections))}</span>' if sections else ""


def _image(image: ImageFacts, findings: list[Finding]) -> list[str]:
    """The image facts and its build history, each step with the findings located at it."""
    facts = [(key, getattr(image, key)) for key in ("ref", "source", "digest", "platform", "os", "architecture", "created", "layers", "size")]
    out = ["<h3>Image</h3><table><tbody>"]
    out += [f"<tr><th>{_e(k)}</th><td class=\"mono\">{_e(v)}</td></tr>" for k, v in facts if v not in (None, "")]
    out.append("</tbody></table>")
    if not (history := image.history):
        out.append('<p class="empty">The image config has no build history.</p>')
        return out
    at: dict[int, list[Finding]] = defaultdict(list)
    for f in findings:
        m = _HISTORY.fullmatch(f.location.member or "") if f.location is not None else None
        if m:
            at[int(m.group(1))].append(f)
    out.append(f"<h3>Build history: {len(history)} steps, {image.layers if image.layers is not None else '?'} layers</h3>"
               '<table class="history"><thead><tr><th>#</th><th>instruction</th><th>findings</th></tr></thead><tbody>')
    for i, text in enumerate(history):
        here = sorted(at.get(i, []), key=lambda f: -f.status.rank)
        cell = "".join(f"<div>{_badge(f.status)} <code>{_e(f.rule)}</code> {_e(f.message)}</div>" for f in here)
        out.append(f'<tr data-filter><td class="num">{i}</td><td class="mono">{_e(text)}</td><td>{cell or "—"}</td></tr>')
    out.append("</tbody></table>")
    return out


def _diff(target: TargetResult) -> list[str]:
    """``envcheck diff``: every change with side A and side B next to each other."""
    a_name, _, b_name = target.target.partition(" → ")
    if target.kind == "twins":
        a_name, b_name = "first node", "other node"
    changes = [f for f in target.findings if "a" in f.evidence or "b" in f.evidence]
    out = [f"<h3>What changed: {len(changes)} differences</h3>",
           f'<table class="diff"><thead><tr><th>status</th><th>what</th><th>A: {_e(a_name)}</th>'
           f"<th>B: {_e(b_name or '')}</th></tr></thead><tbody>"]
    for f in sorted(changes, key=lambda f: -f.status.rank):
        ev = f.evidence
        what = ev.get("package") or ev.get("variable") or ev.get("what") or ev.get("rule") or f.rule
        quiet = ' class="quiet"' if f.status in _QUIET else ""
        out.append(f"<tr{quiet} data-filter><td>{_badge(f.status)}</td><td><b>{_e(what)}</b><br>{_e(f.message)}</td>"
                   f'<td class="mono">{_side(ev.get("a"))}</td><td class="mono">{_side(ev.get("b"))}</td></tr>')
    out.append("</tbody></table>")
    return out


def _side(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, (dict, list)):
        return _e(json.dumps(value, ensure_ascii=False, default=str))
    return _e(value)
