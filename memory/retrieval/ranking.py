"""How the stores rank a search, in one place: which words and files count, and how rankings
fuse. Both stores narrow the candidates by scope and expiry, then fuse by weighted
reciprocal rank the vector ranking, the keyword ranking (FTS5's BM25 in SQLite,
`keyword_ranking` over the vector candidates for VectorAI DB), the files a reported error
names (`path_ranking`) and the error type the search names (`error_type_ranking`). The
weights below, and how each was chosen on the tuning corpora, are in docs/retrieval.md
("How the weights were chosen"); `score` is cosine in both stores.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import NamedTuple

from memory.records import LABELS, Label, MemoryRecord, MemorySearchResult
from memory.retrieval.failure_text import read_failure
from memory.retrieval.rerank import RERANK_DEPTH, bare_type, exception_type, rerank
from memory.retrieval.signature import failure_signature

RRF_K = 60
# The error type a search names lifts the candidates of that type (`error_type_ranking`),
# never leaves the others out: a reported StopIteration may be fixed as a RuntimeError, and
# the exception a traceback ends with is often not the one the fix was stored under. As a
# filter, with the type read from each query, it cost the tuning corpora up to 0.13 recall@1
# (docs/retrieval.md, "Error type").
ERROR_TYPE_WEIGHT = 0.25
# A reported error's own exception (the type its last exception line names) lifts the
# candidates stored under it the same way (`query_type_ranking`, Weights.query_type, 0.25,
# the error type's weight): chosen on the tuning corpora from 0.25 / 0.5 / 0.75 / 1, real
# failures recall@1 0.844 -> 0.867, no corpus lower at rank 1 or 3. Not for test reports:
# their exception is the project's AssertionError (same codebase 0.873 -> 0.831).
# The vectors vote as strongly as the nearest candidate is near in meaning: with no record
# within VECTOR_FLOOR cosine their order among strangers is noise, and from VECTOR_FULL on
# they vote in full, linearly between (`vector_weight`; docs/retrieval.md, "Vector weight").
VECTOR_FLOOR, VECTOR_FULL = 0.45, 0.60
MIN_PATH_LENGTH = 3  # shorter "paths" (a package folder `ra/`) are words, not files
PATH_DEPTH = 10
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]{2,}")
_JOINED_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)+")
_MAX_WORDS = 64
# each joined name costs the keyword index a look-up or two (closed up, and a phrase when
# joined by `-`); the real-world queries name at most nine, most one or two
MAX_JOINED_NAMES = 8  # those joined by `-` first: a traceback's code names are many
_PATHS = frozenset({"site-packages", "dist-packages"})  # in every traceback, no one's name
_STOPWORDS = frozenset(
    "the and for with from that this not but are was were has have had you its into "
    "def self none true false return line lines file test tests py".split()
)
# Scoring every record that shares a common word costs more than the word tells: keyword
# ranking uses the rarest words, each in at most this share of the records (or this floor),
# rarest first, until the records they match add up to the postings budget.
RARE_WORD_SHARE = 0.01
RARE_WORD_FLOOR = 50
POSTINGS_BUDGET = 3000
# Relevance labels: what each means, and the figures that chose them, are in
# docs/retrieval.md ("Labels"). `strong` is first by the fused and the keyword ranking, and
# nearer the query than any other candidate by STRONG_MIN_LEAD in cosine; first by every
# ranking alone was right 0.90 of the time on the tuning corpora, this 0.97.
STRONG_MIN_COSINE = 0.40
STRONG_MIN_LEAD = 0.08
POSSIBLE_MIN_COSINE = 0.35
AGREEING_DEPTH = 3
BM25_K1, BM25_B = 1.2, 0.75  # FTS5's bm25() defaults
_TOKEN = re.compile(r"[^\W_]+")  # unicode61's tokens: runs of letters and digits


def candidate_pool(top_k: int) -> int:
    """How many candidates each ranking contributes before fusion."""
    return max(top_k * 10, 50)


def path_candidates(top_k: int, by_vector: Sequence[str], by_keyword: Sequence[str]) -> list[str]:
    """The ids the path ranking looks at: the top of the other two rankings. Lower down, a
    named file cannot lift a record into the results (the top 10 of each gave the same
    recall as all 50 on the designed-on corpora), and reading files costs."""
    depth = max(top_k, PATH_DEPTH)
    return [*dict.fromkeys([*by_vector[:depth], *by_keyword[:depth]])]


def keyword_words(text: str) -> list[str]:
    """The distinct words of free failure text, as the keyword index tokenizes them."""
    words: dict[str, None] = {}
    for word in _WORD.findall(text):
        lowered = word.lower()
        if lowered not in _STOPWORDS:
            words.setdefault(lowered, None)
        if len(words) >= _MAX_WORDS:
            break
    return list(words)


def query_words(query: str) -> list[str]:
    """The words the keyword ranking looks for: `keyword_words`, and for a reported error its
    `joined_names`, since a project's name split apart is only common words. A test report's
    joined names are the project's own tests and helpers, which its records share."""
    words = keyword_words(query)
    if read_failure(query).kind == "test report":
        return words
    return [*dict.fromkeys([*joined_names(query), *words])][:_MAX_WORDS]


