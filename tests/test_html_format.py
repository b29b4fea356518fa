"""``--format html`` (issue 19): one self-contained, valid HTML5 page per run, for every kind of target.

Real inputs: site-packages folders made of the real ELF fixtures (fixtures/binaries), an OCI image layout
with a build history, ``envcheck diff`` of two folders, hostile file, member and variable names. Validity is
checked with html5lib's strict parser (every parse error raises); the page is read back as a tree to check
that nothing loads from outside and that no input became markup. A headless Chromium renders a real report
where CI provides it (.ci/setup installs Debian's chromium).
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest
from conftest import FIXTURES, REPO, installed_dist, require, run_envcheck
from seed_builders import digest, metadata_layer, oci_index, oci_manifest, tar_of, write_oci_layout

from envcheck.formats import html_format

BINARIES = FIXTURES / "binaries"
# Markup, attribute breakers, a style breaker and terminal escapes, as they can appear in names and values.
HOSTILE = "<script>alert(1)</script>\"onload=alert(2) '</style><b>x</b>\x1b[2J\x07"
HOSTILE_FILE = "<script>alert(1)<x>\"onload=alert(2) '<b>x<i>\x1b[2J\x07"  # no "/": it is one file name


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A site-packages folder: native sm_121, sm_80 only (none), a CUDA 12 library, and a hostile file name."""
    root = tmp_path_factory.mktemp("html-site") / "lib" / "python3.12" / "site-packages"
    installed_dist(root, "gpukernels", "2.0", {"gpukernels/_k.so": BINARIES / "gpu_sm121.so"})
    installed_dist(root, "oldkernels", "1.0", {"oldkernels/_k.so": BINARIES / "gpu_sm80.so"})
    installed_dist(root, "ptxkernels", "1.0", {"ptxkernels/_k.so": BINARIES / "gpu_sm80_ptx.so"})
    installed_dist(root, "ext12", "1.0", {"ext12/_C.so": BINARIES / "libext_cuda12.so"})
    installed_dist(root, "hostile", "1.0", {f"hostile/{HOSTILE_FILE}.so": BINARIES / "libext_cuda12.so"})
    return root


def _page(*args: str, tmp_path: Path) -> tuple[str, ElementTree.Element]:
    """Run envcheck with --format html -o FILE; return the page and its tree (strict HTML5 parse)."""
    require(importlib.util.find_spec("html5lib") is not None, "html5lib (pyproject test extra) validates the HTML")
    import html5lib

    out = tmp_path / "report.html"
    done = run_envcheck(*args, "--format", "html", "-o", str(out), cwd=tmp_path)
    assert done.returncode in (0, 1, 2), done.stderr  # 2: a target with an unreadable line (an ERROR finding)
    assert "Traceback" not in done.stderr
    text = out.read_text(encoding="utf-8")
    parser = html5lib.HTMLParser(strict=True, namespaceHTMLElements=False)
    tree = parser.parse(text)  # strict: any HTML5 parse error (bad nesting, stray end tag, bad doctype) raises
    return text, tree


def _text(element: ElementTree.Element) -> str:
    return "".join(element.itertext())


def _rows(tree: ElementTree.Element, table_class: str) -> list[list[str]]:
    """The body rows of the tables of that class, as the text of each top-level cell."""
    rows = []
    for table in tree.iter("table"):
        if table.get("class") == table_class:
            for tr in table.find("tbody") or []:
                rows.append([_text(td.find("details/summary") if td.find("details/summary") is not None else td).strip()
                             for td in tr.findall("td")])
    return rows


# Elements that fetch something when the page is opened, and the attribute that names it.
_LOADERS = {"script": "src", "img": "src", "iframe": "src", "frame": "src", "embed": "src", "object": "data",
            "source": "src", "video": "src", "audio": "src", "track": "src", "input": "src", "link": "href",
            "base": "href", "image": "href", "use": "href"}


def _assert_self_contained(tree: ElementTree.Element) -> None:
    """No element loads anything: no loader with a URL, no CSS url()/@import, no meta refresh, no handlers."""
    for el in tree.iter():
        tag = str(el.tag)
        if tag in _LOADERS:
            assert not el.get(_LOADERS[tag]), f"<{tag}> loads {el.get(_LOADERS[tag])!r}"
            assert tag not in ("iframe", "frame", "embed", "object", "img", "base", "link"), f"<{tag}> in the page"
        for name, value in el.attrib.items():
            assert not name.lower().startswith("on"), f"<{tag} {name}=...>: an event handler"
            assert name.lower() not in ("srcset", "background", "poster", "formaction"), f"<{tag} {name}>"
            if name == "style":
                assert "url(" not in value.lower() and "@import" not in value.lower()
        if tag == "meta":
            assert (el.get("http-equiv") or "").lower() != "refresh"
        if tag == "style":
            css = (el.text or "").lower()
            assert "url(" not in css and "@import" not in css, "CSS loads a resource"


