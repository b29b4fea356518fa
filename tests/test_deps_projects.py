"""pyproject.toml and uv.lock as uv reads them: extras and dependency groups judged in their own scope,
uv's index configuration, and the lock's dependency graph followed through extras."""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from pathlib import Path

import pytest
from conftest import REPO, run_envcheck
from packaging.markers import Marker

from envcheck.inspect.markers import negated, with_extras
from envcheck.sources import ReadOptions, locks, pyproject

EXTRAS = REPO / "examples" / "project-uv-extras" / "pyproject.toml"
CHAIN = REPO / "examples" / "project-uv-extra-chain"
OPTS = ReadOptions()


def _report(*paths: Path | str) -> dict:
    proc = run_envcheck("--format", "json", "--fail-on", "never", *map(str, paths))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _findings(report: dict, status: tuple[str, ...] = ("WARN", "FAIL", "ERROR")) -> list[dict]:
    return [f for t in report["targets"] for f in t["findings"] if f["status"] in status]


def _write(tmp: Path, name: str, text: str) -> Path:
    path = tmp / name
    path.write_text(text, encoding="utf-8")
    return path


def test_extras_are_opt_in_scopes_named_in_their_findings() -> None:
    report = _report(EXTRAS)
    bad = _findings(report)
    # the default install (transformers, peft, the dev group) is fine: nothing fails the file
    assert bad and all(f["status"] == "WARN" for f in bad)
    by_line = {(f["rule"], f["location"]["line"]): f for f in _findings(report, ("WARN", "FAIL", "INFO"))}
    # each extra's torch on its own line, each finding naming its extra; the cpu and cu128 extras are
    # alternatives to the cu130 one (a Spark user installs that): INFO, naming it
    assert "extra 'cpu'" in by_line[("G1-cpu-build", 10)]["message"] and by_line[("G1-cpu-build", 10)]["status"] == "INFO"
    assert "extra 'cu128'" in by_line[("G1-cuda12-local-version", 11)]["message"]
    assert by_line[("G1-cuda12-local-version", 11)]["evidence"]["scope"] == ["extra 'cu128'"]
    assert by_line[("G1-cuda12-local-version", 11)]["status"] == "INFO" and "extra 'cu130'" in by_line[("G1-cuda12-local-version", 11)]["message"]
    # its cu128 index (line 35) and the +cu128 torch it serves are one cause: one finding, the index named in it
    assert ("G1-cuda12-index", 35) not in by_line and "pyproject.toml:35" in by_line[("G1-cuda12-local-version", 11)]["message"]
    assert "group 'bench'" in by_line[("G2-flash-attn-build", 16)]["message"] and by_line[("G2-flash-attn-build", 16)]["status"] == "WARN"
    # the cu130 extra is fine, and says so in its own scope
    passing = _findings(report, ("PASS",))
    assert any(f["rule"] == "G1-torch-build" and f["location"]["line"] == 12 and "extra 'cu130'" in f["message"] for f in passing)
    assert not [f for f in bad if f["location"]["line"] == 12]


def test_no_finding_is_reported_twice() -> None:
    report = _report(EXTRAS, CHAIN / "pyproject.toml", CHAIN / "uv.lock")
    keys = Counter((t["target"], f["rule"], json.dumps(f.get("location")), f["status"])
                   for t in report["targets"] for f in t["findings"] if f.get("location"))
    assert [k for k, n in keys.items() if n > 1] == []


def test_the_same_requirement_in_two_extras_gets_two_lines(tmp_path: Path) -> None:
    path = _write(tmp_path, "pyproject.toml", '[project]\nname = "x"\nversion = "0"\ndependencies = ["torch>=2.9"]\n'
                  '[project.optional-dependencies]\na = [\n  "torch>=2.9",\n]\nb = ["torch>=2.9"]\n'
                  '[dependency-groups]\nc = ["torch>=2.9", {include-group = "d"}]\nd = ["torch>=2.9"]\n')
    inv = pyproject.read(path, OPTS)
    placed = [(p.scope, p.location.line) for p in inv.packages]
    assert placed == [(None, 4), ("extra 'a'", 7), ("extra 'b'", 9), ("group 'c'", 11), ("group 'c'", 12), ("group 'd'", 12)]


def test_dev_group_is_part_of_the_default_install_unless_uv_says_otherwise(tmp_path: Path) -> None:
    text = '[project]\nname = "x"\nversion = "0"\n[dependency-groups]\ndev = ["flash-attn==2.7.4.post1"]\nlint = ["ruff"]\n'
    default = pyproject.read(_write(tmp_path, "pyproject.toml", text), OPTS)
    assert {p.name: p.scope for p in default.packages} == {"flash-attn": None, "ruff": "group 'lint'"}
    (tmp_path / "other").mkdir()
    chosen = pyproject.read(_write(tmp_path / "other", "pyproject.toml", text + '[tool.uv]\ndefault-groups = ["lint"]\n'), OPTS)
    assert {p.name: p.scope for p in chosen.packages} == {"flash-attn": "group 'dev'", "ruff": None}


def test_uvs_older_dev_dependencies_are_the_dev_group(tmp_path: Path) -> None:
    path = _write(tmp_path, "pyproject.toml", '[project]\nname = "x"\nversion = "0"\n[tool.uv]\n'
                  'dev-dependencies = ["torch==2.5.1+cu121"]\n')
    assert [(p.name, p.scope, p.location.line) for p in pyproject.read(path, OPTS).packages] == [("torch", None, 5)]


def test_a_projects_own_extras_bring_their_requirements(tmp_path: Path) -> None:
    path = _write(tmp_path, "pyproject.toml", '[project]\nname = "Spark_Proj"\nversion = "0"\n'
                  'dependencies = ["spark-proj[train]"]\n[project.optional-dependencies]\n'
                  'train = ["torch==2.5.1+cu121", "spark-proj[ui]"]\nui = ["gradio"]\nall = ["spark-proj[train]"]\n')
    inv = pyproject.read(path, OPTS)
    placed = sorted((p.name, p.scope or "") for p in inv.packages)
    assert ("torch", "") in placed and ("gradio", "") in placed  # the default install asks for its own [train]
    assert ("torch", "extra 'all'") in placed and ("gradio", "extra 'all'") in placed
    assert not [p for p in inv.packages if p.name == "spark-proj"]


