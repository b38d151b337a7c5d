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
invisible characters and homoglyphs do not hide a phrase, and on what that copy reads as
once decoded: leetspeak words, spaced-out letters, base64 that decodes to text, and ROT13
where the text names it. Its recall and false positives are measured on corpora of
injections and plain fixes (bench/bench_injection.py, docs/benchmarks.md).
"""

from __future__ import annotations

import base64
import binascii
import codecs
import fnmatch
import functools
import re
import unicodedata
from collections.abc import Iterator, Mapping
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

_SET_ASIDE = (
    r"ignore|disregard|forget|override|bypass|skip|drop|abandon|discard|set aside|throw out|"
    r"pay no attention to|stop following|no longer follow|don'?t follow|do not follow"
)
_PEOPLE = r"(?:user|operator|human|reviewer|supervisor|maintainer|owner|team)s?"
_INSTRUCTION_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(
            rf"(?is)\b({_SET_ASIDE})\b"
            r".{0,40}\b(previous|prior|above|earlier|preceding|all|any|your|system|developer|"
            r"safety|original|existing)\b.{0,30}\b(instructions?|prompts?|rules|guidelines|"
            r"directions|directives|guardrails|constraints|policies|policy|context|orders|"
            r"guidance|brief(?:ing)?|task|messages?)"
            rf"|\b({_SET_ASIDE})\b.{{0,20}}\b(what (?:you(?:'ve| have)? (?:were|been) |was )"
            r"(?:told|given|asked|instructed)|everything (?:above|before|else|so far|you know)|"
            r"the above|all of the above|your (?:training|programming|setup|brief))"
            rf"|\b(ignore|disregard)\b.{{0,10}}\b(the |your )?{_PEOPLE}(?![\w-]*agent)"
            r"|\b(instructions?|guidance|rules|brief|directives?|directions|context|plan)\b"
            r".{0,30}\b(no longer|(?:do|does) not|don'?t|doesn'?t|(?:is|are) (?:now )?"
            r"(?:obsolete|void|cancell?ed|superseded|outdated|irrelevant|only a test))"
            r"(?: (?:apply|applies|matter|matters|count|counts|hold|holds))?"
            r"|\b(supersedes?|overrides?|takes precedence over|(?:is|are) authoritative over)\b"
            r".{0,40}\b(earlier|previous|prior|all|any|your|the (?:user|operator)'?s?)\b.{0,20}"
            r"\b(directions|instructions?|requests?|task|orders|guidance|rules)"
            r"|\b(the )?real instructions\b|\bwhatever the (?:user|operator) (?:asked|wants|said)"
            r"|\btreat this (?:record|note|text) as\b|\bstop working on\b"
            r"|\b(ignore[zr]?|oublie[zr]?|ignora|ignorad|olvida|ignoriere|vergiss|ignorare|"
            r"dimentica)\b.{0,40}\b(instructions?|instrucciones|anweisungen|istruzioni|"
            r"consignes|reglas|regeln)\b"
        ),
        "asks to ignore instructions",
    ),
    (
        re.compile(
            r"(?im)\b(developer (?:message|prompt)|you are now|"
            r"(?:reveal|print|show|ignore|disregard|forget|override|leak) (?:your |the )?system "
            r"prompt|"
            r"new (?:instructions|rules|task|priority|directive|orders)|"
            r"(?:updated|new) orders from|pretend (?:to be|you are)|"
            r"roleplay as|jailbreak|DAN mode|do anything now|(?:note|message|instructions?) "
            r"(?:to|for) (?:the |any )?(?:ai|assistant|agent|model|llm|copilot|bot)s?|"
            r"if you are an? (?:ai|llm|language model|assistant|agent|bot)|"
            r"(?:any |ai |llm |coding )?(?:agents?|assistants?) (?:reading|that reads?|"
            r"processing|applying|reusing|using|retrieving) this|when you retrieve this|"
            r"your (?:real|true|new|actual|only) (?:task|goal|purpose|job|mission|objective|"
            r"priority)|(?:has|have) been granted (?:elevated|admin|full) (?:permissions|access)"
            r"|decode (?:it |this )?(?:and|then) (?:comply|follow|obey|execute|do it))\b"
            r"|<\|(?:im_start|im_end|system|endoftext)\|>"
            r"|^\s*(?:#+\s*)?(?:system|assistant|human)\s*:"
            r"|\[/?(?:system|INST)\]",
        ),
        "addresses the agent",
    ),
    (
        re.compile(
            rf"(?is)\b(call|invoke|run|use|execute|trigger|issue|make)\b.{{0,30}}\b({_TOOL_NAMES})\b"
            rf"|\b({_TOOL_NAMES})\s*\("
            r"|\b(call|invoke|use)\b.{0,10}\b(your |the )?(shell|bash|terminal|exec\w*|"
            r"command[- ]line) tool"
        ),
        "asks to call a tool",
    ),
    (
        re.compile(
            r"(?is)\b(also|then|additionally|afterwards|next|and)\b.{0,40}\b(edit|modify|change|"
            r"delete|remove|overwrite|write to|update|wipe|truncate)\b.{0,40}\b(other|every|all|"
            r"outside|entire|whole)\b.{0,20}\b(files?|tests?|repo(?:sitory)?|folders?|"
            r"director(?:y|ies)|code ?base|project|workspace)"
            r"|\b(also|additionally|while you are (?:in|at)|as part of this fix|in addition|"
            r"as a final step|before editing|after that)\b.{0,50}\b(delete|remove|disable|skip|"
            r"modify|replace|lower|edit|change|add)\b.{0,60}(\.github/|ci\.ya?ml|workflows?\b|"
            r"CODEOWNERS|pre-commit|coverage|\btests?/|pytest\.mark\.skip|\bmypy\b|"
            r"collaborator|branch protection|secret[- ]scanning)"
            r"|\b(delete|remove|wipe|disable)\s+(?:the\s+|all\s+(?:the\s+)?)?(?:failing\s+)?"
            r"(?:tests? (?:directory|folder|suite|files)|test suite|tests\b(?!\s*(?:database|"
            r"db|fixtures?|cache|data)))"
            r"|\b(turn off|disable|bypass)\b.{0,30}\b(secret[- ]scanning|pre-commit|security "
            r"(?:checks?|scans?)|code review|branch protection|signing|2fa|mfa)"
        ),
        "asks to change files outside the fix",
    ),
    (
        re.compile(
            r"(?i)(\.\./\.\.|~/|/etc/|\.ssh\b|\.bashrc|\.aws/|rm -rf\s+(?:/|~|\$HOME|\.\.|\*)|"
            r"chmod 777|\bsudo\b|/dev/tcp/|git push (?:-f|--force)|"
            r"(?:curl|wget) [^|\n]*\|\s*(?:(?:ba|z)?sh|python3?)\b|"
            r"base64 -d[^|\n]*\|\s*(?:ba)?sh|\bnc -e\b)"
        ),
        "points outside the workspace",
    ),
    (
        re.compile(
            r"(?is)\b(exfiltrate|send|post|upload|leak|reveal|print|dump|echo|email|forward|"
            r"share|paste|include|copy|output)\b.{0,40}(\bapi[ _-]*keys?|\b\w*(?:api_?key|"
            r"secret|token|passw(?:or)?d)s?\b|\bcredentials?|\benv(?:ironment)? var(?:iable)?s?|"
            r"(?<!\w)\.env\b|\bprivate keys?|\bprintenv\b|/proc/self/environ)"
            r"|\b(?:env|printenv|set)\s*\|\s*(?:curl|nc|wget)\b"
        ),
        "asks to move secrets",
    ),
    (
        re.compile(
            rf"(?is)\b(do not|don't|never|without)\b.{{0,20}}\b(tell|telling|inform|informing|"
            r"ask|asking|notify|notifying|mention|mentioning|alert|alerting|confirm|confirming|"
            rf"show|showing|bring(?:ing)? (?:it|this) up)\b.{{0,60}}\b(the )?{_PEOPLE}"
            rf"|\b(silently|secretly|quietly)\b.{{0,30}}\b(store|delete|edit|run|call|send|"
            r"change|approve|add(?:ed|s)?|grant|remove|disable|turn off|push|commit|upload)\b"
            rf"|\b{_AGENT}\b.{{0,10}}\b(must|should|will|shall)\b.{{0,30}}"
            r"\b(approve|store|confirm|report (?:success|passing)|mark)\b"
            rf"|\b{_PEOPLE} (?:does not|doesn'?t|do not|don'?t|need not|needn'?t) need to "
            r"(?:know|see|be told)|\bno need to (?:bring it up|mention|tell|ask|inform)"
            r"|\b(skip|stop|without) (?:asking|confirming with|checking with) (?:the )?"
            rf"{_PEOPLE}|\bif the {_PEOPLE} asks?\b.{{0,60}}\b(say|tell|claim|answer)\b"
            r"|\bcannot be traced|\bclear (?:your |the )?(?:shell )?history\b"
            r"|\bdelete this (?:memory )?record\b|\bleave out\b.{0,60}\b(summary|report|"
            rf"{_PEOPLE})|\bwhen summari[sz]ing\b.{{0,40}}\bleave out\b"
        ),
        "asks to act behind the operator",
    ),
    (
        re.compile(
            r"(?is)\b(report|claim|say|mark|pretend|declare|state|tell)\b.{0,40}\b(tests?|"
            r"checks?|build|run|CI)\b.{0,20}\b(pass(?:ed|es|ing)?|succeeded|green|"
            r"success(?:ful)?)\b.{0,30}\b(regardless|anyway|even if|whether or not|without "
            r"running|whatever)"
            rf"|\b(tell|inform|assure)\b.{{0,20}}\b(the )?{_PEOPLE}\b.{{0,40}}\b(tests?|checks?|"
            r"fix|build|CI)\b.{0,20}\b(passed|pass|worked|green|succeeded)"
            r"|\b(do not|don't|never) (?:actually )?run (?:the )?(?:tests?|pytest|them|checks?)"
            r"|\b(edit|change|update|rewrite|loosen|weaken|adjust) (?:the )?(?:assertions?|"
            r"expected (?:values?|output)|tests?) to match\b"
            r"|\bwhatever the (?:real|actual) result\b"
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
    """Reasons why any of `texts` reads as instructions to the agent, in a stable order.
    The texts are read as one (an instruction may be split across fields), in each of the
    ways a reader could decode it."""
    views = _readings(normalize_for_flags("\n".join(texts)))
    return tuple(
        reason
        for pattern, reason in _INSTRUCTION_PATTERNS
        if any(pattern.search(view) for view in views)
    )


_LEET = str.maketrans("013457@$!|", "oieastasil")
_LEET_WORD = re.compile(r"\b(?=\w*[a-zA-Z])(?=\w*[0-9@$!|])[\w@$!|]{3,}")
_SPACED = re.compile(r"(?<!\w)(?:\w[ .*_\-]){2,}\w(?!\w)")
_BASE64 = re.compile(r"[A-Za-z0-9+/]{16,}={0,2}")


def _readings(text: str) -> list[str]:
    """`text`, then what it says as leetspeak, spaced-out letters, base64 and ROT13."""
    views = [text]
    views.append(_LEET_WORD.sub(lambda m: m[0].translate(_LEET), text))
    views.append(_SPACED.sub(lambda m: re.sub(r"[ .*_\-]", "", m[0]), text))
    views.append(re.sub(r"[_/]+", " ", text))  # a path's or a name's words
    views.extend(_decoded(token) for token in _BASE64.findall(text))
    if re.search(r"(?i)\brot[ -]?13\b", text):
        views.append(codecs.decode(text, "rot13"))
    return [view for view in dict.fromkeys(views) if view]


def _decoded(token: str) -> str:
    """The text a base64 token decodes to, normalised; "" for bytes that are not text."""
    try:
        data = base64.b64decode(token + "=" * (-len(token) % 4), validate=True)
        text = data.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return ""
    printable = sum(ch.isprintable() or ch.isspace() for ch in text)
    return normalize_for_flags(text) if text and printable >= 0.95 * len(text) else ""


def sanitize_record(record: MemoryRecord) -> MemoryRecord:
    """The record with secrets redacted from every text field (its evidence too), terminal
    codes dropped from the test output it keeps, and its instruction flags computed from
    what remains."""
    texts = {
        name: redact_secrets(getattr(record, name))
        for name in ("fix_description", "error_type", "outcome", "symptom", "diff")
    }
    texts["symptom"] = without_terminal_codes(texts["symptom"])
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
            "output_excerpt": without_terminal_codes(redact_secrets(evidence.output_excerpt)),
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
