"""What envcheck writes never carries a secret or a control character from its (hostile or careless) inputs.

Everything written goes through :func:`clean_report` (the formats) or :func:`clean` (messages, stderr, the
cache): :func:`redact` masks URL userinfo, secret query parameters, ``Authorization`` values, values of
secret-like variables and options (``--token X``, ``curl -u user:pass``, ``docker login -p X``, .netrc
passwords) and credentials known by their value (GitHub, Hugging Face, AWS, Slack, JWT, private
keys); :func:`escape_controls` writes control characters visibly (no input moves the cursor or starts a
line); :func:`no_command_lines` defuses GitHub Actions workflow commands (``::error``, ``##[add-mask]``)."""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import functools
import re
from collections.abc import Mapping
from typing import Any, TypeVar, cast

MASK = "***"

# A name is secret-like when one of its words (split at non-letters and camelCase humps) is in _SECRET_WORDS
# or ends with one of _SECRET_ENDINGS: HF_TOKEN, apiKey, GITHUB_PAT; not TOKENIZERS_PARALLELISM, AUTHOR, PATH.
_SECRET_WORDS = frozenset({"PASS", "PAT", "PRIVATE", "SIG", "SIGNATURE", "COOKIE", "SESSION", "AUTHORIZATION"})
_SECRET_ENDINGS = ("TOKEN", "TOKENS", "SECRET", "SECRETS", "PASSWORD", "PASSWORDS", "PASSWD", "PASSPHRASE",
                   "CREDENTIAL", "CREDENTIALS", "CREDS", "AUTH", "KEY", "KEYS")
_NAME_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# In the upper-cased text of every secret-like name: one of the words or endings above.
_SECRET_HINT = re.compile("|".join(sorted(_SECRET_WORDS | set(_SECRET_ENDINGS))))

