"""Set-up scripts driven by their own arguments (``case "$1" in --new-env) NEW_ENV=true``): a script's
arguments are unknown, not the text ``$1``, and a variable set in a branch envcheck cannot decide holds either
value afterwards, so the installs its flags enable are read as conditional, not dropped or taken as certain."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from conftest import run_envcheck

_FLAGS = """\
NEW_ENV=false
FLASHATTN=false
while true ; do
    case "$1" in
        --new-env) NEW_ENV=true ; shift ;;
        --flash-attn) FLASHATTN=true ; shift ;;
        --) shift ; break ;;
        *) ERROR=true ; break ;;
    esac
done
"""


def _findings(tmp_path: Path, body: str) -> list[dict[str, Any]]:
    path = tmp_path / "setup.sh"
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    done = run_envcheck("--format", "json", "-v", str(path))
    assert done.returncode in (0, 1, 2), done.stderr
    return [f for f in json.loads(done.stdout)["targets"][0]["findings"] if f["status"] in ("WARN", "FAIL")]


def test_installs_enabled_by_a_flag_are_read(tmp_path: Path) -> None:
    """The installs behind ``--new-env`` / ``--flash-attn`` were "nothing checked": ``$1`` was read as the text
    ``$1``, which only the ``*)`` arm matches, so both flags stayed false."""
    body = _FLAGS + textwrap.dedent("""\
        if [ "$NEW_ENV" = true ] ; then
            pip install torch==2.6.0 --index-url https://download.pytorch.org/whl/cu124
        fi
        if [ "$FLASHATTN" = true ] ; then
            pip install flash-attn==2.7.3
        fi
        """)
    found = {(f["rule"], f["location"]["line"]) for f in _findings(tmp_path, body)}
    assert ("G1-cuda12-index", 12) in found and ("G2-flash-attn-build", 15) in found, found
    assert all("conditional branch" in f["message"] for f in _findings(tmp_path, body))


def test_an_undecided_assignment_does_not_decide_a_later_test(tmp_path: Path) -> None:
    """``USE_CU130`` is false unless the flag is given: the cu128 branch may run, so it is reported (the last
    assignment, made only under the flag, used to win and hide it)."""
    body = textwrap.dedent("""\
        USE_CU130=false
        case "$1" in --cu130) USE_CU130=true ;; esac
        if [ "$USE_CU130" = true ]; then
            pip install torch --index-url https://download.pytorch.org/whl/cu130
        else
            pip install torch --index-url https://download.pytorch.org/whl/cu128
        fi
        """)
    found = {(f["rule"], f["location"]["line"]) for f in _findings(tmp_path, body)}
    assert ("G1-cuda12-index", 6) in found, found


def test_a_fallback_assignment_keeps_the_main_path(tmp_path: Path) -> None:
    """``if command -v nvidia-smi; then PLATFORM=cuda; elif command -v rocminfo; then PLATFORM=hip``: the probe is
    assumed to succeed, so PLATFORM stays cuda; the ROCm install is not read as the one that runs."""
    body = textwrap.dedent("""\
        if command -v nvidia-smi > /dev/null; then
            PLATFORM="cuda"
        elif command -v rocminfo > /dev/null; then
            PLATFORM="hip"
        fi
        if [ "$PLATFORM" = "cuda" ] ; then
            pip install torch==2.11.0 --index-url https://download.pytorch.org/whl/cu130
        elif [ "$PLATFORM" = "hip" ] ; then
            pip install torch==2.6.0 --index-url https://download.pytorch.org/whl/rocm6.2.4
        fi
        """)
    assert _findings(tmp_path, body) == []


def test_sh_c_arguments_still_fill_positional_parameters(tmp_path: Path) -> None:
    """``sh -c '... $1' _ VALUE``: ``$1`` is the value given, not unknown."""
    body = "bash -c 'pip install torch --index-url $1' _ https://download.pytorch.org/whl/cu128\n"
    found = {f["rule"] for f in _findings(tmp_path, body)}
    assert "G1-cuda12-index" in found, found


def test_an_array_appended_under_a_condition_keeps_its_words(tmp_path: Path) -> None:
    """``args+=(--api-key "$KEY")`` under an undecidable test: the words set before are on both paths, so the
    launch still reads ``--tensor-parallel-size 2`` across two nodes."""
    body = textwrap.dedent("""\
        args=(--tensor-parallel-size 2 --nnodes 2 --node-rank 0)
        if [ -n "$API_KEY" ]; then
          args+=(--api-key "$API_KEY")
        fi
        exec vllm serve model "${args[@]}"
        """)
    found = {f["rule"] for f in _findings(tmp_path, body)}
    assert "G10-tp-across-nodes" in found, found