def joined_names(text: str) -> list[str]:
    """Each name in `text` joined by `-` or `_` closed up (`pyas2-lib` as `pyas2lib`, as a
    package's folder or import name often spells it), and one joined by `-` also as the
    phrase of its tokens that FTS5 matches (`db-to-sqlite`: a project's or a package's
    name, never code's; code's `get_response` parts are words already, and a traceback
    names many, each phrase a look-up that costs)."""
    found = [n for n in dict.fromkeys(_JOINED_NAME.findall(text)) if n.casefold() not in _PATHS]
    names = []
    for name in sorted(found, key=lambda name: "-" not in name)[:MAX_JOINED_NAMES]:
        tokens = _TOKEN.findall(name.casefold())
        names += [" ".join(tokens), "".join(tokens)] if "-" in name else ["".join(tokens)]
    return names


def rare_words(words: list[str], records: int, count: Callable[[str, int], int]) -> list[str]:
    """The rarest of `words`, as many as fit the postings budget; common ones left out.

    `count(word, cap)` is how many of the `records` hold the word, counted only up to
    `cap`, so looking is cheap however common a word is.
    """
    ceiling = int(max(RARE_WORD_FLOOR, RARE_WORD_SHARE * records))
    counts = {word: count(word, ceiling + 1) for word in words}
    chosen, postings = [], 0
    for word in sorted((w for w in words if 0 < counts[w] <= ceiling), key=counts.__getitem__):
        if postings + counts[word] > POSTINGS_BUDGET:
            break
        chosen.append(word)
        postings += counts[word]
    return chosen


def keyword_text(record: MemoryRecord) -> str:
    """The fields the SQLite store's FTS5 index holds (memory/stores/migrations.py)."""
    return " ".join(
        (
            record.fix_description,
            record.failure,
            record.error_type,
            " ".join(record.file_paths),
            " ".join(record.signature),
        )
    )


def keyword_ranking(query: str, records: Sequence[MemoryRecord]) -> list[str]:
    """Ids of `records` holding any of the query's rare words, best BM25 first (FTS5's
    formula, every field one document): the keyword side where no index gives one."""
    documents = {r.memory_id: _TOKEN.findall(keyword_text(r).casefold()) for r in records}
    held = {memory_id: set(tokens) for memory_id, tokens in documents.items()}

    def count(word: str, cap: int) -> int:
        return min(cap, sum(_occurrences(word, documents[i], held[i]) > 0 for i in documents))

    words = rare_words(query_words(query), len(documents), count)
    if not words:
        return []
    total = len(documents)
    average = sum(map(len, documents.values())) / total
    idf = {
        w: max(1e-6, math.log((total - (n := count(w, total)) + 0.5) / (n + 0.5))) for w in words
    }
    scores: dict[str, float] = {}
    for memory_id, tokens in documents.items():
        norm = BM25_K1 * (1 - BM25_B + BM25_B * len(tokens) / average)
        score = sum(
            idf[w] * tf * (BM25_K1 + 1) / (tf + norm)
            for w in words
            if (tf := _occurrences(w, tokens, held[memory_id]))
        )
        if score:
            scores[memory_id] = score
    return sorted(scores, key=scores.__getitem__, reverse=True)


