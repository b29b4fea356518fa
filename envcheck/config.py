"""Run configuration, layered as hadolint does: defaults < config file < ENVCHECK_* environment < command line."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from envcheck.errors import UsageError
from envcheck.limits import open_input
from envcheck.model import Status
from envcheck.options import RunOptions

FAIL_ON = {"fail": Status.FAIL, "warn": Status.WARN, "never": None}

# Every environment variable envcheck reads, and why. They are read through :func:`env` only (the probe in
# envcheck/collect/ runs in other interpreters and reads its own); tests/test_config_environment.py holds that.
ENVIRONMENT = {
    "ENVCHECK_PROFILE": "the target profile (as --profile)",
    "ENVCHECK_FAIL_ON": "lowest status that makes the exit code 1 (as --fail-on)",
    "ENVCHECK_IGNORE": "rules or gotchas to ignore, comma-separated (as --ignore)",
    "ENVCHECK_MAX_TEXT_SIZE": "largest text input or config file (as --max-text-size)",
    "ENVCHECK_CACHE_DIR": "envcheck's cache folder",
    "ENVCHECK_SCAN_WORKERS": "worker processes of a folder scan (1: none; default: the cores, at most 16, none below 4)",
    "XDG_CACHE_HOME": "the user cache folder, when ENVCHECK_CACHE_DIR is unset",
    "ENVCHECK_HTTP_TIMEOUT": "overall deadline of a registry or package-index conversation (as --http-timeout)",
    "ENVCHECK_RESOLVE_TTL_HOURS": "how long a --resolve result is reused from the cache",
    "ENVCHECK_RESOLVE_TIMEOUT": "--resolve: seconds for all index reads and uv runs of one run together (default 300)",
    "ENVCHECK_RESOLVE_JOBS": "--resolve: wheels read from the index at once (default 8; 1: one after another)",
    "ENVCHECK_WHEEL_FACTS": "--resolve: the user's newer wheel facts table (default: wheel_facts.json in the cache folder, "
                            "written by `envcheck cache update-facts`); the shipped rows win",
    "ENVCHECK_UV_MEMORY": "--resolve: the most resident memory uv may use (default 2GiB; 0: no limit)",
    "UV_HTTP_TIMEOUT": "uv's request timeout (--resolve passes ENVCHECK_HTTP_TIMEOUT, else 30 s, unless only this is set)",
    "UV_HTTP_RETRIES": "uv's retries (--resolve passes 1 unless this is set)",
    "ENVCHECK_GITHUB_API": "the GitHub API base for G8 (tests, GitHub Enterprise mirrors)",
    "DOCKER_HOST": "the Docker engine to use, as the Docker CLI reads it",
    "DOCKER_CONTEXT": "the Docker CLI context to use",
    "DOCKER_CONFIG": "the Docker CLI's configuration folder (contexts, registry credentials)",
    "PIP_INDEX_URL": "pip's index, used by --resolve when the input names none",
    "PIP_EXTRA_INDEX_URL": "pip's extra indexes, used by --resolve",
    "PIP_FIND_LINKS": "pip's find-links, used by --resolve",
    "UV_INDEX_URL": "uv's index (uv reads it itself; --resolve then leaves pip's alone)",
    "UV_DEFAULT_INDEX": "uv's default index (as UV_INDEX_URL)",
    "UV_EXTRA_INDEX_URL": "uv's extra indexes (as UV_INDEX_URL)",
    "UV_INDEX": "uv's named indexes (as UV_INDEX_URL)",
    "UV_FIND_LINKS": "uv's find-links (as UV_INDEX_URL)",
    "ENVCHECK_SHARD": "the shard K/N of a multi-target run (as --shard; docs/fleet.md)",
    "JOB_COMPLETION_INDEX": "a Kubernetes Indexed Job's index: the shard, with JOB_COMPLETIONS",
    "JOB_COMPLETIONS": "the Job's completions (set in the manifest): the shard count",
    "SLURM_ARRAY_TASK_ID": "a SLURM array task: the shard, with SLURM_ARRAY_TASK_COUNT",
    "SLURM_ARRAY_TASK_COUNT": "a SLURM array's task count: the shard count",
    "SLURM_ARRAY_TASK_MIN": "a SLURM array's first task id (shards count from it)",
}


def env(name: str) -> str | None:
    """The one place envcheck reads its environment: names are listed in :data:`ENVIRONMENT`, but for a
    ``--build-arg NAME`` without a value (the user names it, as with ``docker build``)."""
    return os.environ.get(name)


def env_processes(name: str) -> int | None:
    """Worker processes from the variable ``name`` (None when unset; ``1``: none besides this one)."""
    raw = env(name)
    if not raw:
        return None
    try:
        count = int(raw)
    except ValueError:
        raise UsageError(f"{name} must be a number of processes, not {raw[:40]!r}") from None
    if count < 1:
        raise UsageError(f"{name} must be at least 1 (1: no worker processes)")
    return count


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def child_environment(**overrides: str) -> dict[str, str]:
    return {**os.environ, **overrides}


@dataclass(frozen=True)
class Config:
    """Everything that changes how findings are judged and reported."""
    profile: str = "dgx-spark"
    fail_on: str = "fail"
    ignores: dict[str, str] = field(default_factory=dict)  # rule id or gotcha -> reason
    severity: dict[str, str] = field(default_factory=dict)  # rule id -> status override
    options: RunOptions = field(default_factory=RunOptions)
    source: str = "defaults"  # where the file layer came from

    @property
    def fail_threshold(self) -> Status | None:
        return FAIL_ON[self.fail_on]


# Sizes: a plain number of bytes, or with a unit (16MiB, 64M, 1G, 500k; decimal units are read as binary).
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


def parse_size(text: str, what: str = "a size") -> int:
    """``16MiB``, ``64M``, ``1048576`` as bytes; anything else is a usage error naming ``what``."""
    value = text.strip().lower().removesuffix("ib").removesuffix("b")
    number, unit = value.rstrip("kmgt"), value[len(value.rstrip("kmgt")):]
    try:
        if unit not in _UNITS or not number or len(number) > 20:
            raise ValueError(unit)
        size = int(float(number) * _UNITS[unit])
    except (ValueError, OverflowError):
        raise UsageError(f"{what} must be a size such as 16MiB, 64M or 1048576, not {text[:40]!r}") from None
    if size <= 0:
        raise UsageError(f"{what} must be more than 0 bytes")
    return size


def text_limit_default() -> int:
    from envcheck.limits import MAX_TEXT_BYTES  # not sources.requirements: that brings packaging and pip_args
    raw = env("ENVCHECK_MAX_TEXT_SIZE")
    return parse_size(raw, "ENVCHECK_MAX_TEXT_SIZE") if raw else MAX_TEXT_BYTES


def _config_bytes(path: Path, max_bytes: int) -> bytes:
    """A config file's bytes: a regular file (never a FIFO) within the text-size limit, else a usage error."""
    from envcheck.limits import OverLimit, read_regular
    try:
        return read_regular(path, max_bytes)[0]
    except OverLimit:
        raise UsageError(f"config {path} is over the {max_bytes}-byte limit for a config file (raise it with --max-text-size "
                         "or ENVCHECK_MAX_TEXT_SIZE, or pass another --config)") from None
    except OSError as exc:
        raise UsageError(f"cannot read config {path}: {exc.strerror or exc}") from exc


