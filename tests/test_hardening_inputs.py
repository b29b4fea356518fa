"""Decompression bombs and liars, against the real command line.

Each hostile input must give an ERROR finding naming the file (and the line, byte offset or member where
there is one) within a bounded time (``timeout=`` on the subprocess, never a timed assertion), while the
other targets on the same command line are still fully checked. Every input is built here from real
formats (zipfile, tarfile, zlib, the fixture ELF files), never downloaded.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import subprocess
import sys
import tarfile
import zipfile
import zlib
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, REPO, run_envcheck
from seed_builders import digest, oci_index, oci_manifest, tar_of, write_oci_layout

GOOD = REPO / "examples" / "requirements-cuda12.txt"  # a target with known FAIL findings (G1): proof it was checked
BOUND = 120  # seconds: a hang fails the test through subprocess.TimeoutExpired


def check(*targets: str | Path, extra: tuple[str, ...] = (), timeout: float = BOUND) -> dict[str, Any]:
    """Run envcheck on ``targets`` plus GOOD with JSON output; the report (exit code 2 expected)."""
    done = run_envcheck(*map(str, targets), str(GOOD), "-f", "json", *extra, timeout=timeout)
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr[-3000:]
    report: dict[str, Any] = json.loads(done.stdout)
    assert done.returncode == 2 == report["exit_code"], (done.returncode, done.stderr[-2000:])
    good = [t for t in report["targets"] if t["target"] == str(GOOD)]
    assert good and {f["rule"] for f in good[0]["findings"]} >= {"G1-cuda12-index", "G1-cuda12-distribution"}, good
    return report


def errors_of(report: dict[str, Any], target: str | Path) -> list[dict[str, Any]]:
    found = [t for t in report["targets"] if t["target"] == str(target)]
    assert found, [t["target"] for t in report["targets"]]
    return [f for f in found[0]["findings"] if f["status"] == "ERROR"]


# ---- text inputs -----------------------------------------------------------------------------------


def test_one_megabyte_single_line_requirements(tmp_path: Path) -> None:
    path = tmp_path / "requirements.txt"
    path.write_text("torch==2.9.0" + "a" * (1 << 20) + "\n")
    report = check(path)
    (error,) = errors_of(report, path)
    assert error["location"] == {"path": str(path), "line": 1}
    # The message quotes the line, cut short: a 1 MB line must not become a 1 MB report.
    assert len(json.dumps(report)) < 64 << 10 and "1048588 characters" in error["message"]


def test_deeply_nested_includes(tmp_path: Path) -> None:
    for depth in range(60):
        (tmp_path / f"r{depth}.txt").write_text(f"-r r{depth + 1}.txt\nnumpy==2.1.{depth}\n")
    (tmp_path / "r60.txt").write_text("numpy==2.1.60\n")
    top = tmp_path / "r0.txt"
    report = check(top, extra=("--kind", "requirements"))
    (error,) = errors_of(report, top)
    assert "nested more than 20 deep" in error["message"]
    assert error["location"]["path"] == str(tmp_path / "r20.txt") and error["location"]["line"] == 1


def test_include_symlink_loop(tmp_path: Path) -> None:
    (tmp_path / "loop.txt").symlink_to(tmp_path / "loop.txt")
    (tmp_path / "a.txt").symlink_to(tmp_path / "b.txt")
    (tmp_path / "b.txt").symlink_to(tmp_path / "a.txt")
    req = tmp_path / "requirements.txt"
    req.write_text("-r loop.txt\n-c a.txt\ntorch==2.9.0+cu130\n")
    report = check(req)
    errors = errors_of(report, req)
    assert [e["location"] for e in errors] == [{"path": str(req), "line": 1}, {"path": str(req), "line": 2}]
    assert all("loop" in e["message"].lower() for e in errors)


def test_include_of_an_endless_device(tmp_path: Path) -> None:
    req = tmp_path / "requirements.txt"
    req.write_text("-r /dev/zero\ntorch==2.9.0+cu130\n")
    (error,) = errors_of(check(req), req)
    assert error["location"] == {"path": str(req), "line": 1} and "/dev/zero" in error["message"]


@pytest.mark.parametrize("name", ["requirements.txt", "pyproject.toml", "uv.lock", "Dockerfile", "compose.yaml", "run.sh",
                                  "notebook.ipynb", ".envcheck.toml"])
def test_a_fifo_with_no_writer_never_hangs(tmp_path: Path, name: str) -> None:
    """adversary: a FIFO named like an input (given as a target, or a .gitignore in a scanned folder) blocked
    envcheck in open() forever. Opened without blocking it reads as empty: the run ends with its verdict."""
    fifo = tmp_path / name
    os.mkfifo(fifo)
    if name == ".envcheck.toml":  # found by the folder scan: a FIFO .gitignore beside it, read while walking
        os.mkfifo(tmp_path / ".gitignore")
        (tmp_path / "requirements.txt").write_text("torch==2.5.1+cu121\n")
        done = run_envcheck("-f", "json", str(tmp_path), cwd=tmp_path, timeout=60)
        assert done.returncode == 1 and "G1-cuda12-local-version" in done.stdout, done.stdout[-2000:] + done.stderr
        return
    done = run_envcheck("-f", "json", str(fifo), timeout=60)
    assert "Traceback" not in done.stderr and json.loads(done.stdout)["targets"][0]["target"] == str(fifo), done.stderr


def test_devices_and_fifos_are_refused_where_a_file_is_read_whole(tmp_path: Path) -> None:
    """A device never ends and a docker save archive is read by seeking: both are a clear ERROR, not a hang."""
    os.mkfifo(tmp_path / "image.tar")
    report = check("/dev/zero", extra=("--kind", "requirements"))
    (error,) = errors_of(report, "/dev/zero")
    assert "not a regular file" in error["message"], error
    done = run_envcheck("image", "-f", "json", f"docker-archive:{tmp_path / 'image.tar'}", timeout=60)
    assert done.returncode == 2 and "not a regular file" in done.stdout, done.stdout[-2000:] + done.stderr


# ---- ELF ---------------------------------------------------------------------------------------------


def _elf_with(field_offset: int, value: int, width: int = 8) -> bytes:
    data = bytearray((FIXTURES / "binaries" / "libext_cuda13.so").read_bytes())
    data[field_offset : field_offset + width] = value.to_bytes(width, "little")
    return bytes(data)


@pytest.mark.parametrize("field, offset, value, width", [
    ("e_shoff past the end", 0x28, 1 << 40, 8),
    ("e_shnum absurd", 0x3C, 0xFFFF, 2),
])
def test_elf_whose_tables_point_outside_the_file(tmp_path: Path, field: str, offset: int, value: int, width: int) -> None:
    path = tmp_path / "libliar.so"
    path.write_bytes(_elf_with(offset, value, width))
    errors = errors_of(check(path), path)
    assert errors, field
    assert all(e["location"]["path"] == str(path) and isinstance(e["location"].get("offset"), int) for e in errors), errors


# ---- zip (wheels) ------------------------------------------------------------------------------------


def _wheel(tmp_path: Path, name: str, members: list[tuple[str, bytes]], lie: dict[str, int] | None = None) -> Path:
    """A real wheel; ``lie`` sets members' declared sizes in the central directory (zip64 where needed)."""
    path = tmp_path / name
    dist = name.split("-")[0] + "-" + name.split("-")[1]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(f"{dist}.dist-info/WHEEL", "Wheel-Version: 1.0\nTag: py3-none-manylinux_2_28_aarch64\n")
        zf.writestr(f"{dist}.dist-info/METADATA", f"Metadata-Version: 2.1\nName: {dist.split('-')[0]}\nVersion: 1.0\n")
        for member, data in members:
            zf.writestr(member, data)
        for info in zf.filelist:
            if lie and info.filename in lie:
                info.file_size = lie[info.filename]
    return path