def _occurrences(word: str, tokens: list[str], held: set[str]) -> int:
    """How often `word` (one token, or a phrase of tokens as FTS5 matches it) is in `tokens`."""
    parts = word.split(" ")
    if not held.issuperset(parts):
        return 0
    if len(parts) == 1:
        return tokens.count(word)
    width = len(parts)
    return sum(tokens[i : i + width] == parts for i in range(len(tokens) - width + 1))


def hybrid(
    candidates: Sequence[tuple[MemoryRecord, float]],
    query: str,
    error_type: str | None,
    min_score: float,
    top_k: int,
) -> list[MemorySearchResult]:
    """The `top_k` of the vector side's candidates (best cosine first) after fusing their
    cosine rank with `keyword_ranking` over them, labelled as the SQLite store labels."""
    records = {record.memory_id: record for record, _ in candidates}
    cosine = {record.memory_id: score for record, score in candidates}
    by_vector = list(records)
    by_keyword = keyword_ranking(query, list(records.values()))
    weighed = weights(query, max(cosine.values(), default=-1.0))
    looked_at = path_candidates(top_k, by_vector, by_keyword) if weighed.path else []
    by_path = path_ranking(
        query, {memory_id: records[memory_id].file_paths for memory_id in looked_at}
    )
    types = {memory_id: record.error_type for memory_id, record in records.items()}
    by_type = error_type_ranking(error_type, by_vector, by_keyword, types)
    by_query_type = (
        query_type_ranking(query, by_vector, by_keyword, types) if weighed.query_type else []
    )
    fused = fuse(by_vector, by_keyword, by_path, weighed, by_type, by_query_type)
    best = best_fused(fused, cosine, min_score, max(top_k, RERANK_DEPTH))
    best = second_look(query, best, records, fused, cosine, by_vector, by_keyword, by_path)
    return ranked(
        ((records[memory_id], cosine[memory_id]) for memory_id in best[:top_k]),
        {memory_id: rank for rank, memory_id in enumerate(by_vector, start=1)},
        {memory_id: rank for rank, memory_id in enumerate(by_keyword, start=1)},
        runner_up(list(cosine.values())),
    )


def second_look(
    query: str,
    best: Sequence[str],
    records: dict[str, MemoryRecord],
    fused: dict[str, float],
    cosine: dict[str, float],
    by_vector: Sequence[str],
    by_keyword: Sequence[str],
    by_path: Sequence[str],
) -> list[str]:
    """`best` (ids in fused order) less those missing from `records` (unreadable), its
    first RERANK_DEPTH reordered by `memory.retrieval.rerank`, given each one's place in
    the three rankings."""
    readable = [memory_id for memory_id in best if memory_id in records]
    head = readable[:RERANK_DEPTH]
    places = [
        {i: rank for rank, i in enumerate(r, start=1)} for r in (by_vector, by_keyword, by_path)
    ]
    order = rerank(
        query,
        [records[memory_id] for memory_id in head],
        [fused[memory_id] for memory_id in head],
        [cosine[memory_id] for memory_id in head],
        [tuple(place.get(memory_id) for place in places) for memory_id in head],
    )
    return [head[i] for i in order] + readable[RERANK_DEPTH:]


class Weights(NamedTuple):
    """Each ranking's weight against a full vote of the vector ranking (which weighs 1)."""

    keyword: float
    path: float
    vector: float = 1.0
    query_type: float = 0.0  # the ranking by the query's own exception (`query_type_ranking`)


TEST_REPORT_WEIGHTS = Weights(keyword=1.0, path=0.0)
REPORTED_WEIGHTS = Weights(keyword=5.0, path=1.0, query_type=0.25)  # tracebacks and messages


def weights(query: str, nearest_cosine: float = 1.0) -> Weights:
    """How much words and named files count for `query`: less for the project's own test
    report than for a reported traceback or message (tables above); and the vectors' vote,
    by the cosine of the nearest candidate (`vector_weight`)."""
    kind = TEST_REPORT_WEIGHTS if read_failure(query).kind == "test report" else REPORTED_WEIGHTS
    return kind._replace(vector=vector_weight(nearest_cosine))


