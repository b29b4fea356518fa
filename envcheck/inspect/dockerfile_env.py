"""What a Dockerfile stage's instructions do to its environment, and which stages reach the image."""

from __future__ import annotations

import re
from collections import ChainMap
from collections.abc import Callable, Iterator, Mapping, Sequence

from envcheck.inspect.dockerfile import (
    MAX_EXPANDED_TOTAL,
    Dockerfile,
    DockerfileSyntaxError,
    Instruction,
    Stage,
    arg_pairs,
    copied_from,
    env_pairs,
    expand,
)
from envcheck.inspect.shell import SimpleCommand


def inherited_env(df: Dockerfile, stage: Stage, build_args: Mapping[str, str]) -> dict[str, str]:
    """ENV values a stage starts with from the stages it builds on (ARGs do not cross FROM), cached on ``df``
    and filled from the root down: a long ``FROM <stage>`` chain never recurses, each stage is walked once."""
    if stage.parent is None:
        return {}
    args_key = tuple(sorted(build_args.items()))
    chain: list[Stage] = []
    walk: Stage | None = df.stages[stage.parent]
    while walk is not None and (walk.index, args_key) not in df.env_at_end:
        chain.append(walk)
        walk = df.stages[walk.parent] if walk.parent is not None else None
    for ancestor in reversed(chain):
        start = dict(df.env_at_end[(ancestor.parent, args_key)]) if ancestor.parent is not None else {}
        values, env = dict(start), dict(start)
        env_names = set(start)
        for inst in ancestor.instructions:
            changes = instruction_changes(df, inst, values, build_args)
            _apply(changes, values, env_names)
            env.update((name, value) for name, value, origin in changes if origin == "env")
        df.env_at_end[(ancestor.index, args_key)] = env
    return dict(df.env_at_end[(stage.parent, args_key)])


def walk_stage(df: Dockerfile, stage: Stage, build_args: Mapping[str, str]
               ) -> Iterator[tuple[Instruction, dict[str, str], list[tuple[str, str, str]]]]:
    """Each instruction of ``stage`` with the variables visible to it (a live dict: copy to keep) and the
    (name, value, origin) an ARG/ENV sets, applied once the consumer has seen the instruction."""
    values = inherited_env(df, stage, build_args)
    env_names = set(values)
    for inst in stage.instructions:
        changes = instruction_changes(df, inst, values, build_args) if inst.keyword in ("ENV", "ARG") else []
        yield inst, values, changes
        _apply(changes, values, env_names)


def instruction_changes(df: Dockerfile, inst: Instruction, values: dict[str, str], build_args: Mapping[str, str]
                        ) -> list[tuple[str, str, str]]:
    """(name, value, origin) for each variable an ARG/ENV sets. The file's values together are bounded by
    MAX_EXPANDED_TOTAL: ``ENV A=$A$A`` forty times is 503 bytes that double into gigabytes."""
    changed: list[tuple[str, str, str]] = []
    try:
        if inst.keyword == "ENV":
            # `ENV A=1 B=$A`: B sees A as it was before this instruction (Docker's rule): no pair sees another
            for name, raw in env_pairs(inst, df.escape):
                changed.append((name, expand(raw, values, df.escape, keep_unknown=True).value, "env"))
        elif inst.keyword == "ARG":
            local: dict[str, str] = {}  # `ARG A=1 B=$A`: B sees A
            for name, default in arg_pairs(inst, df.escape):
                if name in build_args:
                    value: str | None = build_args[name]
                elif default is not None:
                    value = expand(default, ChainMap(local, values) if local else values, df.escape).value  # no copy per name
                else:
                    value = df.global_values.get(name)  # ARG NAME re-imports the global value
                if value is not None:
                    local[name] = value
                    changed.append((name, value, "arg"))
    except DockerfileSyntaxError as exc:
        raise DockerfileSyntaxError(exc.message, exc.line or inst.line) from exc
    df.expanded_chars += sum(len(value) for _, value, _ in changed)
    if df.expanded_chars > MAX_EXPANDED_TOTAL:
        raise DockerfileSyntaxError(
            f"the ENV/ARG values of this file expand to more than {MAX_EXPANDED_TOTAL >> 20} MiB (variables that "
            "repeat one another); envcheck stops reading it here", inst.line)
    return changed


def _apply(changes: list[tuple[str, str, str]], values: dict[str, str], env_names: set[str]) -> None:
    """Apply changes in place; ``env_names`` collects the names ENV set."""
    for name, value, origin in changes:
        if origin == "env":
            values[name] = value
            env_names.add(name)
        elif name not in env_names:  # an ARG never overrides an ENV (Docker's rule)
            values[name] = value


def copied_into_image(df: Dockerfile, keeps: set[int]) -> dict[int, int]:
    """Stages outside the image (``keeps``: those in it) whose files a stage of it takes with ``COPY --from``
    (with the stages they build on), each with the line of that COPY."""
    copied: dict[int, int] = {}
    for stage in df.stages:
        if stage.index not in keeps:
            continue
        for inst in stage.instructions:
            source = copied_from(inst)
            walk = df.stage_by_ref(source) if source is not None else None
            while walk is not None and walk.index not in keeps and walk.index not in copied:
                copied[walk.index] = inst.line
                walk = df.stages[walk.parent] if walk.parent is not None else None
    return copied


def stages_in_build(df: Dockerfile) -> set[int]:
    """The stages BuildKit builds: the final ones, then every stage one of those names in ``COPY --from`` or
    ``RUN --mount=...,from=``, with the stages it builds on, as far as the chain goes."""
    reach = {s.index for s in df.stages if s.final}
    pending = sorted(reach)
    while pending:
        stage = df.stages[pending.pop()]
        for inst in stage.instructions:
            refs = [copied_from(inst)]
            if inst.keyword == "RUN":
                refs.extend(_mount_source(spec) for spec in inst.flag_values("mount"))
            for ref in refs:
                walk = df.stage_by_ref(ref) if ref else None
                while walk is not None and walk.index not in reach:
                    reach.add(walk.index)
                    pending.append(walk.index)
                    walk = df.stages[walk.parent] if walk.parent is not None else None
    return reach


def _mount_source(spec: str) -> str | None:
    for part in spec.split(","):
        key, _, value = part.partition("=")
        if key.strip() == "from":
            return value.strip() or None
    return None


def settings_ending_with_run(text: str, commands: Sequence[tuple[SimpleCommand, int]], names: Sequence[str],
                             builds: Callable[[list[str]], bool], values: Mapping[str, str]) -> list[tuple[str, str]]:
    """Build settings (``names``: TORCH_CUDA_ARCH_LIST ...) a RUN's shell sets for no build command of that
    same RUN: the shell ends with the RUN, so later RUNs never see them. Values in force are left out."""
    found: list[tuple[str, str]] = []
    for name in names:
        written = list(re.finditer(rf"(?:^|[\s;&|(]){name}=(\"[^\"]*\"|'[^']*'|[^\s;&|)]*)", text))
        if not written:
            continue
        value = written[-1].group(1).strip("\"'")  # the last assignment is what the shell holds
        if value == values.get(name) or any(name in cmd.env and builds(list(cmd.argv)) for cmd, _line in commands):
            continue
        found.append((name, value))
    return found
