"""The input kinds envcheck reads: one typed table (names, reader module, file names, content recognition,
rule inputs) read by the sources, ``--kind``, rule declarations, the engine and ``scripts/gen_hooks.py``.
Everything imports it, so it imports nothing from envcheck and only ``re`` and ``dataclasses``."""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class InputKind:
    """One input kind: its name, reader, file names, content recognition and the rule inputs it satisfies."""
    name: str  # the --kind name and the target kind in reports
    module: str  # the source module that reads it (KIND, read(path, options), optional sniff(path, head))
    what: str  # what it is, in the user's words (--kind help, "cannot tell" errors, hook descriptions)
    names: str = ""  # regular expression over a file's base name (full match); "" = never recognised by name
    magic: tuple[bytes, ...] = ()  # leading bytes that identify it without importing its module
    sniff: bool = False  # its module's sniff(path, head) recognises it by content (tried in table order)
    satisfies: tuple[str, ...] = ()  # rule `inputs` names it answers to besides its own name
    # What its inventory carries, for the kind sets below: dependencies, lock (exact pins), binaries (ELF
    # files), environment (installed), live (running), launches (commands that start servers and jobs).
    holds: tuple[str, ...] = ()
    path: bool = True  # a PATH on the command line (False: a subcommand builds its targets)
    discover: bool = True  # found by name in project folders (`envcheck DIR`)
    examples: bool = False  # files users commit: every rule on this kind ships fixtures/rules examples
    hook: str = ""  # id of the pre-commit hook that checks its files ("" = none)
    # Files discovery sniffs by content, over `folder/name` (the last two parts of the path): */*.yaml for
    # Kubernetes, requirements/*.txt for requirements; a named file is sniffed whatever its name.
    sniff_names: str = ""
    hook_files: str = ""  # a pre-commit `files` regex over the whole path: files known by content (and folder), not name
    pattern: re.Pattern[str] = field(init=False, repr=False, compare=False)
    sniff_pattern: re.Pattern[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "pattern", re.compile(self.names) if self.names else re.compile(r"(?!)"))
        object.__setattr__(self, "sniff_pattern", re.compile(self.sniff_names) if self.sniff_names else None)

    @property
    def rule_inputs(self) -> frozenset[str]:
        return frozenset((self.name, ANY, *self.satisfies))

    def matches_name(self, name: str) -> bool:
        """Does a file called ``name`` (a base name) have this kind by its name alone?"""
        return self.pattern.fullmatch(name) is not None


# A rule input that every kind satisfies (a check driven by configuration, not by the input's facts).
ANY = "any"

# Dockerfile names as pre-commit's identify has them: a dot-separated part that is exactly `Dockerfile` or
# `Containerfile` (Dockerfile.cuda, app.Dockerfile), or those extensions; never `dockerfiles.md`, nor a name that
# ends in another format's extension (Dockerfile.dockerignore, BuildKit's ignore file for a Dockerfile; .md).
_DOCKERFILE = (r"(?![^/]*\.(?i:dockerignore|md|rst|json|toml|ya?ml)$)(?:[^/]*\.)?(?:Dockerfile|Containerfile)(?:\.[^/]*)?"
               r"|[^/]+\.(?i:dockerfile|containerfile)")

# Files in a folder named for requirements (requirements/cuda.txt, reqs/dev.in, constraints.d/ci.txt): discovery
# reads them when their content is a requirements file's, and the requirements hook takes them.
_REQUIREMENTS_FOLDER_FILES = r"(?i:(?:requirements?|reqs?|constraints?)(?:[-_.]d)?/[^/]+\.(?:txt|in))"

# Prose files that sit in such a folder (requirements/README.txt): the hook leaves them out, as discovery does.
_PROSE = r"(?i:(?:requirements?|reqs?|constraints?)(?:[-_.]d)?/(?:readme|license|licence|notice|changelog|authors)[^/]*$)"

