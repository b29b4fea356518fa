"""Shell functions run where a script calls them: a function called only in a branch the script's defaults do not
take (``elif [ "${STRATEGY:-spark}" = h100 ]; then install_h100``) is not part of the run; one called in a branch
envcheck cannot decide carries that branch; one the script never calls is read where it stands. Subcommands a
script dispatches on its arguments (``case "$1" in serve) ...``) can all run: the caller picks them. A loop
written ``for x in a b; do`` stays inside the branch it is written in."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from conftest import run_envcheck


def _findings(path: Path) -> list[dict[str, Any]]:
    done = run_envcheck("--format", "json", "-v", str(path))
    assert done.returncode in (0, 1, 2), done.stderr
    return [f for f in json.loads(done.stdout)["targets"][0]["findings"] if f["status"] in ("WARN", "FAIL")]


def _script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "install.sh"
    path.write_text("#!/usr/bin/env bash\nset -euo pipefail\n" + textwrap.dedent(body).lstrip("\n"), encoding="utf-8")
    return path


INSTALL = """
    install_h100() {
        pip install torch torchvision --index-url https://download.pytorch.org/whl/cu124
        pip install flash-attn --no-build-isolation
    }
    install_spark() {
        pip install torch==2.11.0 --index-url https://download.pytorch.org/whl/cu130
    }
    main() {
        if [[ "${STRATEGY:-spark}" == "h100" ]]; then
            install_h100
        else
            install_spark
        fi
    }
    main "$@"
"""


def test_a_function_called_only_in_a_branch_the_defaults_skip_is_not_run(tmp_path: Path) -> None:
    """The cu124 torch and the flash-attn build of ``install_h100`` were reported where the function is defined
    (two FAILs), though the script only calls it when STRATEGY, spark by default, is h100."""
    found = _findings(_script(tmp_path, INSTALL))
    assert not [f for f in found if f["gotcha"] in ("G1", "G2")], found


def test_a_function_called_in_a_branch_that_runs_is_checked_under_it(tmp_path: Path) -> None:
    run = INSTALL.replace('"${STRATEGY:-spark}"', '"${STRATEGY:-h100}"')
    rules = {f["rule"]: f for f in _findings(_script(tmp_path, run))}
    assert rules["G1-cuda12-index"]["location"]["line"] == 4, rules
    assert "G2-flash-attn-build" in rules, rules
    undecided = INSTALL.replace('"${STRATEGY:-spark}"', '"$(detect_gpu)"')
    (index,) = [f for f in _findings(_script(tmp_path, undecided)) if f["rule"] == "G1-cuda12-index"]
    assert "conditional branch" in index["message"], index
    never_called = INSTALL.split("install_spark() {")[0]  # a library of functions, none called: read as written
    assert any(f["rule"] == "G1-cuda12-index" for f in _findings(_script(tmp_path, never_called)))


def test_a_loop_written_with_a_semicolon_before_do_stays_in_its_branch(tmp_path: Path) -> None:
    body = """
        if [ "${FULL:-no}" = yes ]; then
            for try in 1 2; do pip install flash-attn --no-build-isolation && break; done
        fi
    """
    assert not _findings(_script(tmp_path, body))


SUBCOMMANDS = """
    serve() {
        vllm serve /models/big --tensor-parallel-size 2 --nnodes 2 --node-rank 0 --master-addr 10.0.0.1
    }
    action=""
    while [[ $# -gt 0 ]]; do
        case $1 in
            -s|--serve) action=serve; shift ;;
            -t|--test) action=test; shift ;;
            *) shift ;;
        esac
    done
    case "$action" in
        serve) serve ;;
        test) curl -s localhost:8000/health ;;
    esac
"""


def test_subcommands_chosen_by_the_arguments_can_all_run(tmp_path: Path) -> None:
    """``action`` is set by the options the caller passes: the serve subcommand is read (a G10 WARN), not decided
    away because the last option parsed was --test or because ``$1`` is empty when the file is read."""
    (g10,) = [f for f in _findings(_script(tmp_path, SUBCOMMANDS)) if f["gotcha"] == "G10"]
    assert g10["status"] == "WARN" and g10["location"]["line"] == 4, g10
    dispatch = """
        serve() {
            vllm serve /models/big --tensor-parallel-size 2 --nnodes 2 --node-rank 0 --master-addr 10.0.0.1
        }
        case "${1:-}" in
            serve) shift; serve "$@" ;;
            *) echo "usage: $0 serve" ;;
        esac
    """
    assert [f["gotcha"] for f in _findings(_script(tmp_path, dispatch))] == ["G10"]


def test_an_empty_array_assignment_is_not_a_function_definition(tmp_path: Path) -> None:
    """``multinode=()`` in the ray branch was read as the definition of a function ``multinode=`` whose body is
    the next word: it swallowed ``else``, so the mp branch's ``multinode=(--nnodes 8 ...)`` was dead and the
    launch had "no node count"."""
    body = """
        DIST_BACKEND="${DIST_BACKEND:-mp}"
        if [[ "$DIST_BACKEND" == "ray" ]]; then
          multinode=()
        else
          multinode=(--nnodes 8 --node-rank 0 --master-addr 10.0.0.11)
        fi
        args=(vllm serve /models/glm --tensor-parallel-size 8 "${multinode[@]}")
        "${args[@]}"
    """
    (g10,) = [f for f in _findings(_script(tmp_path, body)) if f["gotcha"] == "G10"]
    assert "across 8 nodes" in g10["message"], g10


def test_a_function_called_in_several_branches_is_one_cause(tmp_path: Path) -> None:
    """``install_torch`` called when no wheel was downloaded and when none was found: one finding at its pip line,
    under the first call's branch; a call that runs whatever happens makes it unconditional."""
    body = """
        install_torch() {
            pip install torch==2.9.1
        }
        if [ -z "$(ls /tmp/wheels)" ]; then install_torch; fi
        if [ ! -f /tmp/wheels/SHA256SUMS ]; then install_torch; fi
    """
    (cpu,) = [f for f in _findings(_script(tmp_path, body)) if f["rule"] == "G1-cpu-build"]
    assert cpu["location"]["line"] == 4 and "and on this line" not in cpu["message"], cpu
    assert "conditional branch" in cpu["message"], cpu
    (plain,) = [f for f in _findings(_script(tmp_path, body + "install_torch\n")) if f["rule"] == "G1-cpu-build"]
    assert "conditional branch" not in plain["message"], plain


def test_functions_calling_functions_past_the_bound_stop_with_an_error(tmp_path: Path) -> None:
    """A chain of 3,000 functions each calling the next: envcheck stops at 40 levels and says so (it was a
    RecursionError while calls were being expanded)."""
    chain = "".join(f"f{i}() {{ f{i + 1}; }}\n" for i in range(3000)) + "f3000() { pip install torch==2.9.1; }\nf0\n"
    path = tmp_path / "chain.sh"
    path.write_text("#!/bin/bash\n" + chain, encoding="utf-8")
    done = run_envcheck("--format", "json", str(path))
    (error,) = [f for f in json.loads(done.stdout)["targets"][0]["findings"] if f["status"] == "ERROR"]
    assert "stopped reading it there" in error["message"], error
