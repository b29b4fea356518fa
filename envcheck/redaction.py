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
import math
import re
from collections.abc import Mapping
from typing import Any, TypeVar, cast

MASK = "***"

# A name is secret-like when one of its words (split at non-letters and camelCase humps) is in _SECRET_WORDS,
# or its last word (numbers aside) ends with one of _SECRET_ENDINGS: HF_TOKEN, apiKey, GITHUB_PAT, HFTOKEN,
# SECRET_KEY_BASE; not TOKENIZERS_PARALLELISM, TIKTOKEN_ENCODINGS_BASE, StrictHostKeyChecking, AUTHOR, PATH.
_SECRET_ENDINGS = ("TOKEN", "TOKENS", "SECRET", "SECRETS", "PASSWORD", "PASSWORDS", "PASSWD", "PASSPHRASE",
                   "CREDENTIAL", "CREDENTIALS", "CREDS", "AUTH", "KEY", "KEYS")
_SECRET_WORDS = frozenset({"PASS", "PAT", "PRIVATE", "SIG", "SIGNATURE", "COOKIE", "SESSION", "AUTHORIZATION",
                           *(e for e in _SECRET_ENDINGS if not e.startswith(("KEY", "AUTH")))})
_NAME_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# In the upper-cased text of every secret-like name: one of the words or endings above.
_SECRET_HINT = re.compile("|".join(sorted(_SECRET_WORDS | set(_SECRET_ENDINGS) | {"PWD"})))

