"""``envcheck container IMAGE`` end to end: the real collector inside real images, the real checks here.

Images come from ``tests/docker_images.py`` (built once per session, no network). Their binaries are
x86_64 because this machine is: ARCH FAILs on them are correct for a Spark and are asserted as such.
"""

from __future__ import annotations

import json
import socket
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import run_envcheck

from envcheck import engine
from envcheck.config import Config
from envcheck.model import Status
from envcheck.services.docker_runner import ContainerOptions, leftover_containers
from envcheck.sources.container import read_container

pytestmark = pytest.mark.docker


def run_json(*args: str, env: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    done = run_envcheck("container", *args, "--format", "json", env=env)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, json.loads(done.stdout)


def findings(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for target in report["targets"] for f in target["findings"]]


def by_gotcha(report: dict[str, Any], gotcha: str) -> list[dict[str, Any]]:
    return [f for f in findings(report) if f["gotcha"] == gotcha]


def test_clean_cuda13_image(test_images: Any) -> None:
    code, report = run_json(test_images.cuda13)
    g1 = by_gotcha(report, "G1")
    assert {f["rule"] for f in g1} >= {"G1-torch-build", "G1-live-torch", "G1-binary-soname"}
    assert {f["status"] for f in g1} == {"PASS"}
    live = next(f for f in g1 if f["rule"] == "G1-live-torch")
    assert "13.0" in live["message"]
    soname = next(f for f in g1 if f["rule"] == "G1-binary-soname")
    assert soname["message"].startswith("2 binaries link CUDA libraries")
    # G3 would read the memory of the machine the engine runs on: no fact about the image, so it is a SKIP
    # that says so, with no reading (issue 26 item 15). The only complaint: this machine's gcc builds x86_64
    # and the Spark is aarch64.
    assert [(f["rule"], f["status"]) for f in by_gotcha(report, "G3")] == [("G3-page-cache", "SKIP")]
    bad = [f for f in findings(report) if f["status"] in ("WARN", "FAIL", "ERROR")]
    assert bad and {(f["gotcha"], f["rule"]) for f in bad} == {("ARCH", "ARCH-elf-machine")}
    assert code == 1
    code, report = run_json(test_images.cuda13, "--ignore", "ARCH")
    assert code == 0
    inventory = report["targets"][0]["inventory"]
    names = {p["name"]: p["version"] for p in inventory["packages"]}
    assert names["torch"] == "2.14.1" and names["nvidia-cuda-runtime"] == "13.0.96"
    assert inventory["host"]["container_run"]["user"] == "65534:65534"
    assert inventory["host"]["container"]["kind"] == "docker"


def test_oldest_supported_python(test_images: Any) -> None:
    """CPython 3.10 has no tomllib: the payload brings the TOML reader envcheck's knowledge files need."""
    code, report = run_json(test_images.python310, "--ignore", "ARCH")
    run = report["targets"][0]["inventory"]["host"]["container_run"]
    assert run["python"] == "3.10.13"
    g1 = {f["rule"]: f["status"] for f in by_gotcha(report, "G1")}
    assert g1 == {"G1-torch-build": "PASS", "G1-live-torch": "PASS", "G1-binary-soname": "PASS"}
    assert len(report["targets"][0]["inventory"]["binaries"]) == 2
    assert code == 0


def test_image_whose_python_only_root_may_run(test_images: Any) -> None:
    code, report = run_json(test_images.root_only, "--ignore", "ARCH")
    run = report["targets"][0]["inventory"]["host"]["container_run"]
    assert run["user"] == "0:0"  # nobody could not start python3, so root, still without capabilities
    assert {f["status"] for f in by_gotcha(report, "G1")} == {"PASS"}
    assert code == 0
    code, report = run_json(test_images.root_only, "--user", "65534")  # an explicit --user is obeyed
    errors = [f for f in findings(report) if f["status"] == "ERROR"]
    assert code == 2 and "user 65534 may not run python3" in errors[0]["message"]


def test_without_gpus_the_gpu_lines_skip(test_images: Any) -> None:
    _, report = run_json(test_images.cuda13, "--verbose")
    for gotcha in ("G4", "G6", "G7"):
        # the lines that need the GPU; G7 also judges the installed packages (triton's ptxas), which need none
        live = [f for f in by_gotcha(report, gotcha) if gotcha != "G7" or f["rule"] == "G7-live-capability"]
        assert live and {f["status"] for f in live} == {"SKIP"}, (gotcha, by_gotcha(report, gotcha))
    assert {f["status"] for f in by_gotcha(report, "G7")} <= {"SKIP", "PASS", "INFO"}
    assert "nvidia_smi" not in report["targets"][0]["inventory"]["host"]
    g4 = by_gotcha(report, "G4")[0]
    assert "nvidia-smi was not run" in g4["message"]


def test_cuda12_image_fails_g1(test_images: Any) -> None:
    code, report = run_json(test_images.cuda12)
    failed = {f["rule"]: f for f in by_gotcha(report, "G1") if f["status"] == "FAIL"}
    assert {"G1-live-torch", "G1-binary-soname", "G1-cuda12-local-version", "G1-cuda12-distribution"} <= set(failed)
    assert "12.8" in failed["G1-live-torch"]["message"]
    sonames = [f for f in by_gotcha(report, "G1") if f["rule"] == "G1-binary-soname"]
    needs = next(f for f in sonames if "libc10_cuda.so" in f["message"])
    assert "libcudart.so.12" in needs["message"]
    assert needs["location"] == {"path": test_images.cuda12,
                                 "member": "/usr/local/lib/python3.11/dist-packages/torch/lib/libc10_cuda.so"}
    assert code == 1


def test_flash_attn_with_unsloth_warns_g2(test_images: Any) -> None:
    code, report = run_json(test_images.flash_unsloth, "--ignore", "ARCH")
    g2 = {f["rule"]: f for f in by_gotcha(report, "G2")}
    assert g2["G2-unsloth-prefers-flash-attn"]["status"] == "WARN"
    assert g2["G2-flash-attn-present"]["status"] == "INFO"
    host = report["targets"][0]["inventory"]["host"]
    assert host["flash_attn"]["extension"] == "error"  # imported in a child of the collector, extension missing
    assert host["unsloth"] == {"present": True, "version": "2025.11.1"}
    assert {f["status"] for f in by_gotcha(report, "G1")} == {"PASS"}
    # The stand-in flash-attn ships no compiled extension: read live, that is a G2 FAIL of its own.
    assert g2["G2-live-flash-attn-extension"]["status"] == "FAIL"
    assert code == 1


def test_image_without_python_gets_a_static_look(test_images: Any) -> None:
    code, report = run_json(test_images.no_python)
    errors = [f for f in findings(report) if f["status"] == "ERROR"]
    assert len(errors) == 1 and errors[0]["rule"] == "input-error"
    assert "has no python3 on its PATH" in errors[0]["message"]
    assert "found 4 distributions and 2 ELF files" in errors[0]["message"]
    g1 = {f["rule"] for f in by_gotcha(report, "G1") if f["status"] == "FAIL"}
    assert {"G1-binary-soname", "G1-cuda12-local-version", "G1-cuda12-distribution"} <= g1
    assert code == 2


def test_image_with_old_python_says_so_and_looks_statically(test_images: Any) -> None:
    code, report = run_json(test_images.old_python)
    errors = [f for f in findings(report) if f["status"] == "ERROR"]
    assert len(errors) == 1
    assert "has Python 3.8.18 (/usr/local/bin/python3)" in errors[0]["message"]
    assert "needs Python 3.10 or newer" in errors[0]["message"]
    member = "/usr/local/lib/python3.8/site-packages/torch-2.8.0+cu128.dist-info/METADATA"
    local = next(f for f in by_gotcha(report, "G1") if f["rule"] == "G1-cuda12-local-version")
    assert local["location"] == {"path": test_images.old_python, "member": member}
    assert code == 2


def test_gpus_on_an_engine_without_nvidia_runtime(docker_client: Any, test_images: Any) -> None:
    require_no_nvidia = "nvidia" not in json.dumps(docker_client.info().get("Runtimes", {}))
    if not require_no_nvidia:
        pytest.skip("this engine has the NVIDIA runtime; the error path cannot be shown")
    code, report = run_json(test_images.cuda13, "--gpus", "all")
    errors = [f for f in findings(report) if f["status"] == "ERROR"]
    assert len(errors) == 1 and "NVIDIA Container Toolkit" in errors[0]["message"]
    assert code == 2


def test_bad_options_are_usage_errors(test_images: Any) -> None:
    for args in (["--gpus", ","], ["--timeout", "0"], ["--pull", "sometimes"]):
        done = run_envcheck("container", test_images.cuda13, *args)
        assert done.returncode == 2, (args, done.stderr)
        assert "Traceback" not in done.stderr


@pytest.mark.parametrize("env", [
    {"DOCKER_HOST": "unix:///nonexistent/docker.sock"},
    {"DOCKER_HOST": "tcp://127.0.0.1:{port}"},
    {"DOCKER_HOST": "", "DOCKER_CONTEXT": "no-such-context"},
], ids=["unix", "tcp", "context"])
def test_unreachable_engine_is_exit_3(env: dict[str, str], tmp_path: Path) -> None:
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    env = {k: v.format(port=port) for k, v in env.items()}
    env["DOCKER_CONFIG"] = str(tmp_path)
    code, report = run_json("envcheck-test/anything:1", env=env)
    errors = [f for f in findings(report) if f["status"] == "ERROR"]
    assert [f["rule"] for f in errors] == ["service-error"]
    assert "Docker" in errors[0]["message"]
    assert code == 3


def test_missing_image_with_pull_never_and_unreachable_registry(docker_client: Any) -> None:
    code, report = run_json("envcheck-test/not-built:1", "--pull", "never")
    assert code == 2
    assert "not present on the engine" in findings(report)[0]["message"]
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    code, report = run_json(f"127.0.0.1:{port}/lab/none:1")
    assert code == 3, findings(report)
    assert findings(report)[0]["rule"] == "service-error"


def test_the_image_and_engine_are_left_as_they_were(docker_client: Any, test_images: Any) -> None:
    images = sorted(i.id for i in docker_client.images.list(all=True))
    volumes = sorted(v.name for v in docker_client.volumes.list())
    before = docker_client.images.get(test_images.cuda13).attrs
    inventory = read_container(test_images.cuda13, ContainerOptions(), docker_client)
    assert not inventory.problems
    assert docker_client.images.get(test_images.cuda13).attrs == before
    assert sorted(i.id for i in docker_client.images.list(all=True)) == images
    assert sorted(v.name for v in docker_client.volumes.list()) == volumes
    assert leftover_containers(docker_client) == []


def test_noise_before_the_result_is_tolerated(docker_client: Any, test_images: Any, bad_probe: Path) -> None:
    from envcheck.commands.container import container_target

    target = container_target(test_images.python, probe_module="envcheck_bad_probe", probe_args=("banner",),
                              payload=(bad_probe,))
    report = engine.run([target], Config())
    assert [f.message for f in report.findings if f.status is Status.ERROR] == []
    assert [(p.name, p.version) for p in report.targets[0].inventory.packages] == [("torch", "2.14.1")]


# ----------------------------------------------------------------------- corrupted collector results

BAD_PROBE = textwrap.dedent('''
    import json, sys
    mode = sys.argv[1]
    good = {"probe_schema": 1, "python": {"version": "3.11.2", "executable": "/usr/bin/python3"},
            "distributions": [{"name": "torch", "version": "2.14.1", "location": "/site"}]}
    if mode == "garbage":
        print("Segmentation fault (core dumped)?? {not json")
    elif mode == "truncated":
        print(json.dumps(good)[:60])
    elif mode == "array":
        print("[1, 2, 3]")
    elif mode == "schema":
        print(json.dumps({"probe_schema": 99}))
    elif mode == "partial":
        good["distributions"].append({"name": "flash-attn"})  # no version
        good["torch"] = "yes"
        print(json.dumps(good))
    elif mode == "crash":
        raise RuntimeError("collector blew up")
    elif mode == "silent":
        sys.exit(0)
    elif mode == "banner":  # e.g. a sitecustomize in the image that prints before the collector
        print("== NVIDIA release 25.11 ==")
        print(json.dumps(good))
''')


@pytest.fixture(scope="module")
def bad_probe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    package = tmp_path_factory.mktemp("badprobe") / "envcheck_bad_probe"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "__main__.py").write_text(BAD_PROBE)
    return package


