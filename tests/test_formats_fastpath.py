"""The render path's fast paths give what the slow ones gave (issue 18): the
findings-only formats' text with or without the inventory, the redaction of the generic walk, on the H200
whole-environment report and on hostile values."""

from __future__ import annotations

import dataclasses
import enum
import gzip
import json
from collections.abc import Mapping
from typing import Any

import pytest
from conftest import REPO
from fuzz_strategies import PROPERTY_SETTINGS
from hypothesis import given
from hypothesis import strategies as st

from envcheck import engine, formats, redaction
from envcheck.config import Config
from envcheck.formats import json_format
from envcheck.model import Binary, EnvVar, Finding, Inventory, Location, Package, Report, Role, Status
from envcheck.profile import load_profile

HOSTILE = "\x1b]0;pwned\x07\n::error file=x::INJECTED\r\u2028\u202e https://alice:S3cret@h/x?token=T0ken HF_TOKEN=hf_abc"


def h200_report(hostile: bool = False) -> Report:
    """The H200 folder scan judged as a folder target; ``hostile`` puts credentials and control characters
    into a package, a binary, a variable and a finding."""
    data = json.loads(gzip.decompress((REPO / "fixtures/device/h200/folder-inventory.json.gz").read_bytes()))
    inventory = Inventory.from_json(data)
    if hostile:
        inventory.packages.append(Package("evil", "1.0", requires=(HOSTILE, "torch>=2.9"), installed=True,
                                          role=Role.INSTALLED, location=Location(f"/x/{HOSTILE}/METADATA")))
        inventory.binaries.append(Binary(f"/x/{HOSTILE}.so", "x86_64", needed=(HOSTILE, "libc.so.6"), distribution="evil"))
        inventory.env.append(EnvVar("HF_TOKEN", "hf_SecretValue"))
    target = engine.Target("/opt/torch/.venv/lib/python3.12/site-packages", "folder", lambda: inventory)
    result = engine.judge(target, inventory, load_profile(), Config())
    if hostile:
        result.findings.append(Finding("G1-x", "G1", Status.FAIL, HOSTILE, Location(HOSTILE, line=3),
                                       evidence={"password": "S3cret", "url": HOSTILE, "list": [HOSTILE, 1, None]}))
    return Report(profile="dgx-spark", targets=[result], exit_code=1)


@pytest.mark.parametrize("name", [f.name for f in formats.FORMATS.values() if not f.inventory])
@pytest.mark.parametrize("hostile", [False, True])
def test_findings_only_formats_do_not_read_the_inventory(name: str, hostile: bool) -> None:
    """A format declared ``inventory=False`` is given empty inventories: its text must be what it writes
    with the whole (cleaned) inventory, or the declaration is wrong."""
    import importlib

    report = h200_report(hostile)
    render = importlib.import_module(formats.FORMATS[name].module).render
    for verbosity in (-1, 0, 1):
        full = render(redaction.clean_report(report), verbosity)
        assert formats.renderer(name)(report, verbosity) == (full if isinstance(full, formats.Rendered) else formats.Rendered(full))
    assert formats.without_inventories(report).targets[0].inventory == Inventory(context="installed")