# Order matters twice: the first row whose name rule matches wins (freeze before requirements:
# `requirements-freeze.txt` is pip freeze output), and sniffers are tried in this order.
KINDS: tuple[InputKind, ...] = (
    InputKind("freeze", "envcheck.sources.requirements", "pip freeze output (*freeze*.txt)",
              names=r"(?i:[^/]*freeze[^/]*\.txt)", satisfies=("requirements",), examples=True,
              hook="envcheck-requirements", holds=("dependencies",)),
    InputKind("requirements", "envcheck.sources.requirements",
              "requirements and constraints files (requirements*.txt, constraints*.in, requirements/*.txt)",
              names=r"(?i:[^/]*(?:requirement|constraint)[^/]*\.(?:txt|in|pip))", sniff=True, examples=True,
              hook="envcheck-requirements", holds=("dependencies",),
              sniff_names=_REQUIREMENTS_FOLDER_FILES, hook_files=f"(^|/)(?!{_PROSE}){_REQUIREMENTS_FOLDER_FILES}$"),
    InputKind("pyproject", "envcheck.sources.pyproject", "pyproject.toml", names=r"(?i:pyproject\.toml)",
              sniff=True, examples=True, hook="envcheck-pyproject", holds=("dependencies",)),
    InputKind("uv-lock", "envcheck.sources.locks", "uv.lock", names=r"(?i:uv\.lock)", sniff=True,
              satisfies=("lock",), examples=True, hook="envcheck-pyproject", holds=("dependencies", "lock")),
    InputKind("pylock", "envcheck.sources.pylock", "PEP 751 lock files (pylock.toml, pylock.NAME.toml)",
              names=r"(?i:pylock(?:\.[^/]+)?\.toml)", sniff=True, satisfies=("lock",), examples=True,
              hook="envcheck-pyproject", holds=("dependencies", "lock")),
    InputKind("conda", "envcheck.sources.conda", "conda environment files (environment.yml)",
              names=r"(?i:(?:[^/]*[-_.])?environment(?:[-_.][^/]*)?\.ya?ml)", sniff=True,
              satisfies=("requirements",), examples=True, hook="envcheck-conda", holds=("dependencies",)),
    InputKind("dockerfile", "envcheck.sources.dockerfile", "Dockerfiles and Containerfiles",
              names=_DOCKERFILE, sniff=True, examples=True, hook="envcheck-dockerfile"),
    InputKind("compose", "envcheck.sources.compose", "Compose files (compose.yaml, docker-compose*.yml)",
              names=r"(?i:(?:docker-)?compose(?:[-.][^/]*)?\.ya?ml)", sniff=True, satisfies=("dockerfile",),
              examples=True, hook="envcheck-compose", sniff_names=r"(?i:[^/]*/[^/]+\.ya?ml)", holds=("launches",)),
    InputKind("kubernetes", "envcheck.sources.kubernetes",
              "Kubernetes manifests (Pod, Deployment, Job, ... in *.yaml)",
              sniff=True, satisfies=("dockerfile",), examples=True, hook="envcheck-kubernetes",
              sniff_names=r"(?i:[^/]*/[^/]+\.ya?ml)", holds=("launches",),
              hook_files=r"(^|/)(?i:k8s|kube|kubernetes|manifests?|deploy|deployments?|helm|charts?)/"
                         r"(?:[^/]+/)*[^/]+\.(?i:ya?ml)$"),
    InputKind("shell", "envcheck.sources.shell",
              "shell scripts (*.sh, or a shebang naming sh, bash, dash or zsh)", names=r"[^/]+\.(?i:sh)",
              sniff=True, satisfies=("dockerfile",), examples=True, hook="envcheck-shell",
              holds=("launches",)),
    InputKind("notebook", "envcheck.sources.notebook", "Jupyter notebooks (*.ipynb)",
              names=r"[^/]+\.(?i:ipynb)", satisfies=("dockerfile",), examples=True, hook="envcheck-notebook",
              holds=("launches",)),
    InputKind("wheel", "envcheck.sources.wheel", "wheels (*.whl)", names=r"(?i:[^/]+\.whl)", examples=True,
              holds=("binaries",)),
    InputKind("elf", "envcheck.sources.binaries", "ELF files and ar archives (.so, executables, .a)",
              magic=(b"\x7fELF", b"!<arch>\n"), discover=False, holds=("binaries",)),
    InputKind("folder", "envcheck.sources.folder",
              "installed environments (a venv, site-packages, a conda env)", discover=False,
              holds=("binaries", "environment")),
    InputKind("image", "envcheck.sources.image", "container images (envcheck image)", path=False, discover=False,
              holds=("binaries", "environment")),
    InputKind("container", "envcheck.sources.container", "running containers (envcheck container)", path=False, discover=False,
              holds=("binaries", "environment", "live")),
    InputKind("host", "envcheck.sources.host", "this machine (envcheck preflight)", path=False, discover=False,
              holds=("binaries", "environment", "live")),
)