# scheme://userinfo@host: the userinfo is everything up to the last @ before the host's end (also after a
# path normalisation turned "//" into "/").
_URL_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]{0,31}:/{1,3})(?P<userinfo>[^\s/?#@'\"<>]*@)+")
# ?token=..., &X-Amz-Signature=..., ;password=...
_QUERY_SECRET = re.compile(r"(?P<key>[?&;][^=&#\s'\"]{0,128}=)(?P<value>[^&#\s'\"]+)")
# NAME=value and NAME: value (shell assignments, --build-arg, env files, YAML-ish), value quoted or bare.
_ASSIGNMENT = re.compile(
    r"(?P<name>\b[A-Za-z_][A-Za-z0-9_.\-]{0,127})(?P<sep>=|:[ \t]*)(?P<value>\"[^\"]*\"|'[^']*'|[^\s'\";&|,)]+)")
# A Dockerfile's old ENV form: `ENV HF_TOKEN hf_abc` (name, whitespace, the rest of the line is the value).
# Also notebook magics (`%env HF_TOKEN hf_abc`), fish's `set -x NAME value` and Windows' `setx NAME value`.
_ENV_OLD_FORM = re.compile(r"(?P<lead>(?:\b(?i:ENV)|%env|%set_env|\bsetx|\bset[ \t]+-[A-Za-z]*x[A-Za-z]*)[ \t]+"
                           r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)[ \t]+)(?P<value>[^=\s][^\n]*)")
# A secret-named key in quotes, its value quoted: JSON and Python (`"token": "x"`, `os.environ["HF_TOKEN"] = "x"`,
# `os.environ.setdefault("HF_TOKEN", "x")`).
_QUOTED_KEY = re.compile(r"""(?P<lead>(?P<q>["'])(?P<name>[A-Za-z_][A-Za-z0-9_.\-]{0,127})(?P=q)[ \t]*\]?[ \t]*[=:,][ \t]*)"""
                         r"""(?P<value>"[^"\n]*"|'[^'\n]*')""")
# A secret-named key starting a line, any case: YAML (`  password: x`, `- hf_token: x`), INI files (pip.conf,
# .pypirc, AWS credentials: `password = x`), multi-line .netrc (`password x`); and an HTTP header given to a
# command (`-H 'X-Api-Key: x'`), and Kubernetes' `- name: HF_TOKEN` followed by its `value: x` line.
_KEY_LINE = re.compile(r"(?P<lead>^[ \t]*(?:#[ \t]*)?(?:-[ \t]+)?(?!keys?\b)(?P<name>[A-Za-z_][A-Za-z0-9_.\-]{0,127})(?:[ \t]*=|:(?=[ \t])|(?<=password)(?=[ \t]))[ \t]*)"
                       r"(?P<value>\"[^\"\n]*\"|'[^'\n]*'|[^\s#|>'\"]\S*)(?=[ \t\r]*(?:#[^\n]*)?$)", re.MULTILINE)
_HEADER_OPTION = re.compile(r"(?P<lead>(?<![\w-])(?:-H|--header)(?:[ \t]+|=)?[\"']?(?P<name>[A-Za-z][A-Za-z0-9_-]{0,127}):[ \t]*)"
                            r"(?P<value>[^\"'\n]+)")
_K8S_ENV_VALUE = re.compile(r"(?P<lead>\bname:[ \t]*[\"']?(?P<name>[A-Za-z_][A-Za-z0-9_.\-]{0,127})[\"']?[ \t]*\r?\n[ \t]*value:[ \t]*)"
                            r"(?P<value>[^\s#|>][^\n]*)")
# Authorization: <anything>; and bearer tokens quoted on their own (long: English words are not caught).
_AUTH_HEADER = re.compile(r"(?P<lead>\bAuthorization:\s*(?:(?:Bearer|Basic|token)\s+)?|\bBearer\s+(?=[A-Za-z0-9._~+/=\-]{16}))"
                          r"(?P<value>[A-Za-z0-9._~+/=\-]+)", re.IGNORECASE)

# Credentials given as command-line words: `--token X`, `--api-key X` (a secret-named option and the next word),
# `curl -u user:pass`, `docker login -p X`, and .netrc text (`machine h login u password X`).
_OPTION = re.compile(r"(?P<lead>(?<![\w-])--?(?P<name>[A-Za-z][A-Za-z0-9_-]{0,127})[ \t]+)(?P<value>\"[^\"]*\"|'[^']*'|[^\s'\";&|)<>]+)")
_USER_PASSWORD = re.compile(r"(?P<lead>(?<![\w-])(?:-u|--user)(?:[ \t]+|=)?['\"]?[^\s:'\"$]+:)(?!\d+\b)(?P<value>[^\s'\"@;&|]+)")
_LOGIN_PASSWORD = re.compile(r"(?P<lead>\blogin\b[^;&|\n]{0,200}?[ \t]-p[ \t]*)(?P<value>[^\s;&|'\"-][^\s;&|'\"]*)")
# user:password@host with no scheme (`--trusted-host u:pw@host`, `--proxy u:pw@proxy:3128`), not an image
# reference's `name:tag@sha256:...` digest.
_BARE_USERINFO = re.compile(r"(?P<lead>(?:^|(?<=[\s=,'\"]))[A-Za-z0-9._%+~\-]{1,128}:)(?P<value>[^\s/@'\"]{1,256})(?=@(?!sha\d+:)[A-Za-z0-9\[])")
# Commands that take a password as an option of their own: `mysql -pX`, `sshpass -p X`, `7z x -pX`,
# `zip -P X`, `redis-cli -a X`, `useradd -p X`, `ssh-keygen -N X`, `openssl enc -k X` / `-pass pass:X`.
_TOOL_HINT = re.compile(r"mysql|mariadb|sshpass|7z|zip|redis-cli|useradd|usermod|ssh-keygen|openssl")
_TOOL_PASSWORD = re.compile(
    r"(?P<lead>\b(?:(?:mysql(?:dump|admin|import|show|check)?|mariadb(?:-dump|-admin)?|sshpass|7za?|7zr|useradd|usermod)\b"
    r"[^;&|\n]{0,200}?[ \t]-p|(?:un)?zip\b[^;&|\n]{0,200}?[ \t]-P|redis-cli\b[^;&|\n]{0,200}?[ \t]-a"
    r"|ssh-keygen\b[^;&|\n]{0,200}?[ \t]-[NP]|openssl\b[^;&|\n]{0,200}?[ \t](?:-k|-pass(?:in|out)?[ \t]+pass:))[ \t]*)"
    r"(?P<value>[^\s;&|'\"$-][^\s;&|'\"]*|'[^'\n]*'|\"[^\"$\n][^\"\n]*\")")
# A secret written into a command that reads it: `echo 'root:pw' | chpasswd`, `echo pw | docker login --password-stdin`.
_PIPED_SECRET = re.compile(r"(?P<lead>\b(?:echo|printf)[ \t]+(?:-[neE]+[ \t]+)?)(?P<value>'[^'\n]*'|\"[^\"\n]*\"|[^\s|;&'\"]+)"
                           r"(?=[ \t]*\|[ \t]*(?:sudo[ \t]+)?(?:chpasswd\b|[^|;&\n]*--password-stdin\b))")
# `wandb login KEY`, `vault login TOKEN`: the credential as a word of its own.
_LOGIN_WORD = re.compile(r"(?P<lead>\b(?:wandb|vault)[ \t]+login(?:[ \t]+--?[A-Za-z][\w-]*)*[ \t]+)(?P<value>[^\s;&|'\"$-][^\s;&|'\"]*)")
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
    r"(?P<lead>(?<![\w-])eyJ)[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]*)?",  # JWTs (bearer tokens on their own)
    r"(?P<lead>\bnvapi-)[A-Za-z0-9_-]{20,}",  # NVIDIA NGC / build.nvidia.com API keys
    r"(?P<lead>\bsk-(?:proj-|ant-(?:api\d+-)?|svcacct-)?)[A-Za-z0-9]{20,}[A-Za-z0-9_-]*",  # OpenAI and Anthropic API keys
    r"(?P<lead>\bpypi-)AgE[A-Za-z0-9_-]{20,}",  # PyPI upload tokens
    # crypt(3) password hashes (/etc/shadow, htpasswd): $6$salt$hash, $y$..., $2b$12$..., $argon2id$...
    r"(?P<lead>(?<![\w$])\$(?:1|5|6|7|y|gy|2[abxy]|md5|sha1|argon2(?:id|i|d))\$)(?=[^\s:'\"]{0,128}?[./A-Za-z0-9+]{22})[^\s:'\"]{1,256}",
))
# Every pattern of _VALUE_SECRETS (and _PRIVATE_KEY) needs one of these: one search before the expressions.
_VALUE_HINT = re.compile(r"gh[pousr]_|github_pat_|hf_|xox|xapp-|glpat-|A(?:KIA|SIA|GPA|IDA|ROA|IPA|NPA|NVA)|hooks\.slack|eyJ"
                         r"|PRIVATE KEY|nvapi-|sk-|pypi-|\$(?:[1567y]|gy|2[abxy]|md5|sha1|argon2i?d?)\$")
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
    """True for variable names whose values are credentials (``HF_TOKEN``, ``PIP_PASSWORD``, ``DB_PWD``; not
    ``PWD``, the shell's working folder)."""
    words = [word.upper() for word in _NAME_WORD.findall(name) if not word.isdigit()]
    if not words:
        return False
    return any(word in _SECRET_WORDS for word in words) or words[-1].endswith(_SECRET_ENDINGS) \
        or (words[-1] == "PWD" and len(words) > 1)


