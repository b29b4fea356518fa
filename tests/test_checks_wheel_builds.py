"""G1 from knowledge/wheels.toml, offline: what PyPI's linux/aarch64 wheels of vLLM and CTranslate2 carry."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_envcheck


def _ids(path: Path) -> dict[str, str]:
    proc = run_envcheck("--format", "json", "--fail-on", "never", str(path))
    assert proc.returncode == 0, proc.stderr
    return {f["rule"]: f["status"] for t in json.loads(proc.stdout)["targets"] for f in t["findings"]}


def test_a_vllm_range_is_judged_by_the_newest_release_it_allows(tmp_path: Path) -> None:
    req = tmp_path / "requirements.txt"
    req.write_text("vllm>=0.11,<0.12\n", encoding="utf-8")
    assert _ids(req).get("G1-pypi-vllm-cuda12") == "FAIL"
    req.write_text("vllm>=0.20\n", encoding="utf-8")
    assert _ids(req).get("G1-pypi-vllm-cuda12") == "PASS"


def test_vllm_from_another_index_is_not_pypis_build(tmp_path: Path) -> None:
    req = tmp_path / "requirements.txt"
    req.write_text("--extra-index-url https://wheels.vllm.ai/0.11.2/cu130\nvllm==0.11.2\n", encoding="utf-8")
    assert "G1-pypi-vllm-cuda12" not in _ids(req)


def test_a_cpu_only_aarch64_wheel_is_no_finding_outside_a_gpu_project(tmp_path: Path) -> None:
    req = tmp_path / "requirements.txt"
    req.write_text("ctranslate2==4.8.5\nsentencepiece\n", encoding="utf-8")
    assert "G1-aarch64-wheel-without-cuda" not in _ids(req)
    req.write_text("ctranslate2==4.8.5\nnvidia-cublas==13.1.1.3\n", encoding="utf-8")
    assert _ids(req).get("G1-aarch64-wheel-without-cuda") == "WARN"


def _g1(path: Path) -> list[dict[str, object]]:
    proc = run_envcheck("--format", "json", "--fail-on", "never", str(path))
    assert proc.returncode == 0, proc.stderr
    return [f for t in json.loads(proc.stdout)["targets"] for f in t["findings"] if f["gotcha"] == "G1" and f["status"] != "PASS"]


_PROJECT = '[project]\nname = "p"\nversion = "1"\ndependencies = ["numpy==2.2.6"]\n\n[project.optional-dependencies]\n'


def test_pypis_cuda12_vllm_in_an_opt_in_extra_is_a_warn_naming_the_extra(tmp_path: Path) -> None:
    project = tmp_path / "pyproject.toml"
    project.write_text(_PROJECT + 'serve = ["vllm==0.14.0"]\n', encoding="utf-8")
    found = [f for f in _g1(project) if f["rule"] == "G1-pypi-vllm-cuda12"]
    assert [(f["status"], f["location"]["line"]) for f in found] == [("WARN", 7)]
    assert "with extra 'serve' (opt-in): vllm 0.14.0 from PyPI" in str(found[0]["message"])
    project.write_text(_PROJECT.replace('"numpy==2.2.6"', '"numpy==2.2.6", "vllm==0.14.0"') + 'serve = ["fastapi"]\n', encoding="utf-8")
    assert [f["status"] for f in _g1(project) if f["rule"] == "G1-pypi-vllm-cuda12"] == ["FAIL"]


def test_pypis_vllm_in_the_gpu_route_of_cpu_gpu_extras_fails_apart_from_its_index(tmp_path: Path) -> None:
    # the GPU extra's torch comes from the cu128 index, its vLLM from PyPI: two causes, two fixes
    project = tmp_path / "pyproject.toml"
    project.write_text(_PROJECT + 'cpu = ["torch==2.9.1"]\ngpu = ["torch==2.9.1", "vllm==0.15.0"]\n\n'
                       '[tool.uv]\nconflicts = [[{ extra = "cpu" }, { extra = "gpu" }]]\n\n'
                       '[tool.uv.sources]\ntorch = [\n  { index = "torch-cpu", extra = "cpu" },\n  { index = "torch-cu128", extra = "gpu" },\n]\n\n'
                       '[[tool.uv.index]]\nname = "torch-cpu"\nurl = "https://download.pytorch.org/whl/cpu"\nexplicit = true\n\n'
                       '[[tool.uv.index]]\nname = "torch-cu128"\nurl = "https://download.pytorch.org/whl/cu128"\nexplicit = true\n',
                       encoding="utf-8")
    found = {f["rule"]: f for f in _g1(project) if f["status"] == "FAIL"}
    assert found["G1-pypi-vllm-cuda12"]["location"]["line"] == 8
    assert "the project's GPU build" in str(found["G1-pypi-vllm-cuda12"]["message"])
    assert len(found) == 2, found  # the cu128 index binding is the other cause


def test_a_cuda12_vllm_extra_beside_another_engines_clean_extra_is_info(tmp_path: Path) -> None:
    project = tmp_path / "pyproject.toml"
    project.write_text(_PROJECT + 'gpu = ["sglang==0.5.12"]\nvllm = ["vllm==0.14.0"]\n', encoding="utf-8")
    found = [f for f in _g1(project) if f["rule"] == "G1-pypi-vllm-cuda12"]
    assert [f["status"] for f in found] == ["INFO"]
    assert "the project offers extra 'gpu' instead" in str(found[0]["message"])


def test_a_cu130_extra_with_vllms_cu130_index_and_pypis_torchaudio_is_clean(tmp_path: Path) -> None:
    # the cu130 extra is a CUDA 13 stack (torchaudio from PyPI beside it is no CUDA 12 cause); the cu128 one is older
    project = tmp_path / "pyproject.toml"
    project.write_text(_PROJECT + 'cu128 = ["torch==2.9.0", "vllm==0.12.0"]\ncu130 = ["torch==2.9.0", "torchaudio==2.9.0", "vllm"]\n\n'
                       '[tool.uv]\nconflicts = [[{ extra = "cu128" }, { extra = "cu130" }]]\n\n'
                       '[tool.uv.sources]\ntorch = [\n  { index = "torch-cu128", extra = "cu128" },\n  { url = "https://download.pytorch.org/whl/cu130/'
                       'torch-2.9.0%2Bcu130-cp312-cp312-manylinux_2_28_aarch64.whl", extra = "cu130" },\n]\n'
                       'vllm = [{ index = "vllm-cu130", extra = "cu130" }]\n\n'
                       '[[tool.uv.index]]\nname = "torch-cu128"\nurl = "https://download.pytorch.org/whl/cu128"\nexplicit = true\n\n'
                       '[[tool.uv.index]]\nname = "vllm-cu130"\nurl = "https://wheels.vllm.ai/0.13.0/cu130"\nexplicit = true\n',
                       encoding="utf-8")
    found = _g1(project)
    assert not [f for f in found if f["status"] in ("WARN", "FAIL")], found
    assert [(f["status"], f["location"]["line"]) for f in found if f["rule"] == "G1-pypi-vllm-cuda12"] == [("INFO", 7)]
    # a CUDA 13 vLLM from PyPI instead: torchaudio is judged from PyPI, and vLLM's pin of it is no cause in an extra
    project.write_text(project.read_text(encoding="utf-8").replace('"vllm"]', '"vllm==0.20.0"]').replace('vllm = [{ index', '# [{ index'),
                       encoding="utf-8")
    found = _g1(project)
    assert not [f for f in found if f["status"] in ("WARN", "FAIL")], found


def test_an_unpinned_torch_is_judged_by_the_newest_recorded_release_with_its_date(tmp_path: Path) -> None:
    from envcheck.knowledge import wheels

    req = tmp_path / "requirements.txt"
    req.write_text("torch\n", encoding="utf-8")
    proc = run_envcheck("--format", "json", "--fail-on", "never", str(req))
    found = [f for t in json.loads(proc.stdout)["targets"] for f in t["findings"] if f["rule"] == "G1-torch-build"]
    newest = wheels.release("torch")
    assert newest is not None and found
    assert f"torch {newest.version} on aarch64" in found[0]["message"] and newest.checked in found[0]["message"]


def test_a_lock_with_cu130_torch_and_pypis_vllm_names_the_cuda12_vllm(tmp_path: Path) -> None:
    """uv.lock: torch from the cu130 index, vLLM from PyPI (issue 32: only --resolve used to see it, without a line)."""
    lock = tmp_path / "uv.lock"
    zeros, ones = "0" * 64, "1" * 64
    lock.write_text(
        'version = 1\nrequires-python = ">=3.12"\n\n[[package]]\nname = "p"\nversion = "1"\nsource = { virtual = "." }\n'
        'dependencies = [{ name = "torch" }, { name = "vllm" }]\n\n'
        '[[package]]\nname = "torch"\nversion = "2.9.0+cu130"\nsource = { registry = "https://download.pytorch.org/whl/cu130" }\n'
        'wheels = [{ url = "https://download.pytorch.org/whl/cu130/torch-2.9.0%2Bcu130-cp312-cp312-manylinux_2_28_aarch64.whl", '
        f'hash = "sha256:{zeros}" }}]\n\n'
        '[[package]]\nname = "vllm"\nversion = "0.11.2"\nsource = { registry = "https://pypi.org/simple" }\n'
        'wheels = [{ url = "https://files.pythonhosted.org/packages/x/vllm-0.11.2-cp38-abi3-manylinux2014_aarch64.whl", '
        f'hash = "sha256:{ones}" }}]\n', encoding="utf-8")
    proc = run_envcheck("--format", "json", "--fail-on", "never", str(lock))
    found = [f for t in json.loads(proc.stdout)["targets"] for f in t["findings"] if f["rule"] == "G1-pypi-vllm-cuda12"]
    assert [f["status"] for f in found] == ["FAIL"] and found[0]["location"]["line"] == 17


def test_pypis_cpu_only_aarch64_torchvision_next_to_a_cuda_torch_is_warn(tmp_path: Path) -> None:
    req = tmp_path / "requirements.txt"
    wheel = "https://download.pytorch.org/whl/cu130/torch-2.9.0%2Bcu130-cp312-cp312-manylinux_2_28_aarch64.whl"
    req.write_text(f"torch @ {wheel}\ntorchvision==0.24.0\n", encoding="utf-8")
    assert _ids(req).get("G1-aarch64-wheel-without-cuda") == "WARN"
    # from the cu130 index as well: its own CUDA build; next to PyPI's CPU-only torch: that torch is the one finding
    req.write_text("--extra-index-url https://download.pytorch.org/whl/cu130\ntorch==2.9.0+cu130\ntorchvision==0.24.0\n", encoding="utf-8")
    assert "G1-aarch64-wheel-without-cuda" not in _ids(req)
    req.write_text("torch==2.9.0\ntorchvision==0.24.0\n", encoding="utf-8")
    found = _ids(req)
    assert found.get("G1-cpu-build") == "WARN" and "G1-aarch64-wheel-without-cuda" not in found


def test_a_release_pinning_a_cpu_only_aarch64_torch_is_warn_when_no_torch_of_the_input_holds_pip_back(
        tmp_path: Path) -> None:
    """torchvision==0.22.1 requires torch==2.7.1, PyPI's CPU-only aarch64 build: pip installs it (eleventh corpus batch)."""
    req = tmp_path / "requirements.txt"
    req.write_text("accelerate==1.9.0\ntorchvision==0.22.1\npeft==0.17.0\n", encoding="utf-8")
    proc = run_envcheck("--format", "json", "--fail-on", "never", str(req))
    (found,) = [f for t in json.loads(proc.stdout)["targets"] for f in t["findings"]
                if f["rule"] == "G1-aarch64-wheel-without-cuda"]
    assert (found["status"], found["location"]["line"]) == ("WARN", 2)
    assert "torch==2.7.1" in found["message"] and "torch >= 2.11" in found["fix"]
    req.write_text("torchaudio==2.7.1\n", encoding="utf-8")
    assert _ids(req).get("G1-aarch64-wheel-without-cuda") == "WARN"
    # torch pinned by the input itself: its own build is G1-cpu-build's (one cause, one finding)
    req.write_text("torch==2.7.1\ntorchvision==0.22.1\n", encoding="utf-8")
    assert "G1-aarch64-wheel-without-cuda" not in _ids(req) and _ids(req).get("G1-cpu-build") == "WARN"
    # a torchvision paired with a CUDA 13 PyPI torch is clean
    req.write_text("torchvision==0.26.0\n", encoding="utf-8")
    assert "G1-aarch64-wheel-without-cuda" not in _ids(req)
    # any recorded release that pins torch exactly: audiocraft 1.3.0 pins torch==2.1.0
    req.write_text("audiocraft==1.3.0\n", encoding="utf-8")
    assert _ids(req).get("G1-aarch64-wheel-without-cuda") == "WARN"
    # a torch requirement that excludes the pinned torch is a conflict, not this finding; a bare torch gives way
    req.write_text("torch>=2.11\ntorchvision==0.22.1\n", encoding="utf-8")
    assert "G1-aarch64-wheel-without-cuda" not in _ids(req)
    req.write_text("torch\ntorchvision==0.22.1\n", encoding="utf-8")
    assert _ids(req).get("G1-aarch64-wheel-without-cuda") == "WARN"


