"""Partial results and secrets, against the real command line.

Ten targets, one broken: the nine others are reported exactly as when each is checked alone, the broken
one is an ERROR naming it, and the exit code (2) says a target could not be read. Secrets: credentials
given through DOCKER_CONFIG or --password-stdin never appear in stdout, stderr, the report file, SARIF
or the cache folder, whatever the outcome (success, wrong password, --debug).
"""

from __future__ import annotations

import base64
import io
import json
import os
import zipfile
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, REPO, run_envcheck

GOOD_TARGETS = [
    REPO / "examples" / "requirements-cuda12.txt",
    REPO / "examples" / "requirements-good.txt",
    REPO / "examples" / "requirements-flash-attn.txt",
    REPO / "examples" / "requirements-pins.txt",
    REPO / "examples" / "freeze-ngc-unsloth.txt",
    REPO / "examples" / "project-uv-lock" / "uv.lock",
    REPO / "examples" / "project-pylock" / "pylock.toml",
    REPO / "dockerfiles" / "multistage-xformers" / "Dockerfile",
    FIXTURES / "binaries" / "libext_cuda12.so",
]


def _findings(target: dict[str, Any]) -> list[str]:
    return sorted(json.dumps(f, sort_keys=True) for f in target["findings"])


@pytest.fixture(scope="module")
def alone() -> dict[str, list[str]]:
    """Each good target's findings when checked on its own."""
    out: dict[str, list[str]] = {}
    for target in GOOD_TARGETS:
        done = run_envcheck(str(target), "-f", "json", timeout=120)
        assert done.returncode in (0, 1), done.stderr[-2000:]
        (result,) = json.loads(done.stdout)["targets"]
        assert result["findings"], target
        out[str(target)] = _findings(result)
    return out


def _broken(kind: str, folder: Path) -> Path:
    if kind == "truncated-elf":
        path = folder / "libtruncated.so"
        path.write_bytes((FIXTURES / "binaries" / "gpu_sm121.so").read_bytes()[:300])
    elif kind == "bad-toml":
        path = folder / "pyproject.toml"
        path.write_text('[project]\nname = "x"\ndependencies = ["torch==2.9.0",\n')
    elif kind == "binary-requirements":
        path = folder / "requirements.txt"
        path.write_bytes(b"torch==2.9.0\n\x00\x01\x02" * 100)
    elif kind == "missing":
        path = folder / "requirements-gone.txt"
    elif kind == "lying-wheel":
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("liar-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nTag: py3-none-any\n")
            zf.writestr("liar-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: liar\nVersion: 1.0\n")
            zf.writestr("liar/_c.so", (FIXTURES / "binaries" / "gpu_sm121.so").read_bytes())
            zf.filelist[-1].file_size = 100 << 30
        path = folder / "liar-1.0-py3-none-any.whl"
        path.write_bytes(buf.getvalue())
    else:
        raise AssertionError(kind)
    return path


@pytest.mark.parametrize("kind, position", [
    ("truncated-elf", 0), ("bad-toml", 4), ("binary-requirements", 9), ("missing", 2), ("lying-wheel", 7),
])
def test_nine_good_targets_are_fully_reported_next_to_a_broken_one(
        alone: dict[str, list[str]], tmp_path: Path, kind: str, position: int) -> None:
    broken = _broken(kind, tmp_path)
    targets = [str(t) for t in GOOD_TARGETS]
    targets.insert(position, str(broken))
    done = run_envcheck(*targets, "-f", "json", timeout=300)
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr[-3000:]
    assert done.returncode == 2, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["exit_code"] == 2
    by_name = {t["target"]: t for t in report["targets"]}
    assert list(by_name) == targets  # every target, in the order given
    for target in GOOD_TARGETS:
        assert _findings(by_name[str(target)]) == alone[str(target)], target
    errors = [f for f in by_name[str(broken)]["findings"] if f["status"] == "ERROR"]
    assert errors and all(e["location"]["path"].startswith(str(broken)) for e in errors), by_name[str(broken)]


# ---- secrets -------------------------------------------------------------------------------------------


def _grep_everywhere(secrets: list[str], texts: dict[str, str], folders: list[Path]) -> list[str]:
    """Where any of ``secrets`` appears: in the given texts or in any file under ``folders``."""
    leaks = []
    for where, text in texts.items():
        leaks += [f"{where}: {s[:6]}..." for s in secrets if s and s in text]
    for folder in folders:
        for path in folder.rglob("*"):
            if path.is_file():
                data = path.read_bytes()
                leaks += [f"{path}: {s[:6]}..." for s in secrets if s and s.encode() in data]
    return leaks


