"""Property tests for what services and live systems hand envcheck: image references, WWW-Authenticate
challenges, OCI index/manifest/config JSON and docker-save archives, nvidia-smi CSV, /proc/meminfo,
launch configs, and the collector document that comes back from a container or another interpreter.
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fuzz_strategies import (
    NASTY_TEXT,
    PROPERTY_SETTINGS,
    REPO,
    hang_guard,
    known_crash,
    mutated,
    seed_bytes,
    text_file,
)
from hypothesis import example, given
from hypothesis import strategies as st
from seed_builders import docker_save, metadata_layer, oci_index, oci_manifest, write_oci_layout

from envcheck.errors import EnvcheckError, UsageError
from envcheck.inspect import launch, meminfo, nvidia_smi
from envcheck.inspect.image_reference import Reference, parse_reference
from envcheck.model import Inventory
from envcheck.services.registry.auth import Challenge, parse_challenge
from envcheck.sources.dockerfile import inventory_from_history
from envcheck.sources.host import inventory_from_probe
from envcheck.sources.image import ImageOptions, read_image

REF_PARTS = ["nvcr.io/", "localhost:5000/", "[::1]:5000/", "docker.io/", "nvidia/", "pytorch", "library/ubuntu", ":25.09-py3",
             ":latest", "@sha256:" + "a" * 64, "@sha256:abc", "UPPER", "a__b", "-x", "//", ":", "@", "..", "a" * 130]


@PROPERTY_SETTINGS
@given(parts=st.lists(st.one_of(st.sampled_from(REF_PARTS), NASTY_TEXT), max_size=6))
def test_image_references_parse_or_say_why(parts: list[str]) -> None:
    text = "".join(parts)
    try:
        ref = parse_reference(text)
    except UsageError as exc:
        assert exc.message
        return
    assert isinstance(ref, Reference) and ref.registry and ref.repository
    # What we print parses back to the same reference.
    assert parse_reference(str(ref)) == ref


@PROPERTY_SETTINGS
@given(text=st.one_of(NASTY_TEXT, st.text(max_size=200),
                      st.lists(st.sampled_from(['Bearer ', 'Basic ', 'realm="https://a/token"', 'service="s"', ',', ' ', '\\"',
                                                'scope="repository:x:pull,push"', '=', '"', 'x=y']), max_size=10).map("".join)))
def test_challenges_parse_or_are_none(text: str) -> None:
    with hang_guard():
        challenge = parse_challenge(text)
    assert challenge is None or (isinstance(challenge, Challenge) and challenge.scheme == challenge.scheme.lower())
    if challenge is not None:
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in challenge.params.items())


SMI = seed_bytes("fixtures/nvidia-smi/*.csv")


@PROPERTY_SETTINGS
@given(data=mutated(SMI, max_edits=6), headerless=st.booleans())
def test_nvidia_smi_output_parses_or_names_the_line(data: bytes, headerless: bool) -> None:
    text = data.decode("utf-8", "replace")
    fields = ("index", "name", "memory.total", "memory.used") if headerless else None
    try:
        with hang_guard():
            table = nvidia_smi.parse_csv(text, fields)
    except nvidia_smi.NvidiaSmiFormatError as exc:
        assert 1 <= exc.line <= max(1, len(text.splitlines()))
        return
    for row in table.rows:
        assert set(row) == set(table.fields)
        gpu, app = nvidia_smi.gpu_row(row), nvidia_smi.app_row(row)
        assert isinstance(gpu, dict) and isinstance(app, dict)
        for value in row.values():
            number = nvidia_smi.number(value)
            assert number is None or isinstance(number, float)


MEMINFO = (b"MemTotal:       128451232 kB\nMemFree:         1234567 kB\nMemAvailable:   98765432 kB\nBuffers:  1 kB\n"
           b"Cached:         45678901 kB\nHugePages_Total:       0\nDirectMap1G:    1 kB\n")


@PROPERTY_SETTINGS
@given(data=mutated([MEMINFO, Path("/proc/meminfo").read_bytes() if Path("/proc/meminfo").exists() else MEMINFO], max_edits=6))
def test_meminfo_parses_or_names_the_line(data: bytes) -> None:
    text = data.decode("utf-8", "replace")
    try:
        parsed = meminfo.parse(text)
    except meminfo.MeminfoFormatError as exc:
        assert exc.line >= 1
        return
    assert parsed.values["MemTotal"] >= 0 and all(isinstance(v, int) and v >= 0 for v in parsed.values.values())


LAUNCH = seed_bytes("fixtures/launch/*")


@PROPERTY_SETTINGS
@given(data=mutated(LAUNCH, max_edits=6))
def test_launch_configs_parse_or_say_why(data: bytes) -> None:
    text = data.decode("utf-8", "replace")
    try:
        with hang_guard():
            found = launch.parse_config(text, "launch.yaml")
    except launch.LaunchFormatError as exc:
        assert exc.message
        return
    assert found.nodes is None or found.nodes >= 0


@PROPERTY_SETTINGS
@given(text=text_file(["torchrun --nnodes=2 --nproc_per_node=8 train.py", "vllm serve m -tp 2", "NNODES=2 swift sft",
                       "--tensor_parallel_size", "accelerate launch --num_machines 2", "'", '"', "#", "=", "--tp=x"]))
def test_launch_commands_parse_or_say_why(text: str) -> None:
    try:
        found = launch.parse_command(text)
    except launch.LaunchFormatError as exc:
        assert exc.message
        return
    assert found.tp is None or found.tp >= 0


@pytest.fixture(scope="module")
def probe_document() -> bytes:
    """The real collector's document from this machine (no GPU here, so its GPU parts are 'absent')."""
    done = subprocess.run([sys.executable, str(REPO / "envcheck" / "collect" / "probe.py"), "--timeout", "20", "--no-nvidia-smi"],
                          capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    json.loads(done.stdout)
    return done.stdout


JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2, 1 << 70), st.floats(allow_nan=True), NASTY_TEXT,
              st.sampled_from(["ok", "absent", "timeout", "crashed", "13.0", "(12, 1)", "aarch64", "torch"])),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.sampled_from(["status", "version", "cuda", "capability", "distributions", "name",
                                                             "path", "binaries", "env", "pid", "error", "python"]), inner, max_size=4)),
    max_leaves=12,
)


