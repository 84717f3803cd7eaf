"""What counts as a secret, and how to keep one out of everything written, shown or logged.

One module for every route a credential could leak through: the judge options written to metric and
result files (:mod:`agenteval.metric.criterion`), the provenance a result keeps
(:mod:`agenteval.evalresult.provenance`) and the error messages of chat models (:mod:`agenteval.llm.openai`).

An environment reference (``${JUDGE_API_KEY}``, ``$TOKEN``, ``Bearer ${TOKEN}``) is not a secret: it
names where the secret is, so it is kept wherever it was written.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

__all__ = [
    "REDACTED",
    "TOKEN_SHAPES",
    "is_ambiguous_credential_name",
    "is_credential_name",
    "is_env_reference",
    "literal_secrets",
    "looks_like_api_key",
    "looks_like_secret",
    "redact",
    "redact_free_text",
    "strip_userinfo",
    "without_secrets",
]

REDACTED = "[redacted]"
"""What a secret is replaced with in text."""

_CREDENTIAL_WORDS = frozenset(
    {
        "key",
        "apikey",
        "token",
        "secret",
        "secrets",
        "password",
        "passwd",
        "passphrase",
        "authorization",
        "auth",
        "credential",
        "credentials",
        "jwt",
        "cred",
        "creds",
        "pwd",
        "pw",
    }
)
"""A name whose last word is one of these names a credential (``api_token``, ``secretKey``, ``X-Api-Key``)."""

_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")

_REFERENCE = re.compile(r"\$(?:\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z_][A-Za-z0-9_]*)")
_AUTH_SCHEMES = frozenset({"", "bearer", "basic", "token"})
"""What may stand beside a reference in a credential value (``Bearer ${TOKEN}``)."""

_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/?#\s@'\"<>]+)@")

_MIN_KNOWN = 6
"""Known secrets shorter than this (``EMPTY``, ``x``: placeholders) are not searched for in text."""

TOKEN_SHAPES = re.compile(
    # What each shape starts with, looked at first: it spares most positions the rest (cassettes of
    # hundreds of megabytes are scanned).
    r"(?=[sgxAe0-9])"
    r"(?:\b(?:"
    r"sk-[A-Za-z0-9_-]{16,}"  # OpenAI, Anthropic and compatible endpoints
    r"|(?:ghp|gho|ghs|ghu|github_pat)_[A-Za-z0-9_]{16,}"  # GitHub
    r"|xox[abpr]-[A-Za-z0-9-]{10,}"  # Slack
    r"|A(?:KI|SI)A[0-9A-Z]{16}"  # AWS access key ids: long-term (AKIA) and temporary (ASIA)
    r"|AIza[0-9A-Za-z_-]{30,}"  # Google API key
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+"  # a JWT
    r")"
    r"|(?<![0-9])[0-9]{6,12}:[A-Za-z0-9_-]{30,})"  # a Telegram bot token, also in its /bot<token>/ URLs
)
"""Credentials recognisable by their shape alone."""

_AUTH_HEADER = re.compile(r"\b(?P<scheme>Bearer|Basic|Token)\s+(?P<value>[A-Za-z0-9._~+/=-]{6,})", re.IGNORECASE)

_ASSIGNMENT = re.compile(
    r"(?P<name>[A-Za-z_][A-Za-z0-9_.-]*)(?P<sep>['\"]?\s*[:=]\s*)"
    r"(?:\"(?P<double>[^\"]*)\"|'(?P<single>[^']*)'|(?P<bare>" + re.escape(REDACTED) + r"|[^\s'\",;&)}\]]+))"
)
"""``name=value``, ``name: value``, ``"name": "value"`` and ``'name': 'value'``."""


_RUN = re.compile(r"[^\s\-_./:,;|@#]+")
"""A run of characters between the separators names and versions use (``gpt-4o-mini``, ``v1.2``, ``a/b``)."""

_MIXED_RUN = 12
"""A run this long that mixes letters with digits, or lower with upper case letters irregularly, is key-like."""

_LONG_RUN = 24
"""A run this long is key-like whatever it holds (``wJalrXUtnFEMIK7MDENG…``, 32 digits)."""


def looks_like_secret(value: object) -> bool:
    """Whether a value looks like a key, token or password rather than a setting.

    A string is secret-like when it has a known token shape (:data:`TOKEN_SHAPES`: ``sk-…``, ``ghp_…``,
    ``AKIA…``, a JWT, a Telegram bot token), or a run between separators (``-``, ``_``, ``.``, ``/``,
    ``:`` …) of 24 characters or more, or of 12 or more that mixes letters with digits
    (``planted7f3a9c1e``) or has upper case letters after lower case ones more than once
    (``wJalrXUtnFEMI``). Names and versions (``gpt-4o-mini``, ``claude-3-5-sonnet-20241022``,
    ``prompt-v2``, ``</s>``) are not. Anything but a string is not.
    """
    if not isinstance(value, str):
        return False
    if TOKEN_SHAPES.search(value):
        return True
    return any(_key_like(run) for run in _RUN.findall(value))


def _key_like(run: str) -> bool:
    if len(run) >= _LONG_RUN:
        return True
    if len(run) < _MIXED_RUN:
        return False
    has_digit = any(character.isdigit() for character in run)
    has_letter = any(character.isalpha() for character in run)
    humps = sum(1 for before, after in zip(run, run[1:], strict=False) if before.islower() and after.isupper())
    return (has_digit and has_letter) or (humps > 1 and not run[0].isupper())


def looks_like_api_key(name: str) -> bool:
    """Whether a key name looks like a misspelt ``apiKey``.

    Case, ``-``, ``_``, ``.`` and spaces are ignored, and one wrong, missing, extra or swapped
    letter still counts: ``api_key``, ``API-KEY``, ``apikey_``, ``apiKye`` and ``openaiApiKey`` all
    do.
    """
    squashed = re.sub(r"[-_.\s]", "", name.lower())
    return "apikey" in squashed or _within_one_edit(squashed, "apikey")


def _within_one_edit(text: str, target: str) -> bool:
    if abs(len(text) - len(target)) > 1:
        return False
    head = 0
    while head < min(len(text), len(target)) and text[head] == target[head]:
        head += 1
    text_rest, target_rest = text[head:], target[head:]
    return (
        text_rest[1:] == target_rest[1:]  # one letter replaced
        or text_rest[1:] == target_rest  # one letter extra
        or text_rest == target_rest[1:]  # one letter missing
        or (text_rest[:2] == target_rest[1::-1] and text_rest[2:] == target_rest[2:])  # two letters swapped
    )


def is_credential_name(name: str) -> bool:
    """Whether a key of that name holds a credential.

    Its last word (of camelCase, snake_case, kebab-case or dotted names) is key, token, secret,
    password, passphrase, authorization, auth, credential or jwt (``api_token``, ``secretKey``,
    ``Authorization``, ``X-Api-Key``, ``credentials``, ``jwt``), or it is a misspelt ``apiKey``
    (:func:`looks_like_api_key`). ``maxTokens``, ``keyPrefix`` and ``tokenizer`` are not.
    """
    words = _WORD.findall(name)
    return bool(words) and words[-1].lower() in _CREDENTIAL_WORDS or looks_like_api_key(name)


_QUALIFIED_WORDS = frozenset({"key", "token"})
"""Last words too common to name a credential on their own (``key``, ``eos_token``, ``next_page_token``)."""

_CREDENTIAL_QUALIFIERS = frozenset(
    {
        "access",
        "api",
        "app",
        "auth",
        "bearer",
        "client",
        "id",
        "master",
        "oauth",
        "personal",
        "private",
        "refresh",
        "secret",
        "security",
        "service",
        "session",
        "signing",
        "subscription",
    }
)
"""Words that make a ``key`` or ``token`` a credential's name (``access_token``, ``api_key``, ``id_token``)."""


