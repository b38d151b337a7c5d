"""What must never leave the process as-is: secrets (redacted), instruction-like text
(flagged), and the environment of the processes we start (cut to an allowlist).

Secret shapes come from two sources: the regex detectors of Yelp's detect-secrets (kept up
to date by its maintainers; run offline, nothing verified over the network) and our own
patterns for what it leaves to context: passwords in URLs, secret-named assignments, PEM and
PGP blocks, bare high-entropy AWS secret keys and a few newer token prefixes. Redaction is
the one function every outgoing text passes through: memory fields, evidence, tool outputs,
transcripts and logs.

Flagging does not change the text; it marks the record so the operator sees it when
confirming and the model sees it as suspect data when the record comes back. It runs on a
normalised copy (NFKC, zero-width characters removed, look-alike letters folded), so
invisible characters and homoglyphs do not hide a phrase.
"""

from __future__ import annotations

import fnmatch
import functools
import re
import unicodedata
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from memory.records import MemoryRecord, TestEvidence

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


# -- instruction flags -----------------------------------------------------------------

_ZERO_WIDTH = dict.fromkeys(
    map(
        ord,
        "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b\u200c\u200d\u200e\u200f"
        "\u202a\u202b\u202c\u202d\u202e\u2060\u2061\u2062\u2063\u2064\u2066\u2067\u2068\u2069"
        "\u3164\ufeff\uffa0",
    ),
)
# Letters from other scripts drawn like Latin ones (after NFKC, which already folds
# full-width and mathematical letters). From Unicode's confusables.txt, the common subset.
_CONFUSABLES = str.maketrans(
    "АВЕНІЈКМОРЅТХУаеіјорсѕухԁһӏԛԝ"  # Cyrillic  # noqa: RUF001
    "ΑΒΕΖΗΙΚΜΝΟΡΤΥΧαοριυνκτχ"  # Greek
    "ɑɡıɩʏ",  # Latin look-alikes  # noqa: RUF001
    "ABEHIJKMOPSTXYaeijopcsyxdhlqwABEZHIKMNOPTYXaopiuvktxagiiy",
)


def normalize_for_flags(text: str) -> str:
    """`text` as a reader sees it: NFKC, no zero-width characters, look-alikes folded."""
    text = unicodedata.normalize("NFKC", text).translate(_ZERO_WIDTH).translate(_CONFUSABLES)
    return "".join(c for c in text if unicodedata.category(c) != "Cf")


_TOOL_NAMES = "search_codebase_memory|store_fix_memory|list_files|read_file|apply_edit|run_tests"
_AGENT = r"(?:you|the (?:agent|assistant|model|ai)|assistant|agent)"

