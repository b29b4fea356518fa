"""The table of input kinds: one name rule for detect, discover and the hooks; rules and checks by kind;
lazy loading of each kind's code."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, run_envcheck

from envcheck import engine, kinds, rules, sources
from envcheck.model import HostReadings, Inventory, Status
from envcheck.profile import load_profile
from envcheck.readings import ImageFacts

# File names and the kind each has by its name alone (None: not by name).
NAMES = {
    "requirements.txt": "requirements", "requirements-dev.txt": "requirements", "ci-constraints.in": "requirements",
    "dev-requirements.pip": "requirements", "freeze.txt": "freeze", "requirements-freeze.txt": "freeze",
    "pyproject.toml": "pyproject", "uv.lock": "uv-lock", "pylock.toml": "pylock", "pylock.dev.toml": "pylock",
    "Dockerfile": "dockerfile", "Dockerfile.cuda": "dockerfile", "app.Dockerfile": "dockerfile",
    "Containerfile": "dockerfile", "train.dockerfile": "dockerfile", "x.containerfile": "dockerfile",
    "torch-2.9.0-cp312-cp312-manylinux_2_28_aarch64.whl": "wheel",
    "environment.yml": "conda", "environment-gpu.yaml": "conda", "dev.environment.yml": "conda",
    "ci.yml": None, "environments.md": None,
    "compose.yaml": "compose", "compose.yml": "compose", "docker-compose.yml": "compose", "compose.prod.yaml": "compose",
    "docker-compose.override.yml": "compose", "docker-compose-gpu.yaml": "compose", "install.sh": "shell", "setup.ipynb": "notebook",
    "composer.json": None, "compose.md": None, "docker-compose.yml.bak": None, "setup.shx": None, "k8s.yaml": None,
    # not by name: code and docs about Dockerfiles, build files with a matching extension
    "dockerfile.py": None, "dockerfiles.md": None, "Dockerfile-cuda": None, "dockerignore": None,
    # another format's extension last: Docker's per-Dockerfile ignore file, notes and configs about a Dockerfile
    "Dockerfile.dockerignore": None, "app.Dockerfile.dockerignore": None, "Dockerfile.md": None, "Dockerfile.toml": None,
    "MANIFEST.in": None, "setup.cfg": None, "README.md": None, "requirements.md": None,
}


def test_one_name_rule_for_detect_discover_and_hooks(tmp_path: Path) -> None:
    """Each name gets the same kind from the table, from detect, from discover and from the hook regexes."""
    project = tmp_path / "project"
    project.mkdir()
    for name in NAMES:
        (project / name).write_text("# empty\n", encoding="utf-8")
    found = {p.name: kind for p, kind in sources.discover(project)}
    hooks = {hook: re.compile(kinds.hook_pattern(hook)) for hook in {k.hook for k in kinds.KINDS if k.hook}}
    for name, want in NAMES.items():
        row = kinds.by_file_name(name)
        assert (row.name if row else None) == want, name
        assert found.get(name) == want, name
        if want is not None:
            assert sources.detect(project / name) == want, name
        for hook, pattern in hooks.items():
            in_hook = want is not None and kinds.BY_NAME[want].hook == hook
            assert bool(pattern.search(f"sub/dir/{name}")) == in_hook, (hook, name)


def test_dockerfile_names_follow_pre_commit_identify() -> None:
    """identify (pre-commit's file typing) tags these names `dockerfile`; the `.dockerfile` extension is ours too."""
    identify = pytest.importorskip("identify.identify")  # pre-commit's own dependency
    for name in ("Dockerfile", "Dockerfile.cuda", "app.Dockerfile", "a.Dockerfile.bak", "Containerfile",
                 "dockerfile", "Dockerfile-cuda", "dockerfile.py", "dockerfiles.md", "DOCKERFILE", "Dockerfiles"):
        tagged = "dockerfile" in identify.tags_from_filename(name)
        row = kinds.by_file_name(name)
        assert (row is not None and row.name == "dockerfile") == tagged, name


def test_a_dockerfiles_ignore_file_is_not_read_as_a_dockerfile(tmp_path: Path) -> None:
    """`Dockerfile.dockerignore` is BuildKit's ignore file for `Dockerfile`: `envcheck .` read it as a Dockerfile,
    "unknown instruction: node_modules", exit 2."""
    (tmp_path / "Dockerfile").write_text("FROM nvcr.io/nvidia/pytorch:25.11-py3\nRUN pip install numpy==2.1.0\n")
    (tmp_path / "Dockerfile.dockerignore").write_text("node_modules\n*.md\n")
    (tmp_path / "Dockerfile.md").write_text("# How to build\nrun docker build .\n")
    done = run_envcheck("-f", "json", ".", cwd=tmp_path)
    assert done.returncode == 0, done.stdout
    assert [t["target"] for t in json.loads(done.stdout)["targets"]] == ["Dockerfile"]


def test_content_decides_when_the_name_says_nothing(tmp_path: Path) -> None:
    recipe = tmp_path / "Dockerfile-cuda"
    recipe.write_text("FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\nRUN true\n", encoding="utf-8")
    reqs = tmp_path / "base.in"
    reqs.write_text("torch==2.9.0\ntransformers==4.57.1\n", encoding="utf-8")
    elf = tmp_path / "blob"
    elf.write_bytes(b"\x7fELF" + bytes(60))
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\nnothing here\n", encoding="utf-8")
    assert [sources.detect(p) for p in (recipe, reqs, elf, notes)] == ["dockerfile", "requirements", "elf", None]
    script = tmp_path / "bootstrap"
    script.write_text("#!/usr/bin/env bash\nset -e\npip install torch\n", encoding="utf-8")
    manifest = tmp_path / "vllm.yaml"
    manifest.write_text("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: vllm}\n", encoding="utf-8")
    stack = tmp_path / "stack.yml"
    stack.write_text("services:\n  api:\n    image: python:3.12\n", encoding="utf-8")
    values = tmp_path / "values.yaml"
    values.write_text("image:\n  repository: vllm/vllm-openai\nkind: chart\n", encoding="utf-8")
    assert [sources.detect(p) for p in (script, manifest, stack, values)] == ["shell", "kubernetes", "compose", None]


def test_kind_option_lists_the_table() -> None:
    proc = run_envcheck("--kind", "imagee", "examples/requirements-good.txt")
    assert proc.returncode == 2
    assert "unknown input kind 'imagee'" in proc.stderr
    assert all(name in proc.stderr for name in kinds.path_kinds()) and "freeze" in proc.stderr
    # kinds a subcommand builds are not files
    assert run_envcheck("--kind", "image", "examples/requirements-good.txt").returncode == 2
    proc = run_envcheck("--format", "json", "examples/freeze-ngc-unsloth.txt")
    assert json.loads(proc.stdout)["targets"][0]["kind"] == "freeze"


def test_rules_name_only_known_input_kinds() -> None:
    with pytest.raises(ValueError, match="unknown input kinds"):
        rules.rule("T-typo", "G1", "t", Status.WARN, "t", "t", ("requirments",))
    assert "T-typo" not in rules.RULES
    rules.load_all()
    for r in rules.RULES.values():
        assert set(r.inputs) <= kinds.RULE_INPUTS, r.id


def test_check_modules_table_matches_registered_checks() -> None:
    """checks.MODULES (what the engine imports per kind) says what each module's checks serve, no more."""
    from envcheck.checks import MODULES

    rules.load_all()
    for kind in [k.name for k in kinds.KINDS] + ["a-kind-outside-the-table"]:
        imported = {m for m, inputs in MODULES.items() if kinds.applies(inputs, kind)}
        needed = {c.fn.__module__ for c in rules.CHECKS if kinds.applies(c.inputs, kind)}
        assert imported == needed, (
            f"{kind}: envcheck.checks.MODULES imports {sorted(imported)}, the checks need {sorted(needed)} "
            "(a bare @check runs on every kind: name its rules, @check(RULE_A, RULE_B))")


def test_engine_runs_only_the_checks_of_the_target_kind() -> None:
    """Image facts in a requirements target are not judged as an image: checks are selected by kind."""
    inv = Inventory(host=HostReadings(image=ImageFacts(ref="docker.io/library/ubuntu:22.04", architecture="amd64", os="linux")))
    as_image = {f.rule for f in engine.evaluate(inv, load_profile(), "image")}
    as_requirements = {f.rule for f in engine.evaluate(inv, load_profile(), "requirements")}
    assert "ARCH-image-config" in as_image
    assert not {r for r in as_requirements if r.startswith(("ARCH-image", "G1-image", "G9-image"))}


def _site(tmp_path: Path, marker: str, clause: str = "<1.0") -> Path:
    """A site-packages: demo 1.0 (with an ELF extension) requires other ``clause`` under ``marker``; other is 2.0."""
    site = tmp_path / "site-packages"
    (site / "demo-1.0.dist-info").mkdir(parents=True)
    (site / "demo-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n"
                                                         "Requires-Dist: torch>=2.9 ; extra == 'gpu'\n"
                                                         f"Requires-Dist: other[fast]{clause} ; {marker}\n")
    (site / "other-2.0.dist-info").mkdir(parents=True)
    (site / "other-2.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: other\nVersion: 2.0\n")
    (site / "demo").mkdir()
    (site / "demo" / "_ext.so").write_bytes((REPO / "fixtures/binaries/libext_cuda13.so").read_bytes())
    return site


@pytest.mark.parametrize(("plain", "parsed"), [
    ('platform_system == "Linux"', '(platform_system == "Linux")'),  # parentheses: packaging reads it
    ('python_version < "3.99" or os_name == "nt"', 'python_version < "3.99" or os_name in "nt"'),  # `in`: packaging
    ('sys_platform == "win32"', '(sys_platform == "win32")'),  # holds nowhere on the profile: no finding either way
])
def test_plain_markers_give_packagings_findings(plain: str, parsed: str, tmp_path: Path) -> None:
    """A Requires-Dist marker gives the same findings however it is written (plain comparisons, parentheses,
    ``in``), and decides whether the pin is judged on the profile."""
    found = {}
    for name, marker in (("plain", plain), ("parsed", parsed)):
        site = _site(tmp_path / name, marker)
        proc = run_envcheck(str(site), "-f", "json", "--no-cache", "-v")
        findings = json.loads(proc.stdout)["targets"][0]["findings"]
        found[name] = [(f["rule"], f["status"], f["message"].replace(str(tmp_path / name), "SITE")) for f in findings]
    assert found["plain"] == found["parsed"]
    assert (("G9-pin-conflict", "FAIL") in {(rule, status) for rule, status, _ in found["plain"]}) == ("win32" not in plain)


_THROWAWAY_SOURCE = '''"""A throwaway input kind: one requirement per line in *.reqlist files."""
from pathlib import Path

from envcheck.inspect.pip_args import parse_requirement_text
from envcheck.model import Inventory, Location, Package
from envcheck.sources import ReadOptions

KIND = "reqlist"


def read(path: Path, options: ReadOptions) -> Inventory:
    inventory = Inventory()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        found = parse_requirement_text(line, Location(str(path), line=number))
        if isinstance(found, Package):
            inventory.packages.append(found)
    return inventory
'''
_THROWAWAY_ROW = '''    InputKind(
        "reqlist", "envcheck.sources.reqlist", "one requirement per line (*.reqlist)",
        names=r"[^/]+\\.reqlist", satisfies=("requirements",),
    ),
'''


def test_a_new_kind_is_one_module_and_one_row(tmp_path: Path) -> None:
    """docs/design.md's recipe, followed on a copy of the package: the new kind is detected, listed by
    --kind, discovered in folders and judged by the requirements rules it satisfies."""
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(REPO / "envcheck", copy / "envcheck", ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "envcheck" / "sources" / "reqlist.py").write_text(_THROWAWAY_SOURCE, encoding="utf-8")
    table = copy / "envcheck" / "kinds.py"
    text = table.read_text(encoding="utf-8")
    anchor = "KINDS: tuple[InputKind, ...] = (\n"
    assert anchor in text
    table.write_text(text.replace(anchor, anchor + _THROWAWAY_ROW), encoding="utf-8")
    project = tmp_path / "project"
    project.mkdir()
    (project / "gpu.reqlist").write_text("torch==2.5.1+cu121\n", encoding="utf-8")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "envcheck", *args], cwd=copy, capture_output=True, text=True,
                              timeout=120, env={**__import__("os").environ, "PYTHONPATH": str(copy)})

    proc = run("--format", "json", str(project))
    assert proc.returncode == 1, proc.stderr
    target = json.loads(proc.stdout)["targets"][0]
    assert target["kind"] == "reqlist"
    assert [f["rule"] for f in target["findings"] if f["status"] == "FAIL"] == ["G1-cuda12-local-version"]
    assert "reqlist" in run("--help").stdout
    # the original package knows nothing of it (it reads the file as requirements, by content): the row did it
    original = json.loads(run_envcheck("--format", "json", str(project / "gpu.reqlist")).stdout)
    assert original["targets"][0]["kind"] == "requirements"


def test_docs_list_every_kind() -> None:
    text = (REPO / "docs" / "inputs.md").read_text(encoding="utf-8")
    assert all(f"| `{name}` |" in text for name in kinds.path_kinds())
