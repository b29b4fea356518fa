"""The build context as a Dockerfile's RUN lines see it: which context file a path inside the image is (where
COPY, ADD, a bind mount or a COPY heredoc put it), and which repository a RUN cloned into which folder."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from pathlib import Path

from envcheck.inspect.dockerfile import Heredoc, Instruction
from envcheck.inspect.wheel_tags import canonical

# Repositories whose clone installs a distribution of another name.
_REPO_PACKAGES = {"flash-attention": "flash-attn", "triton": "triton", "xformers": "xformers"}


@dataclass
class Script:
    """State of one RUN's shell script: the folder it is in and what was cloned where."""
    cwd: str
    clones: dict[str, str] = field(default_factory=dict)  # absolute folder -> repository URL


def record_clone(argv: list[str], script: Script) -> None:
    # options with values: -b/--branch NAME, --depth N
    skip_values = {"-b", "--branch", "--depth", "-c", "--config", "--origin", "-o", "--reference", "-j", "--jobs", "--filter"}
    after = argv[argv.index("clone") + 1 :]
    positional: list[str] = []
    i = 0
    while i < len(after):
        word = after[i]
        if word in skip_values:
            i += 2
            continue
        if not word.startswith("-"):
            positional.append(word)
        i += 1
    if not positional:
        return
    url = positional[0]
    folder = positional[1] if len(positional) > 1 else url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
    script.clones[posixpath.normpath(posixpath.join(script.cwd, folder))] = url


def repo_of(folder: str, script: Script) -> tuple[str, str] | None:
    """(distribution, url) when ``folder`` is inside a cloned repository we know the package of."""
    for root, url in script.clones.items():
        if folder == root or folder.startswith(root + "/"):
            repo = url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
            return _REPO_PACKAGES.get(repo.lower(), canonical(repo)), url
    return None


def bind_mounts(inst: Instruction, workdir: str) -> dict[str, str]:
    """RUN --mount=type=bind,source=S,target=T from the build context: image path -> context path."""
    mounts: dict[str, str] = {}
    for spec in inst.flag_values("mount"):
        fields = dict(part.partition("=")[::2] for part in spec.split(","))
        target = fields.get("target") or fields.get("dst") or fields.get("destination")
        if fields.get("type", "bind") == "bind" and "from" not in fields and target:
            source = fields.get("source") or fields.get("src") or "."
            mounts[posixpath.normpath(posixpath.join(workdir, target))] = source
    return mounts


class Copies(list[tuple[list[str], str, str]]):
    """The COPYs of a stage so far, (sources, destination, workdir), indexed by where they copy to: a RUN
    asks for the copies that reach one path, not all of them (thousands of COPY + RUN pairs stay linear)."""

    def __init__(self) -> None:
        super().__init__()
        self.by_dest: dict[str, list[int]] = {}

    def append(self, copy: tuple[list[str], str, str]) -> None:
        _sources, dest, workdir = copy
        key = posixpath.normpath(posixpath.join(workdir, dest)).rstrip("/") or "/"
        self.by_dest.setdefault(key, []).append(len(self))
        super().append(copy)

    def reaching(self, wanted: str) -> list[tuple[list[str], str, str]]:
        """The copies whose destination is ``wanted`` or a folder above it, the latest first."""
        keys, path = {"/"}, wanted
        while True:  # up to the root; dirname("//") is "//" itself, so stop where nothing changes
            keys.add(path.rstrip("/") or "/")
            parent = posixpath.dirname(path)
            if parent in (path, ""):
                break
            path = parent
        return [self[n] for n in sorted({n for key in keys for n in self.by_dest.get(key, ())}, reverse=True)]


def _reaches(wanted: str, dest: str) -> bool:
    """Whether a copy to ``dest`` can put anything at ``wanted`` (``dest`` itself, or below it)."""
    return wanted == dest or wanted.startswith(dest.rstrip("/") + "/")


class ContextFiles:
    """Maps a path inside the image back to a file in the build context, where the build copied it."""
    def __init__(self, context: Path, copies: list[tuple[list[str], str, str]], mounts: dict[str, str], workdir: str,
                 clones: dict[str, str], heredocs: dict[str, tuple[Heredoc, Instruction]] | None = None) -> None:
        self.context = context
        self.copies = copies
        self.mounts = mounts
        self.heredocs = heredocs or {}
        self.script = Script(cwd=workdir, clones=clones)

    def inline(self, name: str) -> Heredoc | None:
        """The heredoc a ``COPY <<EOF /path`` wrote at the path ``name`` refers to, if any."""
        found = self.heredocs.get(posixpath.normpath(posixpath.join(self.script.cwd, name)))
        return found[0] if found else None

    def resolve(self, name: str) -> Path | None:
        wanted = posixpath.normpath(posixpath.join(self.script.cwd, name))
        for target, source in self.mounts.items():
            if _reaches(wanted, target) and (found := self._under(wanted, target, source, is_dir_dest=False)) is not None:
                return found
        copies = self.copies.reaching(wanted) if isinstance(self.copies, Copies) else reversed(self.copies)
        for sources, dest, workdir in copies:
            dest_abs = posixpath.normpath(posixpath.join(workdir, dest))
            if not _reaches(wanted, dest_abs):
                continue  # a string test first: a COPY elsewhere is no glob and no file system call
            expanded = [m for source in sources for m in self._matches(source)]
            for source in expanded:
                found = self._under(wanted, dest_abs, source, is_dir_dest=dest.endswith("/") or len(expanded) > 1)
                if found is not None:
                    return found
        return None

    def _matches(self, source: str) -> list[str]:
        """A COPY source with wildcards (``requirements*.txt``) as the context paths it matches."""
        if not any(c in source for c in "*?["):
            return [source]
        try:
            return sorted(p.relative_to(self.context).as_posix() for p in self.context.glob(source.lstrip("/")))
        except (OSError, ValueError):
            return []

    def _under(self, wanted: str, dest: str, source: str, is_dir_dest: bool) -> Path | None:
        """The context file ``source`` copied to ``dest`` puts at ``wanted``, if there is one (a name the file
        system rejects, too long or with a NUL, is none: docker could not copy it either)."""
        try:
            src = self.context / posixpath.normpath(source.lstrip("/") or ".")
            if not src.resolve().is_relative_to(self.context.resolve()):
                return None  # outside the context: docker would refuse it
            candidates: list[Path] = []
            if src.is_dir():
                if wanted == dest or wanted.startswith(dest.rstrip("/") + "/"):
                    candidates.append(src / posixpath.relpath(wanted, dest))
            else:
                if wanted == dest and not is_dir_dest:
                    candidates.append(src)
                if posixpath.join(dest, src.name) == wanted:
                    candidates.append(src)
            inside = self.context.resolve()  # a link in a copied folder may lead out of the context: docker copies
            # the link, not what it names, so the host file it names is not the image's
            return next((candidate for candidate in candidates
                         if candidate.is_file() and candidate.resolve().is_relative_to(inside)), None)
        except (OSError, ValueError):
            return None