def vector_weight(nearest_cosine: float) -> float:
    """0 below VECTOR_FLOOR, 1 from VECTOR_FULL on, linear between."""
    share = (nearest_cosine - VECTOR_FLOOR) / (VECTOR_FULL - VECTOR_FLOOR)
    return min(1.0, max(0.0, share))


def path_ranking(query: str, paths: dict[str, Sequence[str]]) -> list[str]:
    """Ids (keys of `paths`, each id's files) whose files `query` names by their whole path,
    the rarest such path among them first: a reported traceback's frames and paths name the
    project's files, and a file few candidates touch says more than `requirements.txt`."""
    lowered = query.casefold()
    named: dict[str, bool] = {}
    hits: dict[str, set[str]] = {}
    for memory_id, held in paths.items():
        for path in map(_bare, held):
            if path not in named:
                named[path] = _names(lowered, path)
            if named[path]:
                hits.setdefault(memory_id, set()).add(path)
    holders = Counter(path for held in hits.values() for path in held)
    rarest = {memory_id: min(holders[path] for path in held) for memory_id, held in hits.items()}
    return sorted(rarest, key=rarest.__getitem__)


def _bare(path: str) -> str:
    return path.strip().strip("/").casefold()


def _names(lowered_query: str, path: str) -> bool:
    """Whether the query holds `path` whole: not inside a longer name or path."""
    if len(path) < MIN_PATH_LENGTH:
        return False
    start = lowered_query.find(path)
    while start >= 0:
        end = start + len(path)
        before = lowered_query[start - 1] if start else " "
        after = lowered_query[end] if end < len(lowered_query) else " "
        if not _in_name(before, ".-") and not _in_name(after, "-"):
            return True
        start = lowered_query.find(path, start + 1)
    return False


def _in_name(character: str, also: str) -> bool:
    return character.isalnum() or character == "_" or character in also


def error_type_ranking(
    error_type: str | None,
    by_vector: Sequence[str],
    by_keyword: Sequence[str],
    types: dict[str, str],
) -> list[str]:
    """The candidates (`types`: each one's error type) stored under the error type the
    search names, in the vector ranking's order, then the keyword ranking's."""
    if not error_type:
        return []
    wanted = error_type.casefold()
    ranked_ids = dict.fromkeys([*by_vector, *by_keyword])
    return [i for i in ranked_ids if i in types and types[i].casefold() == wanted]


def query_type_ranking(
    query: str, by_vector: Sequence[str], by_keyword: Sequence[str], types: dict[str, str]
) -> list[str]:
    """The candidates (`types`: each one's error type) stored under the exception `query`
    ends with (`rerank.exception_type`), in the vector ranking's order, then the keyword's."""
    wanted = exception_type(query)
    if not wanted:
        return []
    ranked_ids = dict.fromkeys([*by_vector, *by_keyword])
    return [i for i in ranked_ids if i in types and bare_type(types[i]) == wanted]


def fuse(
    by_vector: Sequence[str],
    by_keyword: Sequence[str],
    by_path: Sequence[str],
    weights: Weights,
    by_error_type: Sequence[str] = (),
    by_query_type: Sequence[str] = (),
) -> dict[str, float]:
    """Weighted reciprocal-rank fusion: each id's sum of weight/(RRF_K + rank) over the
    vector, keyword, path and query's exception rankings (`weights`) and the error type's
    (ERROR_TYPE_WEIGHT).
    """
    fused: dict[str, float] = {}
    for weight, ranking in (
        (weights.vector, by_vector),
        (weights.keyword, by_keyword),
        (weights.path, by_path),
        (ERROR_TYPE_WEIGHT, by_error_type),
        (weights.query_type, by_query_type),
    ):
        for rank, memory_id in enumerate(ranking, start=1):
            fused[memory_id] = fused.get(memory_id, 0.0) + weight / (RRF_K + rank)
    return fused


def runner_up(cosines: Sequence[float]) -> float | None:
    """The second best cosine among a search's candidates, what the nearest must lead by to
    be a strong match; None with fewer than two, where a lead over no one says nothing."""
    best = sorted(cosines, reverse=True)[:2]
    return best[1] if len(best) == 2 else None


