"""The suite's policy for optional resources (tests/conftest.py): skipped outside CI, a failure under CI=true,
except where CI cannot provide the resource on this machine (a test dependency with no wheel for this
architecture), which is a skip with its reason everywhere."""

from __future__ import annotations

import conftest
import pytest
from conftest import ci_provides, require


def test_markers_of_the_test_extra_decide_what_ci_provides() -> None:
    x86 = {"platform_machine": "x86_64", "python_version": "3.12"}
    arm = {"platform_machine": "aarch64", "python_version": "3.12"}
    assert ci_provides("atheris", x86) and not ci_provides("atheris", arm)
    assert not ci_provides("atheris", {**x86, "python_version": "3.14"})
    assert ci_provides("dockerfile", x86) and not ci_provides("dockerfile", arm)
    assert ci_provides("pytest", arm) and ci_provides("jsonschema", arm)  # no marker: everywhere
    with pytest.raises(AssertionError):
        ci_provides("not-a-test-dependency")


@pytest.mark.parametrize(("in_ci", "provided", "outcome"), [
    (True, True, pytest.fail.Exception),   # CI promised it: missing is a failure
    (True, False, pytest.skip.Exception),  # CI cannot have it on this machine: a skip, with the reason
    (False, True, pytest.skip.Exception),  # outside CI: a skip
    (False, False, pytest.skip.Exception),
])
def test_require(monkeypatch: pytest.MonkeyPatch, in_ci: bool, provided: bool, outcome: type[BaseException]) -> None:
    monkeypatch.setattr(conftest, "IN_CI", in_ci)
    require(True, "present", provided=provided)  # present: nothing happens
    with pytest.raises(outcome) as raised:
        require(False, "the oracle is missing", provided=provided)
    assert "the oracle is missing" in str(raised.value)
    if not provided:
        assert "CI does not provide it on" in str(raised.value)
