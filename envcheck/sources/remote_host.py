"""A Spark read over SSH (``ssh://[USER@]HOST[:PORT]``): the collector goes to the remote python3 on stdin,
nothing is installed, and its document is read as a local preflight's is (a target of kind ``host``)."""

from __future__ import annotations

import json
from dataclasses import replace

from envcheck.model import Inventory, Location, ReadProblem
from envcheck.services.ssh import SshHost, run_remote
from envcheck.sources.host import KIND, PROBE_PATH, inventory_from_probe

__all__ = ["KIND", "read_remote_host", "target_name"]


def target_name(host: SshHost, python: str | None) -> str:
    """``ssh://HOST[:PORT] (python: ...)``: the user is left out (output masks a URL's user as a credential)."""
    return f"{replace(host, user=None)} (python: {python or 'python3 on PATH'})"


def read_remote_host(host: SshHost, python: str | None = None, probe_timeout: float = 20.0) -> Inventory:
    interpreter = python or "python3"
    where = Location(str(replace(host, user=None)))
    status, out, err = run_remote(host, [interpreter, "-", "--timeout", f"{probe_timeout:g}"], PROBE_PATH.read_bytes(),
                                  deadline=probe_timeout + 60.0)
    text = out.decode("utf-8", "replace")
    if status != 0 or not text.strip():
        lines = [line for line in err.decode("utf-8", "replace").splitlines() if line.strip()]
        detail = lines[-1][:300] if lines else f"exit status {status}"
        if status == 127:
            detail = f"{interpreter} not found there ({detail})"
        return Inventory(context="installed", problems=[ReadProblem(f"{host}: the collector failed under {interpreter}: {detail}", where)])
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return Inventory(context="installed", problems=[ReadProblem(f"{host}: the collector's output is not JSON: {exc.msg}", where)])
    inventory = inventory_from_probe(data, str(replace(host, user=None)))
    inventory.host = replace(inventory.host, sample_seconds=0.0)
    return inventory