def _query_secret(match: re.Match[str]) -> str:
    key = match.group("key")
    return key + MASK if is_secret_name(key[1:-1]) else match.group(0)


def _masked_value(value: str) -> str:
    """``value`` masked, its quotes and line count kept (a --diff shows the lines that follow where they are)."""
    quote = value[0] if value[:1] in ("'", '"') and value[-1:] == value[0] and len(value) > 1 else ""
    return f"{quote}{MASK}{quote}" + "\n" * value.count("\n")


def _named_value(match: re.Match[str]) -> str:
    """lead + value masked when the match's ``name`` is secret-like (or it has none) and the value is not a
    reference to another variable (``$HF_TOKEN``, ``${{ secrets.X }}``) or already masked."""
    value = match.group("value")
    name = match.groupdict().get("name")
    bare = value.strip("\"' \t")
    if (name is not None and not is_secret_name(name)) or not bare or bare.startswith("$") or MASK in value:
        return match.group(0)
    return match.group("lead") + _masked_value(value.rstrip(" \t")) + value[len(value.rstrip(" \t")):]


def _assignment(match: re.Match[str]) -> str:
    name, sep, value = match.group("name"), match.group("sep"), match.group("value")
    if sep == "=" and "=" in value and not is_secret_name(name):  # `--env=HF_TOKEN=x`: the inner assignment
        inner, _, rest = value.partition("=")
        if rest and is_secret_name(inner) and not rest.startswith(("$", MASK)):
            return f"{name}{sep}{inner}={MASK}"
        return match.group(0)
    if not is_secret_name(name) or value == MASK or value.strip("\"'") in ("", MASK):
        return match.group(0)
    if sep != "=" and name != name.upper():
        return match.group(0)  # "key: value" in prose is not an assignment; "HF_TOKEN: abc" (YAML, env files) is
    if value.startswith("$") or value.startswith("\"$") or value.startswith("'$"):
        return match.group(0)  # a reference to another variable reveals nothing
    return f"{name}{sep}{_masked_value(value)}"


