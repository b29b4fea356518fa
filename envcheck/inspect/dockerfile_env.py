"""What a Dockerfile stage's instructions do to its environment: the variables a stage inherits from the
stages it builds on, and each instruction's changes applied in order."""

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
    """ENV values a stage starts with from the stages it builds on (ARGs do not cross FROM).

    The ENV at the end of each stage is cached on ``df`` and filled from the root down, so a long
    chain of ``FROM <stage>`` never recurses deeply and each stage is walked once.
    """
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
            for name, value, origin in apply_instruction(df, inst, values, build_args, env_names):
                if origin == "env":
                    env[name] = value
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
    """(name, value, origin) for each variable an ARG/ENV instruction sets, without changing ``values``.

    Raises :class:`DockerfileSyntaxError` (at the instruction's line) when the values of the file together
    expand past :data:`MAX_EXPANDED_TOTAL`: ``ENV A=$A$A`` forty times is 503 bytes that double into gigabytes.
    """
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
    for name, value, origin in changes:
        if origin == "env":
            values[name] = value
            env_names.add(name)
        elif name not in env_names:  # an ARG never overrides an ENV (Docker's rule)
            values[name] = value


def apply_instruction(df: Dockerfile, inst: Instruction, values: dict[str, str], build_args: Mapping[str, str],
                      env_names: set[str] | None = None) -> list[tuple[str, str, str]]:
    """Update ``values`` for an ARG/ENV instruction; returns (name, value, origin) for each it sets.

    ``env_names`` collects names set by ENV: an ARG never overrides them (Docker's rule).
    """
    changed = instruction_changes(df, inst, values, build_args)
    _apply(changed, values, set() if env_names is None else env_names)
    return changed


def copied_into_image(df: Dockerfile, keeps: set[int]) -> dict[int, int]:
    """Stages outside the final image (``keeps``: the indexes of those in it) whose output a stage of it takes with
    ``COPY --from``, each with the line of that COPY (a stage a copied stage builds on counts too: its files are
    the copied stage's)."""
    copied: dict[int, int] = {}
    for stage in df.stages:
        if stage.index not in keeps:
            continue
        for inst in stage.instructions:
            source = copied_from(inst)
            other = df.stage_by_ref(source) if source is not None else None
            walk: Stage | None = other
            while walk is not None and walk.index not in keeps and walk.index not in copied:
                copied[walk.index] = inst.line
                walk = df.stages[walk.parent] if walk.parent is not None else None
    return copied


def stages_in_build(df: Dockerfile) -> set[int]:
    """Indexes of the stages whose work reaches the built image: the target stage (the last one, or
    ``--target``) and the stages it builds on (``FROM <stage>``), then every stage that one of those names
    in ``COPY``/``ADD --from`` or ``RUN --mount=...,from=``, with the stages that one builds on, as far as the
    chain goes. BuildKit builds only these; a stage outside them does not change the image."""
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
    """The ``from=`` of one ``RUN --mount=`` value (a stage or an image), or None."""
    for part in spec.split(","):
        key, _, value = part.partition("=")
        if key.strip() == "from":
            return value.strip() or None
    return None
def settings_ending_with_run(text: str, commands: Sequence[tuple[SimpleCommand, int]], names: Sequence[str],
                             builds: Callable[[list[str]], bool], values: Mapping[str, str]) -> list[tuple[str, str]]:
    """Build settings (``names``: TORCH_CUDA_ARCH_LIST ...) a RUN's shell sets (``export NAME=...`` or a bare
    ``NAME=...``) for no build command of that same RUN: the shell ends with the RUN, so later RUNs never see them
    (``RUN export TORCH_CUDA_ARCH_LIST=12.1a`` on its own line). Values already in force (``values``) are left out."""
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
