"""The parallelism a training/serving launch asks for (nodes, tensor-parallel degree), from its command line
(torchrun, accelerate, deepspeed, vllm, sglang, ms-swift ...) or its JSON/YAML config or DeepSpeed hostfile.
Keys compare after dropping leading dashes and mapping ``-`` to ``_``. YAML is read by a small line reader
(no PyYAML dependency): every scalar leaf counts by its own key; flow collections and block scalars are
skipped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from envcheck.errors import ReadingError
from envcheck.inspect import shell_words

NODE_KEYS = frozenset({"nnodes", "num_nodes", "num_machines", "nodes", "n_nodes", "node_count", "num_node"})
TP_KEYS = frozenset({
    "tensor_parallel_size", "tp", "tp_size", "tensor_model_parallel_size", "tensor_parallel_degree",
    "tp_degree", "megatron_lm_tp_degree", "autotp_size", "tensor_parallel",
})
# A server's share of GPU memory (on unified memory: of the one pool), as a fraction.
MEMORY_KEYS = frozenset({"gpu_memory_utilization", "mem_fraction_static", "kv_cache_free_gpu_memory_fraction",
                         "free_gpu_memory_fraction"})
# Options whose value is a file holding more launch settings.
FILE_KEYS = frozenset({"config_file", "deepspeed", "deepspeed_config", "hostfile", "ds_config"})
# Short options that mean tensor parallelism only in the tools that define them (vllm -tp).
_SHORT_TP = frozenset({"-tp"})
_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
_YAML_LINE = re.compile(r"^(\s*)(?:-\s+)?([A-Za-z0-9_.\-]+)\s*:\s*(.*?)\s*$")
_TOOLS = ("torchrun", "torch.distributed.run", "accelerate", "deepspeed", "vllm", "sglang", "swift", "megatron", "llamafactory-cli",
          "trtllm-serve", "llama-server", "python")


def _tool_named(base: str) -> str | None:
    """The tool a program name is: the name itself or with a version (``python3.12``), not a name that merely
    starts like one (``vllm_disable_compile_cache:``, ``vllm-serve.sh``)."""
    return next((t for t in _TOOLS if base == t or re.fullmatch(rf"{re.escape(t)}\d+(?:\.\d+)*", base)), None)


class LaunchFormatError(ReadingError, ValueError):
    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message, line=line)


@dataclass(frozen=True)
class Setting:
    key: str
    value: str
    line: int | None = None  # in a config


@dataclass(frozen=True)
class Launch:
    origin: str  # "--launch" or a config file path
    tool: str | None
    nodes: int | None
    tp: int | None
    settings: tuple[Setting, ...] = field(default=())

    def to_json(self) -> dict[str, object]:
        settings = [{"key": s.key, "value": s.value, **({"line": s.line} if s.line else {})}
                    for s in self.settings]
        return {"origin": self.origin, "tool": self.tool, "nodes": self.nodes, "tp": self.tp,
                "settings": settings}


def normalise(key: str) -> str:
    return key.lstrip("-").replace("-", "_").lower()


def _count(value: str) -> int | None:
    """An integer setting; ``MIN:MAX`` (torchrun elastic nnodes) counts as MAX."""
    text = value.strip().strip("\"'").rsplit(":", 1)[-1]
    try:
        return int(text)
    except ValueError:
        try:
            as_float = float(text)
        except ValueError:
            return None
        return int(as_float) if as_float.is_integer() else None


def _summarise(origin: str, tool: str | None, settings: list[Setting]) -> Launch:
    nodes: int | None = None
    tp: int | None = None
    for setting in settings:
        count = _count(setting.value)
        if count is None:
            continue
        if setting.key in NODE_KEYS:
            nodes = max(nodes or 0, count)
        elif setting.key in TP_KEYS:
            tp = max(tp or 0, count)
    return Launch(origin, tool, nodes, tp, tuple(settings))


def parse_command(command: str, origin: str = "--launch") -> Launch:
    try:
        words = shell_words.split(command, comments=True)
    except ValueError as exc:
        raise LaunchFormatError(f"cannot split the command line: {exc}") from exc
    if not words:
        raise LaunchFormatError("the launch command is empty")
    settings: list[Setting] = []
    tool: str | None = None
    at_start, i = True, 0
    while i < len(words):
        word = words[i]
        assign = _ASSIGN.match(word)
        if at_start and assign:  # NNODES=2 NPROC_PER_NODE=8 swift sft ...
            settings.append(Setting(normalise(assign.group(1)), assign.group(2)))
            i += 1
            continue
        at_start = False
        if tool is None:
            base = word.rsplit("/", 1)[-1]
            tool = _tool_named(base)
        if word.startswith("--") or word in _SHORT_TP:
            key, eq, value = word.partition("=")
            name = "tp" if key in _SHORT_TP else normalise(key)
            if name in NODE_KEYS or name in TP_KEYS or name in MEMORY_KEYS:
                if not eq and i + 1 < len(words) and not words[i + 1].startswith("-"):
                    value = words[i + 1]
                    i += 1
                if value:
                    settings.append(Setting(name, value))
        elif word == "-m" and i + 1 < len(words) and tool in (None, "python"):  # python -m vllm.entrypoints...
            module = words[i + 1]
            tool = next((t for t in _TOOLS if module.startswith(t)), tool)
        i += 1
    return _summarise(origin, tool, settings)


def referenced_files(command: str) -> list[str]:
    """Config files a launch command names (``--config_file``, ``--deepspeed``, ``--hostfile``, ...)."""
    try:
        words = shell_words.split(command, comments=True)
    except ValueError:
        return []
    found: list[str] = []
    for i, word in enumerate(words):
        if not word.startswith("--"):
            continue
        key, eq, value = word.partition("=")
        if normalise(key) in FILE_KEYS:
            if not eq and i + 1 < len(words) and not words[i + 1].startswith("-"):
                value = words[i + 1]
            if value:
                found.append(value)
    return found


def parse_config(text: str, origin: str) -> Launch:
    if text.lstrip().startswith(("{", "[")):
        try:
            data = json.loads(text)
            settings = [Setting(key, value) for key, value in _json_leaves(data)]
        except json.JSONDecodeError as exc:
            raise LaunchFormatError(f"invalid JSON: {exc.msg}", exc.lineno) from exc
        except RecursionError as exc:
            raise LaunchFormatError("JSON nested too deeply to be a launch config", 1) from exc
        return _summarise(origin, _tool_from_keys(settings), settings)
    hosts = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]
    if hosts and all(re.match(r"^[\w.\-]+\s+slots=\d+$", line) for line in hosts):  # a DeepSpeed hostfile
        return _summarise(origin, "deepspeed", [Setting("num_nodes", str(len(hosts)), 1)])
    if not any(_YAML_LINE.match(line) for line in text.splitlines() if not line.lstrip().startswith("#")):
        # no `key: value` line, no JSON, no hostfile: another kind of file (requirements.txt, a script)
        raise LaunchFormatError("no YAML `key: value` line, no JSON object and no hostfile line (`host slots=N`)")
    settings = list(_yaml_leaves(text))
    return _summarise(origin, _tool_from_keys(settings), settings)


def _json_leaves(data: object, key: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(data, dict):
        for k, v in data.items():  # nested tables count by their leaf keys: {"tensor_parallel": {"autotp_size": 2}}
            yield from _json_leaves(v, normalise(str(k)))
    elif isinstance(data, list):
        for item in data:
            yield from _json_leaves(item, key)
    elif key and isinstance(data, (int, float, str)) and not isinstance(data, bool):
        yield key, str(data)


def _yaml_leaves(text: str) -> Iterator[Setting]:
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split(" #", 1)[0].rstrip() if not raw.lstrip().startswith("#") else ""
        match = _YAML_LINE.match(line)
        if match is None:
            continue  # blank, `---`, list items, flow collections, continuation lines: not settings
        _, key, value = match.groups()
        value = value.strip()
        if not value or value.startswith(("{", "[", "|", ">", "&", "*")):
            continue
        yield Setting(normalise(key), value.strip("\"'"), number)


def _tool_from_keys(settings: list[Setting]) -> str | None:
    keys = {s.key for s in settings}
    if "num_machines" in keys or "distributed_type" in keys or "compute_environment" in keys:
        return "accelerate"
    if "autotp_size" in keys or "zero_optimization" in keys or "train_micro_batch_size_per_gpu" in keys:
        return "deepspeed"
    return None


# Images whose entrypoint is a server, for a `command:` that gives only its options.
_IMAGE_ENTRYPOINTS = ((re.compile(r"(^|/)(?:vllm-openai|vllm/vllm|vllm)(:|@|$)"), ("vllm", "serve")),)


def image_entrypoint(ref: str) -> tuple[str, ...]:
    """The server an image's entrypoint starts (``vllm serve``), for commands that are only its options."""
    return next((tool for pattern, tool in _IMAGE_ENTRYPOINTS if pattern.search(ref)), ())


