"""The shared driver of envcheck's atheris harnesses (one ``fuzz_<parser>.py`` per parser).

A harness module defines its target and seed files and calls :func:`main`. Run one directly::

    python3 fuzz/fuzz_requirements.py -max_total_time=60 -rss_limit_mb=2048 -timeout=2

or all of them with ``fuzz/run.sh SECONDS``. The corpus grows under ``.work/fuzz/<name>/corpus``
(git-ignored); the seeds are copied from the real fixtures and examples into ``.work/fuzz/<name>/seeds``.

What counts as a crash: any exception other than the ones a harness lists as the parser's documented
failure (the ``EnvcheckError`` family for sources; ``MalformedBinary``, ``DockerfileSyntaxError`` ... for
the pure readers, whose callers turn them into findings), a hang over ``-timeout`` seconds, or memory
over ``-rss_limit_mb``. With ``ENVCHECK_FUZZ_KEEP_GOING=1`` (long campaigns) an unexpected exception is
recorded once per distinct (type, innermost envcheck frame) in ``.work/fuzz/<name>/findings/`` with the
input that raised it, and the campaign goes on; without it, the first one stops the run (smoke runs).
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WORK = Path(os.environ.get("ENVCHECK_FUZZ_WORK", REPO / ".work" / "fuzz"))
KEEP_GOING = os.environ.get("ENVCHECK_FUZZ_KEEP_GOING", "") == "1"
MAX_SEED_BYTES = 1 << 20

# Crashes found by fuzzing whose owners have not fixed them yet: (exception type, file, function of the
# innermost envcheck frame). Each has an xfail(strict=True) reproducer in tests/test_fuzz_regressions.py
# and an entry in fuzz/README.md. Smoke runs in the test suite accept these and fail on anything else.
KNOWN_CRASHES: frozenset[tuple[str, str, str]] = frozenset()  # none open (finding 28 fixed)

_seen_signatures: set[str] = set()


def scratch_dir() -> Path:
    """A per-process folder for inputs that must be files (in memory where /dev/shm exists).

    libFuzzer ends the process without running Python's exit handlers, so each harness removes the
    folders of earlier harness processes that are gone (``envcheck-fuzz-<pid>-*``) when it starts.
    """
    base = Path("/dev/shm") if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else Path(tempfile.gettempdir())
    for old in base.glob("envcheck-fuzz-*-*"):
        pid = old.name.split("-")[2]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(old, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=f"envcheck-fuzz-{os.getpid()}-", dir=base))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def write_input(folder: Path, name: str, data: bytes) -> Path:
    """``data`` as the file ``folder/name`` (replacing the previous input)."""
    path = folder / name
    path.write_bytes(data)
    return path


def signature(exc: BaseException) -> str:
    """Exception type plus the innermost envcheck frame: one finding per distinct crash site."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "/envcheck/" in f.filename.replace(os.sep, "/")]
    frame = (ours or frames or [None])[-1]
    where = f"{Path(frame.filename).name}:{frame.lineno}:{frame.name}" if frame else "?"
    return f"{type(exc).__name__}@{where}"


def is_known(signature_text: str) -> bool:
    """Is a recorded signature (``Type@file:line:function``) one of KNOWN_CRASHES?"""
    kind, _, where = signature_text.partition("@")
    parts = where.split(":")
    return len(parts) >= 3 and (kind, parts[0], parts[-1]) in KNOWN_CRASHES


def guarded(name: str, target: Callable[[bytes], object], allowed: tuple[type[BaseException], ...]) -> Callable[[bytes], None]:
    """Wrap ``target``: allowed exceptions pass, others crash (or are recorded with KEEP_GOING)."""
    findings = WORK / name / "findings"

    def run(data: bytes) -> None:
        try:
            target(data)
        except allowed:
            pass
        except Exception as exc:  # the point of fuzzing: everything else is a finding
            if not KEEP_GOING:
                raise
            sig = signature(exc)
            if sig in _seen_signatures:
                return
            _seen_signatures.add(sig)
            findings.mkdir(parents=True, exist_ok=True)
            digest = hashlib.sha1(data).hexdigest()[:16]
            (findings / f"{digest}.input").write_bytes(data)
            (findings / f"{digest}.txt").write_text(
                f"{sig}\n{type(exc).__name__}: {str(exc)[:500]}\n\n{''.join(traceback.format_exception(exc))[-4000:]}",
                encoding="utf-8",
            )
            sys.stderr.write(f"\n[{name}] finding {sig} -> {findings / digest}.input\n")

    return run


def seed_files(patterns: Iterable[str]) -> list[Path]:
    """Files matching ``patterns`` (globs relative to the repository root), sorted, no duplicates."""
    found: set[Path] = set()
    for pattern in patterns:
        for match in glob.glob(str(REPO / pattern), recursive=True):
            path = Path(match)
            if path.is_file():
                found.add(path)
    return sorted(found)


def prepare_seeds(name: str, patterns: Iterable[str], extra: Iterable[bytes] = ()) -> Path:
    """Copy the seed files (cut to MAX_SEED_BYTES) and ``extra`` seeds into ``.work/fuzz/<name>/seeds``."""
    seeds = WORK / name / "seeds"
    shutil.rmtree(seeds, ignore_errors=True)
    seeds.mkdir(parents=True, exist_ok=True)
    for path in seed_files(patterns):
        data = path.read_bytes()[:MAX_SEED_BYTES]
        (seeds / (hashlib.sha1(data).hexdigest()[:16] + "-" + path.name)).write_bytes(data)
    for data in extra:
        (seeds / (hashlib.sha1(data).hexdigest()[:16] + ".seed")).write_bytes(data)
    return seeds


def main(name: str, target: Callable[[bytes], object], allowed: tuple[type[BaseException], ...],
         seeds: Iterable[str], extra_seeds: Iterable[bytes] = (), max_len: int = 4096) -> None:
    """Set up atheris with the corpus and seed folders and fuzz ``target`` until libFuzzer stops."""
    import atheris

    seed_dir = prepare_seeds(name, seeds, extra_seeds)
    corpus = WORK / name / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    args = list(sys.argv)
    if not any(a.startswith("-max_len=") for a in args):
        args.append(f"-max_len={max_len}")
    if not any(a.startswith("-artifact_prefix=") for a in args):
        (WORK / name / "artifacts").mkdir(parents=True, exist_ok=True)
        args.append(f"-artifact_prefix={WORK / name / 'artifacts'}/")
    # Corpus folders are positional: ours first (new inputs are written there), then the seeds.
    if not any(not a.startswith("-") for a in args[1:]):
        args += [str(corpus), str(seed_dir)]
    atheris.Setup(args, guarded(name, target, allowed))
    atheris.Fuzz()