def test_a_local_version_is_never_pypis_build(tmp_path: Path) -> None:
    """A uv export names torchvision==0.25.0+cu130 without its index line: PyPI serves no local versions."""
    req = tmp_path / "requirements.txt"
    req.write_text("torch==2.10.0+cu130\ntorchvision==0.25.0+cu130\ntorchaudio==2.10.0+cu130\n", encoding="utf-8")
    assert "G1-aarch64-wheel-without-cuda" not in _ids(req)


def test_an_unpinned_vllm_next_to_a_pinned_torch_is_the_release_that_accepts_it(tmp_path: Path) -> None:
    """torch==2.10.0+cu130 and a bare vllm: the resolver backtracks to vLLM 0.19.1 (torch==2.10.0), a CUDA 12 build."""
    req = tmp_path / "requirements.txt"
    req.write_text("torch==2.10.0+cu130\nvllm\n", encoding="utf-8")
    proc = run_envcheck("--format", "json", "--fail-on", "never", str(req))
    found = [f for t in json.loads(proc.stdout)["targets"] for f in t["findings"] if f["rule"] == "G1-pypi-vllm-cuda12"]
    assert [f["status"] for f in found] == ["FAIL"] and "vllm 0.19.1" in found[0]["message"]
    req.write_text("torch==2.14.0\nvllm\n", encoding="utf-8")
    assert _ids(req).get("G1-pypi-vllm-cuda12") == "PASS"