def test_uv_sources_pick_the_index_by_marker_and_extra(tmp_path: Path) -> None:
    path = _write(tmp_path, "pyproject.toml", '''[project]
name = "x"
version = "0"
dependencies = ["torch==2.9.0", "torchvision==0.24.0"]
[project.optional-dependencies]
gpu = ["torch==2.9.0"]
[tool.uv.sources]
torch = [
  { index = "cu130", extra = "gpu" },
  { index = "cpu", marker = "sys_platform == 'darwin'" },
]
torchvision = { git = "https://github.com/pytorch/vision", tag = "v0.24.0" }
[[tool.uv.index]]
name = "cpu"
url = "https://download.pytorch.org/whl/cpu"
explicit = true
[[tool.uv.index]]
name = "cu130"
url = "https://download.pytorch.org/whl/cu130"
explicit = true
[tool.uv.pip]
extra-index-url = ["https://download.pytorch.org/whl/cu126"]
torch-backend = "cu128"
''')
    inv = pyproject.read(path, OPTS)
    torch = [(p.scope, p.marker, p.index) for p in inv.packages if p.name == "torch"]
    assert torch == [
        (None, "sys_platform == 'darwin'", "https://download.pytorch.org/whl/cpu"),
        (None, "sys_platform != 'darwin'", None),  # where no source's marker holds: the default indexes
        ("extra 'gpu'", None, "https://download.pytorch.org/whl/cu130"),
    ]
    vision = next(p for p in inv.packages if p.name == "torchvision")
    assert vision.url == "git+https://github.com/pytorch/vision@v0.24.0"
    indexes = {(i.option, i.url, i.explicit, i.location.line if i.location else None) for i in inv.indexes}
    assert ("extra-index-url", "https://download.pytorch.org/whl/cu126", False, 22) in indexes
    assert ("index-url", "uv-torch-backend:cu128", False, 23) in indexes
    report = _report(path)
    bad = {(f["rule"], f["status"], f["location"]["line"]) for f in _findings(report)}
    # the cu126 extra index and the cu128 backend apply to the whole install; the cpu index only on macOS
    assert ("G1-cuda12-index", "FAIL", 22) in bad and ("G1-cuda12-index", "FAIL", 23) in bad
    assert not [b for b in bad if b[2] == 15]


def test_a_source_naming_an_unknown_index_is_an_error_with_its_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "pyproject.toml", '[project]\nname = "x"\nversion = "0"\ndependencies = ["torch"]\n'
                  '[tool.uv.sources]\ntorch = { index = "nope" }\n')
    inv = pyproject.read(path, OPTS)
    assert [(p.message.split(",")[0], p.location.line) for p in inv.problems] == [("tool.uv.sources.torch names the index 'nope'", 6)]
    assert [p.name for p in inv.packages] == ["torch"]  # still judged, from the default indexes


def test_uv_lock_follows_extras_of_dependencies_and_hides_internal_markers() -> None:
    inv = locks.read(CHAIN / "uv.lock", OPTS)
    by = {(p.name, p.version): p for p in inv.packages}
    # transformers[torch] -> torch: installed by default, on aarch64 too
    torch = by[("torch", "2.9.0")]
    assert torch.scope is None and torch.marker is None
    assert by[("numpy", "1.26.4")].scope == "extra 'legacy'"
    assert by[("numpy", "2.2.0")].scope is None
    assert by[("six", "1.16.0")].scope == "group 'docs'"
    assert by[("pytest", "8.3.0")].scope is None  # uv sync installs the dev group
    report = _report(CHAIN / "uv.lock")
    text = json.dumps(report)
    assert not re.search(r"'(extra|group)-\d+-", text) and "python_version < '0'" not in text
    bad = _findings(report)
    assert [(f["rule"], f["status"], f["location"]["line"]) for f in bad if f["rule"].startswith("G1")] == [("G1-cpu-build", "WARN", 603)]


GPU_EXTRA_LOCK = '''version = 1
revision = 3
requires-python = ">=3.11"

[[package]]
name = "proj"
version = "0.1.0"
source = { virtual = "." }
dependencies = [{ name = "six" }]

[package.optional-dependencies]
gpu = [{ name = "torch", marker = "platform_machine == 'aarch64' and extra == 'extra-4-proj-gpu'" }]

[[package]]
name = "six"
version = "1.16.0"
source = { registry = "https://pypi.org/simple" }

[[package]]
name = "torch"
version = "2.5.1+cu121"
source = { registry = "https://download.pytorch.org/whl/cu121" }
'''


def test_uv_lock_reached_only_through_a_project_extra_is_opt_in(tmp_path: Path) -> None:
    lock = _write(tmp_path, "uv.lock", GPU_EXTRA_LOCK)
    inv = locks.read(lock, OPTS)
    torch = next(p for p in inv.packages if p.name == "torch")
    assert (torch.scope, torch.marker, torch.location.line) == ("extra 'gpu'", "platform_machine == 'aarch64'", 20)
    bad = _findings(_report(lock))
    # the cu12x index and the +cu12x torch it serves are one cause of the extra: one WARN
    assert [(f["rule"], f["status"]) for f in bad if f["gotcha"] == "G1"] == [("G1-cuda12-local-version", "WARN")]
    assert all("extra 'gpu'" in f["message"] for f in bad)


@pytest.mark.parametrize("marker", [
    "sys_platform == 'linux'",
    "sys_platform == 'linux' and platform_machine == 'aarch64'",
    "sys_platform == 'darwin' or platform_machine == 'x86_64' and python_version < '3.12'",
    "(sys_platform == 'win32' or python_version >= '3.12') and 'arm' in platform_machine",
])
def test_negated_marker_holds_exactly_where_the_marker_does_not(marker: str) -> None:
    opposite = negated(marker)
    assert opposite is not None
    for plat, machine, python in itertools.product(("linux", "darwin", "win32"), ("x86_64", "aarch64", "arm64"), ("3.11", "3.12")):
        env = {"sys_platform": plat, "platform_machine": machine, "python_version": python}
        assert Marker(marker).evaluate(env) != Marker(opposite).evaluate(env), env