def _assert_no_injection(text: str, tree: ElementTree.Element) -> None:
    """Exactly our one style and one script, with their own text; no raw control characters."""
    scripts = list(tree.iter("script"))
    styles = list(tree.iter("style"))
    assert len(scripts) == 1 and (scripts[0].text or "").strip() == html_format._SCRIPT.strip()
    assert len(styles) == 1 and (styles[0].text or "").strip() == html_format._STYLE.strip()
    assert not list(tree.iter("b")) or all(_text(b) != "x" for b in tree.iter("b")), "an input became markup"
    assert not [c for c in text if (ord(c) < 0x20 and c not in "\n\t") or 0x7f <= ord(c) < 0xa0], "raw control characters"


def test_a_folder_of_binaries_gives_a_valid_self_contained_page_with_the_matrix(site: Path, tmp_path: Path) -> None:
    text, tree = _page(str(site), tmp_path=tmp_path)
    _assert_self_contained(tree)
    _assert_no_injection(text, tree)
    # the summary band: one tile per gotcha, each with a status word (not colour alone)
    tiles = [a for a in tree.iter("a") if a.get("class", "").startswith("tile ")]
    assert [_text(t.find("b")) for t in tiles] == ["G1", "G2", "G3", "G4", "G5", "G6", "G7", "G8", "G9", "G10", "ARCH"]
    words = {_text(t.find("b")): _text(t.find("span")) for t in tiles}
    assert set(words.values()) <= {"ERROR", "FAIL", "WARN", "PASS", "INFO", "SKIP"}
    assert words["G1"] == "FAIL"  # the CUDA 12 libraries
    # the matrix: one row per package, problems first, the sm_121 verdict in words
    rows = {r[1]: r for r in _rows(tree, "matrix")}
    names = [r[1] for r in _rows(tree, "matrix")]
    assert set(names) == {"gpukernels", "oldkernels", "ptxkernels", "ext12", "hostile"}
    assert rows["gpukernels"][4] == "native" and rows["oldkernels"][4] == "none" and rows["ptxkernels"][4] == "PTX-JIT"
    assert rows["ext12"][3] == "12" and rows["ext12"][4] == "no GPU code"
    assert "sm_121" in rows["gpukernels"][5]
    assert "compute_80" in rows["ptxkernels"][6]
    statuses = [rows[n][0] for n in names]
    ranks = {"ERROR": 5, "FAIL": 4, "WARN": 3, "PASS": 2, "INFO": 1, "SKIP": 0}
    assert [ranks[s] for s in statuses] == sorted((ranks[s] for s in statuses), reverse=True), names
    assert names.index("oldkernels") < names.index("gpukernels")
    # findings grouped by gotcha, each with the rule's explanation one click away
    g1 = next(div for div in tree.iter("div") if div.get("id") == "G1")
    finding = next(a for a in g1.iter("article"))
    assert "FAIL" in _text(finding) and "Fix:" in _text(finding)
    assert any(_text(s).startswith("Why:") for s in finding.iter("summary"))
    # the hostile file name is shown as text, escaped, with its control characters visible
    assert HOSTILE_FILE.replace("\x1b", "\\x1b").replace("\x07", "\\x07") in _text(tree)


def test_hostile_names_and_values_stay_text(tmp_path: Path) -> None:
    """A Dockerfile and requirements whose values carry markup, a style breaker, a URL loader and escapes."""
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "Dockerfile").write_text(
        "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\n"
        f"ENV TORCH_CUDA_ARCH_LIST=\"8.0{HOSTILE}<img src=https://evil.example/x.png>\"\n"
        "ENV HF_TOKEN=hf_HtmlSecret789\n"
        "RUN pip install flash-attn\n")
    (folder / "requirements.txt").write_text(
        f"--extra-index-url https://evil.example/{HOSTILE.replace(chr(10), '')}/whl/cu121\ntorch==2.5.1+cu121\n")
    text, tree = _page("-v", str(folder / "Dockerfile"), str(folder / "requirements.txt"), tmp_path=tmp_path)
    _assert_self_contained(tree)
    _assert_no_injection(text, tree)
    assert "hf_HtmlSecret789" not in text
    assert "<script>alert(1)</script>" in _text(tree)  # shown to the reader as the characters it is


