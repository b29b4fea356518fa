"""Benchmark: everything around a whole-environment scan (issue 18): judging an inventory and rendering it.

In process, on the H200 folder scan (fixtures/device/h200/folder-inventory.json.gz: torch 2.11.0+cu130's
site-packages, 866 ELF files, 209 distributions, read back with ``Inventory.from_json``): the engine's
``judge`` (every check for a folder target), the time of each check alone, and each format's ``render``
(redaction included, as ``formats.renderer`` does it). Best of N rounds each.

Whole process: ``python -m envcheck`` on a tiny folder (two dist-infos, no scan cost to speak of) against
``python -c pass``, interleaved round after round (as benchmarks/bench_startup.py), so what is left is
imports, config, checks and rendering; plus ``-X importtime``'s sum of what envcheck imports on that path
(``importlib.import_module`` routed through ``__import__`` so that every import is counted).

    python benchmarks/bench_report.py [--rounds 15] [--baseline OTHER_CHECKOUT]

With --baseline, the in-process part runs again on the other checkout's envcheck (the same fixture), and
its whole-process commands run interleaved with this checkout's, so a before/after shares one session's load.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

FIXTURE = REPO / "fixtures/device/h200/folder-inventory.json.gz"
TARGET = "/opt/torch/.venv/lib/python3.12/site-packages"

# Runs the CLI with importlib.import_module routed through __import__: -X importtime reports only imports
# that go through the import statement, and envcheck imports its sources, checks and formats by name.
_IMPORT_ALL = """
import contextlib, importlib, io, sys
def _by_statement(name, package=None):
    if name.startswith("."):
        return importlib._bootstrap._gcd_import(name, package)
    __import__(name)
    return sys.modules[name]
