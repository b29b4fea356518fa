"""`envcheck image --deep`: layers streamed from a real registry, an OCI layout, a docker save archive, an engine."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, require
from registry_fixtures import (
    DIST,
    Images,
    Layer,
    Pusher,
    config_for,
    deep_image_parts,
    metadata,
    push_image,
    session_elves,
    tar_of,
    write_docker_archive,
    write_docker_archive_oci,
    write_oci_layout,
)
from test_image_registry import check, findings, image_facts

pytestmark = pytest.mark.registry

AMD64 = ("--platform", "linux/amd64")  # the deep images hold this machine's x86-64 ELF files
CLEAN_PACKAGES = {"flash-attn": "2.7.4.post1", "numpy": "2.1.0", "torch": "2.9.0a0+145a3a7.nv25.10"}
CLEAN_BINARIES = {f"/{DIST}/torch/lib/libtorch_ext.so": ["libcudart.so.13"],
                  "/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcudart.so.13": []}


def inventory(report: dict[str, Any]) -> dict[str, Any]:
    return report["targets"][0]["inventory"]  # type: ignore[no-any-return]


def packages(report: dict[str, Any]) -> dict[str, str]:
    return {p["name"]: p["version"] for p in inventory(report).get("packages", []) if p.get("role") == "installed"}


def binaries(report: dict[str, Any]) -> dict[str, list[str]]:
    return {b["path"]: b.get("needed", []) for b in inventory(report).get("binaries", [])}


def test_whiteouts_and_opaque_dirs_give_the_final_filesystem(registry_images: Images, image_cache: Path) -> None:
    code, report, _ = check(registry_images.deep_clean, "--deep", *AMD64, cache=image_cache)
    assert packages(report) == CLEAN_PACKAGES  # oldcu12 was whited out in the zstd layer
    assert binaries(report) == CLEAN_BINARIES  # oldcu12/_C.so whited out, legacy/_legacy.so hidden by an opaque dir
    torch = next(p for p in inventory(report)["packages"] if p["name"] == "torch")
    assert torch["installed"] is True and "triton==3.4.0; platform_system == 'Linux'" in torch["requires"]
    assert torch["location"]["member"] == f"/{DIST}/torch-2.9.0a0+145a3a7.nv25.10.dist-info/METADATA"
    assert [f["status"] for f in findings(report, "G1-binary-soname")] == ["PASS"]
    assert not findings(report, "input-error") and not findings(report, "service-error")
    deep = image_facts(report)["deep"]
    assert (deep["layers_scanned"], deep["layers_cached"]) == (3, 0)
    assert code == 1  # only because the x86-64 test ELF files are not aarch64 (ARCH-elf-machine)
    assert {f["rule"] for f in findings(report) if f["status"] == "FAIL"} == {"ARCH-elf-machine"}


def test_second_deep_run_comes_from_the_layer_cache(registry_images: Images, image_cache: Path) -> None:
    _, first, _ = check(registry_images.deep_clean, "--deep", *AMD64, cache=image_cache)
    _, second, _ = check(registry_images.deep_clean, "--deep", *AMD64, cache=image_cache)
    assert (image_facts(second)["deep"]["layers_scanned"], image_facts(second)["deep"]["layers_cached"]) == (0, 3)
    assert image_facts(second)["requests"] == 1  # only the tag
    assert packages(second) == packages(first) and binaries(second) == binaries(first)
    assert [(f["rule"], f["status"]) for f in findings(second)] == [(f["rule"], f["status"]) for f in findings(first)]


def test_cuda12_extension_left_in_the_image_fails_g1(registry_images: Images, image_cache: Path) -> None:
    code, report, _ = check(registry_images.deep_cuda12, "--deep", *AMD64, cache=image_cache)
    assert code == 1
    failing = sorted(f["location"]["member"] for f in findings(report, "G1-binary-soname") if f["status"] == "FAIL")
    assert failing == [f"/{DIST}/legacy/_legacy.so", f"/{DIST}/oldcu12/_C.so"]
    assert packages(report)["unsloth"] == "2025.10.1"
    assert packages(report)["oldstyle"] == "0.9"  # egg-info PKG-INFO counts as installed metadata too
    assert [f["status"] for f in findings(report, "G2-unsloth-prefers-flash-attn")] == ["WARN"]


def test_config_level_reads_no_layers(registry_images: Images, image_cache: Path) -> None:
    _, report, _ = check(registry_images.deep_cuda12, *AMD64, cache=image_cache)
    assert "deep" not in image_facts(report) and not packages(report) and not binaries(report)
    assert image_facts(report)["requests"] == 2


def test_broken_layer_and_broken_elf_are_errors_naming_the_member(registry_images: Images, image_cache: Path) -> None:
    elves = session_elves()
    pusher = Pusher(registry_images.host)
    truncated = elves.ext13[: len(elves.ext13) // 3]
    push_image(pusher, "lab/broken", "elf", config_for("arm64"), [Layer(tar_of({f"{DIST}/bad/_ext.so": truncated}))])
    code, report, _ = check(f"{registry_images.host}/lab/broken:elf", "--deep", cache=image_cache)
    assert code == 2
    (error,) = findings(report, "input-error")
    assert error["location"]["member"] == f"/{DIST}/bad/_ext.so" and "offset" in error["location"]
    assert not binaries(report)
    # a layer that is not a tar at all: an input error, exit 2
    config = config_for("arm64")
    layer = Layer(b"not a tar archive at all" * 40, "none")
    push_image(pusher, "lab/broken", "layer", config, [layer])
    code, report, _ = check(f"{registry_images.host}/lab/broken:layer", "--deep", cache=image_cache)
    assert code == 2 and "tar" in findings(report, "input-error")[0]["message"]


def test_oci_layout(tmp_path: Path, image_cache: Path) -> None:
    config, layers = deep_image_parts(keep_cuda12=False)
    folder = tmp_path / "layout"
    write_oci_layout(folder, config, layers, "clean")
    code, report, _ = check(f"oci-layout:{folder}:clean", "--deep", *AMD64, cache=image_cache)
    assert packages(report) == CLEAN_PACKAGES and binaries(report) == CLEAN_BINARIES
    assert image_facts(report)["source"] == "oci-layout"
    code, report, _ = check(f"oci-layout:{folder}:nosuchtag", cache=image_cache)
    assert code == 2 and "no manifest is tagged 'nosuchtag'" in findings(report, "input-error")[0]["message"]
    # a damaged blob in the layout: the digest check catches it
    blob = next(p for p in (folder / "blobs" / "sha256").iterdir() if p.stat().st_size > 10_000)
    data = bytearray(blob.read_bytes())
    data[-1] ^= 0xFF
    blob.write_bytes(bytes(data))
    code, report, _ = check(f"oci-layout:{folder}:clean", "--deep", "--no-cache", *AMD64, cache=image_cache)
    assert code in (2, 3) and "digest" in (findings(report, "input-error") + findings(report, "service-error"))[0]["message"]


def test_multi_platform_oci_layout(tmp_path: Path, image_cache: Path) -> None:
    config, layers = deep_image_parts(keep_cuda12=False)
    folder = tmp_path / "multi"
    arm = config_for("arm64", ["CUDA_VERSION=13.0.2"])
    write_oci_layout(folder, config, layers, "multi", others=[({"os": "linux", "architecture": "arm64"}, arm, layers[:1])])
    code, report, _ = check(f"oci-layout:{folder}:multi", cache=image_cache)
    assert code == 0, findings(report)
    assert image_facts(report)["platforms"] == ["linux/amd64", "linux/arm64"] and image_facts(report)["architecture"] == "arm64"
    code, report, _ = check(f"oci-layout:{folder}", "--platform", "linux/s390x", cache=image_cache)
    assert code == 1 and "linux/amd64, linux/arm64" in findings(report, "ARCH-image-no-arm64")[0]["message"]


def test_docker_archive_in_the_oci_format_of_docker_25(tmp_path: Path, image_cache: Path) -> None:
    config, layers = deep_image_parts(keep_cuda12=False)
    archive = tmp_path / "image.tar"
    write_docker_archive_oci(archive, config, layers, "lab/deep:clean")
    for extra in ((), ("--deep",)):
        _, report, _ = check(f"docker-archive:{archive}", *extra, *AMD64, cache=image_cache)
        assert image_facts(report)["repo_tags"] == ["lab/deep:clean"]
    assert packages(report) == CLEAN_PACKAGES and binaries(report) == CLEAN_BINARIES


def test_docker_archive(tmp_path: Path, image_cache: Path) -> None:
    config, layers = deep_image_parts(keep_cuda12=True)
    archive = tmp_path / "image.tar"
    write_docker_archive(archive, config, layers, "lab/deep:cuda12")
    code, report, _ = check(f"docker-archive:{archive}", cache=image_cache)
    assert image_facts(report)["architecture"] == "amd64" and image_facts(report)["repo_tags"] == ["lab/deep:cuda12"]
    assert [f["status"] for f in findings(report, "ARCH-image-config")] == ["FAIL"]  # default platform linux/arm64
    code, report, _ = check(f"docker-archive:{archive}", "--deep", *AMD64, cache=image_cache)
    assert packages(report)["unsloth"] == "2025.10.1" and packages(report)["oldcu12"] == "1.0"
    assert f"/{DIST}/oldcu12/_C.so" in binaries(report)
    code, report, _ = check(f"docker-archive:{tmp_path / 'missing.tar'}", cache=image_cache)
    assert code == 2


def _stderr_on_a_terminal(*args: str, cache: Path) -> tuple[int, bytes]:
    """Run envcheck with stderr on a pseudo-terminal; (exit code, what the terminal showed)."""
    master, slave = pty.openpty()
    env = {**os.environ, "ENVCHECK_CACHE_DIR": str(cache)}
    proc = subprocess.run([sys.executable, "-m", "envcheck", *args], cwd=REPO, stdout=subprocess.PIPE, stderr=slave,
                          env=env, timeout=120, check=False)
    os.close(slave)
    shown = b""
    try:
        while chunk := os.read(master, 65536):
            shown += chunk
    except OSError:  # EIO once the terminal's other end is closed
        pass
    os.close(master)
    return proc.returncode, shown


def test_progress_only_on_a_terminal(registry_images: Images, image_cache: Path) -> None:
    code, shown = _stderr_on_a_terminal("image", registry_images.deep_clean, "--deep", *AMD64, "--no-cache", cache=image_cache)
    assert code == 1 and b"Traceback" not in shown
    assert b"envcheck: layer 1/3" in shown and b"envcheck: layer 3/3" in shown
    assert shown.rstrip(b" ").endswith(b"\r")  # the bar is cleared before the report
    code, shown = _stderr_on_a_terminal("image", registry_images.deep_clean, "--deep", *AMD64, "--no-cache", "--no-progress",
                                        cache=image_cache)
    assert code == 1 and shown == b""


def _engine() -> Any:
    try:
        import docker

        client = docker.from_env()
        client.ping()
        return client
    except Exception:
        return None


@pytest.mark.docker
def test_docker_daemon_image(tmp_path: Path, image_cache: Path) -> None:
    client = _engine()
    require(client is not None, "no Docker engine (start dockerd, as .ci/setup does)")
    config, layers = deep_image_parts(keep_cuda12=True)
    archive = tmp_path / "image.tar"
    write_docker_archive(archive, config, layers, "envcheck-test/deep:cuda12")
    with archive.open("rb") as fh:
        client.images.load(fh.read())
    try:
        code, report, _ = check("docker-daemon:envcheck-test/deep:cuda12", *AMD64, cache=image_cache)
        assert image_facts(report)["architecture"] == "amd64" and image_facts(report)["source"] == "docker-daemon"
        code, report, _ = check("docker-daemon:envcheck-test/deep:cuda12", "--deep", *AMD64, cache=image_cache)
        assert packages(report)["unsloth"] == "2025.10.1"
        assert f"/{DIST}/oldcu12/_C.so" in binaries(report)
        code, report, _ = check("docker-daemon:envcheck-test/nosuch:1", cache=image_cache)
        assert code == 2 and "has no image" in findings(report, "input-error")[0]["message"]
        # what the engine itself writes: docker import, then docker save, read back as docker-archive:
        client.api.import_image_from_data(layers[0].tar, repository="envcheck-test/imported", tag="1")
        saved = tmp_path / "saved.tar"
        with saved.open("wb") as fh:
            for chunk in client.images.get("envcheck-test/imported:1").save(chunk_size=1 << 20):
                fh.write(chunk)
        code, report, _ = check(f"docker-archive:{saved}", "--deep", *AMD64, cache=image_cache)
        assert packages(report) == {"flash-attn": "2.7.4.post1", "oldcu12": "1.0", "torch": "2.9.0a0+145a3a7.nv25.10"}
        assert f"/{DIST}/legacy/_legacy.so" in binaries(report) and image_facts(report)["architecture"] == "amd64"
    finally:
        client.images.remove("envcheck-test/deep:cuda12", force=True)
        if any("envcheck-test/imported:1" in (i.tags or []) for i in client.images.list()):
            client.images.remove("envcheck-test/imported:1", force=True)


def test_docker_daemon_unreachable(image_cache: Path) -> None:
    code, report, _ = check("docker-daemon:x:1", cache=image_cache, env={"DOCKER_HOST": "unix:///nonexistent/docker.sock"})
    message = findings(report, "service-error")[0]["message"]
    assert code == 3 and "cannot reach the Docker engine at unix:///nonexistent/docker.sock" in message
    assert "or ssh://HOST)" in message and "***" not in message  # an example address, not a masked secret



def test_gpu_code_and_cpu_architecture_of_binaries_in_layers(registry_images: Images, image_cache: Path) -> None:
    """Checked-in nvcc builds (fixtures/binaries) inside an arm64 image: G7 and ARCH judge them like files on disk."""
    binaries_dir = REPO / "fixtures" / "binaries"
    pusher = Pusher(registry_images.host)
    layer = Layer(tar_of({
        f"{DIST}/torch/lib/libtorch_global_deps.so": (binaries_dir / "aarch64_libtorch_global_deps.so").read_bytes(),
        f"{DIST}/kernels/_sm80.so": (binaries_dir / "gpu_sm80.so").read_bytes(),
        f"{DIST}/kernels/_sm121.so": (binaries_dir / "gpu_sm121.so").read_bytes(),
    }), "zstd")
    push_image(pusher, "lab/gpu", "1", config_for("arm64", ["CUDA_VERSION=13.0.2"]), [layer])
    code, report, _ = check(f"{registry_images.host}/lab/gpu:1", "--deep", cache=image_cache)
    assert code == 1
    machines = {b["path"].rsplit("/", 1)[1]: b["machine"] for b in inventory(report)["binaries"]}
    assert machines == {"libtorch_global_deps.so": "aarch64", "_sm80.so": "x86_64", "_sm121.so": "x86_64"}
    failing = {(f["rule"], f["location"]["member"].rsplit("/", 1)[1]) for f in findings(report) if f["status"] == "FAIL" and f.get("location")}
    assert ("G7-binary-no-sm121", "_sm80.so") in failing
    assert not any(name == "_sm121.so" for rule, name in failing if rule.startswith("G7"))
    assert not any(name == "libtorch_global_deps.so" for _, name in failing)


def test_decompression_bomb_is_refused_until_the_limit_is_raised(registry_images: Images, image_cache: Path) -> None:
    zeros = Layer(tar_of({f"{DIST}/data/zeros.bin": bytes(40 << 20)}), "gzip")  # 40 MiB from ~40 KiB: 1000:1
    assert len(zeros.blob()) < 100 << 10
    push_image(Pusher(registry_images.host), "lab/bomb", "1", config_for("arm64"), [zeros])
    ref = f"{registry_images.host}/lab/bomb:1"
    code, report, _ = check(ref, "--deep", cache=image_cache)
    assert code == 2
    (error,) = findings(report, "input-error")
    assert "decompression bomb" in error["message"] and "--max-expansion" in error["message"]
    code, report, _ = check(ref, "--deep", "--max-expansion", "2000", cache=image_cache)
    assert code == 0 and image_facts(report)["deep"]["bytes"] == 40 << 20


def test_whiteouts_over_many_files_are_applied_in_linear_time(tmp_path: Path, image_cache: Path) -> None:
    """A second layer of 15,000 whiteouts over the first layer's 15,000 packages: each path is looked up per
    folder it lies in, not compared with every whiteout (15,000 * 15,000 took 40-52 s)."""
    from bounded import run_envcheck_bounded

    count = 15_000
    first = {f"{DIST}/pkg{i}-1.0.dist-info/METADATA": metadata(f"pkg{i}", "1.0") for i in range(count)}
    first[f"{DIST}/kept-1.0.dist-info/METADATA"] = metadata("kept", "1.0")
    second = {f"{DIST}/.wh.pkg{i}-1.0.dist-info": b"" for i in range(count)}
    folder = tmp_path / "layout"
    write_oci_layout(folder, config_for("arm64"), [Layer(tar_of(first)), Layer(tar_of(second))], "many")
    run = run_envcheck_bounded("image", "--deep", "--no-cache", "-f", "json", f"oci-layout:{folder}:many",
                               env={"ENVCHECK_CACHE_DIR": str(image_cache)})
    run.assert_within(seconds=10, rss_mb=300)
    assert run.returncode in (0, 1), run.describe()
    import json

    report = json.loads(run.stdout)
    assert packages(report) == {"kept": "1.0"}


def test_deep_names_the_distribution_of_a_library_from_its_record(tmp_path: Path, image_cache: Path) -> None:
    """Issue 26 item 15: `image --deep` attributes a libcudart.so.12 to the distribution whose RECORD lists it
    (nvidia-cuda-runtime-cu12), as `envcheck container` does for the same file."""
    from registry_fixtures import metadata

    elves = session_elves()
    info = f"{DIST}/nvidia_cuda_runtime_cu12-12.8.90.dist-info"
    record = (f"nvidia/cuda_runtime/lib/libcudart.so.12,sha256=x,{len(elves.cudart12)}\n"
              f"nvidia/cuda_runtime/lib/libcudart.so.12.8.90,sha256=x,{len(elves.cudart12)}\n"
              f"nvidia_cuda_runtime_cu12-12.8.90.dist-info/METADATA,,\n").encode()
    layer = Layer(tar_of({
        f"{info}/METADATA": metadata("nvidia-cuda-runtime-cu12", "12.8.90"),
        f"{info}/RECORD": record,
        f"{DIST}/nvidia/cuda_runtime/lib/libcudart.so.12": elves.cudart12,
        f"{DIST}/nvidia/cuda_runtime/lib/libcudart.so.12.8.90": elves.cudart12,
        "usr/local/cuda-13.0/targets/x86_64-linux/lib/libcudart.so.13": elves.cudart13,
    }), "gzip")
    folder = tmp_path / "layout"
    write_oci_layout(folder, config_for("amd64", ["CUDA_VERSION=13.0.2"]), [layer], "cu12runtime")
    _code, report, _ = check(f"oci-layout:{folder}:cu12runtime", "--deep", *AMD64, cache=image_cache)
    owners = {b["path"]: b.get("distribution") for b in inventory(report)["binaries"]}
    assert owners == {f"/{DIST}/nvidia/cuda_runtime/lib/libcudart.so.12": "nvidia-cuda-runtime-cu12",
                      f"/{DIST}/nvidia/cuda_runtime/lib/libcudart.so.12.8.90": "nvidia-cuda-runtime-cu12",
                      "/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcudart.so.13": None}
    # one cause, one finding: the CUDA 12 distribution and its two libraries in the layers
    g1 = [f for t in report["targets"] for f in t["findings"] if f["gotcha"] == "G1" and f["status"] in ("WARN", "FAIL")]
    assert [(f["rule"], f["evidence"]["count"]) for f in g1] == [("G1-binary-soname", 2)], g1