def test_internal_extra_markers_are_decided_per_scope() -> None:
    conflict = "extra == 'extra-4-proj-new' or extra != 'extra-4-proj-old'"
    assert with_extras(conflict, frozenset()) is True
    assert with_extras(conflict, frozenset({"extra-4-proj-old"})) is False
    mixed = "platform_machine == 'aarch64' and extra == 'group-4-proj-a' or sys_platform == 'darwin'"
    assert with_extras(mixed, frozenset({"group-4-proj-a"})) == "platform_machine == 'aarch64' or sys_platform == 'darwin'"
    assert with_extras(mixed, frozenset()) == "sys_platform == 'darwin'"


def test_cuda12_distributions_name_their_cuda13_replacement(tmp_path: Path) -> None:
    req = _write(tmp_path, "requirements.txt", "cupy-cuda12x==13.3.0\nnvidia-cudnn-cu12==9.1.0.70\n"
                 "nvidia-cufft-cu12==11.0.2.54\nnvidia-cublas-cu12==12.1.3.1\n")
    proc = run_envcheck("--format", "json", str(req))
    fixes = {f["location"]["line"]: f["fix"] for f in json.loads(proc.stdout)["targets"][0]["findings"]
             if f["rule"] == "G1-cuda12-distribution" and f["status"] == "FAIL"}
    assert "with cupy-cuda13x" in fixes[1]
    assert "with nvidia-cudnn-cu13" in fixes[2]
    assert "with nvidia-cufft>=12,<13" in fixes[3]  # cuFFT's CUDA 13 release is 12.x (knowledge/nvidia_distributions.toml)
    assert "with nvidia-cublas>=13" in fixes[4]


@pytest.mark.parametrize(("run_line", "installed"), [
    ('RUN pip install .', ()),
    ('RUN pip install ".[cu128]"', ("extra 'cu128'",)),
    ("RUN pip install -e '.[cpu,cu128]'", ("extra 'cpu'", "extra 'cu128'")),
])
def test_a_dockerfile_install_makes_the_extras_it_asks_for_part_of_the_install(tmp_path: Path, run_line: str,
                                                                               installed: tuple[str, ...]) -> None:
    (tmp_path / "pyproject.toml").write_text(EXTRAS.read_text(encoding="utf-8"), encoding="utf-8")
    dockerfile = _write(tmp_path, "Dockerfile", f"FROM ubuntu:24.04\nWORKDIR /app\nCOPY pyproject.toml .\n{run_line}\n")
    bad = _findings(_report(dockerfile))
    failing = {(f["rule"], f["location"]["line"]) for f in bad if f["status"] == "FAIL"}
    expected = {("G1-cuda12-local-version", 11), ("G1-cuda12-index", 35)} if "extra 'cu128'" in installed else set()
    assert failing == expected
    # a CPU-only torch the install asks for runs on the Grace CPU: WARN, not opt-in
    cpu = {f["location"]["line"] for f in bad if f["rule"] == "G1-cpu-build" and f["status"] == "WARN" and "opt-in" not in f["message"]}
    assert cpu == ({10, 30} if "extra 'cpu'" in installed else set())
    assert not [f for f in bad if f["status"] == "ERROR"]
    # what the install did not ask for stays opt-in, named
    assert all("opt-in" in f["message"] for f in bad if f["status"] == "WARN" and f["rule"].startswith("G1")
               and (f["rule"], f["location"]["line"]) not in {("G1-cpu-build", 10), ("G1-cpu-build", 30)})


def test_uv_sync_with_an_extra_installs_what_the_lock_has_for_it(tmp_path: Path) -> None:
    _write(tmp_path, "uv.lock", GPU_EXTRA_LOCK)
    plain = _write(tmp_path, "Dockerfile", "FROM ubuntu:24.04\nWORKDIR /app\nCOPY uv.lock .\nRUN uv sync\n")
    extra = _write(tmp_path, "Dockerfile.gpu", "FROM ubuntu:24.04\nWORKDIR /app\nCOPY uv.lock .\nRUN uv sync --extra=gpu\n")
    report = _report(plain, extra)
    by = {t["target"]: [f for f in t["findings"] if f["rule"].startswith("G1-cuda12")] for t in report["targets"]}
    assert by[str(plain)] and {f["status"] for f in by[str(plain)]} == {"WARN"}
    assert by[str(extra)] and {f["status"] for f in by[str(extra)]} == {"FAIL"}


PYLOCK_EXTRAS = """lock-version = "1.0"
created-by = "uv"
extras = ["cu128", "cu130"]
dependency-groups = ["dev", "docs"]
default-groups = ["dev"]

[[packages]]
name = "torch"
version = "2.8.0+cu128"
marker = "'cu128' in extras and sys_platform == 'linux'"
index = "https://download.pytorch.org/whl/cu128"

[[packages]]
name = "torch"
version = "2.9.0+cu130"
marker = "'cu130' in extras"
index = "https://download.pytorch.org/whl/cu130"

[[packages]]
name = "pytest"
version = "8.3.0"
marker = "'dev' in dependency_groups"

[[packages]]
name = "flash-attn"
version = "2.7.4.post1"
marker = "'docs' in dependency_groups"
"""


def test_pylock_extras_and_groups_are_scopes(tmp_path: Path) -> None:
    lock = _write(tmp_path, "pylock.toml", PYLOCK_EXTRAS)
    placed = [(p.name, p.version, p.scope, p.marker) for p in locks.read(lock, OPTS).packages]
    assert placed == [
        ("torch", "2.8.0+cu128", "extra 'cu128'", "sys_platform == 'linux'"),
        ("torch", "2.9.0+cu130", "extra 'cu130'", None),
        ("pytest", "8.3.0", None, None),  # a default group
        ("flash-attn", "2.7.4.post1", "group 'docs'", None),
    ]
    report = _report(lock)
    bad = _findings(report)
    assert bad and {f["status"] for f in bad} == {"WARN"}
    assert {(f["rule"], f["evidence"]["scope"][0]) for f in bad} == {("G2-flash-attn-build", "group 'docs'")}
    # the cu128 extra is the alternative of the cu130 one: what it adds is INFO, naming the other
    info = {(f["rule"], f["evidence"]["scope"][0]) for f in _findings(report, ("INFO",)) if "scope" in f["evidence"]}
    assert ("G1-cuda12-local-version", "extra 'cu128'") in info
    assert " in extras" not in json.dumps(bad) and "dependency_groups" not in json.dumps(bad)