importlib.import_module = _by_statement
from envcheck.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    main(sys.argv[1:])
"""


def forget() -> None:
    """Empty every functools cache of envcheck's modules, as in a new process (parsed requirements, cleaned
    strings, loaded knowledge files): each round measures the first run, which is what a command pays."""
    for name, module in list(sys.modules.items()):
        if name.startswith("envcheck"):
            for value in list(vars(module).values()):
                if callable(getattr(value, "cache_clear", None)):
                    value.cache_clear()


def best(fn, rounds: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(rounds):
        forget()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def in_process(rounds: int) -> None:
    from envcheck import engine, formats, rules
    from envcheck.config import Config
    from envcheck.model import Inventory, Report
    from envcheck.profile import load_profile

    start = time.perf_counter()
    data = json.loads(gzip.decompress(FIXTURE.read_bytes()))
    inventory = Inventory.from_json(data)
    loaded = time.perf_counter() - start
    print(f"fixture: {len(inventory.binaries)} ELF files, {len(inventory.packages)} distributions "
          f"(loaded with Inventory.from_json in {loaded * 1000:.0f} ms)")
    profile, config = load_profile(), Config()
    target = engine.Target(TARGET, "folder", lambda: inventory)
    engine.judge(target, inventory, profile, config)  # imports the check modules
    judge = best(lambda: engine.judge(target, inventory, profile, config), rounds)
    result = engine.judge(target, inventory, profile, config)
    print(f"judge (every check for a folder target): {judge * 1000:7.1f} ms, {len(result.findings)} findings")
    ctx = rules.CheckContext(inventory=inventory, profile=profile, kind="folder")
    for check in rules.checks_for("folder", ()):
        took = best(lambda check=check: list(check.fn(ctx)), rounds)  # type: ignore[misc]
        if took >= 0.0005:
            print(f"  {check.name:45} {took * 1000:7.1f} ms")
    report = Report(profile=profile.name, targets=[result])
    for name in ("text", "json", "sarif", "github", "html", "snapshot", "preflight"):
        render = formats.renderer(name)
        render(report, 0)
        took = best(lambda render=render: render(report, 0), rounds)  # type: ignore[misc]
        size = len(render(report, 0).stdout)
        print(f"render {name:10} {took * 1000:7.1f} ms  ({size} characters)")
    from envcheck.redaction import clean_report

    print(f"  of which clean_report (redaction): {best(lambda: clean_report(report), rounds) * 1000:.1f} ms")


def whole_process(rounds: int, baseline: Path | None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "site-packages"
        folder.mkdir()
        for name, version in (("alpha", "1.0"), ("beta", "2.0")):
            info = folder / f"{name}-{version}.dist-info"
            info.mkdir()
            (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nRequires-Dist: numpy>=1.0\n")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["ENVCHECK_CACHE_DIR"] = str(Path(tmp) / "cache")
        commands: dict[str, tuple[list[str], Path]] = {"python -c pass": ([sys.executable, "-c", "pass"], REPO)}
        for tree, label in ((REPO, ""), (baseline, " [baseline]")):
            if tree is not None:  # cwd first on sys.path (python -m): each checkout runs its own code
                commands[f"envcheck FOLDER -f json{label}"] = ([sys.executable, "-m", "envcheck", str(folder), "-f", "json"], tree)
                commands[f"envcheck FOLDER (text){label}"] = ([sys.executable, "-m", "envcheck", str(folder)], tree)
        for cmd, tree in commands.values():  # bytecode written, cache filled
            subprocess.run(cmd, cwd=tree, env=env, capture_output=True, check=False)
        times: dict[str, list[float]] = {name: [] for name in commands}
        load_before = os.getloadavg()
        for _ in range(rounds):
            for name, (cmd, tree) in commands.items():
                start = time.perf_counter()
                subprocess.run(cmd, cwd=tree, env=env, capture_output=True, check=False)
                times[name].append(time.perf_counter() - start)
        load_after = os.getloadavg()
        floor = statistics.median(times["python -c pass"])
        print(f"whole process, {rounds} interleaved rounds, load average {load_before[0]:.2f} before, {load_after[0]:.2f} after")
        for name, samples in times.items():
            print(f"  {name:39} median {statistics.median(samples) * 1000:6.1f} ms, best {min(samples) * 1000:6.1f} ms, "
                  f"{statistics.median(samples) / floor:.2f}x python -c pass")
        for tree, label in ((REPO, ""), (baseline, " [baseline]")):
            if tree is None:
                continue
            owned = []
            for _ in range(7):
                proc = subprocess.run([sys.executable, "-X", "importtime", "-c", _IMPORT_ALL, str(folder), "-f", "json"],
                                      cwd=tree, env=env, capture_output=True, text=True, check=False)
                owned.append(_envcheck_import_ms(proc.stderr))
            print(f"  imports made for envcheck on this path{label} (-X importtime: self times of envcheck's modules and "
                  f"what they import): median {statistics.median(owned):.1f} ms, best {min(owned):.1f} ms")


def _envcheck_import_ms(report: str) -> float:
    """Self times of every module imported under an ``envcheck`` module (or one itself), in ms."""
    rows = []
    for line in report.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+\d+ \|( *)(\S+)", line)
        if m:
            rows.append((int(m[1]), len(m[2]), m[3]))
    total, stack = 0, []  # importtime prints children before their parent: walk backwards
    for own, depth, name in reversed(rows):
        while stack and stack[-1][0] >= depth:
            stack.pop()
        if name.startswith("envcheck") or any(n.startswith("envcheck") for _, n in stack):
            total += own
        stack.append((depth, name))
    return total / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--skip-process", action="store_true", help="only the in-process part")
    parser.add_argument("--baseline", type=Path, help="another checkout to measure alike (before a change)")
    parser.add_argument("--tree", type=Path, default=REPO, help=argparse.SUPPRESS)  # whose envcheck runs in process
    args = parser.parse_args()
    sys.path.insert(0, str(args.tree.resolve()))
    if args.tree.resolve() != REPO:  # the baseline's in-process part (a child of the main run)
        in_process(args.rounds)
        return
    print(f"machine: {platform.machine()} {os.cpu_count()} CPUs, python {platform.python_version()}, "
          f"load average {os.getloadavg()[0]:.2f}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    if args.baseline is not None:
        print(f"[baseline] {args.baseline}:")
        subprocess.run([sys.executable, __file__, "--rounds", str(args.rounds), "--tree", str(args.baseline.resolve())],
                       check=False, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
        print(f"this checkout {REPO}:")
    in_process(args.rounds)
    if not args.skip_process:
        whole_process(args.rounds, args.baseline.resolve() if args.baseline else None)


if __name__ == "__main__":
    main()
