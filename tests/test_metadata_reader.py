"""The dist-info reader against the line-by-line reading it replaced (issue 18)."""

from __future__ import annotations

import email.parser
import os
import re
from pathlib import Path

import pytest

from envcheck.sources.binaries import read_dist_info as _read_dist_info

# ---- _read_dist_info: the same package and RECORD files as the email.parser reading it replaced -------------


def old_read_dist_info(info_dir: Path, base: Path, wanted: set[str] | None) -> tuple[tuple[object, ...] | None, set[str], list[str]]:
    """The reading before issue 18 (email.parser and a loop per RECORD line), as (package facts, files, problems)."""
    meta_path = info_dir / "METADATA"
    try:
        text = meta_path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return None, set(), [f"{meta_path}: cannot read METADATA: {exc.strerror or exc}"]
    end = re.search(r"\r?\n\r?\n", text)
    msg = email.parser.HeaderParser().parsestr(text[: end.start() + 1] if end else text)
    name, version = msg.get("Name"), msg.get("Version")
    if not name:
        return None, set(), [f"{meta_path}: METADATA has no Name field"]
    pkg = (re.sub(r"[-_.]+", "-", name).lower(), str(version) if version else None,
           tuple(str(r) for r in msg.get_all("Requires-Dist") or []), str(meta_path))
    files: set[str] = set()
    prefix = str(base) + os.sep
    try:
        with open(info_dir / "RECORD", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                rel = line.split(",", 1)[0].strip().strip('"')
                if not rel:
                    continue
                path = os.path.normpath(prefix + rel) if ".." in rel or "./" in rel else prefix + rel
                if wanted is None or path in wanted:
                    files.add(path)
    except OSError:
        pass
    return pkg, files, []


def new_read_dist_info(info_dir: Path, base: Path, wanted: set[str] | None) -> tuple[tuple[object, ...] | None, set[str], list[str]]:
    dist, problems = _read_dist_info(info_dir, base, wanted)
    if dist is None:
        return None, set(), [p.message for p in problems]
    p = dist.package
    return (p.name, p.version, p.requires, p.location.path if p.location else None), dist.files, [p.message for p in problems]


def assert_same_dist_infos(site: Path) -> int:
    """Every dist-info under ``site`` reads the same both ways, with and without ``wanted``; how many."""
    infos = sorted(site.glob("*.dist-info"))
    everything: set[str] = set()
    for info in infos:
        _pkg, files, _problems = old_read_dist_info(info, site, None)
        everything |= files
    wanted = {p for i, p in enumerate(sorted(everything)) if i % 3 == 0 or p.endswith(".so")}
    for info in infos:
        for subset in (None, wanted):
            assert new_read_dist_info(info, site, subset) == old_read_dist_info(info, site, subset), info
    return len(infos)


RECORDS = [
    "a/x.so,sha256=abc,10\na/y.py,,\n",
    'a/x.so,,\n"a/q,uoted.so",,\n',  # quotes: the line-by-line way
    " a/x.so ,,\na/y.so\t,,\n\ta/z.so\n",  # white space around paths
    "../../bin/tool,,\na/./x.so,,\na/b/../y.so,,\n",  # paths to normalise
    "a/x.so,,\r\na/y.so,,\ra/z.so",  # other line ends, no final one
    "a/x.so\na/y.so,\n,\n\n,,,\n",  # no comma, empty paths
    "a/\u00e9.so,,\na/\xff\xfe.so,,\n",
    "a/x.so\u2028,,\na/y.so\x85,,\n",  # white space str.strip removes but a line break does not end
]


@pytest.mark.parametrize("record", RECORDS, ids=range(len(RECORDS)))
def test_record_reading_is_unchanged(tmp_path: Path, record: str) -> None:
    site = tmp_path / "site"
    info = site / "a-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: a\nVersion: 1.0\n")
    (info / "RECORD").write_bytes(record.encode("utf-8", "surrogateescape"))
    (site / "b-1.0.dist-info").mkdir()
    (site / "b-1.0.dist-info" / "METADATA").write_bytes(b"Name: b\xff\xfe\r\nRequires-Dist: c\r\n  ; extra == 'x'\r\n")
    (site / "c-1.0.dist-info").mkdir()
    (site / "c-1.0.dist-info" / "METADATA").write_text("Version: 1\n")  # no Name
    (site / "d-1.0.dist-info").mkdir()  # no METADATA
    assert assert_same_dist_infos(site) == 4
    for base in (site, Path(str(site) + "/"), Path(os.path.relpath(site))):
        for info in site.glob("*.dist-info"):
            wanted = {str(site / "a" / "x.so"), str(site / "a" / "y.so"), os.path.normpath(str(site / "../../bin/tool"))}
            assert new_read_dist_info(info, base, wanted) == old_read_dist_info(info, base, wanted)


def test_a_fifo_named_record_does_not_block(tmp_path: Path) -> None:
    info = tmp_path / "a-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Name: a\nVersion: 1.0\n")
    os.mkfifo(info / "RECORD")
    dist, problems = _read_dist_info(info, tmp_path, None)
    assert problems == [] and dist is not None and dist.files == set() and dist.package.name == "a"


def test_record_narrowed_by_name_keeps_every_file_the_walk_takes(tmp_path: Path) -> None:
    """A worker keeps only the RECORD paths the walk could take (``candidates``): every file the walk yields,
    whatever its name and mode, is still there; what is dropped (Python sources, text) is never yielded."""
    from envcheck.sources.walk import TEXT_SUFFIXES
    from envcheck.sources.walk import walk as _walk

    site = tmp_path / "site"
    pkg = site / "pkg"
    pkg.mkdir(parents=True)
    names = [f"f{s}" for s in TEXT_SUFFIXES] + [
        "lib.so", "lib.so.1", "lib.so.txt", "x.py.so", "tool", "a.o", "b.a", "k.cubin", "run.sh", "LICENSE",
        "x.PY", "lib.so.py", ".so", "data.bin",
    ]
    lines = []
    for i, name in enumerate(names):
        (pkg / name).write_bytes(b"\x7fELF" + bytes(60))
        (pkg / name).chmod(0o755 if i % 2 == 0 else 0o644)
        lines.append((f"pkg/{name}", f'"pkg/{name}"', f" pkg/{name}\t")[i % 3] + ",,\n")  # plain, quoted, blanks
    info = site / "pkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n")
    (info / "RECORD").write_text("".join(lines))
    everything = _read_dist_info(info, site)[0]
    narrowed = _read_dist_info(info, site, candidates=True)[0]
    assert everything is not None and narrowed is not None
    walked = {path for path, _st in _walk(site, [], [])} & everything.files
    assert walked and walked <= narrowed.files < everything.files
    assert str(pkg / "f.py") not in narrowed.files and str(pkg / "lib.so.py") in narrowed.files  # ".so." decides