def _run_image(ref: str, cache: Path, out: Path, *extra: str, env: dict[str, str] | None = None,
               password: str | None = None) -> dict[str, str]:
    """Run `envcheck image` three ways (text, JSON to a file, SARIF to a file); every output as text."""
    texts: dict[str, str] = {}
    for fmt in ("text", "json", "sarif"):
        target = out / f"report.{fmt}"
        args = ["image", "--no-progress", *extra, "-f", fmt, "-o", str(target), ref]
        done = run_envcheck(*args, input=password, env={"ENVCHECK_CACHE_DIR": str(cache), **(env or {})}, timeout=180)
        assert "Traceback" not in done.stderr or "--debug" in extra, done.stderr[-2000:]
        texts[f"{fmt} stdout"] = done.stdout
        texts[f"{fmt} stderr"] = done.stderr
        texts[f"{fmt} exit"] = str(done.returncode)
        if target.exists():
            texts[str(target)] = target.read_text(encoding="utf-8", errors="replace")
    return texts


@pytest.fixture
def image_command() -> None:
    from importlib.util import find_spec

    if find_spec("envcheck.commands.image") is None:
        pytest.skip("envcheck image is not there yet")


def _config_folder(tmp_path: Path, auths: dict[str, Any]) -> Path:
    folder = tmp_path / "docker-config"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"auths": auths}))
    return folder


def test_secrets_from_docker_config_never_leak(image_command: None, basic_registry: Any, tmp_path: Path) -> None:
    from registry_fixtures import PASSWORD, USER

    auth = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    folder = _config_folder(tmp_path, {basic_registry.host: {"auth": auth}})
    cache, out = tmp_path / "cache", tmp_path / "out"
    out.mkdir()
    texts = _run_image(basic_registry.image, cache, out, "--deep", env={"DOCKER_CONFIG": str(folder)})
    assert texts["json exit"] in ("0", "1"), texts  # the login worked: the image was read
    assert cache.exists() and any(p.is_file() for p in cache.rglob("*"))  # something was cached, and grepped
    basic_header = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    assert not _grep_everywhere([PASSWORD, auth, basic_header], texts, [cache, out])


def test_wrong_password_from_stdin_never_leaks(image_command: None, basic_registry: Any, tmp_path: Path) -> None:
    from registry_fixtures import USER

    wrong = "envcheck-test-" + os.urandom(12).hex()
    cache, out = tmp_path / "cache", tmp_path / "out"
    out.mkdir()
    texts = _run_image(basic_registry.image, cache, out, "--username", USER, "--password-stdin", password=wrong + "\n",
                       env={"DOCKER_CONFIG": str(tmp_path / "none")})
    assert texts["json exit"] == "3", texts  # refused: a service error
    texts.update(_run_image(basic_registry.image, cache, out, "--debug", "-v", "--username", USER, "--password-stdin",
                            password=wrong + "\n", env={"DOCKER_CONFIG": str(tmp_path / "none")}))
    encoded = base64.b64encode(f"{USER}:{wrong}".encode()).decode()
    assert not _grep_everywhere([wrong, encoded], texts, [cache, out])


def test_token_login_never_leaks_password_or_tokens(image_command: None, token_registry: Any, tmp_path: Path) -> None:
    from registry_fixtures import PASSWORD, REFRESH_TOKEN, USER

    cache, out = tmp_path / "cache", tmp_path / "out"
    out.mkdir()
    texts = _run_image(token_registry.image, cache, out, "--deep", "--username", USER, "--password-stdin",
                       password=PASSWORD + "\n", env={"DOCKER_CONFIG": str(tmp_path / "none")})
    assert texts["json exit"] in ("0", "1"), texts
    folder = _config_folder(tmp_path, {token_registry.host: {"identitytoken": REFRESH_TOKEN}})
    texts.update({f"identity {k}": v for k, v in _run_image(token_registry.image, cache, out, "--debug",
                                                                env={"DOCKER_CONFIG": str(folder)}).items()})
    assert texts["identity json exit"] in ("0", "1"), texts
    basic = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    # Bearer tokens are JWTs: their base64url header starts with "eyJ"; none may be written anywhere.
    assert not _grep_everywhere([PASSWORD, basic, REFRESH_TOKEN, "eyJ"], texts, [cache, out])


def test_secrets_from_a_credential_helper_never_leak(image_command: None, basic_registry: Any, tmp_path: Path) -> None:
    """A real `docker-credential-*` program on PATH supplies the login (the helper protocol over stdin/stdout)."""
    from registry_fixtures import PASSWORD, USER

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    helper = bin_dir / "docker-credential-envchecksecret"
    helper.write_text(
        "#!/bin/sh\n[ \"$1\" = get ] || exit 1\nread server\n"
        f"printf '{{\"ServerURL\":\"%s\",\"Username\":\"{USER}\",\"Secret\":\"{PASSWORD}\"}}' \"$server\"\n"
    )
    helper.chmod(0o755)
    folder = tmp_path / "docker-config"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"credHelpers": {basic_registry.host: "envchecksecret"}}))
    cache, out = tmp_path / "cache", tmp_path / "out"
    out.mkdir()
    env = {"DOCKER_CONFIG": str(folder), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    texts = _run_image(basic_registry.image, cache, out, "--deep", env=env)
    assert texts["json exit"] in ("0", "1"), texts  # the helper's login worked
    texts.update({f"debug {k}": v for k, v in _run_image(basic_registry.image, cache, out, "--debug", "-v", env=env).items()})
    basic = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    assert not _grep_everywhere([PASSWORD, basic], texts, [cache, out])