def _table_from_file(path: Path, max_bytes: int) -> dict[str, Any] | None:
    data = _config_bytes(path, max_bytes)
    from envcheck import toml  # here: a run without a config file does not load the TOML parser
    try:
        parsed = toml.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise UsageError(f"config {path} is not UTF-8 text (byte offset {exc.start})") from None
    except toml.TOMLDecodeError as exc:
        raise UsageError(f"config {path} is not valid TOML: {exc}") from exc
    except RecursionError:
        raise UsageError(f"config {path}: arrays or inline tables nested too deeply to read") from None
    except ValueError as exc:  # an integer past Python's digit limit
        raise UsageError(f"config {path} cannot be read: {str(exc)[:120]}") from None
    tool = parsed.get("tool")
    if tool is not None and not isinstance(tool, dict):
        raise UsageError(f"config {path}: `tool` must be a table ([tool.envcheck]), not {type(tool).__name__}")
    table = (tool or {}).get("envcheck")
    if table is not None and not isinstance(table, dict):
        raise UsageError(f"config {path}: [tool.envcheck] must be a table, not {type(table).__name__}")
    if path.name == "pyproject.toml":
        return table
    return table if table is not None else parsed


def find_config(start: Path, max_bytes: int | None = None) -> Path | None:
    """``.envcheck.toml``, or a pyproject.toml with ``[tool.envcheck]`` (searched in bounded chunks), in
    ``start`` or a parent up to the repository root; only regular files count."""
    limit = text_limit_default() if max_bytes is None else max_bytes
    start = start.resolve()
    for folder in (start, *start.parents):
        candidate = folder / ".envcheck.toml"
        if candidate.is_file():
            return candidate
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file() and _mentions_envcheck(pyproject, limit):
            return pyproject
        if (folder / ".git").exists():
            break
    return None


