"""`envcheck preflight` end to end: the real command line, real venvs, real /proc, a loopback GitHub API."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
from conftest import run_envcheck

LINE = re.compile(r"^G(\d+) (?:(PASS|FAIL|WARN|SKIP) \S.*|INFO: \S.*)$")


def ten_lines(stdout: str) -> dict[str, str]:
    lines = stdout.splitlines()
    assert len(lines) >= 10, stdout
    for n, line in enumerate(lines[:10], start=1):
        match = LINE.match(line)
        assert match is not None and match.group(1) == str(n), line
    return {line.split(" ", 1)[0]: line for line in lines[:10]}


def no_gpu_tools_path(tmp_path: Path) -> str:
    """A PATH with no nvidia-smi on it (so the 'nvidia-smi absent' case is real on any machine)."""
    empty = tmp_path / "bin"
    empty.mkdir(exist_ok=True)
    return str(empty)


def test_preflight_prints_ten_lines_in_the_original_format(preflight_envs: dict[str, Path], tmp_path: Path) -> None:
    done = run_envcheck("preflight", "--python", str(preflight_envs["good"]), "--sample-seconds", "1",
                        env={"PATH": no_gpu_tools_path(tmp_path)})
    lines = ten_lines(done.stdout)
    assert lines["G1"].startswith("G1 PASS ")
    assert lines["G4"] == "G4 SKIP nvidia-smi not found (no NVIDIA driver here): cannot sample temperature/power"
    assert lines["G6"].startswith("G6 SKIP nvidia-smi not found")
    assert lines["G7"].startswith("G7 SKIP torch sees no CUDA device")
    assert lines["G8"].startswith("G8 SKIP offline: check https://github.com/NVIDIA/dgx-spark-playbooks/issues")
    assert lines["G10"] == "G10 SKIP no --launch or --launch-config given"
    assert lines["G3"].split(" ")[1] in ("PASS", "WARN") and "MemTotal" in lines["G3"]
    assert lines["G5"].startswith("G5 INFO: plan memory-bound work on 180-192 GB/s")
    # issue 26 item 14: on a machine that is not aarch64 (a workstation, CI) preflight says it is not a Spark,
    # on stderr beside the ten-line contract; on an aarch64 machine nothing else is said
    import platform

    other = platform.machine().lower() not in ("aarch64", "arm64")
    assert done.stderr.splitlines() == ([f"ARCH WARN this machine is {platform.machine()} with no NVIDIA GPU, not a dgx-spark "
                                         "(linux/aarch64, GB10): its readings describe this machine, not a Spark"] if other else [])


def test_preflight_segfaulting_torch_is_a_g1_fail(preflight_envs: dict[str, Path], tmp_path: Path) -> None:
    done = run_envcheck("preflight", "--python", str(preflight_envs["crash"]), "--sample-seconds", "0",
                        "-f", "text", env={"PATH": no_gpu_tools_path(tmp_path)})
    assert f"G1-live-torch: {preflight_envs['crash']} crashed (SIGSEGV) importing torch" in done.stdout
    assert done.returncode == 1
    lines = ten_lines(run_envcheck("preflight", "--python", str(preflight_envs["crash"]), "--sample-seconds", "0",
                                   env={"PATH": no_gpu_tools_path(tmp_path)}).stdout)
    assert lines["G1"].startswith("G1 FAIL ")


def test_preflight_cuda12_torch_and_pins(preflight_envs: dict[str, Path], tmp_path: Path) -> None:
    done = run_envcheck("preflight", "--python", str(preflight_envs["cu12"]), "--sample-seconds", "0",
                        env={"PATH": no_gpu_tools_path(tmp_path)})
    lines = ten_lines(done.stdout)
    assert lines["G1"].startswith("G1 FAIL ")
    assert lines["G9"].startswith("G9 FAIL ") and "torch" in lines["G9"]
    assert done.returncode == 1


def test_preflight_every_format(preflight_envs: dict[str, Path], tmp_path: Path) -> None:
    env = {"PATH": no_gpu_tools_path(tmp_path)}
    base = ("preflight", "--python", str(preflight_envs["good"]), "--sample-seconds", "0")
    report = json.loads(run_envcheck(*base, "-f", "json", env=env).stdout)
    assert report["targets"][0]["kind"] == "host"
    assert {f["gotcha"] for f in report["targets"][0]["findings"]} >= {f"G{n}" for n in range(1, 11)}
    sarif = json.loads(run_envcheck(*base, "-f", "sarif", env=env).stdout)
    assert sarif["version"] == "2.1.0"
    assert "G1" in run_envcheck(*base, "-f", "text", "-v", env=env).stdout
    run_envcheck(*base, "-f", "github", env=env)


def test_preflight_missing_python_is_an_error_and_the_rest_still_runs(tmp_path: Path) -> None:
    done = run_envcheck("preflight", "--python", str(tmp_path / "nope"), "--sample-seconds", "0",
                        env={"PATH": no_gpu_tools_path(tmp_path)})
    assert done.returncode == 2
    assert "G3 " in done.stdout and len(done.stdout.splitlines()) == 10
    assert ": no such file;" in done.stderr  # outside G1..G10: on stderr, the ten lines stay ten


def test_preflight_usage_errors() -> None:
    assert run_envcheck("preflight", "--sample-seconds", "-1").returncode == 2
    assert run_envcheck("preflight", "--expect-bandwidth", "0").returncode == 2


def test_preflight_launch_config_fails_with_file_and_line(preflight_envs: dict[str, Path], fixtures_dir: Path, tmp_path: Path) -> None:
    config = fixtures_dir / "launch" / "accelerate-two-nodes-megatron-tp.yaml"
    done = run_envcheck("preflight", "--python", str(preflight_envs["good"]), "--sample-seconds", "0",
                        "--launch-config", str(config), "--expect-bandwidth", "273", "-f", "text",
                        env={"PATH": no_gpu_tools_path(tmp_path)})
    assert done.returncode == 1
    assert f"{config}:16" in done.stdout and "G10-tp-across-nodes" in done.stdout
    assert "plan assumes 273 GB/s" in done.stdout


def test_a_launch_config_of_another_kind_is_one_error_line_naming_it(preflight_envs: dict[str, Path], tmp_path: Path) -> None:
    """A requirements file (or a script, or an empty file) given as --launch-config is no single-node launch: one
    ERROR line naming the file and what --launch-config reads, exit 2, no traceback."""
    (tmp_path / "requirements.txt").write_text("torch==2.11.0\n--extra-index-url https://download.pytorch.org/whl/cu130\n")
    (tmp_path / "run.txt").write_text("vllm serve Qwen/Qwen3-8B --tensor-parallel-size 2\n")
    for name, why in (("requirements.txt", "its name says requirements"), ("run.txt", "no YAML `key: value` line")):
        config = tmp_path / name
        done = run_envcheck("preflight", "--python", str(preflight_envs["good"]), "--sample-seconds", "0",
                            "--launch-config", str(config), env={"PATH": no_gpu_tools_path(tmp_path)})
        assert done.returncode == 2 and "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
        (error,) = [line for line in done.stderr.splitlines() if "ERROR" in line]  # beside the ten lines
        assert error.startswith(f"ENVCHECK ERROR --launch-config {config}: not a launch config: ") and why in error, error
        assert "accelerate or DeepSpeed configs (YAML or JSON) and DeepSpeed hostfiles" in error
        assert "G10 PASS" not in done.stdout


class _Issues(BaseHTTPRequestHandler):
    status = 200
    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        type(self).seen.append(self.path)
        body = json.dumps([
            {"number": 131, "title": "Unsloth playbook: torch replaced by pip", "created_at": "2026-11-28T09:00:00Z",
             "html_url": "https://github.com/NVIDIA/dgx-spark-playbooks/issues/131"},
            {"number": 130, "title": "a pull request", "created_at": "2026-11-27T09:00:00Z", "pull_request": {}},
        ]).encode() if self.status == 200 else b'{"message": "API rate limit exceeded"}'
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def github_api() -> Iterator[tuple[str, type[_Issues]]]:
    handler = type("Issues", (_Issues,), {"status": 200, "seen": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()


def test_preflight_online_lists_playbook_issues(preflight_envs: dict[str, Path], github_api: tuple[str, type[_Issues]],
                                                tmp_path: Path) -> None:
    url, handler = github_api
    env = {"PATH": no_gpu_tools_path(tmp_path), "ENVCHECK_GITHUB_API": url}
    done = run_envcheck("preflight", "--python", str(preflight_envs["good"]), "--sample-seconds", "0", "--online", env=env)
    assert ten_lines(done.stdout)["G8"] == "G8 INFO: #131 Unsloth playbook: torch replaced by pip (2026-11-28)"
    assert handler.seen and handler.seen[0].startswith("/repos/NVIDIA/dgx-spark-playbooks/issues?state=open")
    handler.status = 403
    done = run_envcheck("preflight", "--python", str(preflight_envs["good"]), "--sample-seconds", "0", "--online", env=env)
    assert done.returncode == 3
    assert ten_lines(done.stdout)["G8"].startswith("G8 SKIP ") and "HTTP 403" in done.stdout


def test_preflight_deepspeed_hostfile_and_autotp_config_add_up(preflight_envs: dict[str, Path], fixtures_dir: Path,
                                                               tmp_path: Path) -> None:
    launch = fixtures_dir / "launch"
    command = f"deepspeed --hostfile {launch / 'hostfile-two-sparks'} train.py --deepspeed {launch / 'deepspeed-autotp.json'}"
    done = run_envcheck("preflight", "--python", str(preflight_envs["good"]), "--sample-seconds", "0", "--launch", command,
                        env={"PATH": no_gpu_tools_path(tmp_path)})
    line = ten_lines(done.stdout)["G10"]
    assert line.startswith("G10 WARN ") and "tp=2" in line and "2 nodes" in line


def test_preflight_on_gb10_readings(preflight_envs: dict[str, Path], fixtures_dir: Path, tmp_path: Path) -> None:
    """End to end with a stand-in nvidia-smi printing GB10 readings (fixtures/nvidia-smi/README.md)."""
    smi_dir = fixtures_dir / "nvidia-smi"
    bin_dir = Path(no_gpu_tools_path(tmp_path))
    smi = bin_dir / "nvidia-smi"
    smi.write_text(
        "#!/bin/sh\n"
        "case \"$1\" in\n"
        f"  --query-gpu=*) cat '{smi_dir / 'gb10-composite.noheader.nounits.csv'}';;\n"
        # the capture has pid,process_name,used_memory; envcheck also asks for gpu_uuid (the GB10's, zeroed)
        f"  --query-compute-apps=*) sed 's/$/, GPU-00000000-0000-0000-0000-000000000000/' "
        f"'{smi_dir / 'gb10-compute-apps.noheader.nounits.csv'}';;\n"
        "  *) exit 2;;\n"
        "esac\n")
    smi.chmod(0o755)
    done = run_envcheck("preflight", "--python", str(preflight_envs["good"]), "--sample-seconds", "1",
                        env={"PATH": f"{bin_dir}:/bin:/usr/bin"})
    lines = ten_lines(done.stdout)
    assert "limit N/A, rated 240 W" in lines["G4"] and lines["G4"].startswith("G4 PASS GPU0 NVIDIA GB10: no throttling")
    assert lines["G6"].startswith("G6 WARN pid 6330 (SGLang, 93.8 GiB) is uncapped (default 0.88)")
    assert lines["G7"].startswith("G7 PASS NVIDIA GB10 has capability (12, 1) (nvidia-smi)")
    # unified memory: the page-cache rule judges (PASS or WARN by this machine's cache), never 'own memory'
    assert "GPU has its own memory" not in lines["G3"]