def test_a_torch_installed_by_an_earlier_run_does_not_hold_pip_back(tmp_path: Path) -> None:
    """In a Dockerfile only the same command is one resolution: a later `pip install vllm` takes the newest vLLM."""
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text("FROM nvidia/cuda:13.0.1-devel-ubuntu24.04\n"
                          "RUN pip install torch==2.10.0 --index-url https://download.pytorch.org/whl/cu130\n"
                          "RUN pip install vllm\n", encoding="utf-8")
    assert _ids(dockerfile).get("G1-pypi-vllm-cuda12") == "PASS"
    dockerfile.write_text("FROM nvidia/cuda:13.0.1-devel-ubuntu24.04\n"
                          "RUN pip install torch==2.10.0+cu130 vllm --extra-index-url https://download.pytorch.org/whl/cu130\n",
                          encoding="utf-8")
    assert _ids(dockerfile).get("G1-pypi-vllm-cuda12") == "FAIL"


SPARK_PROJECT = '''[project]
name = "trainer"
version = "0.1"
requires-python = "==3.12.*"
dependencies = [
    "torch>=2.10.0",
    "vllm>=0.19.1; platform_system != 'Darwin'",
]

[dependency-groups]
cuda13 = ["vllm>=0.19.1; platform_machine == 'x86_64'"]

[tool.uv.sources]
torch = [{ index = "pytorch-cu130", marker = "platform_machine == 'aarch64'" }]
vllm = [{ index = "vllm-cu130", group = "cuda13" }]

[[tool.uv.index]]
name = "pytorch-cu130"
url = "https://download.pytorch.org/whl/cu130"
explicit = true

[[tool.uv.index]]
name = "vllm-cu130"
url = "https://wheels.vllm.ai/0.19.1/cu130"
explicit = true
'''