def is_ambiguous_credential_name(name: str) -> bool:
    """Whether a credential's name is one that data often has too: its last word is key or token alone.

    ``key``, ``token``, ``eos_token``, ``next_page_token``, ``sort_key`` and ``prompt_cache_key`` are;
    ``api_key``, ``access_token``, ``id_token``, ``secretKey`` and ``password`` are not. A value under
    such a name is a credential only if it also looks like one (:func:`looks_like_secret`).
    """
    words = [word.lower() for word in _WORD.findall(name)]
    return (
        bool(words)
        and words[-1] in _QUALIFIED_WORDS
        and not _CREDENTIAL_QUALIFIERS.intersection(words[:-1])
        and not looks_like_api_key(name)
    )


def is_env_reference(value: object) -> bool:
    """Whether ``value`` is a string that names where a secret is rather than holding it.

    ``${JUDGE_API_KEY}``, ``$TOKEN`` and ``Bearer ${TOKEN}``: at least one environment reference,
    and beside the references at most an authorization scheme (``Bearer``, ``Basic``, ``Token``).
    """
    if not isinstance(value, str) or not _REFERENCE.search(value):
        return False
    return _REFERENCE.sub("", value).strip().lower() in _AUTH_SCHEMES


def strip_userinfo(text: str) -> str:
    """``text`` with the ``user:password@`` part of every URL in it removed.

    ``https://user:pass@host/v1`` becomes ``https://host/v1``; one whose password (or, without a
    password, user: a token) is an environment reference stays (``https://judge:${JUDGE_PASSWORD}@host``).
    """
    return _USERINFO.sub(_without_userinfo, text) if "@" in text else text


