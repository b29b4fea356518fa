"""`envcheck --resolve` against the loopback package index (tests/package_index.py), with uv as the resolver.

Each class of fact has a positive and a negative case: wheel facts read by range requests (clean, CUDA 12, no
sm_121 code), sdist-only packages, no file for the target, resolver conflicts; and the faults: index down,
404, a hash that does not match, a server that ignores Range, slow answers; the cache and --offline; credentials.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import require, run_envcheck
from package_index import PackageIndex, build_sdist, build_wheel, serve, standard_index

from envcheck.services.package_index import IndexClient, RemoteFile, parse_html_page, redact

UV = shutil.which("uv")
SCHEMA = json.loads((Path(__file__).resolve().parent.parent / "envcheck" / "formats" / "report.schema.json").read_text())


@pytest.fixture(scope="module")
def index() -> Iterator[PackageIndex]:
    yield from serve(standard_index())


@pytest.fixture(scope="module")
def uv_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("uv-cache")


def _env(tmp_path: Path, uv_cache: Path, **extra: str) -> dict[str, str]:
    """No user pip/uv configuration leaks in: only the loopback index is used."""
    env = {"PIP_INDEX_URL": "", "PIP_EXTRA_INDEX_URL": "", "PIP_FIND_LINKS": "", "UV_NO_CONFIG": "1", "UV_CACHE_DIR": str(uv_cache),
           "UV_INDEX_URL": "", "UV_EXTRA_INDEX_URL": "", "ENVCHECK_CACHE_DIR": str(tmp_path / "cache"), "UV_HTTP_TIMEOUT": "10", "UV_HTTP_RETRIES": "0"}
    env.update(extra)
    return env


def _resolve(tmp_path: Path, uv_cache: Path, index_url: str, text: str, *args: str, name: str = "requirements.txt",
             env: dict[str, str] | None = None) -> tuple[int, dict[str, Any], str]:
    target = tmp_path / name
    target.write_text(text)
    if not name.endswith(".toml"):
        from conftest import require

        require(UV is not None, "uv is not installed (pip install 'envcheck-spark[resolve]')")
    proc = run_envcheck("--resolve", "--index-url", index_url, "-f", "json", "--fail-on", "never", *args, str(target),
                        env={**_env(tmp_path, uv_cache), **(env or {})})
    assert proc.stdout, proc.stderr
    report = json.loads(proc.stdout)
    jsonschema.validate(report, SCHEMA)
    return proc.returncode, report["targets"][0], proc.stdout + proc.stderr


def _findings(target: dict[str, Any], rule: str) -> list[dict[str, Any]]:
    return [f for f in target["findings"] if f["rule"] == rule]


def _status(target: dict[str, Any], rule: str) -> set[str]:
    return {f["status"] for f in _findings(target, rule)}


def _resolved(target: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in target["inventory"].get("resolved", [])}


# ------------------------------------------------------------------------------ facts of wheels

def test_clean_wheel_read_by_ranges_with_metadata(tmp_path: Path, uv_cache: Path, index: PackageIndex) -> None:
    code, target, _ = _resolve(tmp_path, uv_cache, index.url, "cleanext==1.0\n")
    assert code == 0
    files = _resolved(target)
    assert set(files) == {"cleanext", "helper"}
    clean = files["cleanext"]
    assert clean["kind"] == "wheel" and clean["filename"] == "cleanext-1.0-py3-none-manylinux_2_28_aarch64.whl"
    assert clean["sha256"] == index.file(clean["filename"]).sha256  # type: ignore[union-attr]
    assert {"wheel metadata", "range read"} <= set(clean["sources"])
    assert files["helper"]["version"] == "2.0"
    # Requires-Dist came from the wheel's own METADATA (by ranges), not from a table
    pkg = next(p for p in target["inventory"]["packages"] if p["name"] == "cleanext" and p.get("role") == "resolved")
    assert pkg["requires"] == ["helper>=1"]
    # the stored ELF member was read in place, by small ranges: far less than the wheel
    wheel = index.file(clean["filename"])
    assert wheel is not None and 0 < clean["bytes_read"] < len(wheel.data)
    binaries = target["inventory"]["binaries"]
    assert [b["machine"] for b in binaries] == ["aarch64"]
    assert binaries[0]["location"]["member"] == "cleanext/lib/libclean.so"
    assert _status(target, "G1-binary-soname") <= {"PASS", "INFO"}
    assert _status(target, "ARCH-resolve-no-file") == {"PASS"}


def test_cuda12_wheel_is_g1_with_the_binary_as_evidence(tmp_path: Path, uv_cache: Path, index: PackageIndex) -> None:
    code, target, _ = _resolve(tmp_path, uv_cache, index.url, "cuda12ext==1.0\n")
    g1 = [f for f in _findings(target, "G1-binary-soname") if f["status"] == "FAIL"]
    assert g1 and "libcudart.so.12" in g1[0]["message"]
    assert g1[0]["location"]["member"] == "cuda12ext/_C.so"
    assert g1[0]["location"]["path"].startswith(index.url.replace("/simple/", "/files/"))
    assert code == 1 or code == 0  # --fail-on never


def test_gpu_code_without_sm121_is_g7(tmp_path: Path, uv_cache: Path, index: PackageIndex) -> None:
    _, target, _ = _resolve(tmp_path, uv_cache, index.url, "sm80ext==1.0\n")
    assert "FAIL" in _status(target, "G7-binary-no-sm121")
    _, clean, _ = _resolve(tmp_path, uv_cache, index.url, "cleanext==1.0\n")
    assert "FAIL" not in _status(clean, "G7-binary-no-sm121")


# ------------------------------------------------------------------------------ sdists, no file, conflicts

def test_sdist_only_is_a_source_build(tmp_path: Path, uv_cache: Path, index: PackageIndex) -> None:
    _, target, _ = _resolve(tmp_path, uv_cache, index.url, "xformers==0.0.35\nplainsrc==1.0\npy2src==1.0\n", "--kind", "freeze")
    by_pkg = {f["evidence"]["package"]: f for f in _findings(target, "ARCH-resolve-source-build")}
    assert by_pkg["xformers"]["status"] == "FAIL" and "nvcc" in by_pkg["xformers"]["message"]
    assert by_pkg["plainsrc"]["status"] == "INFO"  # no wheel on any platform: pure Python, no Spark problem
    assert by_pkg["py2src"]["status"] == "INFO"  # its one wheel is py2-none-any: pure Python as well
    assert _resolved(target)["xformers"]["kind"] == "sdist"


def test_a_python_2_only_wheel_beside_an_sdist_is_pure_python_not_a_source_build(tmp_path: Path, uv_cache: Path) -> None:
    """langdetect 1.0.9 ships a py2-none-any wheel and an sdist: on Python 3 the sdist is a pure-Python build on
    every machine (INFO), not machine code without an aarch64 wheel (eleventh corpus batch, --resolve)."""
    old = PackageIndex()
    old.add("langish", build_wheel("langish", "1.0.9", tag="py2-none-any"), build_sdist("langish", "1.0.9"))
    for served in serve(old):
        _, target, _ = _resolve(tmp_path, uv_cache, served.url, "langish==1.0.9\n")
        (found,) = _findings(target, "ARCH-resolve-source-build")
        assert found["status"] == "INFO" and "any" not in found["message"].split("(")[-1], found


def test_no_file_for_the_target(tmp_path: Path, uv_cache: Path, index: PackageIndex) -> None:
    _, target, _ = _resolve(tmp_path, uv_cache, index.url, "winonly==1.0\n")
    fails = _findings(target, "ARCH-resolve-no-file")
    assert fails and fails[0]["status"] == "FAIL" and "win_amd64" in fails[0]["message"], target["findings"]
    assert not _findings(target, "G9-resolve-conflict")


def test_versions_the_resolver_backtracked_through_are_one_finding(tmp_path: Path, uv_cache: Path) -> None:
    """sglang[srt] with transformers==4.51.1: uv explains every sgl-kernel it tried (all x86_64-only); one cause,
    one ARCH-resolve-no-file at a line of the file (eleventh corpus batch)."""
    backtrack = PackageIndex()
    x86 = "py3-none-manylinux_2_28_x86_64"
    backtrack.add("app", *(build_wheel("app", v, (f"kern=={v}", "pinned==1.0"), tag="py3-none-any") for v in ("1.0", "2.0", "3.0")))
    backtrack.add("kern", *(build_wheel("kern", v, tag=x86) for v in ("1.0", "2.0", "3.0")))
    backtrack.add("pinned", build_wheel("pinned", "1.0", tag="py3-none-any"))
    for served in serve(backtrack):
        _, target, _ = _resolve(tmp_path, uv_cache, served.url, "app>=1.0\npinned==1.0\n")
        (found,) = [f for f in _findings(target, "ARCH-resolve-no-file") if f["status"] == "FAIL"]
        assert "kern" in found["message"] and "the other versions the resolver tried" in found["message"], found
        assert found["location"].get("line") is not None, found


def test_resolver_conflict_is_g9_naming_both(tmp_path: Path, uv_cache: Path, index: PackageIndex) -> None:
    code, target, _ = _resolve(tmp_path, uv_cache, index.url, "alpha==1.0\nbeta==2.0\n")
    found = _findings(target, "G9-resolve-conflict")
    assert found and found[0]["status"] == "FAIL"
    assert "alpha==1.0" in found[0]["message"] and "beta==2.0" in found[0]["message"] and "beta==1.0" in found[0]["message"]
    assert code == 0
    _, fine, _ = _resolve(tmp_path, uv_cache, index.url, "alpha==1.0\nbeta==1.0\n")
    assert not _findings(fine, "G9-resolve-conflict")


def _pylock(index: PackageIndex, *filenames: str, url_of: Any = None) -> str:
    rows = []
    for filename in filenames:
        dist = index.file(filename)
        assert dist is not None
        url = (url_of or index.file_url)(filename)
        name = filename.split("-")[0]
        key = "sdist" if filename.endswith(".tar.gz") else "wheels"
        item = f'{{ url = "{url}", size = {len(dist.data)}, hashes = {{ sha256 = "{dist.sha256}" }} }}'
        rows.append(f'[[packages]]\nname = "{name}"\nversion = "{filename.split("-")[1]}"\n'
                    + (f"sdist = {item}\n" if key == "sdist" else f"wheels = [{item}]\n"))
    return 'lock-version = "1.0"\ncreated-by = "test"\n\n' + "\n".join(rows)


def test_pinned_lock_needs_no_resolver(tmp_path: Path, uv_cache: Path, index: PackageIndex) -> None:
    text = _pylock(index, "cuda12ext-1.0-py3-none-manylinux_2_28_aarch64.whl", "winonly-1.0-py3-none-win_amd64.whl", "xformers-0.0.35.tar.gz")
    _, target, _ = _resolve(tmp_path, uv_cache, index.url, text, name="pylock.toml", env={"PATH": "/nonexistent"})
    files = _resolved(target)
    assert files["cuda12ext"]["sources"][0] == "lock file"
    assert files["winonly"]["kind"] == "none" and files["xformers"]["kind"] == "sdist"
    assert "FAIL" in _status(target, "G1-binary-soname") and "FAIL" in _status(target, "ARCH-resolve-no-file")


# ------------------------------------------------------------------------------ faults

def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_index_down_exits_3_with_partial_results(tmp_path: Path, uv_cache: Path, index: PackageIndex) -> None:
    down = f"http://127.0.0.1:{_closed_port()}/simple/"
    code, target, out = _resolve(tmp_path, uv_cache, down, "flash-attn==2.8.3\n")
    assert code == 3
    assert _findings(target, "service-error")
    assert "FAIL" in _status(target, "G2-flash-attn-build")  # what the file itself says is still judged
    # a lock whose file host is down: the same
    text = _pylock(index, "cleanext-1.0-py3-none-manylinux_2_28_aarch64.whl",
                   url_of=lambda f: down.replace("/simple/", "/files/") + f)
    code, target, _ = _resolve(tmp_path, uv_cache, down, text, name="pylock.toml")
    assert code == 3 and _findings(target, "service-error")
    assert "Traceback" not in out


def test_a_git_source_whose_host_is_unreachable_is_a_service_error(tmp_path: Path, uv_cache: Path, index: PackageIndex) -> None:
    """diffusers @ git+https://github.com/... where github.com does not resolve: the network, not the input (exit 3);
    seen running --resolve over the eleventh corpus batch offline."""
    require(shutil.which("git") is not None, "git is not installed")
    text = "helper==1.0\nghost @ git+https://envcheck-no-such-host.invalid/ghost.git@0123456789abcdef0123456789abcdef01234567\n"
    code, target, _ = _resolve(tmp_path, uv_cache, index.url, text)
    assert code == 3 and _findings(target, "service-error") and not _findings(target, "input-error"), target["findings"]


def test_missing_file_and_wrong_hash_are_errors_naming_the_file(tmp_path: Path, uv_cache: Path) -> None:
    idx = standard_index()
    good = "cleanext-1.0-py3-none-manylinux_2_28_aarch64.whl"
    bad = build_wheel("badhash", "1.0", (), {"badhash/_C.so": Path("fixtures/binaries/libext_cuda13.so").resolve()})
    bad.metadata = None
    idx.add("badhash", bad)
    for served in serve(idx):
        served.missing.add(good)
        served.honour_range = False  # the whole file is downloaded, so its hash is checked
        text = _pylock(served, good, bad.filename).replace(bad.sha256, "0" * 64)
        code, target, _ = _resolve(tmp_path, uv_cache, served.url, text, name="pylock.toml", env={"ENVCHECK_CACHE_DIR": str(tmp_path / "c1")})
        errors = [f["message"] for f in _findings(target, "input-error")]
        assert code == 2
        assert any("404" in m and good in m for m in errors), errors
        assert any("sha256 does not match" in m and bad.filename in m for m in errors), errors
        assert not target["inventory"].get("binaries")  # nothing of the mismatching file is judged


def test_server_ignoring_range_falls_back_to_a_bounded_download(tmp_path: Path, uv_cache: Path) -> None:
    for served in serve(standard_index()):
        served.honour_range = False
        text = _pylock(served, "cuda12ext-1.0-py3-none-manylinux_2_28_aarch64.whl")
        _, target, _ = _resolve(tmp_path, uv_cache, served.url, text, name="pylock.toml")
        record = _resolved(target)["cuda12ext"]
        assert "download" in record["sources"] and "range read" not in record["sources"]
        assert "FAIL" in _status(target, "G1-binary-soname")
        assert not [r for r in served.requests if "bytes=" in r and "206" in r]


def test_slow_answers_hit_the_deadline(tmp_path: Path, uv_cache: Path) -> None:
    for served in serve(standard_index()):
        served.delay = 3.0
        text = _pylock(served, "cleanext-1.0-py3-none-manylinux_2_28_aarch64.whl")
        code, target, _ = _resolve(tmp_path, uv_cache, served.url, text, name="pylock.toml", env={"ENVCHECK_HTTP_TIMEOUT": "1"})
        assert code == 3
        assert any("within 1 s" in f["message"] for f in _findings(target, "service-error"))


# ------------------------------------------------------------------------------ cache, offline, credentials

def test_cache_by_sha256_and_offline(tmp_path: Path, uv_cache: Path, index: PackageIndex) -> None:
    text = _pylock(index, "sm80ext-1.0-py3-none-manylinux_2_28_aarch64.whl")
    _, cold, _ = _resolve(tmp_path, uv_cache, index.url, text, name="pylock.toml")
    assert "range read" in _resolved(cold)["sm80ext"]["sources"]
    before = len(index.requests)
    _, warm, _ = _resolve(tmp_path, uv_cache, index.url, text, "--offline", name="pylock.toml")
    assert len(index.requests) == before  # nothing was asked of the index
    assert _resolved(warm)["sm80ext"]["sources"] == ["lock file", "cache"]
    assert _status(warm, "G7-binary-no-sm121") == _status(cold, "G7-binary-no-sm121")
    # offline with an empty cache: nothing read, said so, no error
    _, empty, _ = _resolve(tmp_path, uv_cache, index.url, text, "--offline", name="pylock.toml",
                           env={"ENVCHECK_CACHE_DIR": str(tmp_path / "empty")})
    assert any("not read" in s for s in _resolved(empty)["sm80ext"]["sources"])
    assert not _findings(empty, "input-error") and not _findings(empty, "service-error")


def test_credentials_never_printed(tmp_path: Path, uv_cache: Path, index: PackageIndex) -> None:
    secret_url = index.url.replace("http://", "http://alice:s3cr3t-pw@")
    code, target, out = _resolve(tmp_path, uv_cache, secret_url, "cuda12ext==1.0\n")
    assert "s3cr3t-pw" not in out and "alice" not in out
    assert any(i["url"].startswith("http://***@127.0.0.1") for i in target["inventory"]["indexes"])
    down = f"http://bob:hunter2@127.0.0.1:{_closed_port()}/simple/"
    code, _, out = _resolve(tmp_path, uv_cache, down, "cuda12ext==1.0\n")
    assert code == 3 and "hunter2" not in out and "bob" not in out


def test_without_resolve_nothing_is_resolved(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("cleanext==1.0\n")
    proc = run_envcheck("-f", "json", "--fail-on", "never", str(tmp_path / "requirements.txt"), env={"PATH": "/nonexistent"})
    target = json.loads(proc.stdout)["targets"][0]
    assert "resolved" not in target["inventory"] and proc.returncode == 0


# ------------------------------------------------------------------------------ the client itself

def test_simple_api_json_and_html(index: PackageIndex) -> None:
    client = IndexClient()
    json_files = client.project_files(index.url, "Helper")
    index.html = True
    try:
        html_files = client.project_files(index.url, "helper")
    finally:
        index.html = False
    assert [f.filename for f in json_files] == [f.filename for f in html_files] == ["helper-1.0-py3-none-any.whl", "helper-2.0-py3-none-any.whl"]
    assert all(f.metadata and f.sha256 for f in json_files + html_files)
    assert [f.sha256 for f in json_files] == [f.sha256 for f in html_files]
    yanked = parse_html_page('<a href="x-1.0.tar.gz#sha256=AB" data-yanked="">x-1.0.tar.gz</a>', "https://i/simple/x/")
    assert yanked[0].yanked and yanked[0].url == "https://i/simple/x/x-1.0.tar.gz" and yanked[0].sha256 == "ab"


def test_remote_file_reads_like_a_local_file(index: PackageIndex) -> None:
    dist = index.file("cuda12ext-1.0-py3-none-manylinux_2_28_aarch64.whl")
    assert dist is not None
    client = IndexClient()
    remote = RemoteFile(client, index.file_url(dist.filename), len(dist.data))
    for offset, size in ((0, 10), (len(dist.data) - 22, 22), (100, 70000), (len(dist.data) - 5, 50)):
        assert remote.read_at(offset, size) == dist.data[offset:offset + size]


@pytest.mark.parametrize(("url", "shown"), [
    ("https://user:pw@host/simple/", "https://***@host/simple/"),
    ("https://host/simple/?token=abc&x=1", "https://host/simple/?token=***&x=1"),
    ("https://host/a\nb\x1b", "https://host/ab?"),
])
def test_redact(url: str, shown: str) -> None:
    assert redact(url) == shown


def test_uv_missing_is_a_clear_error(tmp_path: Path, index: PackageIndex) -> None:
    (tmp_path / "requirements.txt").write_text("cleanext==1.0\n")
    env = {**_env(tmp_path, tmp_path), "PATH": "/nonexistent"}
    proc = run_envcheck("--resolve", "-f", "json", str(tmp_path / "requirements.txt"), env=env)
    messages = [f["message"] for f in json.loads(proc.stdout)["targets"][0]["findings"] if f["rule"] == "input-error"]
    if shutil.which("uv", path=os.path.dirname(sys.executable)) is None:
        assert any("needs uv" in m for m in messages)


def test_dockerfile_pip_installs_are_resolved_per_run_line(tmp_path: Path, uv_cache: Path, index: PackageIndex) -> None:
    text = ("FROM ubuntu:24.04 AS app\n"
            "RUN pip install cuda12ext==1.0\n"
            "RUN pip install alpha==1.0 beta==2.0\n"
            "FROM nvcr.io/nvidia/pytorch:25.11-py3 AS ngc\n"
            "RUN pip install needs-torch==1.0\n"
            "COPY --from=app /usr/local/lib /opt/app-lib\n")  # stage app is part of the built image
    _, target, _ = _resolve(tmp_path, uv_cache, index.url, text, name="Dockerfile")
    files = _resolved(target)
    assert files["cuda12ext"]["location"]["line"] == 2
    # NGC's torch 2.10.0a0 satisfies torch>=2.0: pip keeps it, so neither PyPI's torch nor what it pulls is installed
    assert "needs-torch" in files and "torch" not in files and "fakedep" not in files
    g1 = [f for f in _findings(target, "G1-binary-soname") if f["status"] == "FAIL"]
    assert g1 and g1[0]["location"]["member"] == "cuda12ext/_C.so"
    conflict = _findings(target, "G9-resolve-conflict")
    assert conflict and conflict[0]["location"]["line"] == 3 and "beta==2.0" in conflict[0]["message"]


def test_files_resolved_for_a_stage_outside_the_built_image_are_one_level_lower(tmp_path: Path, uv_cache: Path,
                                                                                 index: PackageIndex) -> None:
    """Issue 26 item 4: the wheel a stage nobody uses installs is judged (its CUDA 12 soname), one level lower."""
    text = ("FROM ubuntu:24.04 AS app\nRUN pip install cuda12ext==1.0\n\n"
            "FROM nvcr.io/nvidia/pytorch:25.11-py3\nRUN echo ok\n")
    _, target, _ = _resolve(tmp_path, uv_cache, index.url, text, name="Dockerfile")
    (g1,) = _findings(target, "G1-binary-soname")
    assert g1["status"] == "WARN" and "stage 'app' is not part of the built image" in g1["message"], g1


def test_pyproject_dependencies_with_its_uv_index(tmp_path: Path, uv_cache: Path, index: PackageIndex) -> None:
    """The project's own dependencies, resolved with its [[tool.uv.index]] (no --index-url), the project not built."""
    text = ('[project]\nname = "demo"\nversion = "0.1"\nrequires-python = ">=3.12"\n'
            'dependencies = [\n  "cuda12ext==1.0",\n  "helper",\n]\n[project.optional-dependencies]\nwin = ["winonly"]\n\n'
            f'[[tool.uv.index]]\nname = "loop"\nurl = "{index.url}"\ndefault = true\n')
    target = tmp_path / "pyproject.toml"
    target.write_text(text)
    proc = run_envcheck("--resolve", "-f", "json", "--fail-on", "never", str(target), env=_env(tmp_path, uv_cache))
    result = json.loads(proc.stdout)["targets"][0]
    files = _resolved(result)
    assert set(files) == {"cuda12ext", "helper"}  # the optional extra is not part of the resolution
    assert files["cuda12ext"]["location"]["line"] == 6
    assert "FAIL" in _status(result, "G1-binary-soname")


