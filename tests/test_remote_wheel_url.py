"""`envcheck https://.../x.whl`: a wheel named by its URL is read by range requests (as --resolve reads the
files it picks) and judged like a local wheel; a URL that names no wheel is an input error (exit 2)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from conftest import run_envcheck
from package_index import PackageIndex, serve, standard_index


@pytest.fixture(scope="module")
def index() -> Iterator[PackageIndex]:
    yield from serve(standard_index())


def test_a_wheel_url_is_read_and_judged(index: PackageIndex) -> None:
    url = index.file_url(index.projects["cuda12ext"][0].filename)
    done = run_envcheck("-f", "json", url)
    assert done.returncode == 1, done.stderr
    [target] = json.loads(done.stdout)["targets"]
    assert (target["target"], target["kind"]) == (url, "wheel")
    [g1] = [f for f in target["findings"] if f["rule"] == "G1-binary-soname" and f["status"] == "FAIL"]
    assert g1["location"] == {"path": url, "member": "cuda12ext/_C.so"} and "libcudart.so.12" in g1["message"]
    assert any(r.startswith(("GET", "HEAD")) for r in index.requests)
    sarif = json.loads(run_envcheck("-f", "sarif", url).stdout)  # the URL is the artifact's URI as it is
    assert {loc["physicalLocation"]["artifactLocation"]["uri"] for r in sarif["runs"][0]["results"] for loc in r["locations"]} == {url}


def test_a_url_that_names_no_wheel_is_an_input_error(index: PackageIndex) -> None:
    done = run_envcheck(index.url + "cuda12ext/")
    assert done.returncode == 2 and "not the URL of a wheel" in done.stdout + done.stderr