def _mentions_envcheck(path: Path, max_bytes: int) -> bool:
    needle = b"[tool.envcheck"
    try:
        with open_input(path) as fh:
            tail = b""
            read = 0
            while chunk := fh.read(1 << 20):
                read += len(chunk)
                if needle in tail + chunk:
                    return True
                if read > max_bytes:
                    return False  # not a config file envcheck would read; it is judged (and refused) as an input
                tail = chunk[-len(needle):]
    except OSError:
        return False
    return False


def selector(text: str, origin: str) -> str:
    """The rule id, gotcha or ``policy`` that ``text`` names in any case, spelled as envcheck does (``g1`` is
    ``G1``); a usage error that starts with ``origin`` when it names none."""
    from envcheck.rules import canonical_selector, unknown_selector
    found = canonical_selector(text)
    if found is None:
        raise UsageError(f"{origin}: {unknown_selector(text)}")
    return found


def _rule_id(text: str, origin: str) -> str:
    """The rule id ``text`` names in any case; a usage error when it names a gotcha or ``policy`` (a
    severity applies to one rule) or nothing."""
    from envcheck.rules import RULES
    found = selector(text, origin)
    if found not in RULES:
        raise UsageError(f"{origin}: {text!r} is not a rule id: a severity is set per rule (`envcheck rules {text}` lists its rules)")
    return found


def _text(table: dict[str, Any], key: str, origin: str) -> str:
    value = table[key]
    if not isinstance(value, str):
        raise UsageError(f"{origin}: {key} must be a string, not {_kind(value)}")
    return value


def _kind(value: Any) -> str:
    return {dict: "a table", list: "a list", bool: "true/false", int: "a number", float: "a number"}.get(type(value), type(value).__name__)


# The keys a config table may hold (`tool` too: a .envcheck.toml may nest its table as [tool.envcheck]).
CONFIG_KEYS = ("profile", "fail-on", "fail_on", "ignore", "severity", "nvfp4", "deep-fatbin", "expect-bandwidth", "max-text-size")