def test_html_index_pages(tmp_path: Path, uv_cache: Path) -> None:
    """A PEP 503 HTML index (no JSON) works for uv and for envcheck's own metadata and range reads."""
    for served in serve(standard_index()):
        served.html = True
        _, target, _ = _resolve(tmp_path, uv_cache, served.url, "sm80ext==1.0\n", env={"UV_CACHE_DIR": str(tmp_path / "uv-html")})
        assert {"wheel metadata", "range read"} <= set(_resolved(target)["sm80ext"]["sources"])
        assert "FAIL" in _status(target, "G7-binary-no-sm121")
        assert any(r.startswith("GET /simple/sm80ext/") for r in served.requests)


def test_a_file_that_is_not_a_wheel_is_an_error_naming_it(tmp_path: Path, uv_cache: Path) -> None:
    from package_index import Dist

    idx = standard_index()
    bogus = Dist("bogus-1.0-py3-none-manylinux_2_28_aarch64.whl", b"<html>login required</html>\n" * 100)
    idx.add("bogus", bogus)
    for served in serve(idx):
        text = _pylock(served, bogus.filename, "cleanext-1.0-py3-none-manylinux_2_28_aarch64.whl")
        code, target, out = _resolve(tmp_path, uv_cache, served.url, text, name="pylock.toml")
        errors = [f["message"] for f in _findings(target, "input-error")]
        assert code == 2 and any("not a readable wheel" in m and bogus.filename in m for m in errors), errors
        assert _resolved(target)["cleanext"]["sources"][-1] == "range read"  # the other file is still read
        assert "Traceback" not in out