def test_zip_member_claiming_100_gb(tmp_path: Path) -> None:
    elf = (FIXTURES / "binaries" / "libext_cuda13.so").read_bytes()
    path = _wheel(tmp_path, "liar-1.0-py3-none-manylinux_2_28_aarch64.whl", [("liar/_core.so", elf)], {"liar/_core.so": 100 << 30})
    (error,) = errors_of(check(path), path)
    assert error["location"]["path"] == str(path) and error["location"]["member"] == "liar/_core.so"
    assert str(100 << 30) in error["message"]


def test_zip_metadata_that_inflates_a_thousandfold(tmp_path: Path) -> None:
    """A METADATA member of 256 MiB of zeros (honest sizes, 1000:1): refused, not read into memory."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("bomb-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nTag: py3-none-any\n")
        info = zipfile.ZipInfo("bomb-1.0.dist-info/METADATA")
        info.compress_type = zipfile.ZIP_DEFLATED
        with zf.open(info, "w") as member:
            block = bytes(1 << 20)
            for _ in range(256):
                member.write(block)
    path = tmp_path / "bomb-1.0-py3-none-any.whl"
    path.write_bytes(buf.getvalue())
    assert path.stat().st_size < 2 << 20
    (error,) = errors_of(check(path), path)
    assert error["location"]["path"] == str(path) and error["location"].get("member", "").startswith("bomb-1.0.dist-info")
    assert "METADATA" in error["message"]


def test_zip_member_names_that_escape_the_install_folder(tmp_path: Path) -> None:
    elf = (FIXTURES / "binaries" / "libext_cuda12.so").read_bytes()
    path = _wheel(tmp_path, "trav-1.0-py3-none-any.whl", [("../../../../tmp/evil.so", elf), ("/abs/evil2.so", elf)])
    errors = errors_of(check(path), path)
    assert {e["location"].get("member") for e in errors} == {"../../../../tmp/evil.so", "/abs/evil2.so"}, errors


# ---- tar layers (images) -----------------------------------------------------------------------------


def _oci_layout(folder: Path, layer: bytes) -> Path:
    """A real OCI image layout (linux/arm64) with one gzip layer."""
    config = json.dumps({"architecture": "arm64", "os": "linux", "config": {},
                         "rootfs": {"type": "layers", "diff_ids": [digest(layer)]}}).encode()
    manifest = json.dumps(oci_manifest(config, [layer])).encode()
    return write_oci_layout(folder, json.dumps(oci_index(manifest)).encode(), (config, manifest, layer))


def check_image(folder: Path, *extra: str, timeout: float = BOUND) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    # A cache of its own: a layer scan cached by an earlier run (say with --max-expansion 0) must not answer for it.
    done = run_envcheck("image", "--deep", "--no-progress", *extra, "-f", "json", f"oci-layout:{folder}", timeout=timeout,
                        env={"ENVCHECK_CACHE_DIR": str(folder.parent / f"cache{len(extra)}")})
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr[-3000:]
    return done, json.loads(done.stdout)


def _layer_member(name: str, size: int, data: bytes) -> bytes:
    info = tarfile.TarInfo(name)
    info.size = size
    info.mode = 0o755
    return info.tobuf(format=tarfile.GNU_FORMAT) + data


def test_tar_member_claiming_10_gb_in_a_short_layer(tmp_path: Path) -> None:
    raw = _layer_member("usr/local/lib/python3.12/site-packages/x/huge.so", 10 << 30, b"\x7fELF" + bytes(1020))
    folder = _oci_layout(tmp_path / "image", gzip.compress(raw, mtime=0))
    done, report = check_image(folder)
    assert done.returncode == 2
    errors = [f for t in report["targets"] for f in t["findings"] if f["status"] == "ERROR"]
    assert errors and all(str(folder) in e["location"]["path"] for e in errors), errors
    assert "sha256:" in errors[0]["message"]  # names the layer


def test_tar_member_claiming_a_petabyte(tmp_path: Path) -> None:
    raw = _layer_member("usr/local/lib/python3.12/site-packages/x/huge.so", 1 << 50, b"\x7fELF" + bytes(1020))
    folder = _oci_layout(tmp_path / "image", gzip.compress(raw, mtime=0))
    done, report = check_image(folder, timeout=60)
    assert done.returncode == 2 and report["exit_code"] == 2


def _gzip_bomb(size: int) -> bytes:
    """A layer of one ``size``-byte member of zeros in site-packages, gzip level 9 (about 1000:1)."""
    head = tarfile.TarInfo("usr/local/lib/python3.12/site-packages/bomb/zeros.bin")
    head.size = size
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [packer.compress(head.tobuf(format=tarfile.PAX_FORMAT))]
    block = bytes(1 << 20)
    for _ in range(size >> 20):
        parts.append(packer.compress(block))
    parts += [packer.compress(bytes(1024)), packer.flush()]
    return b"".join(parts)


def test_gzip_bomb_layer(tmp_path: Path) -> None:
    bomb = _gzip_bomb(64 << 20)
    assert len(bomb) < 256 << 10
    folder = _oci_layout(tmp_path / "image", bomb)
    done, report = check_image(folder)
    errors = [f for t in report["targets"] for f in t["findings"] if f["status"] == "ERROR"]
    assert done.returncode == 2 and errors, report["summary"]
    assert all(str(folder) in e["location"]["path"] for e in errors) and "--max-expansion" in errors[0]["message"]
    # The limit is the user's to raise: a genuine layer of huge sparse files can still be read.
    done, report = check_image(folder, "--max-expansion", "0")
    assert done.returncode in (0, 1), done.stderr[-2000:]
    assert not [f for t in report["targets"] for f in t["findings"] if f["status"] == "ERROR"]


def test_a_cached_scan_does_not_bypass_a_lower_expansion_limit(tmp_path: Path) -> None:
    """A layer scanned (and cached) under --max-expansion 0 is checked against the limit of a later run."""
    folder = _oci_layout(tmp_path / "image", _gzip_bomb(64 << 20))
    env = {"ENVCHECK_CACHE_DIR": str(tmp_path / "shared-cache")}

    def run(*extra: str) -> tuple[int, list[dict[str, Any]]]:
        done = run_envcheck("image", "--deep", "--no-progress", *extra, "-f", "json", f"oci-layout:{folder}",
                            timeout=BOUND, env=env)
        assert "Traceback" not in done.stderr, done.stderr[-3000:]
        report = json.loads(done.stdout)
        return done.returncode, [f for t in report["targets"] for f in t["findings"] if f["status"] == "ERROR"]

    code, errors = run("--max-expansion", "0")
    assert code in (0, 1) and not errors
    assert list((tmp_path / "shared-cache").rglob("*")), "the unlimited scan was cached"
    code, errors = run()  # the default limit: the cached scan of 64 MiB from 64 KiB must not answer
    assert code == 2 and errors and "--max-expansion" in errors[0]["message"]
    code, errors = run("--max-expansion", "0")  # and the cache still serves the run that allows it
    assert code in (0, 1) and not errors


def test_tar_member_names_that_escape_the_root(tmp_path: Path) -> None:
    elf = (FIXTURES / "binaries" / "libext_cuda12.so").read_bytes()
    names = ("../../../../etc/evil.so", "usr/local/lib/python3.12/site-packages/../../../../../../tmp/evil2.so")
    layer = tar_of((name, elf) for name in names)
    folder = _oci_layout(tmp_path / "image", gzip.compress(layer, mtime=0))
    done, report = check_image(folder)
    errors = [f for t in report["targets"] for f in t["findings"] if f["status"] == "ERROR"]
    assert done.returncode == 2 and any("evil" in (e["location"].get("member") or e["message"]) for e in errors), report


# ---- folders -----------------------------------------------------------------------------------------


def test_folder_with_symlink_loops_is_scanned_in_bounded_time(tmp_path: Path) -> None:
    """Loops (a -> b -> a, self -> .) are skipped, not followed; the real binary next to them is still read.

    Judgement: a dangling or looping link inside an environment is common and harmless, so it is not an
    ERROR (that would make every such venv exit 2); the bound and the complete scan are what matter.
    """
    site = tmp_path / "venv" / "lib" / "python3.12" / "site-packages"
    site.mkdir(parents=True)
    (tmp_path / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (site / "self").symlink_to(site)
    (site / "a").symlink_to(site / "b")
    (site / "b").symlink_to(site / "a")
    (site / "up").symlink_to(tmp_path / "venv")
    (site / "libext_cuda12.so").write_bytes((FIXTURES / "binaries" / "libext_cuda12.so").read_bytes())
    done = run_envcheck(str(tmp_path / "venv"), str(GOOD), "-f", "json", timeout=BOUND)
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr[-2000:]
    report = json.loads(done.stdout)
    venv = next(t for t in report["targets"] if t["target"] == str(tmp_path / "venv"))
    assert "G1-binary-soname" in {f["rule"] for f in venv["findings"]}
    good = next(t for t in report["targets"] if t["target"] == str(GOOD))
    assert "G1-cuda12-index" in {f["rule"] for f in good["findings"]}


def test_nothing_the_user_gave_is_modified(tmp_path: Path) -> None:
    """The hostile inputs above are read, never written: contents and mtimes stay as they were."""
    elf = (FIXTURES / "binaries" / "libext_cuda13.so").read_bytes()
    wheel = _wheel(tmp_path, "liar-1.0-py3-none-manylinux_2_28_aarch64.whl", [("liar/_core.so", elf)], {"liar/_core.so": 100 << 30})
    req = tmp_path / "requirements.txt"
    req.write_text("-r requirements.txt\ntorch==2.9.0" + "a" * 5000 + "\n")
    before = {p: (p.read_bytes(), os.stat(p).st_mtime_ns) for p in (wheel, req)}
    check(wheel, req)
    assert {p: (p.read_bytes(), os.stat(p).st_mtime_ns) for p in (wheel, req)} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in before)



# ---- pipes -------------------------------------------------------------------------------------------


def _through_a_pipe(*args: str) -> subprocess.CompletedProcess[str]:
    """`envcheck ARGS <(cat GOOD)`: the file arrives through a pipe, as with `envcheck <(pip freeze)`."""
    command = f'"$0" -m envcheck {" ".join(args)} -f json <(cat "$1")'
    env = dict(os.environ, ENVCHECK_CACHE_DIR=str(REPO / ".work" / "test-cache"))
    return subprocess.run(["bash", "-c", command, sys.executable, str(GOOD)], cwd=REPO, capture_output=True, text=True,
                          timeout=BOUND, env=env)


def test_a_pipe_is_never_a_silent_pass() -> None:
    """Guessing the kind used to read the pipe's first 4 KiB, leaving the reader nothing: an empty PASS."""
    done = _through_a_pipe()
    report = json.loads(done.stdout)
    assert done.returncode == 2 and report["targets"][0]["findings"][0]["status"] == "ERROR", report
    assert "--kind" in report["targets"][0]["findings"][0]["message"]
    done = _through_a_pipe("--kind", "requirements")
    rules = {f["rule"] for f in json.loads(done.stdout)["targets"][0]["findings"]}
    assert done.returncode == 1 and "G1-cuda12-index" in rules, done.stderr