_ALTERNATIVES = """[project]
name = "demo"
version = "1"
dependencies = ["numpy==2.2.6"]

[project.optional-dependencies]
cuda12 = ["cuml-cu12==25.10.*", "cuopt-cu12==25.10.*", "cupy-cuda12x==13.3.0"]
cuda13 = ["cuml-cu13==25.10.*", "cuopt-cu13==25.10.*", "cupy-cuda13x==13.6.0"]
mac = ["torch==2.8.0"]
train = ["flash-attn==2.8.3"]
docs = ["sphinx==8.1.3"]

[tool.uv]
conflicts = [[{ extra = "cuda12" }, { extra = "cuda13" }]]
"""


def _scoped(tmp_path: Path, text: str) -> list[dict[str, object]]:
    (tmp_path / "pyproject.toml").write_text(text)
    done = run_envcheck("-f", "json", "-v", "pyproject.toml", cwd=tmp_path)
    assert done.returncode in (0, 1), done.stderr
    return [f for f in json.loads(done.stdout)["targets"][0]["findings"] if "opt-in" in str(f["message"])]


def test_an_extra_adds_one_finding_per_cause_and_alternatives_are_info(tmp_path: Path) -> None:
    """A CUDA 12 extra of three packages is one finding; beside a CUDA 13 extra of the same packages it is INFO
    (the Spark user installs the other), as is a CPU torch in an extra named for a Mac. An extra with a real
    problem and no alternative (flash-attn built from source) stays a WARN."""
    found = _scoped(tmp_path, _ALTERNATIVES)
    cuda12 = [f for f in found if "extra 'cuda12'" in str(f["message"]) and f["gotcha"] == "G1"]
    assert len(cuda12) == 1 and cuda12[0]["status"] == "INFO" and "extra 'cuda13'" in str(cuda12[0]["message"])
    assert cuda12[0]["evidence"]["count"] == 3  # type: ignore[index]
    mac = [f for f in found if "extra 'mac'" in str(f["message"]) and f["gotcha"] == "G1"]
    assert [f["status"] for f in mac] == ["INFO"]
    train = [f for f in found if "extra 'train'" in str(f["message"]) and f["status"] in ("WARN", "FAIL")]
    assert train, found


def test_a_cuda12_extra_without_an_alternative_stays_a_warning(tmp_path: Path) -> None:
    text = _ALTERNATIVES.replace('cuda13 = ["cuml-cu13==25.10.*", "cuopt-cu13==25.10.*", "cupy-cuda13x==13.6.0"]\n', "")
    text = text.replace('conflicts = [[{ extra = "cuda12" }, { extra = "cuda13" }]]', "")
    cuda12 = [f for f in _scoped(tmp_path, text) if "extra 'cuda12'" in str(f["message"]) and f["gotcha"] == "G1"]
    assert [f["status"] for f in cuda12] == ["WARN"]


def test_policy_findings_of_extras_name_only_what_they_add(tmp_path: Path) -> None:
    """An extra that repeats the default install's unpinned transformers adds no G9 finding; one that adds an
    unpinned package keeps a WARN (another extra without it is no alternative: pins are policy, not a build)."""
    text = ('[project]\nname = "demo"\nversion = "1"\ndependencies = ["transformers>=4.57.1"]\n\n'
            '[project.optional-dependencies]\nbenchmark = ["transformers", "tqdm==4.67.1"]\n'
            'gpu = ["accelerate", "tqdm==4.67.1"]\n')
    found = [f for f in _scoped(tmp_path, text) if f["gotcha"] == "G9"]
    assert [(f["status"], "extra 'gpu'" in str(f["message"])) for f in found] == [("WARN", True)], found


OVERRIDE_LOCK = '''version = 1
revision = 3
requires-python = ">=3.12"
{manifest}
[[package]]
name = "proj"
version = "0.1.0"
source = {{ virtual = "." }}
dependencies = [{{ name = "transformers" }}, {{ name = "vllm" }}]

[[package]]
name = "transformers"
version = "5.4.0"
source = {{ registry = "https://pypi.org/simple" }}

[[package]]
name = "vllm"
version = "0.19.1"
source = {{ registry = "https://pypi.org/simple" }}
dependencies = [{{ name = "transformers" }}]
'''


def test_a_uv_override_replaces_the_requirement_it_overrides(tmp_path: Path) -> None:
    # vLLM 0.19.1 excludes transformers 5.4 (knowledge/pins.toml); uv's override-dependencies replace every
    # requirement on transformers, so a lock resolved with one holds no conflict (pip, without overrides, would)
    def conflicts(manifest: str) -> list[tuple[str, int]]:
        lock = _write(tmp_path, "uv.lock", OVERRIDE_LOCK.format(manifest=manifest))
        return [(f["status"], f["location"]["line"]) for f in _findings(_report(lock)) if f["rule"] == "G9-pin-conflict"]

    assert conflicts("") == [("FAIL", 17)]
    assert conflicts('\n[manifest]\noverrides = [{ name = "transformers", specifier = ">=5.4.0" }]\n') == []
    # an override of another package leaves the requirement on transformers in force
    assert conflicts('\n[manifest]\noverrides = [\n    { name = "numpy", specifier = ">=2" },\n]\n') == [("FAIL", 22)]
    # in pyproject.toml: plain overrides are read as overrides (they install nothing), uv's scoped form is no error
    project = _write(tmp_path, "pyproject.toml", '[project]\nname = "proj"\nversion = "0.1"\ndependencies = ["vllm==0.19.1"]\n'
                     '[tool.uv]\noverride-dependencies = [\n  "transformers>=5.4.0",\n'
                     '  { package = { name = "vllm" }, dependencies = ["numpy>=2"] },\n]\n')
    inv = pyproject.read(project, OPTS)
    assert not inv.problems
    assert [(p.name, p.role, p.location.line) for p in inv.packages if p.name == "transformers"] == [
        ("transformers", "override", 7)]