def test_ngc_stage_install_that_replaces_the_image_torch(tmp_path: Path, uv_cache: Path, index: PackageIndex) -> None:
    text = "FROM nvcr.io/nvidia/pytorch:25.11-py3\nRUN pip install pins-torch==1.0\n"
    _, target, _ = _resolve(tmp_path, uv_cache, index.url, text, name="Dockerfile")
    files = _resolved(target)
    assert files["torch"]["version"] == "2.14.1" and "fakedep" in files  # pip replaces NGC's torch, with its dependencies
    replaced = [f for f in _findings(target, "G9-ngc-torch-replaced") if f["status"] == "FAIL"]
    assert replaced and any("pins-torch" in f["message"] for f in replaced), target["findings"]


def test_resolve_options_without_resolve_are_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("numpy==2.3.0\n")
    proc = run_envcheck("--offline", str(tmp_path / "requirements.txt"))
    assert proc.returncode == 2 and "go with --resolve" in proc.stderr


def test_lock_entries_for_other_platforms_are_not_judged(tmp_path: Path, uv_cache: Path, index: PackageIndex) -> None:
    text = _pylock(index, "winonly-1.0-py3-none-win_amd64.whl").replace('version = "1.0"\n', 'version = "1.0"\nmarker = "sys_platform == \'win32\'"\n')
    _, target, _ = _resolve(tmp_path, uv_cache, index.url, text, name="pylock.toml")
    assert "winonly" not in _resolved(target) and not [f for f in _findings(target, "ARCH-resolve-no-file") if f["status"] == "FAIL"]
    proc = run_envcheck("--resolve", "--python-version", "twelve", str(tmp_path / "pylock.toml"))
    assert proc.returncode == 2 and "--python-version" in proc.stderr