def _holding(fact: str, but: str = "") -> tuple[str, ...]:
    return tuple(k.name for k in KINDS if fact in k.holds and but not in k.holds)


# Kind sets that rule ``inputs`` are built from, read off ``holds``: a new kind joins them by its row.
DEPENDENCY_FILES = _holding("dependencies")  # requirements, freeze, pyproject, uv.lock, pylock, conda
REQUIREMENT_FILES = _holding("dependencies", but="lock")  # the same without lock files
LOCK_FILES = _holding("lock")
BINARY_KINDS = _holding("binaries")  # inventories with ELF files: elf, folder, wheel, image, container, host
ENVIRONMENTS = _holding("environment")  # installed environments: folder, image, container, host
LIVE_KINDS = _holding("live")  # running environments: host (preflight), container
LAUNCH_FILES = _holding("launches")  # files with launch commands: compose, kubernetes, shell, notebook

BY_NAME: dict[str, InputKind] = {k.name: k for k in KINDS}
# Names a rule may list in `inputs`: every kind, and what kinds satisfy besides their names.
RULE_INPUTS: frozenset[str] = frozenset(n for k in KINDS for n in k.rule_inputs)


def get(name: str) -> InputKind | None:
    return BY_NAME.get(name)


def path_kinds() -> list[str]:
    """The kinds ``--kind`` accepts: those read from a PATH, in table order."""
    return [k.name for k in KINDS if k.path]


def by_file_name(name: str, discovering: bool = False) -> InputKind | None:
    """The kind a file called ``name`` has by its name alone (the first row matching), or None;
    ``discovering``: only kinds that folder discovery picks up."""
    for kind in KINDS:
        if (kind.discover or not discovering) and kind.matches_name(name):
            return kind
    return None


def content_kinds(name: str, folder: str = "") -> list[InputKind]:
    """Kinds that discovery recognises by content in a file called ``name`` in a folder called ``folder``
    (whose name gave no kind)."""
    where = f"{folder}/{name}"
    return [k for k in KINDS if k.discover and k.sniff_pattern is not None and k.sniff_pattern.fullmatch(where)]


def hook_pattern(hook: str) -> str:
    """The pre-commit ``files`` regex of ``hook``: the name rules of its kinds, on a path's last part."""
    rows = [k for k in KINDS if k.hook == hook]
    if not rows:
        raise KeyError(hook)
    names = [k.names for k in rows if k.names]
    by_name = [r"(^|/)(" + "|".join(f"(?:{n})" for n in names) + r")$"] if names else []
    return "|".join([*by_name, *(k.hook_files for k in rows if k.hook_files)])


def applies(rule_inputs: tuple[str, ...], kind: str) -> bool:
    """Does a rule (or check) with these ``inputs`` apply to a target of ``kind``? A kind outside the table
    (an unrecognised target, a collector document) gets every check: it decides from the facts it finds."""
    row = BY_NAME.get(kind)
    if row is None:
        return True
    return bool(row.rule_inputs & set(rule_inputs))