# Options that name the served model; a model's parameter count in its name ("Qwen3-Embedding-8B", "Qwen2.5-1.5B";
# "Qwen3.6-35B-A3B": 35, not the active "A3B"; "gemma-3n-E4B": none, "E4B" is an effective count).
_MODEL_KEYS = frozenset({"model", "model_path", "model_name_or_path"})
# A parameter count in a model's name: ASCII digits, at most 99,999 billions (the largest models have a few
# thousand); a longer number (Model-1e308B, 400 nines, Arabic-Indic digits) is no count.
_PARAMETERS = re.compile(r"(?<![A-Za-z0-9.])(\d{1,5}(?:\.\d{1,4})?)[Bb](?![A-Za-z0-9])", re.ASCII)
_EXPERTS_TIMES = re.compile(r"\d+\s*[xX]\s*\d+(?:\.\d+)?[Bb](?![A-Za-z0-9])", re.ASCII)  # Mixtral-8x7B: not 8 x 7 = 56B
# Options that keep part of the weights off the one GPU's share, or size the KV cache apart from the share.
_SPLIT_KEYS = frozenset({"pipeline_parallel_size", "pp", "pp_size", "pipeline_model_parallel_size"})
_OFFLOAD_KEYS = frozenset({"cpu_offload_gb", "kv_cache_memory_bytes", "kv_cache_memory"})
_FORMAT_KEYS = frozenset({"quantization", "load_format"})


