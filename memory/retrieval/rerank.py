"""The second look at a reported error's top matches: a linear score over a few cheap features
of the query and each of the fused ranking's first RERANK_DEPTH records reorders them.

The fused ranking only sees each ranking's order. The second look also sees whether the
record was stored under the exception the query ends with, how much of that exception's
message the record's words hold, how far its cosine is behind the nearest, and each
ranking's place. Test reports are left in their fused order: there the project's own
records share the exception (AssertionError) and the words, and reordering cost the
same-codebase corpus recall@1.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from memory.records import MemoryRecord
from memory.retrieval.failure_text import read_failure

RERANK_DEPTH = 10
# Fitted once on the reported errors (tracebacks and messages) of the five tuning corpora:
# a softmax over each query's top RERANK_DEPTH with the expected fix as the answer, L2 0.3,
# chosen by 5-fold cross-validation grouped by project (real failures) or group/scope
# (the others); no held-out data was read. Grouped cross-validated recall@1 / recall@3:
# real failures 0.867 / 0.919 -> 0.881-0.889 / 0.941-0.948 over three fold seeds (the
# fusion with the query's exception type alone), real-world dev 0.901 -> 0.901, dev 2
# 0.650 / 0.812 -> 0.650-0.662 / 0.825-0.838.
RERANK_WEIGHTS = {
    "fused": 0.61,  # the fused score over the best fused score of the candidates
    "behind": 2.04,  # cosine minus the best cosine of the candidates (<= 0)
    "vector": 1.02,  # 1 / place in the vector ranking (0 if not in it)
    "keyword": 2.91,  # 1 / place in the keyword ranking
    "path": 2.32,  # 1 / place in the ranking by the files the query names
    "exception_type": 1.35,  # +1 stored under the query's exception type, -1 another, 0 unknown
    "message": 1.70,  # share of the exception message's words in the record (rarity-weighted)
    "first": 0.51,  # first in the fused ranking
}

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_TYPE = re.compile(r"\b(?:[A-Za-z_]\w*\.)*([A-Z]\w*(?:Error|Exception|Exit|Warning|Interrupt))\b")
_STOP = frozenset(
    "the and for with from that this not but are was were has have had you its into def self "
    "none true false return line lines file test tests py object most recent call last "
    "traceback module site packages lib python usr local".split()
)


def tokens(text: str) -> set[str]:
    """Lowercased words of `text`: each name whole and in its dotted, snake_case and
    camelCase parts (`getpass.getuser`, `getpass`, `getuser`; `SelectInLoader`, `select`,
    `loader`), words of two letters or fewer and stop words left out."""
    found: set[str] = set()
    for name in _IDENT.findall(text):
        for dotted in {name, *name.split(".")}:
            found.add(dotted.casefold())
            for part in dotted.split("_"):
                found.add(part.casefold())
                found.update(piece.casefold() for piece in _CAMEL.findall(part))
    return {word for word in found if len(word) > 2 and word not in _STOP}


def exception_type(query: str) -> str:
    """The exception `query` ends with, its last dotted part casefolded: the first type
    named on its last exception line, else the last type named anywhere ("" if none)."""
    line = read_failure(query).exception
    if named := _TYPE.findall(line):
        return named[0].casefold()
    named = _TYPE.findall(query)
    return named[-1].casefold() if named else ""


def bare_type(error_type: str) -> str:
    """A stored error type as `exception_type` reads one (`sqlalchemy.exc.NoSuchColumnError`
    as `nosuchcolumnerror`)."""
    return error_type.rsplit(".", 1)[-1].casefold()


def features(
    query: str,
    records: Sequence[MemoryRecord],
    fused: Sequence[float],
    cosines: Sequence[float],
    places: Sequence[tuple[int | None, int | None, int | None]],
) -> list[dict[str, float]]:
    """Each record's features (RERANK_WEIGHTS' names), `records` in fused order with their
    fused scores, cosines and places in the vector, keyword and path rankings."""
    wanted = exception_type(query)
    message = tokens(read_failure(query).exception) - {wanted}
    held = [
        tokens(" ".join((r.fix_description, r.symptom, r.error_type))) & message for r in records
    ]
    holders = {word: sum(word in words for words in held) for word in message}
    rarity = {word: math.log((len(records) + 1) / (n + 0.5)) for word, n in holders.items()}
    best_fused, best_cosine = max(fused, default=0.0) or 1.0, max(cosines, default=0.0)
    rows = []
    for i, record in enumerate(records):
        stored = bare_type(record.error_type)
        same_type = 0.0 if not (wanted and stored) else 1.0 if stored == wanted else -1.0
        share = sum(rarity[w] for w in held[i]) / sum(rarity.values()) if message else 0.0
        vector, keyword, path = places[i]
        rows.append(
            {
                "fused": fused[i] / best_fused,
                "behind": cosines[i] - best_cosine,
                "vector": 1 / vector if vector else 0.0,
                "keyword": 1 / keyword if keyword else 0.0,
                "path": 1 / path if path else 0.0,
                "exception_type": same_type,
                "message": share,
                "first": float(i == 0),
            }
        )
    return rows


def rerank(
    query: str,
    records: Sequence[MemoryRecord],
    fused: Sequence[float],
    cosines: Sequence[float],
    places: Sequence[tuple[int | None, int | None, int | None]],
) -> list[int]:
    """The order (indexes into `records`) RERANK_WEIGHTS' score gives a reported error's
    top records; ties and test reports keep the fused order."""
    if not records or read_failure(query).kind == "test report":
        return list(range(len(records)))
    scores = [
        sum(RERANK_WEIGHTS[name] * value for name, value in row.items())
        for row in features(query, records, fused, cosines, places)
    ]
    return sorted(range(len(records)), key=lambda i: (-scores[i], i))