def test_facts_table_script_and_the_shipped_table(tmp_path: Path, index: PackageIndex) -> None:
    """scripts/gen_wheel_facts.py reads real wheels through the index; every shipped row names its file and source."""
    out = tmp_path / "facts.json"
    proc = subprocess.run([sys.executable, "scripts/gen_wheel_facts.py", "--index-url", index.url, "--output", str(out),
                           "cuda12ext==1.0", "winonly==1.0"], cwd=Path(__file__).resolve().parent.parent,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "winonly==1.0: no wheel for aarch64" in proc.stderr
    rows = json.loads(out.read_text())["files"]
    (row,) = rows.values()
    assert row["filename"] == "cuda12ext-1.0-py3-none-manylinux_2_28_aarch64.whl" and row["binaries"][0]["cuda_major"] == 12
    shipped = json.loads((Path(__file__).resolve().parent.parent / "envcheck" / "knowledge" / "wheel_facts.json").read_text())
    assert shipped["meta"]["updated"] and shipped["files"]
    for sha, item in shipped["files"].items():
        assert len(sha) == 64 and item["url"].endswith(item["filename"]) and item["source"].startswith(item["url"])
        assert all(b["machine"] == "aarch64" or b["member"].endswith(".cubin") for b in item["binaries"]), item["filename"]
        assert item["updated"] and item["source"].endswith(item["updated"])