SPARK_PROJECT_LOCK = '''version = 1
revision = 3
requires-python = "==3.12.*"

[[package]]
name = "trainer"
version = "0.1"
source = {{ editable = "." }}
dependencies = [{{ name = "torch" }}, {{ name = "vllm", marker = "sys_platform != 'darwin'" }}]

[[package]]
name = "torch"
version = "2.10.0+cu130"
source = {{ registry = "https://download.pytorch.org/whl/cu130" }}

[[package]]
name = "vllm"
version = "{vllm}"
source = {{ registry = "https://pypi.org/simple" }}
'''


def test_a_uv_project_is_judged_at_the_versions_its_lock_holds(tmp_path: Path) -> None:
    """The cu130 vLLM source is bound to an x86_64-only group: on linux/aarch64 vLLM comes from PyPI, and uv sync
    installs the version uv.lock holds (0.19.1, a CUDA 12 build), not the newest the range allows."""
    project = tmp_path / "pyproject.toml"
    project.write_text(SPARK_PROJECT, encoding="utf-8")

    def vllm(path: Path) -> list[tuple[str, int, str]]:
        proc = run_envcheck("--format", "json", "--fail-on", "never", str(path))
        return [(f["status"], f["location"]["line"], f["message"]) for t in json.loads(proc.stdout)["targets"]
                for f in t["findings"] if f["rule"] == "G1-pypi-vllm-cuda12"]

    # alone, the range resolves to the newest release on PyPI, a CUDA 13 build on linux/aarch64
    (alone,) = vllm(project)
    assert alone[:2] == ("PASS", 7)
    (tmp_path / "uv.lock").write_text(SPARK_PROJECT_LOCK.format(vllm="0.19.1"), encoding="utf-8")
    (locked,) = vllm(project)
    assert locked[:2] == ("FAIL", 7) and "vllm 0.19.1 (>=0.19.1: the version the project's uv.lock holds)" in locked[2]
    # a lock the range no longer allows is out of date: uv sync locks again, so the range is judged as written
    project.write_text(SPARK_PROJECT.replace("vllm>=0.19.1; platform_system", "vllm>=0.20; platform_system"), encoding="utf-8")
    assert [f[:2] for f in vllm(project)] == [("PASS", 7)]
    # a build that copies only pyproject.toml and runs pip install . resolves afresh: the lock beside it is not read
    project.write_text(SPARK_PROJECT, encoding="utf-8")
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text("FROM nvcr.io/nvidia/pytorch:25.11-py3\nWORKDIR /app\nCOPY pyproject.toml .\nRUN pip install .\n",
                          encoding="utf-8")
    assert [f[0] for f in vllm(dockerfile)] == ["PASS"]