# uv's PyTorch guide pattern with a CPU and a GPU extra: the GPU one is the project's only GPU build on a Spark.
_CPU_GPU = """[project]
name = "demo"
version = "1"
dependencies = ["numpy==2.2.6"]

[tool.uv.sources]
torch = [
    { index = "pytorch-cpu", extra = "{cpu}" },
    { index = "pytorch-gpu", extra = "{gpu}" },
]

[[tool.uv.index]]
name = "pytorch-cpu"
url = "https://download.pytorch.org/whl/cpu"
explicit = true

[[tool.uv.index]]
name = "pytorch-gpu"
url = "https://download.pytorch.org/whl/{build}"
explicit = true

[project.optional-dependencies]
{cpu} = [
    "torch>=2.9.0",
]
{gpu} = [
    "torch>=2.9.0",
]
"""


@pytest.mark.parametrize(("cpu", "gpu", "conflicts"), [
    ("cpu", "gpu", True),  # named for what they are, declared mutually exclusive
    ("laptop", "cluster", False),  # told apart by the indexes their sources bind: the cpu index is the other platform
])
def test_a_gpu_extra_beside_a_cpu_one_is_the_projects_gpu_build(tmp_path: Path, cpu: str, gpu: str, conflicts: bool) -> None:
    """Its CUDA 12 index is one FAIL at the index URL, the source binding and the extra's requirement as its other
    lines; the CPU extra stays informational. With a cu130 index the same project is clean."""
    text = _CPU_GPU.replace("{cpu}", cpu).replace("{gpu}", gpu)
    if conflicts:
        text += f'\n[tool.uv]\nconflicts = [[{{ extra = "{cpu}" }}, {{ extra = "{gpu}" }}]]\n'
    project = _write(tmp_path, "pyproject.toml", text.replace("{build}", "cu128"))
    bad = [f for f in _findings(_report(project)) if f["gotcha"] in ("G1", "ARCH")]
    assert [(f["rule"], f["status"], f["location"]["line"], f["evidence"]["lines"]) for f in bad] == [
        ("G1-cuda12-index", "FAIL", 19, [9, 27])]
    assert f"extra '{gpu}', the project's GPU build" in bad[0]["message"] and "opt-in" not in bad[0]["message"]
    project.write_text(text.replace("{build}", "cu130"), encoding="utf-8")
    assert [f for f in _findings(_report(project)) if f["gotcha"] in ("G1", "ARCH")] == []


_GPU_LOCK = '''version = 1
revision = 3
requires-python = ">=3.11"
conflicts = [[
    { package = "proj", extra = "cpu" },
    { package = "proj", extra = "gpu" },
]]

[[package]]
name = "proj"
version = "0.1.0"
source = { virtual = "." }
dependencies = [
    { name = "torch", version = "2.9.0", source = { registry = "https://pypi.org/simple" }, marker = "extra != 'extra-4-proj-cpu' and extra != 'extra-4-proj-gpu'" },
]

[package.optional-dependencies]
cpu = [
    { name = "torch", version = "2.9.0+cpu", source = { registry = "https://download.pytorch.org/whl/cpu" } },
]
gpu = [
    { name = "torch", version = "2.8.0+cu128", source = { registry = "https://download.pytorch.org/whl/cu128" } },
]

[package.metadata]
requires-dist = [
    { name = "torch", specifier = ">=2.8.0" },
    { name = "torch", marker = "extra == 'cpu'", specifier = ">=2.8.0", index = "https://download.pytorch.org/whl/cpu", conflict = { package = "proj", extra = "cpu" } },
    { name = "torch", marker = "extra == 'gpu'", specifier = ">=2.8.0", index = "https://download.pytorch.org/whl/cu128", conflict = { package = "proj", extra = "gpu" } },
]

[[package]]
name = "torch"
version = "2.8.0+cu128"
source = { registry = "https://download.pytorch.org/whl/cu128" }
wheels = [
    { url = "https://download.pytorch.org/whl/cu128/torch-2.8.0%2Bcu128-cp312-cp312-manylinux_2_28_x86_64.whl" },
    { url = "https://download.pytorch.org/whl/cu128/torch-2.8.0%2Bcu128-cp312-cp312-win_amd64.whl" },
]

[[package]]
name = "torch"
version = "2.9.0"
source = { registry = "https://pypi.org/simple" }
wheels = [
    { url = "https://files.pythonhosted.org/packages/t/torch-2.9.0-cp312-cp312-manylinux_2_28_aarch64.whl" },
]

[[package]]
name = "torch"
version = "2.9.0+cpu"
source = { registry = "https://download.pytorch.org/whl/cpu" }
wheels = [
    { url = "https://download.pytorch.org/whl/cpu/torch-2.9.0%2Bcpu-cp312-cp312-manylinux_2_28_aarch64.whl" },
]
'''


def test_a_locked_gpu_extra_that_cannot_install_fails_once_and_the_default_cpu_path_is_info(tmp_path: Path) -> None:
    """The GPU extra's torch is a CUDA 12 build with no linux/aarch64 wheel: one FAIL at its entry saying both,
    the binding line as its other line; PyPI's CPU-only torch that the install without extras gets is INFO."""
    lock = _write(tmp_path, "uv.lock", _GPU_LOCK)
    report = _report(lock)
    bad = [f for f in _findings(report) if f["gotcha"] in ("G1", "ARCH")]
    assert [(f["rule"], f["status"], f["location"]["line"], f["evidence"]["lines"]) for f in bad] == [
        ("G1-cuda12-local-version", "FAIL", 33, [29])]
    assert "x86_64 only" in bad[0]["message"] and bad[0]["evidence"]["platforms"] == ["manylinux_2_28_x86_64", "win_amd64"]
    default = [f for f in _findings(report, ("INFO",)) if f["rule"] == "G1-cpu-build" and f["location"]["line"] == 42]
    assert len(default) == 1 and "extra 'gpu' as its GPU build" in default[0]["message"]


_X86_ONLY = ('wheels = [\n    { url = "https://files.pythonhosted.org/packages/x/fastkern-1.0-cp312-cp312-manylinux_2_28_x86_64.whl" },\n'
             '    { url = "https://files.pythonhosted.org/packages/x/fastkern-1.0-cp312-cp312-win_amd64.whl" },\n]\n')


