"""G1-cuda12-base and G1 index findings at the level their cause deserves (real files, through the CLI)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import run_envcheck


def _findings(path: Path, rule_prefix: str = "G1-") -> list[dict[str, Any]]:
    done = run_envcheck("--format", "json", str(path))
    assert done.returncode in (0, 1), done.stderr
    report = json.loads(done.stdout)
    return [f for t in report["targets"] for f in t["findings"]
            if f["rule"].startswith(rule_prefix) and f["status"] in ("FAIL", "WARN", "INFO")]


def _levels(findings: list[dict[str, Any]], rule: str) -> list[tuple[int | None, str]]:
    return sorted((f.get("location", {}).get("line"), f["status"]) for f in findings if f["rule"] == rule)


def test_a_cuda12_builder_whose_output_the_final_image_copies_fails(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text(
        "FROM nvidia/cuda:12.6.3-devel-ubuntu24.04 AS build\n"
        "RUN nvcc -o /out/app app.cu\n"
        "\n"
        "FROM nvidia/cuda:12.8.0-devel-ubuntu24.04 AS lint\n"
        "RUN echo lint\n"
        "\n"
        "FROM nvidia/cuda:13.0.1-runtime-ubuntu24.04\n"
        "COPY --from=build /out/app /usr/local/bin/app\n"
    )
    found = _findings(tmp_path / "Dockerfile")
    # the build stage's binary is in the final image: FAIL; nothing takes the lint stage's output: WARN
    assert _levels(found, "G1-cuda12-base") == [(1, "FAIL"), (4, "WARN")]
    assert "COPY --from on line 8" in next(f["message"] for f in found if f.get("location", {}).get("line") == 1)


def test_a_container_that_only_queries_the_device_is_info_on_a_cuda12_image(tmp_path: Path) -> None:
    (tmp_path / "smoke.yaml").write_text(
        "apiVersion: v1\n"
        "kind: Pod\n"
        "metadata:\n"
        "  name: gpu-smoke\n"
        "spec:\n"
        "  containers:\n"
        "    - name: smi\n"
        "      image: nvidia/cuda:12.6.2-runtime-ubuntu24.04\n"
        "      command: [\"bash\", \"-lc\", \"ls -l /dev/nvidia* || true; nvidia-smi && echo OK\"]\n"
        "      resources: {limits: {nvidia.com/gpu: 1}}\n"
        "    - name: train\n"
        "      image: nvidia/cuda:12.6.2-runtime-ubuntu24.04\n"
        "      command: [\"bash\", \"-c\", \"nvidia-smi && python train.py\"]\n"
        "      resources: {limits: {nvidia.com/gpu: 1}}\n"
    )
    found = _findings(tmp_path / "smoke.yaml")
    assert _levels(found, "G1-cuda12-base") == [(8, "INFO"), (12, "FAIL")]
    assert "host driver" in next(f["message"] for f in found if f["status"] == "INFO")
    (tmp_path / "compose.yaml").write_text(
        "services:\n"
        "  smoke:\n"
        "    image: nvcr.io/nvidia/cuda:12.2.0-base-ubuntu22.04\n"
        "    command: nvidia-smi\n"
        "    deploy: {resources: {reservations: {devices: [{driver: nvidia, count: 1, capabilities: [gpu]}]}}}\n"
        "  app:\n"
        "    image: nvcr.io/nvidia/cuda:12.2.0-base-ubuntu22.04\n"
        "    command: python3 serve.py\n"
        "    deploy: {resources: {reservations: {devices: [{driver: nvidia, count: 1, capabilities: [gpu]}]}}}\n"
    )
    assert _levels(_findings(tmp_path / "compose.yaml"), "G1-cuda12-base") == [(3, "INFO"), (7, "FAIL")]


def test_a_cuda_12_9_base_is_a_warn_and_older_ones_fail(tmp_path: Path) -> None:
    # CUDA 12.9 is the first toolkit that compiles for sm_121 (knowledge/nvcc_targets.toml); NGC 25.04 is CUDA 12.9
    (tmp_path / "Dockerfile").write_text(
        "FROM nvcr.io/nvidia/pytorch:25.04-py3 AS app\n"
        "RUN pip install --no-deps sentencepiece==0.2.0\n"
        "\n"
        "FROM nvidia/cuda:12.8.1-devel-ubuntu24.04 AS tool\n"
        "RUN nvcc -o /out/tool tool.cu\n"
        "\n"
        "FROM app\n"
        "COPY --from=tool /out/tool /usr/local/bin/tool\n"
    )
    found = _findings(tmp_path / "Dockerfile")
    assert _levels(found, "G1-cuda12-base") == [(1, "WARN"), (4, "FAIL")]
    assert "sm_121" in next(f["message"] for f in found if f["status"] == "WARN")


def test_a_cuda12_index_and_the_torch_it_serves_are_one_finding_at_the_index(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text(
        "--extra-index-url https://download.pytorch.org/whl/cu128\n"
        "\n"
        "torch>=2.9.0\n"
        "einops==0.8.1\n"
    )
    found = [f for f in _findings(tmp_path / "requirements.txt") if f["status"] == "FAIL"]
    assert [(f["rule"], f["location"]["line"]) for f in found] == [("G1-cuda12-index", 1)]
    assert found[0]["evidence"]["lines"] == [3] and "torch on line 3 is its CUDA 12 build" in found[0]["message"]


def test_one_cuda_version_gets_one_level_from_a_from_line_and_from_an_image_config(tmp_path: Path) -> None:
    """CUDA 12.9 (the first toolkit that compiles for sm_121) is a WARN and 12.8 a FAIL, whether the CUDA is read
    from a FROM line's tag (G1-cuda12-base) or from an image's config (G1-image-cuda)."""
    from registry_fixtures import Layer, config_for, tar_of, write_oci_layout

    for cuda, level in (("12.9.1", "WARN"), ("12.8.1", "FAIL")):
        dockerfile = tmp_path / f"Dockerfile.{cuda}"
        dockerfile.write_text(f"FROM nvidia/cuda:{cuda}-devel-ubuntu24.04\nRUN nvcc -o /usr/local/bin/app app.cu\n")
        assert _levels(_findings(dockerfile), "G1-cuda12-base") == [(1, level)]
        layout = tmp_path / f"layout-{cuda}"
        write_oci_layout(layout, config_for("arm64", [f"CUDA_VERSION={cuda}", "PATH=/usr/local/cuda/bin:/usr/bin"]),
                         [Layer(tar_of({"etc/os-release": b"ID=ubuntu\nVERSION_ID=24.04\n"}))], "app")
        done = run_envcheck("image", f"oci-layout:{layout}:app", "-f", "json", "--no-progress", "--fail-on", "never",
                            env={"ENVCHECK_CACHE_DIR": str(tmp_path / "cache")})
        found = [f for t in json.loads(done.stdout)["targets"] for f in t["findings"] if f["rule"] == "G1-image-cuda"]
        assert [f["status"] for f in found] == [level], done.stderr
        assert ("sm_121" in found[0]["message"]) is (level == "WARN")


def test_a_cuda12_devel_base_whose_only_cuda_code_is_a_cuda13_torch_is_info(tmp_path: Path) -> None:
    """nvidia/cuda:12.6.3-devel with `pip install numpy torch` (PyPI's newest aarch64 torch is a CUDA 13 build with its
    own CUDA libraries) and nothing compiled: the base's CUDA 12 parts stay unused (INFO); a compiler run or another
    GPU package in the stage keeps the WARN."""
    path = tmp_path / "Dockerfile"
    head = "FROM nvidia/cuda:12.6.3-devel-ubuntu24.04\nRUN pip install --break-system-packages numpy torch\n"
    path.write_text(head + 'CMD ["python3", "smoke.py"]\n', encoding="utf-8")
    assert _levels(_findings(path), "G1-cuda12-base") == [(1, "INFO")]
    path.write_text(head + "RUN nvcc -o k k.cu\n", encoding="utf-8")
    assert _levels(_findings(path), "G1-cuda12-base") == [(1, "WARN")]
    path.write_text(head + "RUN pip install --break-system-packages cupy-cuda12x\n", encoding="utf-8")
    assert [lvl for _, lvl in _levels(_findings(path), "G1-cuda12-base")] == ["WARN"]