def test_an_image_shows_its_build_history_with_the_findings_of_each_step(tmp_path: Path) -> None:
    layer = metadata_layer("torch", "2.5.1+cu121")
    history = [
        {"created_by": "/bin/sh -c #(nop) ADD file:0123 in / "},
        {"created_by": "RUN /bin/sh -c pip install torch==2.5.1 --extra-index-url https://download.pytorch.org/whl/cu121 # buildkit"},
        {"created_by": f"ENV NOTE={HOSTILE}", "empty_layer": True},
    ]
    config = json.dumps({"architecture": "arm64", "os": "linux", "config": {"Env": ["PATH=/usr/bin"]}, "history": history,
                         "rootfs": {"type": "layers", "diff_ids": [digest(layer)]}}).encode()
    manifest = json.dumps(oci_manifest(config, [layer])).encode()
    folder = tmp_path / "layout"
    write_oci_layout(folder, json.dumps(oci_index(manifest)).encode(), [config, layer, manifest])
    text, tree = _page("image", "-v", f"oci-layout:{folder}", tmp_path=tmp_path)
    _assert_self_contained(tree)
    _assert_no_injection(text, tree)
    steps = _rows(tree, "history")
    assert [s[0] for s in steps] == ["0", "1", "2"]
    assert "pip install torch==2.5.1" in steps[1][1]
    assert "G1-cuda12-index" in steps[1][2], steps[1]  # the finding sits on the step that made it
    assert steps[0][2] == "—"
    assert "<script>alert(1)</script>" in steps[2][1]


def test_a_deep_image_scan_has_the_matrix(tmp_path: Path) -> None:
    site = "usr/lib/python3/dist-packages"
    layer = tar_of([(f"{site}/gpukernels/_k.so", (BINARIES / "gpu_sm121.so").read_bytes()),
                    (f"{site}/gpukernels-2.0.dist-info/METADATA", b"Metadata-Version: 2.1\nName: gpukernels\nVersion: 2.0\n"),
                    (f"{site}/gpukernels-2.0.dist-info/RECORD", b"gpukernels/_k.so,,\n")])
    config = json.dumps({"architecture": "arm64", "os": "linux", "config": {},
                         "rootfs": {"type": "layers", "diff_ids": [digest(layer)]}}).encode()
    manifest = json.dumps(oci_manifest(config, [layer])).encode()
    folder = tmp_path / "layout"
    write_oci_layout(folder, json.dumps(oci_index(manifest)).encode(), [config, layer, manifest])
    _, tree = _page("image", "--deep", f"oci-layout:{folder}", tmp_path=tmp_path)
    rows = _rows(tree, "matrix")
    assert [(r[1], r[4]) for r in rows] in ([("gpukernels", "native")], [("gpukernels/ (no RECORD)", "native")])
    assert "no build history" in _text(tree)


def test_diff_shows_each_change_side_by_side(site: Path, tmp_path: Path) -> None:
    clean = tmp_path / "clean" / "site-packages"
    installed_dist(clean, "gpukernels", "2.0", {"gpukernels/_k.so": BINARIES / "gpu_sm121.so"})
    drifted = tmp_path / "drifted" / "site-packages"
    shutil.copytree(clean, drifted)
    installed_dist(drifted, "nvidia-cuda-runtime-cu12", "12.8.90", {"nvidia/cuda_runtime/lib/libcudart.so.12": BINARIES / "libcudart.so.12"})
    _, tree = _page("diff", "-v", str(clean), str(drifted), tmp_path=tmp_path)
    _assert_self_contained(tree)
    head = [_text(th) for table in tree.iter("table") if table.get("class") == "diff" for th in table.iter("th")]
    assert head == ["status", "what", f"A: {clean}", f"B: {drifted}"]
    rows = {r[1].split("\n")[0]: r for r in _rows(tree, "diff")}
    added = next(r for key, r in rows.items() if key.startswith("nvidia-cuda-runtime-cu12"))
    assert added[0] == "WARN" and added[2] == "—" and "12.8.90" in added[3]


