"""G9 reads Requires-Dist lines with packaging, skipping unparsed the lines it cannot need (a marker naming an
extra, a name no caller asks about): the same requirements as packaging's ``Requirement`` over every line of
real environments and hostile lines."""

from __future__ import annotations

import gzip
import importlib.metadata
import json
from pathlib import Path

import pytest
from conftest import REPO
from fuzz_strategies import PROPERTY_SETTINGS
from hypothesis import given
from hypothesis import strategies as st
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet

from envcheck.checks import g09_drift
from envcheck.inspect.wheel_tags import canonical
from envcheck.knowledge.builds import requirement_applies
from envcheck.model import Package
from envcheck.profile import load_profile

PROFILE = load_profile()


def by_packaging(lines: tuple[str, ...]) -> list[tuple[str, str]]:
    """Packaging parses every line (the authority)."""
    out = []
    for line in lines:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if req.marker is not None and ("extra" in str(req.marker) or not requirement_applies(req.marker, PROFILE)):
            continue
        out.append((canonical(req.name), str(req.specifier)))
    return out


def by_g09(lines: tuple[str, ...], wanted: set[str] | None = None) -> list[tuple[str, str]]:
    g09_drift._read_requires_line.cache_clear()
    found = g09_drift._requirements_of(Package("someone", "1.0", requires=lines), PROFILE, wanted)
    return [(name, str(SpecifierSet(text))) for name, text, _ in found]


def assert_same(lines: tuple[str, ...]) -> None:
    expected = by_packaging(lines)
    assert by_g09(lines) == expected
    wanted = {name for name, _ in expected[::2]}  # only what callers ask about: the rest is not read
    assert by_g09(lines, wanted) == [(n, s) for n, s in expected if n in wanted]
    for line in lines:  # specifiers equal as sets too, not only as text
        fast = g09_drift._read_requires_line(line)
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if fast is not None:
            assert (fast[0], SpecifierSet(fast[1])) == (canonical(req.name), req.specifier), line


def h200_lines() -> tuple[str, ...]:
    data = json.loads(gzip.decompress((REPO / "fixtures/device/h200/folder-inventory.json.gz").read_bytes()))
    return tuple(line for pkg in data["packages"] for line in pkg.get("requires") or ())


def installed_lines(site: Path | None = None) -> tuple[str, ...]:
    found = importlib.metadata.distributions(path=[str(site)]) if site else importlib.metadata.distributions()
    return tuple(line for dist in found for line in dist.requires or ())


def test_h200_environment_lines_read_as_packaging_reads_them() -> None:
    lines = h200_lines()
    assert len(lines) > 2500  # the whole capture: 209 distributions
    assert_same(lines)


def test_this_interpreters_lines_read_as_packaging_reads_them() -> None:
    lines = installed_lines()
    assert lines
    assert_same(lines)


def test_torch_venv_lines_read_as_packaging_reads_them() -> None:
    sites = sorted((REPO / ".work" / "torch-venv").glob("lib/python*/site-packages"))
    if not sites:
        pytest.skip("no torch venv under .work (tests/test_binaries_real.py makes it)")
    lines = installed_lines(sites[0])
    assert len(lines) > 100
    assert_same(lines)


