"""Why a match ranked where it did, as one line of plain text: the one wording that
`memory search --explain`, the dashboard's matches pane and its memory browser all show.

The long form names every part (the shell has room); the compact form fits a pane: the
cosine is shown beside it already, empty parts are left out, the most telling come first
(files, then signature, then the longest words) and the line is cut at `COMPACT_WIDTH`.

The words and paths are the record's, which was redacted when stored or imported; the line
is redacted again before it is cut, so a cut can never leave part of a secret behind.
"""

from __future__ import annotations

from memory import ranking
from memory.records import MemorySearchResult
from memory.safety import redact_secrets

COMPACT_ITEMS = 3  # paths, shapes or terms shown per part in the compact form
COMPACT_WIDTH = 72  # one line in a stacked pane at 80 columns


def explanation(query: str, result: MemorySearchResult, *, compact: bool = False) -> str:
    """Why `result` matched `query`: its cosine and place in each ranking, and the terms,
    paths and failure-signature shapes the two share (`ranking.why_matched`)."""
    why = ranking.why_matched(query, result.record)
    if not compact:
        return redact_secrets(
            f"why: cosine {result.score:.4f} · vector rank {_place(result.vector_rank)} · "
            f"keyword rank {_place(result.keyword_rank)} · "
            f"shared terms: {', '.join(why.terms) or 'none'} · "
            f"shared paths: {', '.join(why.paths) or 'none'} · "
            f"shared signature: {', '.join(why.signature) or 'none'}"
        )
    parts = [
        f"vector {_short_place(result.vector_rank)}",
        f"keyword {_short_place(result.keyword_rank)}",
    ]
    for name, items in (
        ("paths", [path.rsplit("/", 1)[-1] for path in why.paths]),
        ("signature", why.signature),
        ("terms", sorted(why.terms, key=len, reverse=True)),  # long words tell more
    ):
        if items:
            more = "…" if len(items) > COMPACT_ITEMS else ""
            parts.append(f"{name} {', '.join(items[:COMPACT_ITEMS])}{more}")
    line = redact_secrets("why: " + " · ".join(parts))
    return line if len(line) <= COMPACT_WIDTH else line[: COMPACT_WIDTH - 1] + "…"


def _place(rank: int | None) -> str:
    return f"#{rank}" if rank else "not among its candidates"


def _short_place(rank: int | None) -> str:
    return f"#{rank}" if rank else "-"