@pytest.mark.parametrize(("name", "lock", "expected"), [
    ("uv.lock", 'version = 1\n\n[[package]]\nname = "fastkern"\nversion = "1.0"\nsource = { registry = "https://pypi.org/simple" }\n'
     + _X86_ONLY, [("ARCH-wheel-platform", "FAIL", 4)]),
    ("uv.lock", 'version = 1\n\n[[package]]\nname = "fastkern"\nversion = "1.0"\nsource = { registry = "https://pypi.org/simple" }\n'
     'sdist = { url = "https://files.pythonhosted.org/packages/x/fastkern-1.0.tar.gz" }\n' + _X86_ONLY,
     [("ARCH-wheel-platform", "WARN", 4)]),  # uv builds the sdist on the Spark
    ("pylock.toml", 'lock-version = "1.0"\ncreated-by = "uv"\n\n[[packages]]\nname = "fastkern"\nversion = "1.0"\n'
     + _X86_ONLY.replace("wheels = [", "wheels = [\n").replace("{ url", "{ name = \"fastkern-1.0-cp312-cp312-manylinux_2_28_x86_64.whl\", url", 1),
     [("ARCH-wheel-platform", "FAIL", 5)]),
    ("pylock.toml", 'lock-version = "1.0"\ncreated-by = "uv"\n\n[[packages]]\nname = "fastkern"\nversion = "1.0"\n'
     'marker = "platform_machine == \'x86_64\'"\n' + _X86_ONLY, []),  # never installed on aarch64
])
def test_a_locked_package_without_an_aarch64_wheel_or_sdist_cannot_install(tmp_path: Path, name: str, lock: str,
                                                                            expected: list[tuple[str, str, int]]) -> None:
    path = _write(tmp_path, name, lock)
    assert [(f["rule"], f["status"], f["location"]["line"]) for f in _findings(_report(path))] == expected


def test_a_cuda12_build_without_an_aarch64_wheel_is_one_g1_finding(tmp_path: Path) -> None:
    """In the default install too: the CUDA 13 build that fixes the G1 finding has the wheel, so no ARCH finding."""
    lock = _write(tmp_path, "uv.lock", 'version = 1\n\n[[package]]\nname = "torch"\nversion = "2.8.0+cu128"\n'
                  'source = { registry = "https://download.pytorch.org/whl/cu128" }\n'
                  + _X86_ONLY.replace("files.pythonhosted.org/packages/x/fastkern-1.0", "download.pytorch.org/whl/cu128/torch-2.8.0%2Bcu128"))
    bad = _findings(_report(lock))
    assert bad and {f["gotcha"] for f in bad} == {"G1"}
    assert any("x86_64 only" in f["message"] and f["evidence"]["platforms"] == ["manylinux_2_28_x86_64", "win_amd64"] for f in bad)


def test_an_explicit_cpu_build_of_torch_is_deliberate_and_installed_one_is_not(tmp_path: Path) -> None:
    """``torch==2.9.1+cpu`` written in a requirements file asks for the CPU build (a CPU-only venv): INFO. The same
    version in a freeze of an environment is what is there: a Spark environment whose torch runs on the CPU (WARN)."""
    declared = _write(tmp_path, "requirements.txt", "numpy==2.2.6\ntorch==2.9.1+cpu\n")
    found = [(f["rule"], f["status"]) for f in _findings(_report(declared), ("INFO", "WARN", "FAIL")) if f["gotcha"] == "G1"]
    assert found == [("G1-cpu-build", "INFO")]
    frozen = _write(tmp_path, "frozen.txt", "numpy==2.2.6\ntorch==2.9.1+cpu\n")
    proc = run_envcheck("--format", "json", "--fail-on", "never", "--kind", "freeze", str(frozen))
    assert [(f["rule"], f["status"]) for f in _findings(json.loads(proc.stdout)) if f["gotcha"] == "G1"] == [("G1-cpu-build", "WARN")]


# A uv workspace lock as uv writes it: the app asks the member lib for its cu128 extra, lib offers cu128 and
# cu130 as conflicting extras; accelerate's torch edges carry uv's conflict markers, one of them reachable only
# with both CUDA extras at once (never installed).
_LIB = "extra-3-lib"
_WORKSPACE_LOCK = f'''version = 1
revision = 3
requires-python = ">=3.12"
conflicts = [[
    {{ package = "lib", extra = "cu128" }},
    {{ package = "lib", extra = "cu130" }},
]]

[manifest]
members = ["app", "lib"]

[[package]]
name = "app"
version = "0.1.0"
source = {{ virtual = "." }}
dependencies = [{{ name = "lib", extra = ["{{ask}}"], marker = "extra == '{_LIB}-{{ask}}'" }}]

[[package]]
name = "lib"
version = "0.1.0"
source = {{ editable = "lib" }}
dependencies = [{{ name = "accelerate" }}]

[package.optional-dependencies]
cu128 = [{{ name = "torch", version = "2.8.0+cu128", source = {{ registry = "https://download.pytorch.org/whl/cu128" }} }}]
cu130 = [{{ name = "torch", version = "2.9.0+cu130", source = {{ registry = "https://download.pytorch.org/whl/cu130" }} }}]

[[package]]
name = "accelerate"
version = "1.12.0"
source = {{ registry = "https://pypi.org/simple" }}
dependencies = [
    {{ name = "torch", version = "2.9.0", source = {{ registry = "https://pypi.org/simple" }}, marker = "extra == '{_LIB}-cu128' and extra == '{_LIB}-cu130'" }},
]

[[package]]
name = "torch"
version = "2.8.0+cu128"
source = {{ registry = "https://download.pytorch.org/whl/cu128" }}
wheels = [{{ url = "https://download.pytorch.org/whl/cu128/torch-2.8.0%2Bcu128-cp312-cp312-manylinux_2_28_aarch64.whl" }}]

[[package]]
name = "torch"
version = "2.9.0"
source = {{ registry = "https://pypi.org/simple" }}
wheels = [{{ url = "https://files.pythonhosted.org/packages/torch-2.9.0-cp312-cp312-manylinux_2_28_aarch64.whl" }}]

[[package]]
name = "torch"
version = "2.9.0+cu130"
source = {{ registry = "https://download.pytorch.org/whl/cu130" }}
wheels = [{{ url = "https://download.pytorch.org/whl/cu130/torch-2.9.0%2Bcu130-cp312-cp312-manylinux_2_28_aarch64.whl" }}]
'''