_INSTRUCTION_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(
            r"(?is)\b(ignore|disregard|forget|override|bypass|skip|drop|abandon|discard)\b"
            r".{0,40}\b(previous|prior|above|earlier|preceding|all|any|your|system|developer|"
            r"safety|original|existing)\b.{0,30}\b(instructions?|prompts?|rules|guidelines|"
            r"directions|directives|guardrails|constraints|policies|policy|context|orders)"
        ),
        "asks to ignore instructions",
    ),
    (
        re.compile(
            r"(?i)\b(system prompt|developer (?:message|prompt)|you are now|from now on|"
            r"new (?:instructions|rules|task)|act as|pretend (?:to be|you are)|roleplay as|"
            r"jailbreak|DAN mode|do anything now|your (?:real|true|new) (?:task|goal|purpose))\b"
            r"|<\|(?:im_start|im_end|system|endoftext)\|>|^\s*(?:#+\s*)?(?:system|assistant)\s*:"
            r"|\[/?(?:system|INST)\]",
        ),
        "addresses the agent",
    ),
    (
        re.compile(
            rf"(?is)\b(call|invoke|run|use|execute|trigger|issue|make)\b.{{0,30}}\b({_TOOL_NAMES})\b"
            rf"|\b({_TOOL_NAMES})\s*\("
        ),
        "asks to call a tool",
    ),
    (
        re.compile(
            r"(?is)\b(also|then|additionally|afterwards|next|and)\b.{0,40}\b(edit|modify|change|"
            r"delete|remove|overwrite|write to|update|wipe|truncate)\b.{0,40}\b(other|every|all|"
            r"outside|entire|whole)\b.{0,20}\b(files?|tests?|repo(?:sitory)?|folders?|"
            r"director(?:y|ies)|code ?base|project|workspace)"
        ),
        "asks to change files outside the fix",
    ),
    (
        re.compile(
            r"(?i)(\.\./\.\.|~/|/etc/|\.ssh\b|\.bashrc|\.aws/|rm -rf|chmod 777|\bsudo\b|"
            r"(?:curl|wget) [^|\n]*\|\s*(?:ba|z)?sh|base64 -d[^|\n]*\|\s*(?:ba)?sh|\bnc -e\b)"
        ),
        "points outside the workspace",
    ),
    (
        re.compile(
            r"(?is)\b(exfiltrate|send|post|upload|leak|reveal|print|dump|echo|email|forward|"
            r"share|paste|include|copy|output)\b.{0,40}\b(api[ _-]?keys?|secrets?|tokens?|"
            r"credentials?|passwords?|env(?:ironment)? var(?:iable)?s?|\.env\b|private keys?)"
        ),
        "asks to move secrets",
    ),
    (
        re.compile(
            rf"(?is)\b(do not|don't|never|without)\b.{{0,20}}\b(tell|telling|inform|informing|"
            r"ask|asking|notify|notifying|mention|mentioning|alert|alerting|confirm|confirming|"
            r"show|showing)\b.{0,20}\b(the )?(user|operator|human|reviewer|supervisor)"
            rf"|\b(silently|secretly|quietly)\b.{{0,30}}\b(store|delete|edit|run|call|send|"
            rf"change|approve)\b|\b{_AGENT}\b.{{0,10}}\b(must|should|will|shall)\b.{{0,30}}"
            r"\b(approve|store|confirm|report (?:success|passing)|mark)\b"
        ),
        "asks to act behind the operator",
    ),
    (
        re.compile(
            r"(?is)\b(report|claim|say|mark|pretend|declare|state)\b.{0,30}\b(tests?|checks?|"
            r"build|run)\b.{0,20}\b(pass(?:ed|es)?|succeeded|green|success(?:ful)?)\b.{0,30}"
            r"\b(regardless|anyway|even if|whether or not|without running)"
        ),
        "asks to fake a result",
    ),
    (
        re.compile(
            r"(?im)^\s*(?:Match \d+ \(score=|Confirmed:|Retrieved codebase memory|WARNING:|"
            r"Imported \(not test-confirmed\))|\"(?:memory_id|rank|score|provenance)\"\s*:"
        ),
        "imitates the memory tool's output",
    ),
)


def instruction_flags(*texts: str) -> tuple[str, ...]:
    """Reasons why any of `texts` reads as instructions to the agent, in a stable order."""
    joined = normalize_for_flags("\n".join(texts))
    return tuple(reason for pattern, reason in _INSTRUCTION_PATTERNS if pattern.search(joined))


def sanitize_record(record: MemoryRecord) -> MemoryRecord:
    """The record with secrets redacted from every text field (its evidence too) and its
    instruction flags computed from what remains."""
    texts = {
        name: redact_secrets(getattr(record, name))
        for name in ("fix_description", "error_type", "outcome", "symptom", "diff")
    }
    paths = tuple(redact_secrets(path) for path in record.file_paths)
    return record.model_copy(
        update={
            **texts,
            "file_paths": paths,
            "evidence": _redacted_evidence(record.evidence),
            "flags": instruction_flags(*texts.values(), *paths),
        }
    )


def _redacted_evidence(evidence: TestEvidence | None) -> TestEvidence | None:
    if evidence is None:
        return None
    return evidence.model_copy(
        update={
            "command": redact_secrets(evidence.command),
            "output_excerpt": redact_secrets(evidence.output_excerpt),
            "failing": _redacted_evidence(evidence.failing),
        }
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