def test_a_group_uv_sync_installs_by_default_takes_the_lock_versions_of_that_group(tmp_path: Path) -> None:
    # uv.lock does not record tool.uv.default-groups: the lock places the group in its own scope
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "server"\nversion = "0.1"\ndependencies = []\n\n'
        '[dependency-groups]\nserve = ["vllm>=0.19.1"]\n\n[tool.uv]\ndefault-groups = ["serve"]\n', encoding="utf-8")
    (tmp_path / "uv.lock").write_text(
        'version = 1\nrevision = 3\nrequires-python = ">=3.12"\n\n'
        '[[package]]\nname = "server"\nversion = "0.1"\nsource = { editable = "." }\n\n'
        '[package.dev-dependencies]\nserve = [{ name = "vllm" }]\n\n'
        '[[package]]\nname = "vllm"\nversion = "0.19.1"\nsource = { registry = "https://pypi.org/simple" }\n', encoding="utf-8")
    proc = run_envcheck("--format", "json", "--fail-on", "never", str(tmp_path / "pyproject.toml"))
    found = [(f["status"], f["location"]["line"]) for t in json.loads(proc.stdout)["targets"] for f in t["findings"]
             if f["rule"] == "G1-pypi-vllm-cuda12"]
    assert found == [("FAIL", 7)]


