"""pip commands whose words are shell variables the script does not set: pip reached through a venv path
(``$VENV/bin/pip``, ``PY="$VENV/bin/python"; "$PY" -m pip``), an option whose value is such a variable at the
end of the command (``"${PIPOPT[@]}"`` ending in ``--retries "$N"``), a pin to one (``torch==${TORCH_VERSION}``),
and two ``--index-url``/``-i`` in one command (pip keeps the last)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from conftest import run_envcheck


def _findings(path: Path) -> list[dict[str, Any]]:
    done = run_envcheck("--format", "json", "-v", str(path))
    assert done.returncode in (0, 1, 2), done.stderr
    return list(json.loads(done.stdout)["targets"][0]["findings"])


def _script(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text("#!/usr/bin/env bash\nset -euo pipefail\n" + textwrap.dedent(body).lstrip("\n"), encoding="utf-8")
    return path


def _torch(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [f for f in findings if f["rule"] in ("G1-cpu-build", "G1-torch-build")]


def test_pip_of_a_venv_named_by_a_variable_is_read(tmp_path: Path) -> None:
    """``$VENV/bin/pip`` and ``"$PY" -m pip`` with ``PY="$VENV/bin/python"`` run pip: their installs are judged
    (they were dropped whole, "nothing checked")."""
    for name, body in (("pip.sh", '"$VENV/bin/pip" install torch==2.9.1\n'),
                       ("py.sh", 'PY="$VENV/bin/python"\n"$PY" -m pip install torch==2.9.1\n')):
        (cpu,) = _torch(_findings(_script(tmp_path, name, body)))
        assert cpu["rule"] == "G1-cpu-build" and cpu["status"] == "WARN", cpu
        assert cpu["location"]["line"] == body.count("\n") + 2, cpu
    # a variable that is not a path to python or pip stays unread: what it runs is not known
    other = _findings(_script(tmp_path, "tool.sh", '"$TOOL" install torch==2.9.1\n'))
    assert not _torch(other), other


def test_an_option_whose_value_is_an_unset_variable_is_no_read_error(tmp_path: Path) -> None:
    """``PIPOPT=(-i "$MIRROR" --timeout "$T" --retries "$N")`` spread at the end of the command: each option and its
    unknown value are dropped together (``--retries`` was left without a value: an ERROR on a valid script)."""
    found = _findings(_script(tmp_path, "opts.sh", """
        PIPOPT=(-i "$PIP_MIRROR" --trusted-host "$PIP_TRUSTED" --timeout "$PIP_TIMEOUT" --retries "$PIP_RETRIES")
        pip install -q torch==2.11.0 "${PIPOPT[@]}"
    """))
    assert not [f for f in found if f["status"] == "ERROR"], found
    (build,) = _torch(found)
    assert build["status"] == "PASS" and "CUDA 13" in build["message"], build


def test_a_pin_to_an_unset_variable_is_a_version_this_input_does_not_say(tmp_path: Path) -> None:
    """``torch==${TORCH_VERSION}`` set in a sourced file: pinned, to a version the script does not say, so the build
    PyPI serves is unknown (CPU-only on aarch64 before 2.11). It was read as unpinned: a PASS for the newest
    release's CUDA 13 build and a G9-unpinned WARN."""
    found = _findings(_script(tmp_path, "var.sh", 'source ./env.sh\npip install "torch==${TORCH_VERSION}"\n'))
    (build,) = _torch(found)
    assert build["rule"] == "G1-torch-build" and build["status"] == "WARN", build
    assert "${TORCH_VERSION}" in build["message"] and build["location"]["line"] == 4, build
    assert not [f for f in found if f["rule"] == "G9-unpinned" and f["status"] == "WARN"], found
    # set in the script: the version is known
    (known,) = _torch(_findings(_script(tmp_path, "set.sh", 'TORCH_VERSION=2.11.0\npip install "torch==${TORCH_VERSION}"\n')))
    assert known["status"] == "PASS", known
    # from the cu130 index the build is known whatever the version
    (cu130,) = _torch(_findings(_script(tmp_path, "cu130.sh", 'pip install "torch==${TORCH_VERSION}" '
                                        "--index-url https://download.pytorch.org/whl/cu130\n")))
    assert cu130["status"] == "PASS" and "cu130" in cu130["message"], cu130
    # a Dockerfile ARG with no default is the same
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text("FROM ubuntu:24.04\nARG TORCH_VERSION\nRUN pip install torch==${TORCH_VERSION}\n", encoding="utf-8")
    (arg,) = _torch(_findings(dockerfile))
    assert arg["rule"] == "G1-torch-build" and arg["status"] == "WARN" and "${TORCH_VERSION}" in arg["message"], arg


def test_pip_installs_from_the_last_index_url_of_a_command(tmp_path: Path) -> None:
    """``--index-url .../cu130 -i <mirror>``: pip keeps the last index URL, so torch 2.9.1 comes from the PyPI
    mirror, a CPU-only build on aarch64 (the cu130 index was taken as the one used: PASS)."""
    cu130 = "https://download.pytorch.org/whl/cu130"
    mirror = "https://mirrors.example.com/pypi/simple/"
    (last,) = _torch(_findings(_script(tmp_path, "last.sh", f"pip install torch==2.9.1 --index-url {cu130} -i {mirror}\n")))
    assert last["rule"] == "G1-cpu-build" and last["status"] == "WARN", last
    (first,) = _torch(_findings(_script(tmp_path, "first.sh", f"pip install torch==2.9.1 -i {mirror} --index-url {cu130}\n")))
    assert first["status"] == "PASS", first
    # an extra index is added, not replaced: pip picks 2.9.1+cu130 over PyPI's 2.9.1
    (extra,) = _torch(_findings(_script(tmp_path, "extra.sh", f"pip install torch==2.9.1 --extra-index-url {cu130} -i {mirror}\n")))
    assert extra["status"] == "PASS", extra