def _lock_lines(tmp_path: Path, ask: str) -> dict[int, list[tuple[str, str]]]:
    lock = _write(tmp_path, "uv.lock", _WORKSPACE_LOCK.replace("{ask}", ask))
    report = _report(lock)
    lines: dict[int, list[tuple[str, str]]] = {}
    for f in _findings(report, ("INFO", "WARN", "FAIL", "ERROR")):
        if f.get("location") and f["location"].get("line"):
            lines.setdefault(f["location"]["line"], []).append((f["status"], f["rule"]))
    return lines


def test_a_workspace_member_extra_another_member_asks_for_is_installed(tmp_path: Path) -> None:
    """The app asks lib for cu128: that torch is the app's own install (FAIL, not an opt-in WARN); the cu130 extra
    conflicts with what the app asks, and the torch only both CUDA extras together reach is never installed."""
    lines = _lock_lines(tmp_path, "cu128")
    at = {n: [s for s, r in found if r.startswith("G1-cuda12")] for n, found in lines.items()}
    assert "FAIL" in at[37], lines  # torch 2.8.0+cu128
    assert 43 not in lines and 49 not in lines, lines  # PyPI torch (conflicting extras only), cu130 torch


def test_an_older_cuda_extra_beside_a_newer_one_is_info(tmp_path: Path) -> None:
    """Asked for nothing, cu128 and cu130 are the member's alternatives: the cu128 torch is INFO naming cu130,
    and nothing is reported for the torch only conflicting extras reach."""
    lines = _lock_lines(tmp_path, "none")
    assert lines.get(37) and all(s == "INFO" for s, r in lines[37] if r.startswith("G1")), lines
    assert 43 not in lines, lines


_MEMBER = """[project]
name = "lib"
version = "0.1"
dependencies = ["numpy==2.2.6"]

[project.optional-dependencies]
cu128 = ["torch==2.8.0", "nvidia-cublas-cu12==12.8.4.1"]
cu130 = ["torch==2.9.0"]

[tool.uv]
conflicts = [[{ extra = "cu128" }, { extra = "cu130" }]]

[tool.uv.sources]
torch = [
    { index = "pytorch-cu128", extra = "cu128" },
    { index = "pytorch-cu130", extra = "cu130" },
]

[[tool.uv.index]]
name = "pytorch-cu128"
url = "https://download.pytorch.org/whl/cu128"
explicit = true

[[tool.uv.index]]
name = "pytorch-cu130"
url = "https://download.pytorch.org/whl/cu130"
explicit = true
"""


def test_a_workspace_members_extra_is_read_from_its_pyproject(tmp_path: Path) -> None:
    """``lib[cu128]`` with ``lib = { workspace = true }``: what lib's cu128 extra installs (torch from the cu128
    index, a -cu12 library) is the app's install, one finding at the app's requirement line (one cause); asking
    for cu130 is clean."""
    (tmp_path / "lib").mkdir()
    _write(tmp_path / "lib", "pyproject.toml", _MEMBER)
    (tmp_path / "app").mkdir()

    def g1(extra: str) -> list[tuple[str, int]]:
        app = _write(tmp_path / "app", "pyproject.toml",
                     f'[project]\nname = "app"\nversion = "0.1"\ndependencies = [\n    "lib[{extra}]",\n]\n\n'
                     '[tool.uv.sources]\nlib = { workspace = true }\n\n[tool.uv.workspace]\nmembers = ["../lib"]\n')
        return [(f["status"], f["location"]["line"]) for f in _findings(_report(app)) if f["gotcha"] == "G1"]

    assert g1("cu128") == [("FAIL", 5)]
    assert g1("cu130") == []


def test_a_torch_bound_to_a_cuda12_index_names_the_binding_line(tmp_path: Path) -> None:
    """torch from the cu128 index on aarch64 (a [tool.uv.sources] entry far below the requirement): the finding
    stands for the requirement and the source that binds it, the line a user has to change."""
    project = _write(tmp_path, "pyproject.toml",
                     '[project]\nname = "p"\nversion = "1"\ndependencies = [\n    "torch==2.7.1",\n]\n\n'
                     "[tool.uv.sources]\ntorch = [\n"
                     '    { index = "cu128", marker = "platform_machine == \'aarch64\'" },\n]\n\n'
                     '[[tool.uv.index]]\nname = "cu128"\nurl = "https://download.pytorch.org/whl/cu128"\nexplicit = true\n')
    found = [f for f in _findings(_report(project)) if f["rule"] == "G1-cuda12-local-version"]
    assert [(f["status"], f["location"]["line"], f["evidence"].get("lines")) for f in found] == [("FAIL", 5, [5, 9])]


def test_a_locks_cuda12_stack_is_one_finding(tmp_path: Path) -> None:
    """A lock whose default install resolves torch +cu128 and a -cu12 library: one cause, one G1 finding led by
    torch's and standing for both entries' lines."""
    lock = _write(tmp_path, "uv.lock", '''version = 1
revision = 3
requires-python = ">=3.12"

[[package]]
name = "app"
version = "0.1.0"
source = { virtual = "." }
dependencies = [{ name = "torch" }, { name = "nvidia-cublas-cu12" }]

[[package]]
name = "nvidia-cublas-cu12"
version = "12.8.4.1"
source = { registry = "https://pypi.org/simple" }

[[package]]
name = "torch"
version = "2.8.0+cu128"
source = { registry = "https://download.pytorch.org/whl/cu128" }
''')
    found = [f for f in _findings(_report(lock)) if f["gotcha"] == "G1"]
    assert [(f["status"], f["location"]["line"], f["evidence"].get("lines")) for f in found] == [("FAIL", 17, [12, 17])], found