def _option(match: re.Match[str]) -> str:
    name, value = match.group("name"), match.group("value")
    if (not is_secret_name(name) or name.lower().endswith(_OPTION_NOT_VALUE) or MASK in value or not value.strip("\"'")
            or value.startswith(("$", "-", "\"$", "'$"))):
        return match.group(0)
    return f"{match.group('lead')}{_masked_value(value)}"


def redact(text: str) -> str:
    """``text`` with URL credentials, secret query parameters, auth headers, secret variable and option values
    masked."""
    if not text:
        return text
    # Each pattern needs a character most strings lack: test that first. Those that mask by a variable's name
    # change nothing unless a secret word is somewhere in the text (Requires-Dist lines are full of `=`).
    upper = text.upper()
    hinted = _SECRET_HINT.search(upper) is not None
    quoted = "'" in text or '"' in text
    named = ("=" in text or ":" in text or quoted or "ENV" in upper or "SET" in upper) and hinted
    if "@" in text:
        text = _URL_USERINFO.sub(lambda m: m.group("scheme") + MASK + "@", text)
        if ":" in text:
            text = _BARE_USERINFO.sub(lambda m: m.group("lead") + MASK, text)
    if named and "=" in text:
        text = _QUERY_SECRET.sub(_query_secret, text)
    if ":" in text or "earer" in text:
        text = _AUTH_HEADER.sub(lambda m: m.group("lead") + MASK, text)
    if named and quoted:
        text = _QUOTED_KEY.sub(_named_value, text)
    if named and ("=" in text or ":" in text):
        text = _ASSIGNMENT.sub(_assignment, text)
        text = _KEY_LINE.sub(_named_value, text)
        if "-" in text:
            text = _HEADER_OPTION.sub(_named_value, text)
        if "value:" in text:
            text = _K8S_ENV_VALUE.sub(_named_value, text)
    elif hinted and "assword" in text:
        text = _KEY_LINE.sub(_named_value, text)  # .netrc's `password x` line
    if named:
        text = _ENV_OLD_FORM.sub(_named_value, text)
    if _may_hold_value_secret(text):
        for pattern in _VALUE_SECRETS:
            text = pattern.sub(lambda m: m.group("lead") + MASK, text)
        if "PRIVATE KEY" in text:
            text = _PRIVATE_KEY.sub(lambda m: m.group("lead") + _masked_value(m.group("value")) + m.group("end"), text)
    if hinted and "-" in text:  # after the value patterns: `--token hf_***` keeps the kind of secret it was
        text = _OPTION.sub(_option, text)
    if ":" in text and ("-u" in text or "--user" in text):
        text = _USER_PASSWORD.sub(lambda m: m.group("lead") + MASK, text)
    if "login" in text:
        text = _LOGIN_PASSWORD.sub(lambda m: m.group("lead") + MASK, text)
        text = _LOGIN_WORD.sub(_named_value, text)
        if "password" in text:
            text = _NETRC_PASSWORD.sub(lambda m: m.group(0) if m.group("value") == MASK else m.group("lead") + MASK, text)
    if _TOOL_HINT.search(text):
        text = _TOOL_PASSWORD.sub(_named_value, text)
    if "|" in text and ("chpasswd" in text or "password-stdin" in text):
        text = _PIPED_SECRET.sub(_named_value, text)
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
        and "login" not in text and not _SECRET_HINT.search(text.upper()) and not _may_hold_value_secret(text) \
        and not _TOOL_HINT.search(text)


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
    if kind is float and not math.isfinite(value):
        return None  # inf and nan are no JSON: every format writes a number it cannot tell as unknown
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