HOSTILE = (
    "numpy>=1.17", "numpy >= 1.17 , < 2", "NumPy_Extra.Foo>=1,<2", "numpy (>=1.17)", "numpy>=1.0,", "numpy>=1.0,,<2",
    "numpy>=1.0.*", "numpy==1.0.*", "numpy!=1.0.*", "numpy~=1", "numpy~=1.0", "numpy===1.0", "numpy==1.0+cu130",
    "numpy>=1.0rc1", "numpy>=1.0.post1", "numpy>=1.0.dev0", "numpy>=1.0a", "numpy>=", "numpy>= 1", "numpy > =1",
    "numpy<1.0;extra=='x'", "numpy; extra == 'x'", "numpy;extra=='x'", "numpy ; python_version < '3'",
    "numpy ; platform_machine == 'x86_64'", "numpy ; platform_machine == 'aarch64' and extra == 'gpu'",
    "numpy ; platform_release == 'extra'", "numpy ; extras == 'x'", "numpy ; extra", "numpy ; nonsense == 'extra'",
    "numpy @ https://host/numpy.whl ; extra == 'x'", "numpy @ https://host/a;extra=='x'", "numpy@https://h/x.whl",
    "numpy[extra]>=1", "numpy[a;b] ; extra == 'x'", "numpy===1@2 ; extra == 'x'", "numpy===a;b ; extra == 'x'",
    "numpy-", "numpy.", "-numpy", "", " ", "\tnumpy>=1", "numpy\t>=1\t", "numpy\n>=1", "numpy>=1\n", "numpy>=1 ;",
    "numpy>=1;", "numpy\u00e9>=1", "n\u0661umpy>=1", "numpy>=\u0661", "numpy>=1 extra", "extra>=1", "torch>=2.9",
    "torch (>=2.9,<2.10) ; python_version >= '3.9'", "torch==2.9.0a0", "torch<2.10,>=2.9", "triton==3.5.0 ; platform_system == 'Linux'",
    # extras, parentheses and plain markers, and their near misses
    'cuda-toolkit[cublas,cudart,nvrtc]==13.0.2; platform_system == "Linux"', "etils[epath, epy]", "foo[]", "foo[ ]>=1",
    "foo[a,]", "foo[a b]", "foo[a-]", "foo[a.b]>=1", "foo [bar] >=1", "foo[a]x", "torch ()", "torch(>=1.8)", "foo()",
    "torch ( >=1.8 , <2 )", "torch ((>=1.8))", "torch (>=1.8", "torch >=1.8)", "pillow (!=8.3.*,>=5.3.0)", "llvmlite<0.51,>=0.50.0dev0", "x>=1dev", "x>=1-dev0", "x>=1.dev0", "x==1.0dev0.*",
    "foo;os_name=='nt'", "foo ;os_name=='nt'", "foo==1;platform_system!='Windows'", "foo ; sys_platform == 'win32'",
    "foo ; python_version < '3.13' or python_version >= '3.14'", "foo ; python_full_version < '3.10.2'",
    "foo ; python_version<'3.8'and os_name=='nt'", "foo ; (os_name == 'nt')", "foo ; os_name == 'nt' and",
    "foo ; os_name == 'nt' or", "foo ; os_name < 'nt'",
    "foo ; os_name in 'ntposix'", "foo ; 'nt' == os_name", "foo ; os.name == 'nt'",
    "foo ; platform_system == ' Linux'",
    "foo ; platform_system == ''", "foo ; python_version == '3.12.0'", "foo ; python_version != '3.12'",
    "foo ; python_version > '3.12' ; os_name == 'nt'", "foo ; python_version > '3'", "foo ; python_version == '3.*'",
    "foo ; python_version >= 'x'", "foo ; python_version <= '3.12.dev0'", "foo ; implementation_name == 'cpython'",
    "foo ; platform_machine == 'x86_64' or platform_machine == 'aarch64'", "foo ; os_name == \"n't\"",
)


def test_hostile_lines_read_as_packaging_reads_them() -> None:
    assert_same(HOSTILE)
    for line in HOSTILE:
        assert_same((line,))


_FRAGMENTS = ("numpy", "Torch_x", "-", ".", " ", "\t", ">=", "==", "~=", "!=", "<", ">", "===", "1", "1.0", ".*", "rc1",
              ".post2", "+cu130", ",", ";", "@", "[", "]", "(", ")", "extra", "extras", " == ", "'x'", '"y"', "python_version",
              " and ", " or ", "platform_machine", "'aarch64'", "https://h/x.whl", "\n", "\u0661", "platform_system", "'Linux'",
              "os_name", "'nt'", "'3.12'", "'3.13.1'", "python_full_version", "[a, b]", "[cu]", "'v1'", "'1x'", "''", "dev0", ".dev1", "dev")


@PROPERTY_SETTINGS
@given(st.lists(st.sampled_from(_FRAGMENTS), max_size=12).map("".join))
def test_generated_lines_read_as_packaging_reads_them(line: str) -> None:
    assert_same((line,))