def test_release_pins_do_not_judge_builds_of_another_index(tmp_path: Path) -> None:
    """PyTorch's cu130 build of torch 2.10.0 pins triton 3.6.0 (PyPI's aarch64 build pins it on x86_64 only);
    Jetson AI Lab's sbsa/cu130 build of it resolves with triton 3.5.0 (its own metadata): the pin table's fact holds
    for the project's own releases, not for that index's build."""
    def conflicts(bound: str) -> list[str]:
        project = _write(tmp_path, "pyproject.toml",
                         '[project]\nname = "p"\nversion = "1"\ndependencies = ["torch==2.10.0", "triton==3.5.0"]\n' + bound)
        return [f["status"] for f in _findings(_report(project)) if f["rule"] == "G9-pin-conflict"]

    jetson = ('\n[tool.uv.sources]\ntorch = [{ index = "jetson" }]\ntriton = [{ index = "jetson" }]\n\n'
              '[[tool.uv.index]]\nname = "jetson"\nurl = "https://pypi.jetson-ai-lab.io/sbsa/cu130/+simple"\nexplicit = true\n')
    pytorch = ('\n[tool.uv.sources]\ntorch = [{ index = "pytorch" }]\n\n'
               '[[tool.uv.index]]\nname = "pytorch"\nurl = "https://download.pytorch.org/whl/cu130"\nexplicit = true\n')
    assert conflicts(pytorch) == ["FAIL"]
    assert conflicts("") == []
    assert conflicts(jetson) == []



def test_a_workspace_roots_extras_ask_member_extras_and_member_extras_are_the_members(tmp_path: Path) -> None:
    """The workspace root (source virtual ".") offers cu128/cu130 extras that ask lib for its own: walked with
    lib's extras active, they are alternatives (the older CUDA one INFO); lib's own extras are lib's install
    (uv sync --package lib), INFO for this project."""
    asking = [line for line in _WORKSPACE_LOCK.split("\n") if line.startswith('dependencies = [{ name = "lib"')]
    text = _WORKSPACE_LOCK.replace(asking[0], 'dependencies = [{ name = "lib" }]\n\n[package.optional-dependencies]\n'
                                   'cu128 = [{ name = "lib", extra = ["cu128"] }]\ncu130 = [{ name = "lib", extra = ["cu130"] }]')
    report = _report(_write(tmp_path, "uv.lock", text))
    g1 = [(f["status"], f["message"]) for f in _findings(report, ("INFO", "WARN", "FAIL")) if f["gotcha"] == "G1"]
    assert g1 and all(status == "INFO" for status, _ in g1), g1
    assert any("older CUDA build" in message and "uv sync --package" in message for _, message in g1), g1


def test_a_default_group_pinning_a_cuda12_stack_is_one_finding(tmp_path: Path) -> None:
    """A project whose default install pins a CUDA 12 stack (torch, its partners, nvidia-*-cu12 runtime wheels) has
    one cause: one G1 finding, torch's, naming every pin's line; the index that binds the stack keeps its own."""
    _write(tmp_path, "pyproject.toml", '''[project]
name = "x"
version = "0"
dependencies = ["numpy"]
[dependency-groups]
cu128 = [
  "torch==2.7.1+cu128",
  "torchvision==0.22.1+cu128",
  "nvidia-cublas-cu12==12.8.3.14",
  "nvidia-cudnn-cu12==9.7.1.26",
  "nvidia-nccl-cu12==2.26.2",
]
[tool.uv]
default-groups = ["cu128"]
[tool.uv.sources]
torch = [{ index = "cu128" }]
[[tool.uv.index]]
name = "cu128"
url = "https://download.pytorch.org/whl/cu128"
explicit = true
''')
    g1 = [f for f in _findings(_report(tmp_path / "pyproject.toml")) if f["gotcha"] == "G1"]
    builds = [f for f in g1 if f["evidence"].get("package")]
    assert len(builds) == 1 and builds[0]["status"] == "FAIL" and builds[0]["location"]["line"] == 7
    assert {7, 8, 9, 10, 11} <= set(builds[0]["evidence"]["lines"])
    assert len(g1) - len(builds) <= 1  # the cu128 index line, apart


def test_an_extra_that_mirrors_the_default_group_adds_no_finding(tmp_path: Path) -> None:
    """uv has no default extras, so projects mirror a default dependency group as an extra: the extra's copy of a
    requirement the default install already judged is the same cause, not a second opt-in finding."""
    _write(tmp_path, "pyproject.toml", '''[project]
name = "x"
version = "0"
[project.optional-dependencies]
gpu = ["flash-attn==2.6.3", "einops"]
[dependency-groups]
gpu = ["flash-attn==2.6.3"]
[tool.uv]
default-groups = ["gpu"]
''')
    g2 = [f for f in _findings(_report(tmp_path / "pyproject.toml")) if f["rule"] == "G2-flash-attn-build"]
    assert [f["location"]["line"] for f in g2] == [7]


DEFAULT_GROUP_LOCK = '''version = 1
revision = 3
requires-python = ">=3.10"

[[package]]
name = "x"
version = "0"
source = { editable = "." }

[package.dev-dependencies]
gpu = [
    { name = "torch" },
]

[[package]]
name = "torch"
version = "2.7.1+cu128"
source = { registry = "https://download.pytorch.org/whl/cu128" }
wheels = [
    { url = "https://download.pytorch.org/whl/cu128/torch-2.7.1%2Bcu128-cp312-cp312-manylinux_2_28_x86_64.whl" },
]
'''


def test_a_lock_reads_its_projects_default_groups(tmp_path: Path) -> None:
    """uv.lock does not record [tool.uv] default-groups: read beside the project's pyproject.toml, a default group
    is the default install (FAIL), not an opt-in scope (WARN); without the pyproject it stays opt-in."""
    lock = _write(tmp_path, "uv.lock", DEFAULT_GROUP_LOCK)
    opt_in = [f["status"] for f in _findings(_report(lock)) if f["gotcha"] == "G1"]
    assert opt_in == ["WARN"]
    _write(tmp_path, "pyproject.toml", '[project]\nname = "x"\nversion = "0"\n[dependency-groups]\ngpu = ["torch"]\n'
           '[tool.uv]\ndefault-groups = ["gpu"]\n')
    default = [(f["status"], f["location"]["line"]) for f in _findings(_report(lock)) if f["gotcha"] == "G1"]
    assert default == [("FAIL", 16)]
