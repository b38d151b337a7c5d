"""Why a match ranked where it did, as one line of plain text: the one wording that
`memory search --explain`, the dashboard's matches pane and its memory browser all show.

The long form names every part (the shell has room); the compact form fits a pane: the
cosine is shown beside it already, empty parts are left out, and the most telling come
first (file names, signature shapes, then the longest words) while they fit in its width
(`COMPACT_WIDTH` by default, a matches pane row; the browser passes its own); "…" says
some were cut or left out.

The words and paths are the record's, which was redacted when stored or imported; each is
redacted again here before the line is cut (at spaces only), so a cut never leaves part
of a secret behind.
"""

from __future__ import annotations

from memory.records import MemorySearchResult
from memory.retrieval import ranking
from memory.retrieval.failure_text import read_failure
from memory.safety import redact_secrets

COMPACT_WIDTH = 68  # one row of the matches pane at 80 columns (73 cells), after its indent


def explanation(
    query: str, result: MemorySearchResult, *, compact: bool = False, width: int = COMPACT_WIDTH
) -> str:
    """Why `result` matched `query`: its cosine and place in each ranking, and the terms,
    paths and failure-signature shapes the two share (`ranking.why_matched`); compact, in
    fewer than `width` characters."""
    why = ranking.why_matched(query, result.record)
    if not compact:
        return redact_secrets(
            f"why: cosine {result.score:.4f} · vector rank {_place(result.vector_rank)} · "
            f"keyword rank {_place(result.keyword_rank)} · "
            f"shared terms: {', '.join(why.terms) or 'none'} · "
            f"shared paths: {', '.join(why.paths) or 'none'} · "
            f"shared signature: {', '.join(why.signature) or 'none'}"
        )
    line = f"why: vector {_short_place(result.vector_rank)} · "
    line += f"keyword {_short_place(result.keyword_rank)}"
    cut = False
    for name, items in (
        ("paths", [path.rsplit("/", 1)[-1] for path in why.paths]),
        ("signature", why.signature),
        ("terms", sorted(why.terms, key=len, reverse=True)),  # long words tell more
    ):
        lead = f" · {name} "
        for item in items:  # each whole, or its first words and "…", or left out
            words = redact_secrets(item).split()
            fitting = words
            while fitting and len(line + lead + " ".join(fitting)) >= width:
                fitting = fitting[:-1]  # room is kept for the "…"
            cut = cut or fitting != words
            if fitting:
                line += lead + " ".join(fitting) + ("…" if fitting != words else "")
                lead = ", "
    return line + "…" if cut and not line.endswith("…") else line


def query_reading(query: str) -> str:
    """How the search read `query` (`memory.retrieval.failure_text`): its kind, the weights
    that kind gives the keyword and path rankings, and the parts found, empty ones left out."""
    reading = read_failure(query)
    weights = ranking.weights(query)
    parts = [f"read as: {reading.kind} · keyword weight {weights.keyword:g}"]
    if weights.path:
        parts[0] += f" · path weight {weights.path:g}"
    if reading.exception:
        parts.append(f"exception: {reading.exception}")
    if reading.tests:
        parts.append(f"failing tests: {', '.join(reading.tests)}")
    if reading.project_frames:
        parts.append(f"project frames: {', '.join(reading.project_frames)}")
    if reading.library_frames:
        count = len(reading.library_frames)
        parts.append(f"{count} library frame{'s' if count > 1 else ''}")
    return redact_secrets(" · ".join(parts))


def _place(rank: int | None) -> str:
    return f"#{rank}" if rank else "not among its candidates"


def _short_place(rank: int | None) -> str:
    return f"#{rank}" if rank else "-"
