"""Wall-clock stages of one whole ``envcheck`` run in process, after ``site``: imports, the argument parser,
reading the target, the checks, the render.

Usage: ``python3 startup_stages.py ARGS...`` (the envcheck of the current folder, or of PYTHONPATH).
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import time
from typing import Any

START = time.perf_counter()
sys.path.insert(0, os.getcwd())
marks: list[tuple[str, float]] = []


def mark(name: str) -> None:
    marks.append((name, time.perf_counter()))


def main() -> None:
    import envcheck.cli as cli

    mark("import cli")
    import envcheck.engine as engine

    mark("import engine")
    import envcheck.formats as formats

    read, judge, run, renderer = engine.read_safely, engine.judge, engine.run, formats.renderer

    def timed_read(*args: Any, **kwargs: Any) -> Any:
        mark("before read")
        result = read(*args, **kwargs)
        mark("read")
        return result

    def timed_judge(*args: Any, **kwargs: Any) -> Any:
        result = judge(*args, **kwargs)
        mark("judge")
        return result

    def timed_run(*args: Any, **kwargs: Any) -> Any:
        mark("before engine.run")
        result = run(*args, **kwargs)
        mark("engine.run (fixes, exit)")
        return result

    def timed_renderer(name: str) -> Any:
        render = renderer(name)
        mark("renderer(): import format")

        def timed(report: Any, verbosity: int) -> Any:
            out = render(report, verbosity)
            mark("render")
            return out

        return timed

    engine.read_safely, engine.judge, engine.run, formats.renderer = timed_read, timed_judge, timed_run, timed_renderer
    with contextlib.redirect_stdout(io.StringIO()):
        cli.main(sys.argv[1:])
    mark("end")
    previous = START
    for name, at in marks:
        print(f"{(at - previous) * 1000:7.1f} ms  {name}")
        previous = at
    print(f"{(previous - START) * 1000:7.1f} ms  total in python (after site)")


if __name__ == "__main__":
    main()
