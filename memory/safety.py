"""What must never leave the process as-is: secrets (redacted) and the environment of the
processes we start (cut to an allowlist). Instruction-like text is flagged by
memory.instruction_flags, which `sanitize_record` calls.

Secret shapes come from two sources: the regex detectors of Yelp's detect-secrets (kept up
to date by its maintainers; run offline, nothing verified over the network) and our own
patterns for what it leaves to context: passwords in URLs, secret-named assignments, PEM and
PGP blocks, bare high-entropy AWS secret keys and a few newer token prefixes. Redaction is
the one function every outgoing text passes through: memory fields, evidence, tool outputs,
transcripts and logs.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from memory.records import MemoryRecord, TestEvidence
from memory.text import without_terminal_codes

if TYPE_CHECKING:
    from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString

REDACTED = "[REDACTED]"


@functools.cache
def _library_patterns() -> tuple[re.Pattern[str], ...]:
    """The shapes of detect-secrets' detectors, each kept from matching inside a longer
    word (a token glued to one is part of that word, not a key). Loaded on first use:
    importing the library costs about 0.1 s, which no command pays before it redacts."""
    return tuple(
        re.compile(rf"(?<![\w/+=-])(?:{pattern})", flags) for pattern, flags in library_shapes()
    )


def library_shapes() -> tuple[tuple[str, int], ...]:
    """(pattern, flags) of the detect-secrets detectors that name a secret by its shape
    alone. Left out on purpose: the keyword, basic-auth and private-key detectors (our
    patterns below cover them with the span to redact), Artifactory (its `AP...` shape
    matches ordinary words) and the IP, IBM, Cloudant and Softlayer ones (they need a
    keyword context we handle ourselves)."""
    from detect_secrets.plugins.aws import AWSKeyDetector
    from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
    from detect_secrets.plugins.discord import DiscordBotTokenDetector
    from detect_secrets.plugins.github_token import GitHubTokenDetector
    from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
    from detect_secrets.plugins.jwt import JwtTokenDetector
    from detect_secrets.plugins.mailchimp import MailchimpDetector
    from detect_secrets.plugins.openai import OpenAIDetector
    from detect_secrets.plugins.pypi_token import PypiTokenDetector
    from detect_secrets.plugins.sendgrid import SendGridDetector
    from detect_secrets.plugins.slack import SlackDetector
    from detect_secrets.plugins.square_oauth import SquareOAuthDetector
    from detect_secrets.plugins.stripe import StripeDetector
    from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
    from detect_secrets.plugins.twilio import TwilioKeyDetector

    detectors = (
        AWSKeyDetector,
        AzureStorageKeyDetector,
        DiscordBotTokenDetector,
        GitHubTokenDetector,
        GitLabTokenDetector,
        JwtTokenDetector,
        MailchimpDetector,
        OpenAIDetector,
        PypiTokenDetector,
        SendGridDetector,
        SlackDetector,
        SquareOAuthDetector,
        StripeDetector,
        TelegramBotTokenDetector,
        TwilioKeyDetector,
    )
    return tuple(
        (regex.pattern, regex.flags) for detector in detectors for regex in detector.denylist
    )


@functools.cache
def _entropy_detector() -> Base64HighEntropyString:
    from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString

    return Base64HighEntropyString(limit=4.5)


_SECRET_NAME = (
    r"(?:(?i:[a-z0-9_.-]*(?:api[_-]?key|secret|token|passw(?:or)?d|passphrase|pwd|"
    r"private[_-]?key|access[_-]?key|auth[_-]?key|credentials?|account[_-]?key|"
    r"shared[_-]?access[_-]?key|client[_-]?secret)[a-z0-9_]*)"
    r"|[A-Z0-9_]*_(?:PASS|KEY|PW|DSN|AUTH)(?:_[A-Z0-9]+)?)"
)
# Values that are code, not secrets: None/True/False, a call, a variable lookup.
_CODE_VALUE = r"(?!(?:None|True|False|null|nil|os\.|env\.|getenv|self\.|\$|\{|\(|\[REDACTED\]))"

_OWN_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # PEM and PGP private-key blocks, whole (to the end of the text if the END is cut off).
    (
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
            r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.DOTALL,
        ),
        REDACTED,
    ),
    (re.compile(r"PuTTY-User-Key-File-\d+:.*?(?:Private-MAC: \S+|\Z)", re.DOTALL), REDACTED),
    # scheme://[user]:password@host — the password may hold '/' or '@'; a port is not one.
    (
        re.compile(
            r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@\"'<>]*:)(?!\d+(?:[/?#\s\"']|$))"
            r"(?!\[REDACTED\]@)[^\s\"'<>]+(@[^\s@/?#\"'<>]+(?=[/?#:\s\"',;)\]>]|$))"
        ),
        rf"\1{REDACTED}\2",
    ),
    # scheme://KEY@host (Sentry DSNs and the like): a long hex or token user name is a key.
    (re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://)[0-9a-fA-F]{32,}(?=@)"), rf"\1{REDACTED}"),
    # Authorization headers and bearer tokens.
    (re.compile(r"(?i)\b(bearer)(\s+)[A-Za-z0-9._~+/=-]{8,}"), rf"\1\2{REDACTED}"),
    # `token X` / `Basic X` only when X looks generated (a digit, a symbol or mixed case),
    # so "token validation" stays prose.
    (
        re.compile(
            r"(?i)\b(token|basic)(\s+)(?-i:(?=[A-Za-z0-9._~+/=-]*?(?:\d|[+/=]|[a-z][A-Z])))"
            r"[A-Za-z0-9._~+/=-]{8,}"
        ),
        rf"\1\2{REDACTED}",
    ),
    # Token prefixes the library does not know (or knows only at one exact length).
    (re.compile(r"\bsk-(?:proj-|ant-|svcacct-|admin-)?[A-Za-z0-9_-]{16,}"), REDACTED),
    (re.compile(r"\b[rsp]k_(?:live|test)_[0-9a-zA-Z]{16,}"), REDACTED),
    (re.compile(r"\bhf_[A-Za-z0-9]{30,}"), REDACTED),
    (re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"), REDACTED),
    (re.compile(r"\bSG\.[\w-]{16,}\.[\w-]{16,}"), REDACTED),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"), REDACTED),
    (re.compile(r"\bgithub_pat_[A-Za-z0-9_]{30,}\b"), REDACTED),
    (re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b"), REDACTED),
    (re.compile(r"\bAIza[0-9A-Za-z_-]{30,}\b"), REDACTED),
    (re.compile(r"\bhooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9_/]+"), REDACTED),
    # name=value and name: value whose name says it is secret (DB_PASS=, private_key=, ...).
    (
        re.compile(
            rf"(\b{_SECRET_NAME}[\"']?\s*(?::=|[:=])\s*[\"']?){_CODE_VALUE}(?!\d+\b)"
            r"[^\s\"',;\\]{4,}"
        ),
        rf"\1{REDACTED}",
    ),
)

# A bare AWS secret key: 40 base64 characters, every class present, high entropy.
_BARE_KEY = re.compile(r"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")


def _is_bare_key(token: str) -> bool:
    if not (
        any(c.isupper() for c in token)
        and any(c.islower() for c in token)
        and any(c.isdigit() for c in token)
    ):
        return False
    entropy = _entropy_detector()
    return entropy.calculate_shannon_entropy(token) > entropy.entropy_limit


def redact_secrets(text: str) -> str:
    """Replace every secret-looking span in `text` with [REDACTED]. Idempotent."""
    for pattern, replacement in _OWN_PATTERNS:
        text = pattern.sub(replacement, text)
    for pattern in _library_patterns():
        text = pattern.sub(_redact_match, text)
    return _BARE_KEY.sub(lambda m: REDACTED if _is_bare_key(m[0]) else m[0], text)


def _redact_match(match: re.Match[str]) -> str:
    """The match with its secret redacted: its last captured group if it has one (keeping
    the context around it), else all of it."""
    groups = [i for i in range(1, (match.re.groups or 0) + 1) if match.group(i)]
    if not groups:
        return REDACTED
    start, end = match.span(groups[-1])
    offset = match.start()
    whole = match[0]
    return whole[: start - offset] + REDACTED + whole[end - offset :]


def sanitize_record(record: MemoryRecord) -> MemoryRecord:
    """The record with secrets redacted from every text field (its evidence, scope and session
    id too), terminal codes dropped from the test output it keeps, and its instruction flags
    computed from what remains."""
    from memory.instruction_flags import instruction_flags  # its patterns take tens of ms to
    # compile: a search, which only redacts, never pays for them

    texts = {
        name: redact_secrets(getattr(record, name))
        for name in ("fix_description", "error_type", "outcome", "symptom", "diff")
    }
    texts["symptom"] = without_terminal_codes(texts["symptom"])
    paths = tuple(redact_secrets(path) for path in record.file_paths)
    return replace(
        record,
        **texts,
        # a full import line's own; `MemoryService.find` relies on stored scopes redacted
        scope=redact_secrets(record.scope),
        session_id=redact_secrets(record.session_id),
        file_paths=paths,
        evidence=_redacted_evidence(record.evidence),
        flags=instruction_flags(*texts.values(), *paths),
    )


def _redacted_evidence(evidence: TestEvidence | None) -> TestEvidence | None:
    if evidence is None:
        return None
    return replace(
        evidence,
        command=redact_secrets(evidence.command),
        output_excerpt=without_terminal_codes(redact_secrets(evidence.output_excerpt)),
        failing=_redacted_evidence(evidence.failing),
    )


# -- child environments ----------------------------------------------------------------

# What a child process may inherit, as Codex's `inherit = core`: where programs and home
# are, the locale, the terminal, temporary folders and the virtualenv. Nothing else.
CORE_ENVIRONMENT = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TZ",
    "TERM",
    "TMPDIR",
    "TEMP",
    "TMP",
    "VIRTUAL_ENV",
    "SYSTEMROOT",
)
PASS_SETTING = "ASTRA_TEST_ENV_PASS"


def _passed_names(env: Mapping[str, str]) -> Iterator[str]:
    yield from CORE_ENVIRONMENT
    for name in env.get(PASS_SETTING, "").split(","):
        if name.strip():
            yield name.strip()


def scrub_environment(env: Mapping[str, str]) -> dict[str, str]:
    """A copy of `env` holding only the core variables and those the user names in
    ASTRA_TEST_ENV_PASS (comma-separated names; shell patterns such as `PYTEST_*` allowed).
    For every child process we start: anything not named is dropped, secret or not."""
    allowed = tuple(_passed_names(env))
    return {
        name: value
        for name, value in env.items()
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in allowed)
    }
