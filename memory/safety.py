"""What must never enter memory as-is: secrets (redacted) and instruction-like text (flagged).

Redaction runs on every text field before it is embedded or written. Flagging does not
change the text; it marks the record so the operator sees it when confirming and the
model sees it as suspect data when the record comes back.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from memory.records import MemoryRecord, TestEvidence

REDACTED = "[REDACTED]"

_SECRET_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # PEM private-key blocks, whole.
    (
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)",
            re.DOTALL,
        ),
        REDACTED,
    ),
    # Passwords in URLs: scheme://user:password@host -> scheme://user:[REDACTED]@host
    (re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]+:)[^\s@/]+(@)"), rf"\1{REDACTED}\2"),
    # Authorization headers and bearer tokens.
    (re.compile(r"(?i)\b(bearer|token|basic)(\s+)[A-Za-z0-9._~+/=-]{8,}"), rf"\1\2{REDACTED}"),
    # Well-known key shapes.
    (re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}"), REDACTED),
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), REDACTED),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"), REDACTED),
    (re.compile(r"\bgithub_pat_[A-Za-z0-9_]{30,}\b"), REDACTED),
    (re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b"), REDACTED),
    (re.compile(r"\bAIza[0-9A-Za-z_-]{30,}\b"), REDACTED),
    (re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b"), REDACTED),
    # name=value assignments whose name says it is secret.
    (
        re.compile(
            r"(?i)\b([A-Z0-9_]*(?:api[_-]?key|secret|token|passw(?:or)?d|pwd)[A-Z0-9_]*"
            r"[\"']?\s*[:=]\s*[\"']?)(?!\[REDACTED\])[^\s\"',;]{4,}"
        ),
        rf"\1{REDACTED}",
    ),
)


def redact_secrets(text: str) -> str:
    """Replace every secret-looking span in `text` with [REDACTED]."""
    for pattern, replacement in _SECRET_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


_TOOL_NAMES = "search_codebase_memory|store_fix_memory|list_files|read_file|apply_edit|run_tests"

_INSTRUCTION_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(
            r"(?i)\b(ignore|disregard|forget|override)\b.{0,30}\b(previous|prior|above|earlier|"
            r"all|your|system)\b.{0,20}\b(instructions?|prompts?|rules|guidelines)"
        ),
        "asks to ignore instructions",
    ),
    (
        re.compile(r"(?i)\b(system prompt|you are now|new instructions|act as)\b"),
        "addresses the agent",
    ),
    (
        re.compile(rf"(?i)\b(call|invoke|run|use|execute)\b.{{0,20}}\b({_TOOL_NAMES})\b"),
        "asks to call a tool",
    ),
    (
        re.compile(
            r"(?i)\b(also|then|additionally|afterwards)\b.{0,40}\b(edit|modify|change|delete|"
            r"remove|overwrite|write to|update)\b.{0,40}\b(other|every|all|outside)\b"
        ),
        "asks to change files outside the fix",
    ),
    (
        re.compile(r"(?i)(\.\./|~/|/etc/|\.ssh|\.bashrc|rm -rf|curl [^|\n]*\|\s*(ba)?sh)"),
        "points outside the workspace",
    ),
    (
        re.compile(r"(?i)\b(exfiltrate|send|post|upload)\b.{0,40}\b(key|secret|token|credential)"),
        "asks to move secrets",
    ),
)


def instruction_flags(*texts: str) -> tuple[str, ...]:
    """Reasons why any of `texts` reads as instructions to the agent, in a stable order."""
    joined = "\n".join(texts)
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


SECRET_MARKERS = ("KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "CREDENTIAL")


def scrub_environment(env: Mapping[str, str]) -> dict[str, str]:
    """A copy of env without any variable whose name holds KEY, SECRET, TOKEN, PASSWORD,
    PASSWD or CREDENTIAL (case-insensitive), or whose value holds a secret (a password in a
    URL, a bearer token, a known key shape). For every child process we start."""
    return {
        name: value
        for name, value in env.items()
        if not any(m in name.upper() for m in SECRET_MARKERS) and redact_secrets(value) == value
    }