def _reference_clean(value: Any, secret: bool = False) -> Any:
    """The generic walk redaction did before its fast paths (the authority for clean_value)."""
    kind: Any = type(value)
    if kind is str:
        return (redaction.MASK if value else value) if secret else redaction.escape_controls(redaction.redact(value))
    if value is None or kind in (bool, int, float, bytes) or isinstance(value, enum.Enum):
        return value
    if kind is tuple or kind is list:
        items = [_reference_clean(v, secret) for v in value]
        return kind(items) if items != list(value) else value
    if kind is dict or isinstance(value, Mapping):
        return {_reference_clean(k): _reference_clean(v, secret or (type(k) is str and redaction.is_secret_name(k)))
                for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return kind(_reference_clean(v, secret) for v in value)
    if not dataclasses.is_dataclass(value):
        return value
    name = getattr(value, "name", None)
    secret_fields = {"value"} if isinstance(name, str) and hasattr(value, "value") and redaction.is_secret_name(name) else set()
    changes = {}
    for f in dataclasses.fields(value):
        old = getattr(value, f.name)
        if f.init and old is not None:
            new = _reference_clean(old, f.name in secret_fields)
            if new is not old and new != old:
                changes[f.name] = new
    return dataclasses.replace(value, **changes) if changes else value


def _as_text(report: Report) -> str:
    return json.dumps(json_format.report_data(report), indent=1, default=str)


def test_clean_report_is_the_generic_walk() -> None:
    report = h200_report(hostile=True)
    cleaned = redaction.clean_report(report)
    assert _as_text(cleaned) == _as_text(_reference_clean(report))
    assert "S3cret" not in _as_text(cleaned) and "hf_SecretValue" not in _as_text(cleaned) and "\x1b" not in _as_text(cleaned)


def test_unchanged_objects_are_kept_as_they_are() -> None:
    report = h200_report()
    cleaned = redaction.clean_report(report)
    assert all(a is b for a, b in zip(report.targets[0].inventory.binaries, cleaned.targets[0].inventory.binaries, strict=True))


def test_escape_controls_passes_only_printable_text_unchanged() -> None:
    """The fast path (str.isprintable) lets through no character the control pattern names."""
    everything = "".join(map(chr, range(0x110000)))
    assert not any(c.isprintable() for c in redaction._CONTROL.findall(everything))
    for text in ("", "plain", "tab\there", "esc\x1b", "nel\x85", "ls\u2028", "bom\ufeff", "rlo\u202e", "\udc80"):
        assert redaction.escape_controls(text) == redaction._CONTROL.sub(redaction._visible, text)


def test_location_json_is_asdict_without_empty_values() -> None:
    for loc in (Location("a"), Location("a", line=0, offset=0, member="m", stage="s", branch="b", fallback=True),
                Location("a", fallback=False, stage="")):
        assert loc.to_json() == {k: v for k, v in dataclasses.asdict(loc).items() if v is not None and v is not False}


_TEXT = st.text(alphabet=st.sampled_from(list("aZ09 _-./=:@?&;'\"$\t\n\x1b\x85\u2028\u202eENVBearerTOKEN")) | st.characters(), max_size=40)


@PROPERTY_SETTINGS
@given(_TEXT)
def test_clean_is_redact_then_escape_for_any_text(text: str) -> None:
    redaction.clean.cache_clear()
    assert redaction.clean(text) == redaction._CONTROL.sub(redaction._visible, redaction.redact(text))
    for known in ("HF_TOKEN=hf_abc", "https://a:b@h/x", "x?token=t", "Authorization: Bearer abcdefghijklmnopqrstu",
                  "ENV HF_TOKEN hf_abc", "plain/path/libc.so.6", "tab\there", ""):
        assert redaction.clean(known) == redaction._CONTROL.sub(redaction._visible, redaction.redact(known))


@PROPERTY_SETTINGS
@given(st.lists(_TEXT, max_size=6), st.sampled_from([tuple, list]))
def test_a_sequence_of_texts_is_cleaned_as_each_text(texts: list[str], kind: type) -> None:
    """A tuple or list of texts is let through by one check of their join: never where one of them, or a
    pattern across two of them ("E", "NV"; "tok", "en=x"), would be changed."""
    redaction.clean.cache_clear()
    value = kind(texts)
    for seq in (value, kind([*texts, "E", "NV", "HF_TOK", "EN=hf_x", "a@", "b"]), kind([*texts, 1, None])):
        assert redaction.clean_value(seq) == _reference_clean(seq)
    assert redaction.clean_value(Binary("/p", "x86_64", needed=tuple(texts))).needed == _reference_clean(tuple(texts))


def _reference_plain(obj: Any) -> dict[str, Any]:
    """model._plain before its fast paths (the authority)."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        if (value == () and f.default is None) or (value == "" and required):
            pass  # no Requires-Dist at all is a reading; a required text is kept empty (ARG NAME="")
        elif value is None or value == () or value == "" or value is False:
            continue
        if isinstance(value, Location):
            value = {k: v for k, v in dataclasses.asdict(value).items() if v is not None and v is not False}
        elif isinstance(value, enum.Enum):
            value = value.value
        elif isinstance(value, tuple):
            value = list(value)
        out[f.name] = value
    return out


def test_model_json_is_the_field_walk() -> None:
    report = h200_report(hostile=True)
    inventory = report.targets[0].inventory
    odd = [Package("odd", "", specifier="", extras=(), requires=(), role=Role.LOCK, index=""),
           Binary("p", "x86_64", cuda_major=0, size=0, static_cudart=True, sm121=""), EnvVar("A", "", location=Location("f", line=0))]
    for obj in [*inventory.packages, *inventory.binaries, *inventory.env, *odd]:
        assert obj.to_json() == _reference_plain(obj)
        assert list(obj.to_json()) == list(_reference_plain(obj))  # the same key order


def _reference_redact(text: str) -> str:
    """redaction.redact with every pattern applied, none skipped by a test of the text first (the authority)."""
    r = redaction
    if not text:
        return text
    text = r._URL_USERINFO.sub(lambda m: m.group("scheme") + r.MASK + "@", text)
    text = r._BARE_USERINFO.sub(lambda m: m.group("lead") + r.MASK, text)
    text = r._QUERY_SECRET.sub(r._query_secret, text)
    text = r._AUTH_HEADER.sub(lambda m: m.group("lead") + r.MASK, text)
    text = r._QUOTED_KEY.sub(r._named_value, text)
    text = r._ASSIGNMENT.sub(r._assignment, text)
    text = r._KEY_LINE.sub(r._named_value, text)
    text = r._HEADER_OPTION.sub(r._named_value, text)
    text = r._K8S_ENV_VALUE.sub(r._named_value, text)
    text = r._ENV_OLD_FORM.sub(r._named_value, text)
    for pattern in r._VALUE_SECRETS:
        text = pattern.sub(lambda m: m.group("lead") + r.MASK, text)
    text = r._PRIVATE_KEY.sub(lambda m: m.group("lead") + r._masked_value(m.group("value")) + m.group("end"), text)
    text = r._OPTION.sub(r._option, text)
    text = r._USER_PASSWORD.sub(lambda m: m.group("lead") + r.MASK, text)
    text = r._LOGIN_PASSWORD.sub(lambda m: m.group("lead") + r.MASK, text)
    text = r._LOGIN_WORD.sub(r._named_value, text)
    text = r._NETRC_PASSWORD.sub(lambda m: m.group(0) if m.group("value") == r.MASK else m.group("lead") + r.MASK, text)
    text = r._TOOL_PASSWORD.sub(r._named_value, text)
    return r._PIPED_SECRET.sub(r._named_value, text)


_SECRETISH = st.lists(st.sampled_from(["HF_TOKEN", "apiKey", "pass", "PaT", "x", "=", ":", " ", "?", "&", ";", "@",
                                       "https://", "u:p@", "ENV ", "Authorization: ", "Bearer ", "abcdefghijklmnopqrst",
                                       "'", '"', "$", "\u00df", "\ufb01", "token", "Token", "oauth", "cookie", "\n", "password ",
                                       "-H ", "%env ", "set -x ", "mysql -p", "nvapi-", "| chpasswd", "wandb login ",
                                       "name: ", "value: ", "sha256:", "-----BEGIN RSA PRIVATE KEY-----"]),
                      max_size=12).map("".join)


@PROPERTY_SETTINGS
@given(st.one_of(_SECRETISH, _TEXT))
def test_redact_is_the_reference_redact(text: str) -> None:
    assert redaction.redact(text) == _reference_redact(text)


def test_redact_is_the_reference_redact_on_the_h200_report() -> None:
    report = h200_report(hostile=True)
    strings = {s for p in report.targets[0].inventory.packages for s in (p.requires or ())}
    strings |= {f.message for f in report.targets[0].findings} | {HOSTILE, "PIP_PASSWORD=x y", "url?X-Amz-Signature=abc"}
    for text in strings:
        assert redaction.redact(text) == _reference_redact(text)