def test_a_pin_older_than_the_recorded_releases_gets_the_fact_they_all_share_as_inferred(tmp_path: Path) -> None:
    """wheels.toml records only recent releases; every recorded ctranslate2 has a CPU-only aarch64 wheel, so an older
    pin is judged the same way, said to be inferred; a pin newer than the table is an INFO with the table's day."""
    from envcheck.knowledge import wheels

    first, newest = wheels.releases("ctranslate2")[0], wheels.release("ctranslate2")
    assert first is not None and newest is not None
    req = tmp_path / "requirements.txt"
    req.write_text("ctranslate2==4.5.0\ntorch==2.11.0\n", encoding="utf-8")
    proc = run_envcheck("--format", "json", "--fail-on", "never", str(req))
    found = [f for t in json.loads(proc.stdout)["targets"] for f in t["findings"] if f["rule"] == "G1-aarch64-wheel-without-cuda"]
    assert [f["status"] for f in found] == ["WARN"] and "inferred" in found[0]["message"]
    assert f"{first.version}..{newest.version}" in found[0]["message"]
    req.write_text("ctranslate2>=4.0,<4.6\ntorch==2.11.0\n", encoding="utf-8")  # the newest release allowed is older too
    assert _ids(req).get("G1-aarch64-wheel-without-cuda") == "WARN"
    req.write_text("ctranslate2==99.0.0\ntorch==2.11.0\n", encoding="utf-8")
    proc = run_envcheck("--format", "json", "--fail-on", "never", str(req))
    found = [f for t in json.loads(proc.stdout)["targets"] for f in t["findings"] if f["rule"] == "G1-aarch64-wheel-without-cuda"]
    assert [f["status"] for f in found] == ["INFO"] and newest.checked in found[0]["message"] and "--resolve" in found[0]["message"]
    # vLLM's recorded releases do not share one CUDA major: an older vLLM is not judged from them
    req.write_text("vllm==0.9.2\n", encoding="utf-8")
    assert "G1-pypi-vllm-cuda12" not in _ids(req)


def test_a_pin_of_a_version_the_index_never_served_fails_wherever_it_is_written(tmp_path: Path) -> None:
    """The recorded release history (wheels.toml [[served]]) judges exact PyPI pins in requirements, pyproject and
    Dockerfile/shell pip lines alike; a pin newer than the history is an INFO with its day."""
    from envcheck.knowledge import wheels

    listed = wheels.served("vllm")
    assert listed is not None and not listed.has("0.11.5") and listed.has("0.11.2")
    files = {
        "requirements.txt": "torch==2.11.0\nvllm==0.11.5\n",
        "pyproject.toml": '[project]\nname = "p"\nversion = "1"\ndependencies = ["torch==2.11.0", "vllm==0.11.5"]\n',
        "Dockerfile": "FROM nvcr.io/nvidia/cuda:13.0.1-devel-ubuntu24.04\nRUN pip install torch==2.11.0 vllm==0.11.5\n",
        "setup.sh": "#!/bin/bash\npip install torch==2.11.0\npip install vllm==0.11.5\n",
    }
    for name, text in files.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        proc = run_envcheck("--format", "json", "--fail-on", "never", str(path))
        found = [f for t in json.loads(proc.stdout)["targets"] for f in t["findings"] if f["rule"] == "G9-version-not-served"]
        assert [f["status"] for f in found if f["status"] != "PASS"] == ["FAIL"], (name, found)
        line = next(i for i, text_line in enumerate(text.splitlines(), 1) if "vllm==0.11.5" in text_line)
        assert listed.checked in found[0]["message"] and found[0]["location"]["line"] == line, (name, found)
        path.write_text(text.replace("0.11.5", "0.11.2"), encoding="utf-8")
        assert _ids(path).get("G9-version-not-served") == "PASS", name
        path.unlink()
    req = tmp_path / "requirements.txt"
    req.write_text("vllm==0.99.0rc7\n", encoding="utf-8")
    proc = run_envcheck("--format", "json", "--fail-on", "never", str(req))
    found = [f for t in json.loads(proc.stdout)["targets"] for f in t["findings"] if f["rule"] == "G9-version-not-served"]
    assert [f["status"] for f in found] == ["INFO"] and listed.checked in found[0]["message"]