def test_the_matrix_judges_for_the_profile_gpu(site: Path, tmp_path: Path) -> None:
    """With another profile (--profile FILE) the matrix's column and verdicts are for that profile's GPU."""
    shipped = (REPO / "envcheck" / "profiles" / "dgx-spark.toml").read_text(encoding="utf-8")
    profile = tmp_path / "other-gpu.toml"
    profile.write_text(shipped.replace('compute_capability = "12.1"', 'compute_capability = "8.0"'))
    text, tree = _page(str(site), "--profile", str(profile), tmp_path=tmp_path)
    heads = [_text(th) for table in tree.iter("table") if table.get("class") == "matrix" for th in table.iter("th")]
    assert "sm_80" in heads and "sm_121" not in heads
    rows = {r[1]: r for r in _rows(tree, "matrix")}
    assert rows["oldkernels"][4] == "native" and rows["gpukernels"][4] == "none"
    assert "nothing that runs on sm_80" in text


def test_hidden_fatbins_are_marked() -> None:
    """A fatbin outside the toolchain's sections (a deep scan found it in .ldata) is marked hidden."""
    from envcheck.model import Binary

    plain = Binary("a.so", "aarch64", sections=(".nv_fatbin",))
    hidden = Binary("b.so", "aarch64", sections=(".nv_fatbin", ".ldata"))
    assert html_format.hidden_sections(plain) == ()
    assert html_format.hidden_sections(hidden) == (".ldata",)


# ---------------------------------------------------------------------------------------------- a real browser


def _png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """A tiny PNG decoder (8-bit RGB/RGBA, non-interlaced, as Chromium writes): width, height, rows."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    height = depth = color = 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    assert depth == 8 and color in (2, 6), (depth, color)
    bpp = 3 if color == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows: list[bytes] = []
    prev = bytearray(stride)
    for y in range(height):
        filt, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], (prev[i - bpp] if i >= bpp else 0)
            if filt == 1:
                line[i] = (line[i] + a) & 0xFF
            elif filt == 2:
                line[i] = (line[i] + b) & 0xFF
            elif filt == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif filt == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        rows.append(bytes(line))
        prev = line
    return width, height, rows


def test_a_headless_browser_renders_the_page_and_the_matrix(site: Path, tmp_path: Path) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    require(chromium is not None, "Debian's chromium package (installed by .ci/setup) renders the page")
    assert chromium is not None
    report = tmp_path / "report.html"
    assert run_envcheck(str(site), "--format", "html", "-o", str(report), "-q").returncode == 1
    flags = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", f"--user-data-dir={tmp_path / 'profile'}"]
    shot = tmp_path / "shot.png"
    subprocess.run([*flags, f"--screenshot={shot}", "--window-size=1000,700", report.as_uri()],
                   capture_output=True, timeout=180, check=True)
    width, height, rows = _png_pixels(shot.read_bytes())
    assert (width, height) == (1000, 700)
    # Not blank: many distinct colours, and dark (text) pixels as well as light ones.
    pixels = {row[i:i + 3] for row in rows[::4] for i in range(0, len(row), 3 * 4)}
    assert len(pixels) > 20, len(pixels)
    assert any(sum(p) < 200 for p in pixels) and any(sum(p) > 700 for p in pixels)
    # The DOM after scripts ran: the matrix rows are there, and the filter script did not fail.
    dom = subprocess.run([*flags, "--dump-dom", report.as_uri()], capture_output=True, text=True, timeout=180, check=True).stdout
    for name in ("gpukernels", "oldkernels", "ptxkernels", "ext12"):
        assert re.search(rf'<tr class="pkg[^"]*" data-filter="">.*?<summary>{name}</summary>', dom), name


def test_the_report_json_of_a_real_torch_environment_renders(tmp_path: Path) -> None:
    """The inventory of a real CUDA 13 torch environment (captured on an H200) through the renderer."""
    import gzip

    from envcheck.formats import renderer
    from envcheck.model import Report, TargetResult

    data: dict[str, Any] = json.loads(gzip.decompress((FIXTURES / "device" / "h200" / "preflight-binaries.json.gz").read_bytes()))
    report = Report(profile=data["profile"], targets=[TargetResult.from_json(t) for t in data["targets"]])
    page = renderer("html")(report, 0).stdout
    binaries = [b for t in report.targets for b in t.inventory.binaries]
    assert binaries
    packages = {html_format.package_of(b) for b in binaries}
    assert page.count('<tr class="pkg') == len(packages)
    assert "torch" in packages