def _apply_table(config: Config, table: dict[str, Any], origin: str) -> Config:
    """The config layer ``table`` over ``config``; every malformed value or unknown key is a usage error naming it."""
    for key in sorted(set(table) - {*CONFIG_KEYS, "tool"}):
        import difflib
        close = difflib.get_close_matches(key, [k for k in CONFIG_KEYS if k != "fail_on"], n=1, cutoff=0.6)
        raise UsageError(f"{origin}: unknown key {key[:80]!r}" + (f"; the closest is {close[0]!r}" if close else "")
                         + f" (the keys are {', '.join(k for k in CONFIG_KEYS if k != 'fail_on')})")
    changes: dict[str, Any] = {"source": origin}
    if "profile" in table:
        changes["profile"] = _text(table, "profile", origin)
    for key in ("fail-on", "fail_on"):
        if key in table:
            value = _text(table, key, origin)
            if value not in FAIL_ON:
                raise UsageError(f"{origin}: {key} must be one of {', '.join(FAIL_ON)}, not {value[:40]!r}")
            changes["fail_on"] = value
    ignores = dict(config.ignores)
    raw = table.get("ignore", [])
    if isinstance(raw, dict):
        raw = [{"rule": k, "reason": v} for k, v in raw.items()]
    if not isinstance(raw, list):
        raise UsageError(f"{origin}: ignore must be a list of rule ids or {{rule, reason}} tables, not {_kind(raw)}")
    for item in raw:
        if isinstance(item, str):
            ignores[selector(item, f"{origin}: ignore")] = "ignored in config"
        elif isinstance(item, dict) and isinstance(item.get("rule"), str) and isinstance(item.get("reason", ""), str):
            ignores[selector(item["rule"], f"{origin}: ignore")] = item.get("reason") or "ignored in config"
        else:
            raise UsageError(f"{origin}: ignore entries must be rule ids or {{rule = \"ID\", reason = \"...\"}} tables, not {_kind(item)}")
    changes["ignores"] = ignores
    severity = dict(config.severity)
    raw_severity = table.get("severity", {})
    if not isinstance(raw_severity, dict):
        raise UsageError(f"{origin}: severity must be a table of rule ids and statuses (severity = {{G9-unpinned = \"INFO\"}}), "
                         f"not {_kind(raw_severity)}")
    for rule_id, status in raw_severity.items():
        canonical = _rule_id(str(rule_id), f"{origin}: severity")
        if not isinstance(status, str) or status.upper() not in Status.__members__:
            raise UsageError(f"{origin}: severity.{rule_id} must be one of {', '.join(Status.__members__)}")
        severity[canonical] = status.upper()
    changes["severity"] = severity
    options: dict[str, Any] = {}
    for key in ("nvfp4", "deep-fatbin"):
        if key in table:
            if not isinstance(table[key], bool):
                raise UsageError(f"{origin}: {key} must be true or false, not {_kind(table[key])}")
            options[key.replace("-", "_")] = table[key]
    if "expect-bandwidth" in table:
        value = table["expect-bandwidth"]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1e6:
            raise UsageError(f"{origin}: expect-bandwidth must be a number of GB/s, not {_kind(value)}")
        options["expect_bandwidth"] = float(value)
    if "max-text-size" in table:
        value = table["max-text-size"]
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise UsageError(f"{origin}: max-text-size must be a size such as \"64MiB\" or a number of bytes, not {_kind(value)}")
        options["max_text_bytes"] = parse_size(str(value), f"{origin}: max-text-size")
    changes["options"] = replace(config.options, **options)
    return replace(config, **changes)


def load_config(explicit: str | None, cwd: Path, max_bytes: int | None = None) -> Config:
    """Defaults, then the config file (explicit or discovered, at most ``max_bytes``), then ENVCHECK_*."""
    config = Config()
    limit = text_limit_default() if max_bytes is None else max_bytes
    path = Path(explicit) if explicit else find_config(cwd, limit)
    if explicit and not path.is_file():  # type: ignore[union-attr]
        what = "is a folder" if path.is_dir() else "no such file" if not path.exists() else "is not a regular file"  # type: ignore[union-attr]
        raise UsageError(f"config file {explicit}: {what}; --config takes a TOML file (.envcheck.toml, pyproject.toml)")
    if path is not None:
        table = _table_from_file(path, limit)
        if table:
            config = _apply_table(config, table, str(path))
    for key, name in (("profile", "ENVCHECK_PROFILE"), ("fail-on", "ENVCHECK_FAIL_ON"), ("max-text-size", "ENVCHECK_MAX_TEXT_SIZE"),
                      ("ignore", "ENVCHECK_IGNORE")):
        value = env(name)
        if value:  # one layer per variable, so that an error names the variable (`ENVCHECK_FAIL_ON: fail-on must be ...`)
            item: Any = [r.strip() for r in value.split(",") if r.strip()] if key == "ignore" else value
            config = replace(_apply_table(config, {key: item}, name), source="environment")
    return config