def _replace_somewhere(document: Any, path: list[int], value: Any) -> Any:
    """``document`` with one nested value (chosen by ``path``) replaced by ``value``."""
    if not path or not isinstance(document, (dict, list)) or not document:
        return value
    keys = list(document) if isinstance(document, dict) else list(range(len(document)))
    key = keys[path[0] % len(keys)]
    copy = dict(document) if isinstance(document, dict) else list(document)
    copy[key] = _replace_somewhere(document[key], path[1:], value)  # type: ignore[index]
    return copy


@PROPERTY_SETTINGS
@given(path=st.lists(st.integers(0, 50), max_size=4), value=JSON_VALUES)
def test_collector_document_of_any_shape_reads_with_problems(probe_document: bytes, path: list[int], value: Any) -> None:
    document = _replace_somewhere(json.loads(probe_document), path, value)
    with hang_guard():
        inventory = inventory_from_probe(document, "container:demo")
    assert isinstance(inventory, Inventory) and inventory.context == "installed"
    for problem in inventory.problems:
        assert problem.location is not None and problem.location.path == "container:demo"
    json.dumps(inventory.to_json(), default=str)


HISTORY_LINES = ["/bin/sh -c #(nop)  ENV CUDA_VERSION=12.4.1 TORCH_CUDA_ARCH_LIST=8.0 9.0", "ENV A=1 B=2",
                 "|2 TAG=v1 PIP=pip /bin/sh -c $PIP install flash-attn==2.8.3", "RUN /bin/sh -c pip install unsloth # buildkit",
                 "ARG X=1", "/bin/sh -c pip install -r requirements.txt", "COPY . /app"]


@PROPERTY_SETTINGS
@given(lines=st.lists(st.one_of(st.sampled_from(HISTORY_LINES), NASTY_TEXT,
                                st.tuples(st.sampled_from(HISTORY_LINES), NASTY_TEXT).map("".join)), max_size=12))