# Markers that parse but that packaging cannot evaluate (`~=` needs two numbers; packaging releases differ on
# what else they refuse, so pip's answer depends on its version) or whose numbers no version holds: never an
# internal error of a check; the line is taken as holding, and the rest of every file is still checked.
UNEVALUABLE = ('python_version ~= "3"', 'python_version >= "' + "1" * 4400 + '"')


@pytest.mark.parametrize("marker", UNEVALUABLE, ids=["compatible-release-of-one-number", "4400-digit-number"])
def test_markers_pip_cannot_evaluate(tmp_path: Path, marker: str) -> None:
    req = tmp_path / "requirements.txt"
    req.write_text(f"torch==2.5.1+cu121\nnumpy==2.1.0; {marker}\n")
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(f'[project]\nname = "x"\nversion = "1"\ndependencies = [\'numpy; {marker}\', "torch==2.5.1+cu121"]\n')
    site = tmp_path / "site"
    info = site / "foo-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: foo\nVersion: 1.0\nRequires-Dist: numpy>=9; {marker}\n")
    (site / "numpy-2.1.0.dist-info").mkdir()
    (site / "numpy-2.1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: numpy\nVersion: 2.1.0\n")
    done = run_envcheck(str(req), str(pyproject), str(site), "-f", "json", timeout=BOUND)
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr[-3000:]
    by_target = {t["target"]: t["findings"] for t in json.loads(done.stdout)["targets"]}
    for findings in by_target.values():  # a line error at most (a 4,400-digit number is no version), never a crash
        assert not [f for f in findings if f["status"] == "ERROR" and f["rule"] != "input-error"], findings
    for path in (req, pyproject):  # the CUDA 12 torch pin beside the marker line is still judged
        assert "G1-cuda12-local-version" in {f["rule"] for f in by_target[str(path)]}, by_target[str(path)]
    # an installed package's Requires-Dist whose marker is taken as holding: numpy>=9 against numpy 2.1.0
    assert "G9-pin-conflict" in {f["rule"] for f in by_target[str(site)]}, by_target[str(site)]