def _without_userinfo(match: re.Match[str]) -> str:
    user, colon, password = match["userinfo"].partition(":")
    return match[0] if is_env_reference(password if colon else user) else match["scheme"]


def redact_free_text(text: str) -> str:
    """``text`` with the credentials of URLs, ``Authorization``-style values and token-shaped strings redacted.

    For prose such as an agent's error message, where ``key: value`` is more often words than a
    credential (``needs an API key: set SHOP_KEY``): assignments are left alone, unlike :func:`redact`.
    """
    text = _AUTH_HEADER.sub(lambda match: f"{match['scheme']} {REDACTED}", strip_userinfo(text))
    return TOKEN_SHAPES.sub(REDACTED, text)


def redact(text: str, known: Iterable[str] = ()) -> str:
    """``text`` with everything that looks like a credential replaced by :data:`REDACTED`.

    Replaced: each of the ``known`` secrets (those of six characters or more) wherever it occurs; the
    credentials of URLs (``https://user:pass@host``, see :func:`strip_userinfo`); the values of
    ``Authorization``-style schemes (``Bearer <token>``); values assigned to a credential name
    (``api_key='…'``, ``"token": "…"``, see :func:`is_credential_name`) unless they are environment
    references; and tokens recognisable by their shape (``sk-…``, ``ghp_…``, ``AKIA…``, JWTs).
    """
    for secret in sorted({secret for secret in known if len(secret) >= _MIN_KNOWN}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    text = strip_userinfo(text)
    text = _AUTH_HEADER.sub(lambda match: f"{match['scheme']} {REDACTED}", text)
    text = _ASSIGNMENT.sub(_redacted_assignment, text)
    return TOKEN_SHAPES.sub(REDACTED, text)


def _redacted_assignment(match: re.Match[str]) -> str:
    value = match["double"] if match["double"] is not None else match["single"] or match["bare"] or ""
    if (
        not is_credential_name(match["name"])
        or value.lower() in _AUTH_SCHEMES  # "Authorization: Bearer <token>": the token is redacted on its own
        or value == REDACTED
        or is_env_reference(value)
    ):
        return match[0]
    quote = '"' if match["double"] is not None else "'" if match["single"] is not None else ""
    return f"{match['name']}{match['sep']}{quote}{REDACTED}{quote}"


def without_secrets(value: Any) -> Any:
    """A copy of a JSON value without its secrets, for writing or showing it.

    In every object, at any depth, an entry whose name is a credential's (:func:`is_credential_name`)
    is left out unless its value is an environment reference (:func:`is_env_reference`), and every
    string loses the credentials of the URLs in it (:func:`strip_userinfo`). Anything else is kept as
    it is.
    """
    if isinstance(value, dict):
        return {
            key: without_secrets(item)
            for key, item in value.items()
            if not (isinstance(key, str) and is_credential_name(key) and not is_env_reference(item))
        }
    if isinstance(value, list):
        return [without_secrets(item) for item in value]
    if isinstance(value, str):
        return strip_userinfo(value)
    return value


def literal_secrets(value: Any, path: str = "") -> list[tuple[str, str]]:
    """The literal secrets inside a JSON value, each with its path (``headers.Authorization``).

    The strings under a credential's name (:func:`is_credential_name`) at any depth, unless they
    are environment references (:func:`is_env_reference`); ``path`` is the value's own path.
    """
    found: list[tuple[str, str]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if isinstance(key, str) and is_credential_name(key) and not is_env_reference(item):
                found += _strings(item, where)
            else:
                found += literal_secrets(item, where)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += literal_secrets(item, f"{path}[{index}]")
    return found


def _strings(value: Any, path: str) -> list[tuple[str, str]]:
    if isinstance(value, dict):
        return [found for key, item in value.items() for found in _strings(item, f"{path}.{key}")]
    if isinstance(value, list):
        return [found for index, item in enumerate(value) for found in _strings(item, f"{path}[{index}]")]
    return [(path, value)] if isinstance(value, str) and value else []