@example(lines=["ENV A=${A:-${B:-${C"])
def test_image_history_reads_with_problems(lines: list[str]) -> None:
    with hang_guard():
        inventory = inventory_from_history(lines, "image:demo")
    for problem in inventory.problems:
        assert problem.location is not None and problem.location.member and problem.location.member.startswith("history[")


LAYER = metadata_layer()
CONFIG: dict[str, Any] = {"architecture": "arm64", "os": "linux", "config": {"Env": ["CUDA_VERSION=13.0.1"]},
                          "history": [{"created_by": "RUN /bin/sh -c pip install torch # buildkit"}],
                          "rootfs": {"type": "layers", "diff_ids": ["sha256:" + "1" * 64]}}
OCI_KEYS = ["schemaVersion", "mediaType", "manifests", "config", "layers", "digest", "size", "platform", "architecture", "os",
            "variant", "history", "created_by", "Env", "annotations", "urls", "rootfs"]
OCI_JSON = st.recursive(
    st.one_of(st.none(), st.integers(-1, 1 << 64), NASTY_TEXT, st.sampled_from(
        ["application/vnd.oci.image.index.v1+json", "application/vnd.oci.image.manifest.v1+json",
         "application/vnd.docker.distribution.manifest.list.v2+json", "arm64", "linux", "sha256:" + "0" * 64, "sha256:x"])),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(OCI_KEYS), inner, max_size=4)),
    max_leaves=10,
)


def _write_layout(folder: Path, part: str, replacement: Any) -> None:
    """A real OCI layout whose ``part`` (index/manifest/config) has one field replaced, stored under its real digest."""
    shutil.rmtree(folder, ignore_errors=True)
    key, value = replacement
    config = json.dumps(dict(CONFIG, **({key: value} if part == "config" else {}))).encode()
    manifest_doc = oci_manifest(config, [LAYER])
    if part == "manifest":
        manifest_doc[key] = value
    manifest = json.dumps(manifest_doc).encode()
    index_doc = oci_index(manifest)
    del index_doc["mediaType"]
    if part == "index":
        index_doc[key] = value
    write_oci_layout(folder, json.dumps(index_doc).encode(), (config, manifest, LAYER))


@PROPERTY_SETTINGS
@given(part=st.sampled_from(["index", "manifest", "config"]), key=st.sampled_from(OCI_KEYS), value=OCI_JSON, deep=st.booleans())
def test_image_json_of_any_shape_reads_or_says_why(tmp_path_factory: pytest.TempPathFactory, part: str, key: str,
                                                   value: Any, deep: bool) -> None:
    folder = tmp_path_factory.mktemp("oci")
    _write_layout(folder, part, (key, value))
    try:
        with hang_guard():
            inventory = read_image(f"oci-layout:{folder}", ImageOptions(deep=deep, use_cache=False))
    except EnvcheckError as exc:
        assert exc.message
        return
    except Exception as exc:
        if known_crash(exc):
            return  # reported: tests/test_fuzz_regressions.py::test_index_entry_without_digest_is_an_input_error
        raise
    assert isinstance(inventory, Inventory)


def _save_archive() -> bytes:
    return docker_save(json.dumps(CONFIG).encode(), gzip.decompress(LAYER))


@PROPERTY_SETTINGS
@given(data=mutated([_save_archive()], max_edits=4), deep=st.booleans())
def test_docker_save_archives_read_or_say_why(tmp_path_factory: pytest.TempPathFactory, data: bytes, deep: bool) -> None:
    path = tmp_path_factory.mktemp("save") / "image.tar"
    path.write_bytes(data)
    try:
        with hang_guard():
            inventory = read_image(f"docker-archive:{path}", ImageOptions(deep=deep, use_cache=False))
    except EnvcheckError as exc:
        assert exc.message
        return
    except Exception as exc:
        if known_crash(exc):
            return  # reported: tests/test_fuzz_regressions.py::test_truncated_docker_save_archive_is_an_input_error
        raise
    assert isinstance(inventory, Inventory)