# scheme://userinfo@host: the userinfo is everything up to the last @ before the host's end (also after a
# path normalisation turned "//" into "/").
_URL_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*:/{1,3})(?P<userinfo>[^\s/?#@'\"<>]*@)+")
# ?token=..., &X-Amz-Signature=..., ;password=...
_QUERY_SECRET = re.compile(r"(?P<key>[?&;][^=&#\s'\"]*=)(?P<value>[^&#\s'\"]+)")
# NAME=value and NAME: value (shell assignments, --build-arg, env files, YAML-ish), value quoted or bare.
_ASSIGNMENT = re.compile(
    r"(?P<name>\b[A-Za-z_][A-Za-z0-9_.\-]*)(?P<sep>=|:[ \t]*)(?P<value>\"[^\"]*\"|'[^']*'|[^\s'\";&|,)]+)")
# A Dockerfile's old ENV form: `ENV HF_TOKEN hf_abc` (name, whitespace, the rest of the line is the value).
_ENV_OLD_FORM = re.compile(r"(?P<lead>\bENV\s+)(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?P<sep>[ \t]+)(?P<value>[^=\s][^\n]*)")
# Authorization: <anything>; and bearer tokens quoted on their own (long: English words are not caught).
_AUTH_HEADER = re.compile(r"(?P<lead>\bAuthorization:\s*(?:(?:Bearer|Basic|token)\s+)?|\bBearer\s+(?=[A-Za-z0-9._~+/=\-]{16}))"
                          r"(?P<value>[A-Za-z0-9._~+/=\-]+)", re.IGNORECASE)

# Credentials given as command-line words: `--token X`, `--api-key X` (a secret-named option and the next word),
# `curl -u user:pass`, `docker login -p X`, and .netrc text (`machine h login u password X`).
_OPTION = re.compile(r"(?P<lead>(?<![\w-])--?(?P<name>[A-Za-z][A-Za-z0-9_-]*)[ \t]+)(?P<value>\"[^\"]*\"|'[^']*'|[^\s'\";&|)<>]+)")
_USER_PASSWORD = re.compile(r"(?P<lead>(?<![\w-])(?:-u|--user)(?:[ \t]+|=)?['\"]?[^\s:'\"$]+:)(?!\d+\b)(?P<value>[^\s'\"@;&|]+)")
_LOGIN_PASSWORD = re.compile(r"(?P<lead>\blogin\b[^;&|\n]{0,200}?[ \t]-p[ \t]*)(?P<value>[^\s;&|'\"-][^\s;&|'\"]*)")
_NETRC_PASSWORD = re.compile(r"(?P<lead>\b(?:machine|login|default)\b[^\n]{0,200}?\bpassword[ \t]+)(?P<value>[^\s'\"]+)")
# an option naming where a secret is, not the secret (`--password-stdin`, `--token-file`)
_OPTION_NOT_VALUE = ("stdin", "file", "path", "env", "dir", "type", "url")

# Credentials recognisable by their value: the prefix is kept (the kind of secret shows), the rest masked.
_VALUE_SECRETS = tuple(re.compile(pattern) for pattern in (
    r"(?P<lead>\b(?:gh[pousr]_|github_pat_|glpat-))[A-Za-z0-9_]{16,}",  # GitHub (and GitLab) tokens
    r"(?P<lead>\bhf_)[A-Za-z0-9]{20,}",  # Hugging Face (hf_transfer, hf_hub_download are too short or have _)
    r"(?P<lead>\b(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA))[A-Z0-9]{16}\b",  # AWS access key ids
    r"(?P<lead>\b(?:xox[abposre]|xapp)-)[A-Za-z0-9-]{10,}",  # Slack tokens
    r"(?P<lead>hooks\.slack\.com/services/)[A-Za-z0-9/_-]{8,}",  # Slack webhooks: the path is the secret
    r"(?P<lead>\beyJ)[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]*)?",  # JWTs (bearer tokens on their own)
))
# Every pattern of _VALUE_SECRETS (and _PRIVATE_KEY) needs one of these: one search before the expressions.
_VALUE_HINT = re.compile(r"gh[pousr]_|github_pat_|hf_|xox|xapp-|glpat-|A(?:KIA|SIA|GPA|IDA|ROA|IPA|NPA|NVA)|hooks\.slack|eyJ"
                         r"|PRIVATE KEY")
# -----BEGIN RSA PRIVATE KEY----- ... -----END RSA PRIVATE KEY----- (or the end of the text: a key cut short).
_PRIVATE_KEY = re.compile(r"(?P<lead>-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----)(?P<value>.*?)(?P<end>-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)",
                          re.DOTALL)


def _may_hold_value_secret(text: str) -> bool:
    return _VALUE_HINT.search(text) is not None


# C0, DEL, C1, and the Unicode characters that break or reorder lines (separators, bidi overrides, isolates).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


@functools.lru_cache(maxsize=4096)  # the same keys (evidence, Env names) come back for every finding
def is_secret_name(name: str) -> bool:
    """True for variable names whose values are credentials (``HF_TOKEN``, ``PIP_PASSWORD``)."""
    for word in _NAME_WORD.findall(name):
        upper = word.upper()
        if upper in _SECRET_WORDS or upper.endswith(_SECRET_ENDINGS):
            return True
    return False


def _query_secret(match: re.Match[str]) -> str:
    key = match.group("key")
    return key + MASK if is_secret_name(key[1:-1]) else match.group(0)


def _assignment(match: re.Match[str]) -> str:
    name, sep, value = match.group("name"), match.group("sep"), match.group("value")
    if not is_secret_name(name) or value == MASK or value.strip("\"'") in ("", MASK):
        return match.group(0)
    if sep != "=" and name != name.upper():
        return match.group(0)  # "key: value" in prose is not an assignment; "HF_TOKEN: abc" (YAML, env files) is
    if value.startswith("$") or value.startswith("\"$") or value.startswith("'$"):
        return match.group(0)  # a reference to another variable reveals nothing
    quote = value[0] if value[0] in "\"'" else ""
    return f"{name}{sep}{quote}{MASK}{quote}"


def _option(match: re.Match[str]) -> str:
    name, value = match.group("name"), match.group("value")
    if (not is_secret_name(name) or name.lower().endswith(_OPTION_NOT_VALUE) or MASK in value or not value.strip("\"'")
            or value.startswith(("$", "-", "\"$", "'$"))):
        return match.group(0)
    quote = value[0] if value[0] in "\"'" else ""
    return f"{match.group('lead')}{quote}{MASK}{quote}"


def redact(text: str) -> str:
    """``text`` with URL credentials, secret query parameters, auth headers, secret variable and option values
    masked."""
    if not text:
        return text
    # Each pattern needs a character most strings lack: test that first. Those that mask by a variable's name
    # change nothing unless a secret word is somewhere in the text (Requires-Dist lines are full of `=`).
    hinted = _SECRET_HINT.search(text.upper()) is not None
    named = ("=" in text or ":" in text or "ENV" in text) and hinted
    if "@" in text:
        text = _URL_USERINFO.sub(lambda m: m.group("scheme") + MASK + "@", text)
    if named and "=" in text:
        text = _QUERY_SECRET.sub(_query_secret, text)
    if ":" in text or "earer" in text:
        text = _AUTH_HEADER.sub(lambda m: m.group("lead") + MASK, text)
    if named and ("=" in text or ":" in text):
        text = _ASSIGNMENT.sub(_assignment, text)
    if named and "ENV" in text:
        text = _ENV_OLD_FORM.sub(lambda m: m.group("lead") + m.group("name") + m.group("sep") + MASK
                                 if is_secret_name(m.group("name")) else m.group(0), text)
    if _may_hold_value_secret(text):
        for pattern in _VALUE_SECRETS:
            text = pattern.sub(lambda m: m.group("lead") + MASK, text)
        if "PRIVATE KEY" in text:
            text = _PRIVATE_KEY.sub(lambda m: m.group("lead") + MASK + m.group("end"), text)
    if hinted and "-" in text:  # after the value patterns: `--token hf_***` keeps the kind of secret it was
        text = _OPTION.sub(_option, text)
    if ":" in text and ("-u" in text or "--user" in text):
        text = _USER_PASSWORD.sub(lambda m: m.group("lead") + MASK, text)
    if "login" in text:
        text = _LOGIN_PASSWORD.sub(lambda m: m.group("lead") + MASK, text)
        if "password" in text:
            text = _NETRC_PASSWORD.sub(lambda m: m.group(0) if m.group("value") == MASK else m.group("lead") + MASK, text)
    return text


# A line that starts with "::" once the runner has stripped its leading whitespace (any Unicode blank).
_COMMAND_START = re.compile(r"^([^\S\r\n]*):(?=:)", re.MULTILINE)


def no_command_lines(text: str, colon: str = "\\x3a", bracket: str = "\\x5b") -> str:
    """``text`` with no GitHub Actions workflow command: ``::`` starting a line (after blanks) gets its first
    colon as ``colon``, ``##[`` anywhere (the older form) its bracket as ``bracket``."""
    if "::" in text:
        text = _COMMAND_START.sub(lambda m: m.group(1) + colon, text)
    return text.replace("##[", "##" + bracket) if "##[" in text else text


def _visible(match: re.Match[str]) -> str:
    char = match.group(0)
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def escape_controls(text: str) -> str:
    """``text`` with every control character written visibly (ESC as ``\\x1b``, newline as ``\\n``)."""
    # isprintable() is False for every character _CONTROL names: a C-speed pass lets common text through
    return text if text.isprintable() else _CONTROL.sub(_visible, text)


def _plainly_clean(text: str) -> bool:
    """Whether :func:`clean` surely leaves ``text`` alone (True for a join of texts: True for each)."""
    return text.isprintable() and "=" not in text and ":" not in text and "@" not in text and "earer" not in text \
        and "ENV" not in text and "login" not in text and not ("-" in text and _SECRET_HINT.search(text.upper())) \
        and not _may_hold_value_secret(text)


@functools.lru_cache(maxsize=1 << 16)
def clean(text: str) -> str:
    """Redacted and escaped: safe to write anywhere (a terminal, a CI log, a file)."""
    if _plainly_clean(text):
        return text  # what redact and escape_controls would return: no pattern's character, no control
    return escape_controls(redact(text))


T = TypeVar("T")


def clean_value(value: T, secret: bool = False, escape: bool = True) -> T:
    """``value`` (nested dataclasses, mappings, sequences, strings) with every string cleaned (only redacted
    with ``escape=False``: data read back) and secret-named entries or fields masked whole; unchanged objects
    are returned as they are (a whole-environment report holds tens of thousands)."""
    return cast(T, _clean_any(value, secret, escape))


def _clean_any(value: Any, secret: bool, escape: bool) -> Any:
    kind: Any = type(value)
    if kind is str:
        if secret:
            return MASK if value else value
        new = clean(value) if escape else redact(value)
        return value if new == value else new  # the same object when unchanged: the callers compare by identity
    if value is None or kind in _PLAIN or isinstance(value, enum.Enum):
        return value
    if kind is tuple or kind is list:
        with contextlib.suppress(TypeError):  # texts only (sonames, Requires-Dist lines): one check of them all, in C
            if escape and not secret and _plainly_clean("".join(value)):
                return value
        items = [_clean_any(v, secret, escape) for v in value]
        return value if all(new is old for new, old in zip(items, value, strict=True)) else kind(items)
    if kind is dict or isinstance(value, Mapping):
        pairs = [(_clean_any(k, False, escape), _clean_any(v, secret or (type(k) is str and is_secret_name(k)), escape))
                 for k, v in value.items()]
        if kind is dict and all(nk is k and nv is v for (nk, nv), (k, v) in zip(pairs, value.items(), strict=True)):
            return value  # nothing to change (a diff of 300,000 packages has as many evidence objects)
        return dict(pairs)
    if isinstance(value, (set, frozenset)):
        members = [(_clean_any(v, secret, escape), v) for v in value]
        return value if all(new is old for new, old in members) else kind(new for new, _ in members)
    if not dataclasses.is_dataclass(value):
        return value
    secret_fields = _secret_fields(value)
    changes = {}
    for name in _init_fields(kind):
        old = getattr(value, name)
        if old is None or type(old) in _PLAIN:
            continue
        new = _clean_any(old, name in secret_fields, escape)
        if new is not old:  # not `!=`: fields left out of comparison (evidence, edits) may hold the secret
            changes[name] = new
    return dataclasses.replace(value, **changes) if changes else value  # type: ignore[type-var]


_PLAIN = frozenset({bool, int, float, bytes})


@functools.cache
def _init_fields(kind: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(kind) if f.init)


def _secret_fields(obj: Any) -> frozenset[str]:
    name = getattr(obj, "name", None)
    return frozenset({"value"}) if isinstance(name, str) and hasattr(obj, "value") and is_secret_name(name) else frozenset()


def clean_report(report: T) -> T:
    return clean_value(report)