def relevance(
    rank: int,
    cosine: float,
    vector_rank: int | None,
    keyword_rank: int | None,
    second_cosine: float | None = None,
) -> Label:
    """How much a match deserves trust, in words (docs/retrieval.md, "Labels"): first overall and by
    the keywords, and clearly the nearest (ahead of `second_cosine`, the runner-up among
    the candidates; with none, never), is strong; first overall, or near the top of both,
    is possible unless the vectors are far apart; else weak."""
    clearly_nearest = (
        vector_rank == 1 and second_cosine is not None and cosine - second_cosine >= STRONG_MIN_LEAD
    )
    if rank == 1 and keyword_rank == 1 and clearly_nearest and cosine >= STRONG_MIN_COSINE:
        return "strong"
    near_both = all(
        place is not None and place <= AGREEING_DEPTH for place in (vector_rank, keyword_rank)
    )
    if (rank == 1 or near_both) and cosine >= POSSIBLE_MIN_COSINE:
        return "possible"
    return "weak"


def at_least(label: Label, minimum: Label) -> bool:
    """Whether `label` is `minimum` or stronger."""
    return LABELS.index(label) >= LABELS.index(minimum)


class WhyMatched(NamedTuple):
    terms: list[str]
    paths: list[str]
    signature: list[str]


def why_matched(query: str, record: MemoryRecord) -> WhyMatched:
    """What a query and a record have in common: the keyword side's words and joined names
    (as the index stems them, roughly: exact words here), the record's files the query
    names (by path or file name), and the failure-signature shapes both show."""
    text = " ".join((record.fix_description, record.symptom, record.error_type))
    record_words = {*keyword_words(text), *joined_names(f"{text} {' '.join(record.file_paths)}")}
    lowered = query.casefold()
    return WhyMatched(
        terms=[word for word in query_words(query) if word in record_words][:12],
        paths=[
            path
            for path in record.file_paths
            if path.casefold() in lowered or path.rsplit("/", 1)[-1].casefold() in lowered
        ],
        signature=[shape for shape in failure_signature(query) if shape in record.signature],
    )


def best_fused(
    fused: dict[str, float], cosine: dict[str, float], min_score: float, top_k: int
) -> list[str]:
    """The `top_k` ids at or above `min_score` cosine, by fused score, then cosine."""
    return sorted(
        (memory_id for memory_id in fused if cosine[memory_id] >= min_score),
        key=lambda memory_id: (fused[memory_id], cosine[memory_id]),
        reverse=True,
    )[:top_k]


def ranked(
    scored: Iterable[tuple[MemoryRecord, float]],
    vector_ranks: dict[str, int] | None = None,
    keyword_ranks: dict[str, int] | None = None,
    second_cosine: float | None = None,
) -> list[MemorySearchResult]:
    """Results numbered 1, 2, ... in the order given (the fused rank), each with its cosine,
    its place in each ranking and its relevance label (`second_cosine`: the runner-up's
    cosine among the candidates)."""
    vector_ranks, keyword_ranks = vector_ranks or {}, keyword_ranks or {}
    results = []
    for rank, (record, score) in enumerate(scored, start=1):
        keyword_rank = keyword_ranks.get(record.memory_id)
        vector_rank = vector_ranks.get(record.memory_id)
        results.append(
            MemorySearchResult(
                record=record,
                score=score,
                rank=rank,
                vector_rank=vector_rank,
                keyword_rank=keyword_rank,
                label=relevance(rank, score, vector_rank, keyword_rank, second_cosine),
            )
        )
    return results


def demote_stale(
    results: Sequence[MemorySearchResult], stale: set[str]
) -> list[MemorySearchResult]:
    """Possibly stale records (delivered to sessions that then ended red) below every match
    that is not, each side in its order; renumbered, labels kept: the label says how well
    it matches, the place says what to try first."""
    fresh = [r for r in results if r.record.memory_id not in stale]
    doubtful = [r for r in results if r.record.memory_id in stale]
    return [
        replace(r, rank=rank, stale=r.record.memory_id in stale)
        for rank, r in enumerate([*fresh, *doubtful], start=1)
    ]
