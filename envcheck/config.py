"""Run configuration, layered as hadolint does: defaults < config file < ENVCHECK_* environment < command line."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from envcheck.errors import UsageError
from envcheck.model import Status

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

FAIL_ON = {"fail": Status.FAIL, "warn": Status.WARN, "never": None}


@dataclass(frozen=True)
class Config:
    """Everything that changes how findings are judged and reported."""

    profile: str = "dgx-spark"
    fail_on: str = "fail"
    ignores: dict[str, str] = field(default_factory=dict)  # rule id or gotcha -> reason
    severity: dict[str, str] = field(default_factory=dict)  # rule id -> status override
    options: dict[str, Any] = field(default_factory=dict)  # check options (nvfp4, expect_bandwidth, ...)
    source: str = "defaults"  # where the file layer came from

    @property
    def fail_threshold(self) -> Status | None:
        return FAIL_ON[self.fail_on]


def _table_from_file(path: Path) -> dict[str, Any] | None:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read config {path}: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"config {path} is not valid TOML: {exc}") from exc
    tool = data.get("tool")
    if tool is not None and not isinstance(tool, dict):
        raise UsageError(f"config {path}: `tool` must be a table ([tool.envcheck]), not {type(tool).__name__}")
    table = (tool or {}).get("envcheck")
    if table is not None and not isinstance(table, dict):
        raise UsageError(f"config {path}: [tool.envcheck] must be a table, not {type(table).__name__}")
    if path.name == "pyproject.toml":
        return table
    return table if table is not None else data


def find_config(start: Path) -> Path | None:
    """``.envcheck.toml``, or a pyproject.toml with ``[tool.envcheck]``, in ``start`` or a parent."""
    start = start.resolve()
    for folder in (start, *start.parents):
        candidate = folder / ".envcheck.toml"
        if candidate.is_file():
            return candidate
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file():
            try:
                if "[tool.envcheck" in pyproject.read_text(encoding="utf-8", errors="replace"):
                    return pyproject
            except OSError:
                pass
        if (folder / ".git").exists():
            break
    return None


def _apply_table(config: Config, table: dict[str, Any], origin: str) -> Config:
    changes: dict[str, Any] = {"source": origin}
    if "profile" in table:
        changes["profile"] = str(table["profile"])
    if "fail-on" in table or "fail_on" in table:
        value = str(table.get("fail-on", table.get("fail_on")))
        if value not in FAIL_ON:
            raise UsageError(f"{origin}: fail-on must be one of {', '.join(FAIL_ON)}, not {value!r}")
        changes["fail_on"] = value
    ignores = dict(config.ignores)
    raw = table.get("ignore", [])
    if isinstance(raw, dict):
        raw = [{"rule": k, "reason": v} for k, v in raw.items()]
    if not isinstance(raw, list):
        raise UsageError(f"{origin}: ignore must be a list of rule ids or {{rule, reason}} tables")
    for item in raw:
        if isinstance(item, str):
            ignores[item] = "ignored in config"
        elif isinstance(item, dict) and "rule" in item:
            ignores[str(item["rule"])] = str(item.get("reason", "ignored in config"))
        else:
            raise UsageError(f"{origin}: bad ignore entry {item!r}")
    changes["ignores"] = ignores
    severity = dict(config.severity)
    for rule_id, status in dict(table.get("severity", {})).items():
        if str(status).upper() not in Status.__members__:
            raise UsageError(f"{origin}: severity for {rule_id} must be one of {', '.join(Status.__members__)}")
        severity[str(rule_id)] = str(status).upper()
    changes["severity"] = severity
    options = dict(config.options)
    for key in ("nvfp4", "expect-bandwidth", "deep-fatbin"):
        if key in table:
            options[key.replace("-", "_")] = table[key]
    changes["options"] = options
    return replace(config, **changes)


def load_config(explicit: str | None, cwd: Path) -> Config:
    """Defaults, then the config file (explicit or discovered), then ENVCHECK_* variables."""
    config = Config()
    path = Path(explicit) if explicit else find_config(cwd)
    if explicit and not path.is_file():  # type: ignore[union-attr]
        raise UsageError(f"config file {explicit} does not exist")
    if path is not None:
        table = _table_from_file(path)
        if table:
            config = _apply_table(config, table, str(path))
    env_table: dict[str, Any] = {}
    if os.environ.get("ENVCHECK_PROFILE"):
        env_table["profile"] = os.environ["ENVCHECK_PROFILE"]
    if os.environ.get("ENVCHECK_FAIL_ON"):
        env_table["fail-on"] = os.environ["ENVCHECK_FAIL_ON"]
    if os.environ.get("ENVCHECK_IGNORE"):
        env_table["ignore"] = [r.strip() for r in os.environ["ENVCHECK_IGNORE"].split(",") if r.strip()]
    if env_table:
        config = _apply_table(config, env_table, "environment")
    return config