@dataclass(frozen=True)
class ServedModel:
    name: str  # as the launch gives it: a Hugging Face id or a local path
    quantization: str | None  # --quantization / -q as written ("fp8", "awq", "$Q")
    load_format: str | None  # --load-format (bitsandbytes, gguf)

    @property
    def local(self) -> bool:
        """A path on disk, not an ``org/name`` Hugging Face id: its folder name was chosen by whoever saved it."""
        return self.name.startswith(("/", ".", "~")) or self.name.count("/") != 1


def served_model(command: str) -> ServedModel | None:
    """The model a server launch serves, with its weight-format options: ``--model``/``--model-path``, else the
    word after ``serve``, else a first word that is no option (an image whose entrypoint is the server, given
    only ``MODEL --port ...``). None where the model is not written out (``$MODEL``) or where the weights are not
    all on this GPU's share: ``--pipeline-parallel-size`` above 1, ``--cpu-offload-gb`` above 0, or a KV cache
    sized apart (``--kv-cache-memory-bytes``)."""
    try:
        words = shell_words.split(command, comments=True)
    except ValueError:
        return None
    model: str | None = None
    options: dict[str, str] = {}
    for i, word in enumerate(words):
        if not word.startswith("-"):
            continue
        key, eq, value = word.partition("=")
        name = "quantization" if key == "-q" else normalise(key)
        if not eq:
            value = words[i + 1] if i + 1 < len(words) and not words[i + 1].startswith("-") else ""
        if name in _SPLIT_KEYS and (_count(value) or 1) > 1:
            return None
        if name in _OFFLOAD_KEYS and value.strip("\"'") not in ("", "0", "0.0"):
            return None
        if name in _MODEL_KEYS and model is None and value:
            model = value
        if name in _FORMAT_KEYS and value:
            options.setdefault(name, value)
    if model is None:
        after = next((words[i + 1] for i, w in enumerate(words[:-1]) if w == "serve"), None)
        model = after if after and not after.startswith("-") else None
    if model is None and words and not words[0].startswith("-") and "/" in words[0] and _PARAMETERS.search(words[0]):
        model = words[0]
    if not model or "$" in model:
        return None
    return ServedModel(model, options.get("quantization"), options.get("load_format"))


def parameters_billion(model: str) -> float | None:
    """The parameter count a model's name gives, in billions (the first ``<N>B`` of its last path part); None
    where the name gives none, or gives experts times their size (``8x7B``)."""
    name = model.rstrip("/").rsplit("/", 1)[-1]
    if _EXPERTS_TIMES.search(name):
        return None
    m = _PARAMETERS.search(name)
    return float(m.group(1)) if m else None