def test_a_cu130_torch_is_clean_with_an_info_naming_its_arch_list(tmp_path: Path) -> None:
    """PyTorch's cu130 aarch64 wheels carry sm_120 SASS (runs on sm_121) and no sm_121 SASS; nothing in the facts sets
    2.9.0+cu130 apart from later releases (knowledge/torch_builds.toml), so a correct CUDA 13 project stays clean."""
    from envcheck import knowledge

    arch_list = knowledge.load("torch_builds")["pytorch_index"]["cu130_aarch64_arch_list"]
    req = tmp_path / "requirements.txt"
    for torch in ("2.9.0+cu130", "2.10.0+cu130"):
        req.write_text(f"--extra-index-url https://download.pytorch.org/whl/cu130\ntorch=={torch}\n", encoding="utf-8")
        proc = run_envcheck("--format", "json", "--fail-on", "warn", str(req))
        assert proc.returncode == 0, proc.stdout
        found = [f for t in json.loads(proc.stdout)["targets"] for f in t["findings"] if f["rule"] == "G7-cu130-torch-arch"]
        assert [f["status"] for f in found] == ["INFO"] and arch_list in found[0]["message"] and "sm_120" in found[0]["message"]
    req.write_text("--extra-index-url https://download.pytorch.org/whl/cu128\ntorch==2.9.0+cu128\n", encoding="utf-8")
    assert "G7-cu130-torch-arch" not in _ids(req)


def test_a_pin_whose_release_has_only_a_source_archive_for_aarch64_is_a_source_build(tmp_path: Path) -> None:
    """vLLM 0.10.1 shipped CUDA wheels for x86_64 and only its sdist for aarch64 (knowledge/wheels.toml): pinned,
    in a requirements file or a Dockerfile, pip compiles it on the Spark; a range that reaches wheels does not."""
    req = tmp_path / "requirements.txt"
    req.write_text("vllm==0.10.1\n", encoding="utf-8")
    assert _ids(req).get("ARCH-no-aarch64-wheel") == "WARN"
    req.write_text("vllm>=0.10.1\n", encoding="utf-8")
    assert "ARCH-no-aarch64-wheel" not in _ids(req)
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text("FROM nvcr.io/nvidia/pytorch:25.11-py3\nRUN pip install vllm==0.10.1\n", encoding="utf-8")
    assert _ids(dockerfile).get("ARCH-no-aarch64-wheel") == "WARN"