@pytest.mark.parametrize(("mode", "expected"), [
    ("garbage", "not valid JSON"),
    ("truncated", "not valid JSON"),
    ("array", "JSON of type list"),
    ("schema", "probe_schema 99"),
    ("partial", "distribution entry without a name and version"),
    ("crash", "RuntimeError: collector blew up"),
    ("silent", "printed no result"),
])
def test_corrupted_collector_result_is_an_error_finding(docker_client: Any, test_images: Any, bad_probe: Path,
                                                        mode: str, expected: str) -> None:
    from envcheck.commands.container import container_target

    target = container_target(test_images.python, probe_module="envcheck_bad_probe", probe_args=(mode,),
                              payload=(bad_probe,))
    report = engine.run([target], Config())
    errors = [f for f in report.findings if f.status is Status.ERROR]
    assert errors, [f.message for f in report.findings]
    assert any(expected in f.message for f in errors), [f.message for f in errors]
    assert all(f.rule == "input-error" for f in errors)
    assert all(f.location is not None and f.location.path == test_images.python for f in errors)
    assert report.exit_code == 2
    if mode == "truncated":
        where = next(f.location for f in errors if "not valid JSON" in f.message)
        assert where.member == "stdout" and where.offset == 60 and where.line == 1
    if mode == "partial":  # what could be read is kept
        assert [p.name for p in report.targets[0].inventory.packages] == ["torch"]
