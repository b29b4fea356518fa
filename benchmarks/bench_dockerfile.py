"""How long envcheck takes on a large Dockerfile: a generated 5,000-line multi-stage recipe.

    python3 benchmarks/bench_dockerfile.py [--lines 5000] [--runs 7]

The generated file mixes what real recipes contain: global ARGs in FROM, several stages, ENV in both
syntaxes, long RUN lines with continuations and comments, pip/uv/conda installs with pins and indexes,
heredocs, COPY of requirements files, TORCH_CUDA_ARCH_LIST. Timed (best and median of --runs):
- ``parse``: the parser alone (envcheck.inspect.dockerfile.parse);
- ``read``: the Dockerfile source (parse + shell splitting + install parsing -> inventory);
- ``check``: read + every registered check (engine.read_safely + engine.judge), in process;
- ``cli``: ``python -m envcheck --format json FILE`` as a process (interpreter start included);
and, for scale, ``dockerfile-parse`` (PyPI) parsing the same file when it is installed.
Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from envcheck import engine  # noqa: E402
from envcheck.config import Config  # noqa: E402
from envcheck.inspect.dockerfile import parse  # noqa: E402
from envcheck.profile import load_profile  # noqa: E402
from envcheck.sources import ReadOptions  # noqa: E402
from envcheck.sources import dockerfile as source  # noqa: E402

PACKAGES = ["einops==0.8.{n}", "transformers==4.57.{n}", "peft==0.17.{n}", "sentencepiece==0.2.{n}", "accelerate==1.11.{n}"]


def generate(lines: int) -> str:
    """A Dockerfile of about ``lines`` lines."""
    out = [
        "# syntax=docker/dockerfile:1.7",
        "ARG NGC_TAG=25.11",
        "ARG REGISTRY=nvcr.io/nvidia",
        "FROM ${REGISTRY}/pytorch:${NGC_TAG:-25.09}-py3 AS build",
        "ENV TORCH_CUDA_ARCH_LIST=\"12.0;12.1a\" MAX_JOBS=8",
        "COPY requirements.txt /tmp/requirements.txt",
    ]
    n = 0
    stage = 0
    while len(out) < lines - 12:
        n += 1
        kind = n % 6
        if kind == 0:
            out += [f"ENV STEP_{n}=value{n}", f"ARG OPT_{n}=${{STEP_{n}}}-x"]
        elif kind == 1:
            pkgs = [PACKAGES[(n + k) % len(PACKAGES)].format(n=n % 10) for k in range(3)]
            out += [
                "RUN apt-get update && \\",
                "    # refresh the package lists first",
                f"    apt-get install -y --no-install-recommends git-{n} && \\",
                f"    pip install --no-cache-dir {' '.join(pkgs)} \\",
                "        --extra-index-url https://download.pytorch.org/whl/cu130 && \\",
                "    rm -rf /var/lib/apt/lists/*",
            ]
        elif kind == 2:
            out += ["RUN <<EOF", "set -eux", f"uv pip install --system einops==0.8.{n % 10}", "echo done", "EOF"]
        elif kind == 3:
            out += [f"RUN conda install -y -c conda-forge numpy=2.1.{n % 10} && pip install -r /tmp/requirements.txt"]
        elif kind == 4:
            out += [f"WORKDIR /opt/step{n}", f"RUN export TORCH_CUDA_ARCH_LIST=12.1 && echo {n} > marker && sh -c 'pip install --no-deps peft==0.17.{n % 10}'"]
        else:
            if n % 300 == 5:
                stage += 1
                out += [f"FROM build AS stage{stage}"]
            out += [f"LABEL step={n}"]
    out += [
        "FROM ${REGISTRY}/pytorch:${NGC_TAG}-py3",
        "COPY --from=build /usr/local/lib/python3.12/dist-packages /usr/local/lib/python3.12/dist-packages",
        "RUN pip install --no-deps unsloth==2025.11.1 unsloth_zoo==2025.11.2",
        'CMD ["python3"]',
    ]
    return "\n".join(out) + "\n"


def timed(fn: Callable[[], object], runs: int) -> dict[str, float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return {"best_s": round(min(samples), 4), "median_s": round(statistics.median(samples), 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "requirements.txt").write_text("transformers==4.57.1\npeft==0.17.1\n", encoding="utf-8")
        path = folder / "Dockerfile"
        text = generate(args.lines)
        path.write_text(text, encoding="utf-8")
        profile = load_profile("dgx-spark")
        config = Config()

        def check() -> None:
            target = engine.Target(str(path), "dockerfile", lambda: source.read(path, ReadOptions()))
            result = engine.judge(target, engine.read_safely(target), profile, config)
            assert not any(f.rule == "input-error" for f in result.findings), [f.message for f in result.findings][:3]

        inventory = source.read(path, ReadOptions())
        results: dict[str, object] = {
            "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
            "python": platform.python_version(),
            "lines": text.count("\n"),
            "instructions": len(parse(text).instructions),
            "packages": len(inventory.packages),
            "installs": len(inventory.installs),
            "parse": timed(lambda: parse(text), args.runs),
            "read": timed(lambda: source.read(path, ReadOptions()), args.runs),
            "check": timed(check, args.runs),
            "cli": timed(lambda: subprocess.run([sys.executable, "-m", "envcheck", "--format", "json", str(path)],
                                                cwd=REPO, capture_output=True, check=False), max(3, args.runs // 2)),
        }
        try:
            from dockerfile_parse import DockerfileParser

            def peer() -> None:
                DockerfileParser(path=str(path), cache_content=True).structure  # noqa: B018

            results["dockerfile_parse_structure"] = timed(peer, args.runs)
        except ImportError:
            results["dockerfile_parse_structure"] = "not installed"
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