def test_a_package_bound_to_the_pytorch_wheel_index_without_an_aarch64_wheel_cannot_install(tmp_path: Path) -> None:
    """xformers bound by uv sources to download.pytorch.org/whl/cu128, which holds wheels only: no aarch64 wheel
    and no source archive to build, so the install fails (FAIL); from PyPI it is a source build (WARN)."""
    project = tmp_path / "pyproject.toml"
    body = """[project]
name = "p"
version = "0"
dependencies = ["xformers==0.0.33.post2"]
{sources}
[[tool.uv.index]]
name = "pytorch-cu128"
url = "https://download.pytorch.org/whl/cu128"
explicit = true
"""
    project.write_text(body.format(sources='[tool.uv.sources]\nxformers = { index = "pytorch-cu128" }\n'), encoding="utf-8")
    proc = run_envcheck("-f", "json", "--fail-on", "never", str(project))
    (found,) = [f for t in json.loads(proc.stdout)["targets"] for f in t["findings"] if f["rule"] == "ARCH-no-aarch64-wheel"]
    assert found["status"] == "FAIL" and found["location"]["line"] == 4, found
    assert "no source archives" in found["message"] and "platform_machine == 'x86_64'" in found["fix"], found
    project.write_text(body.format(sources=""), encoding="utf-8")
    assert _ids(project).get("ARCH-no-aarch64-wheel") == "WARN"


def test_the_no_aarch64_wheel_fix_fits_the_package(tmp_path: Path) -> None:
    """ARCH-no-aarch64-wheel's fix names PyTorch SDPA only for xformers; a vLLM pin of x86_64-only releases is told
    the first release with a CUDA 13 aarch64 wheel (knowledge/wheels.toml), not an attention hint."""
    req = tmp_path / "requirements.txt"
    req.write_text("vllm==0.10.1\nxformers==0.0.32\n", encoding="utf-8")
    proc = run_envcheck("-f", "json", "--fail-on", "never", str(req))
    fixes = {f["evidence"]["package"]: f["fix"] for t in json.loads(proc.stdout)["targets"] for f in t["findings"]
             if f["rule"] == "ARCH-no-aarch64-wheel"}
    assert set(fixes) == {"vllm", "xformers"}, fixes
    assert "SDPA" in fixes["xformers"] and "SDPA" not in fixes["vllm"], fixes
    assert fixes["vllm"].startswith("Pin a release that ships a linux/aarch64 CUDA 13 wheel (vllm 0.20.0 is the first)"), fixes


DECORD_LOCK = '''version = 1
revision = 3
requires-python = ">=3.10"

[[package]]
name = "app"
version = "0.1.0"
source = { virtual = "." }
dependencies = [
    { name = "decord" },
]

[package.metadata]
requires-dist = [{ name = "decord", specifier = ">=0.6.0" }]

[[package]]
name = "decord"
version = "0.6.0"
source = { registry = "https://pypi.org/simple" }
wheels = [
    { url = "https://files.pythonhosted.org/packages/11/79/936af42edf90a7bd4e41a6cac89c913d4b47fa48a26b042d5129a9242ee3/decord-0.6.0-py3-none-manylinux2010_x86_64.whl", hash = "sha256:51997f20be8958e23b7c4061ba45d0efcd86bffd5fe81c695d0befee0d442976", size = 13602299 },
]
'''


def test_a_package_no_release_of_which_installs_on_aarch64_fails_by_name(tmp_path: Path) -> None:
    """decord publishes x86_64, macOS and Windows wheels and no sdist in any release (knowledge/wheels.toml): by name
    from PyPI, in a requirements file or a pyproject whose uv.lock takes it from https://pypi.org/simple, pip and uv
    cannot install it on a Spark (ARCH-wheel-platform), and the fix says no release has a file to pin."""
    req = tmp_path / "requirements.txt"
    req.write_text("decord>=0.6.0\n", encoding="utf-8")
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "app"\nversion = "0.1.0"\ndependencies = [\n  "decord>=0.6.0",\n]\n',
                                            encoding="utf-8")
    (project / "uv.lock").write_text(DECORD_LOCK, encoding="utf-8")
    for path, line in ((req, 1), (project / "pyproject.toml", 5)):
        proc = run_envcheck("-f", "json", "--fail-on", "never", str(path))
        found = [f for t in json.loads(proc.stdout)["targets"] for f in t["findings"]
                 if f["rule"] == "ARCH-wheel-platform" and f["status"] == "FAIL"]
        assert [(f["evidence"].get("package"), f["location"]["line"]) for f in found] == [("decord", line)], (path, found)
        assert found[0]["fix"].startswith("No recorded release of decord publishes a linux/aarch64 file"), found
