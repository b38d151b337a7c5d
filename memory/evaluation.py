"""Retrieval quality on the user's own data: recall@1, recall@3 and MRR over labelled queries,
beside two peers on the same records (plain BM25 and the vectors alone), and how often each
relevance label was right.

Each query is searched exactly as the agent's tool searches (same embedder, same hybrid
ranking, same filters), but nothing is written to the delivery audit.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from memory.embedding.embedder import PrimedEmbedder
from memory.errors import MemoryValidationError
from memory.records import LABELS, Label, SearchRequest
from memory.retrieval.failure_text import focus
from memory.retrieval.ranking import keyword_text
from memory.retrieval.signature import with_signature
from memory.service import MemoryService
from memory.stores.sqlite import SQLiteMemoryStore
from memory.transfer import json_object

MRR_DEPTH = 10
CALIBRATION_DEPTH = 3  # the matches a search delivers by default


class EvalQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str
    expect: str
    error_type: str | None = None
    scope: str | None = None
    group: str | None = None  # near neighbours share one: figures per group


class EvalMiss(BaseModel):
    query: str
    expect: str
    rank: int | None  # where the expected record came, if within MRR_DEPTH
    got: list[str]


class GroupFigures(BaseModel):
    recall_at_1: float
    recall_at_3: float
    mrr: float
    queries: int


class LabelFigures(BaseModel):
    """How often a match with this label, in the top 3, was the expected fix."""

    matches: int
    right: int
    precision: float | None  # None: no match had the label


class EvalReport(BaseModel):
    recall_at_1: float
    recall_at_3: float
    mrr: float
    queries: int
    misses: list[EvalMiss]
    groups: dict[str, GroupFigures] = {}
    calibration: dict[Label, LabelFigures] = {}


def parse_queries(lines: Iterable[str]) -> list[EvalQuery]:
    queries = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            queries.append(EvalQuery.model_validate(json_object(line)))
        except MemoryValidationError as exc:
            raise MemoryValidationError(f"line {number}: {exc}") from exc
        except ValidationError as exc:
            problem = exc.errors()[0]
            where = ".".join(str(part) for part in problem["loc"])
            raise MemoryValidationError(
                f"line {number}: {where + ': ' if where else ''}{problem['msg']}"
            ) from exc
    if not queries:
        raise MemoryValidationError("no queries in the file")
    return queries


class AmbiguousExpectError(MemoryValidationError):
    """An `expect` that is blank or a prefix of several records (a blank one is a prefix of
    every id): a usage error, as for every id."""


async def resolve_expected(service: MemoryService, queries: list[EvalQuery]) -> list[EvalQuery]:
    """Each `expect` as a full id: the short id shown everywhere counts, if it is unique. An
    id that names no record, or a record outside the scope the query searches, could never
    be found: the figures would be meaningless, so either is refused, naming the query."""
    records = await service.store.list_records()
    resolved = []
    for number, query in enumerate(queries, start=1):
        if not query.expect.strip():
            raise AmbiguousExpectError(f"query {number}: expect is empty; give a memory id")
        matches = [r for r in records if r.memory_id == query.expect] or [
            r for r in records if r.memory_id.startswith(query.expect)
        ]
        if not matches:
            raise MemoryValidationError(
                f"query {number}: expect {query.expect!r} is no memory record in "
                f"{service.store.url}"
            )
        if len(matches) > 1:
            raise AmbiguousExpectError(
                f"query {number}: expect {query.expect!r} matches {len(matches)} records; give more"
            )
        [record] = matches
        scope = query.scope or service.scope
        if record.scope != scope:
            raise MemoryValidationError(
                f"query {number}: expect {query.expect!r} is in scope {record.scope!r}, but the "
                f"query searches scope {scope!r}, so it can never be found; pass --scope "
                f'{record.scope} (or give the line a "scope")'
            )
        resolved.append(query.model_copy(update={"expect": record.memory_id}))
    return resolved


async def prime(service: MemoryService, queries: list[EvalQuery], baseline: bool = False) -> None:
    """Embed in one batch every query text the rankings will ask for (the fix-text baseline
    embeds the query as given): each ranking asks one query at a time."""
    texts = [with_signature(focus(query.query)) for query in queries]
    if baseline:
        texts += [query.query for query in queries]
    service.embedder = await PrimedEmbedder.prime(service.embedder, texts)


async def evaluate(service: MemoryService, queries: list[EvalQuery]) -> EvalReport:
    """Search each query in its scope (or the service's); score where the expected record came,
    and how often each label of the top 3 was the expected record."""
    labelled: Counter[tuple[Label, bool]] = Counter()

    async def ranking(query: EvalQuery) -> list[str]:
        results = await service.find(
            query.query,
            error_type=query.error_type,
            top_k=MRR_DEPTH,
            min_score=-1.0,
            scope=query.scope,
        )
        for result in results[:CALIBRATION_DEPTH]:
            labelled[result.label, result.record.memory_id == query.expect] += 1
        return [r.record.memory_id for r in results]

    report = await _score(queries, ranking)
    return report.model_copy(update={"calibration": _calibration(labelled)})


def _calibration(labelled: Counter[tuple[Label, bool]]) -> dict[Label, LabelFigures]:
    figures = {}
    for label in reversed(LABELS):
        right, matches = labelled[label, True], labelled[label, True] + labelled[label, False]
        figures[label] = LabelFigures(
            matches=matches, right=right, precision=right / matches if matches else None
        )
    return figures


async def fix_text_baseline(service: MemoryService, queries: list[EvalQuery]) -> EvalReport:
    """The same queries against the seed design: each record embedded by its fix text alone,
    ranked by cosine only. The gap to `evaluate` is what the symptom and keywords buy."""
    records = await service.store.list_records()
    vectors = await service.embedder.embed_many([r.fix_description for r in records])
    with tempfile.TemporaryDirectory() as folder:
        store = SQLiteMemoryStore(Path(folder) / "baseline.sqlite3")
        await store.upsert_many(list(zip(records, vectors, strict=True)))

        async def ranking(query: EvalQuery) -> list[str]:
            results = await store.search(
                SearchRequest(
                    await service.embedder.embed(query.query),
                    "",
                    scope=query.scope or service.scope,
                    error_type=query.error_type,
                    top_k=MRR_DEPTH,
                    min_score=-1.0,
                    now=service.clock(),
                )
            )
            return [r.record.memory_id for r in results]

        try:
            return await _score(queries, ranking)
        finally:
            await store.close()


async def plain_bm25(service: MemoryService, queries: list[EvalQuery]) -> EvalReport:
    """The peer: plain BM25 from `bm25s` (its own tokenizer and English stop words) over the
    same fields the keyword side indexes, in the query's scope; no vectors, no reading of
    the query, no error type. A ranking that loses to it should not be the default."""
    import bm25s

    now = service.clock()
    records = [r for r in await service.store.list_records() if not r.is_expired(now)]
    indexes: dict[str, tuple[bm25s.BM25, list[str]]] = {}

    def index(scope: str) -> tuple[bm25s.BM25, list[str]]:
        if scope not in indexes:
            chosen = [r for r in records if r.scope == scope]
            retriever = bm25s.BM25()
            if chosen:
                retriever.index(
                    _bm25_tokens([keyword_text(r) for r in chosen]), show_progress=False
                )
            indexes[scope] = (retriever, [r.memory_id for r in chosen])
        return indexes[scope]

    async def ranking(query: EvalQuery) -> list[str]:
        retriever, ids = index(query.scope or service.scope)
        if not ids:
            return []
        scores = retriever.get_scores(_bm25_tokens([query.query])[0])
        best = sorted((i for i in range(len(ids)) if scores[i] > 0), key=lambda i: -scores[i])
        return [ids[i] for i in best[:MRR_DEPTH]]

    return await _score(queries, ranking)


def _bm25_tokens(texts: list[str]) -> list[list[str]]:
    import bm25s

    return bm25s.tokenize(texts, stopwords="en", return_ids=False, show_progress=False)


async def vector_only(service: MemoryService, queries: list[EvalQuery]) -> EvalReport:
    """The other half alone: the stored vectors ranked by cosine to the query's, no words."""
    now = service.clock()
    records = [r for r in await service.store.list_records() if not r.is_expired(now)]
    stored = await service.store.vectors([r.memory_id for r in records])
    texts = [with_signature(focus(query.query)) for query in queries]
    asked = dict(zip(texts, await service.embedder.embed_many(texts), strict=True))

    async def ranking(query: EvalQuery) -> list[str]:
        scope = query.scope or service.scope
        wanted = [r.memory_id for r in records if r.scope == scope]
        vector = asked[with_signature(focus(query.query))]
        cosine = {memory_id: float(stored[memory_id] @ vector) for memory_id in wanted}
        return sorted(cosine, key=cosine.__getitem__, reverse=True)[:MRR_DEPTH]

    return await _score(queries, ranking)


def _figures(ranks: list[int | None]) -> GroupFigures:
    count = len(ranks)
    return GroupFigures(
        recall_at_1=sum(rank == 1 for rank in ranks) / count,
        recall_at_3=sum(rank is not None and rank <= 3 for rank in ranks) / count,
        mrr=sum(1 / rank for rank in ranks if rank) / count,
        queries=count,
    )


async def _score(
    queries: list[EvalQuery], ranking: Callable[[EvalQuery], Awaitable[list[str]]]
) -> EvalReport:
    ranks: list[int | None] = []
    by_group: dict[str, list[int | None]] = {}
    misses = []
    for query in queries:
        ids = await ranking(query)
        rank = ids.index(query.expect) + 1 if query.expect in ids else None
        ranks.append(rank)
        if query.group:
            by_group.setdefault(query.group, []).append(rank)
        if rank != 1:
            misses.append(EvalMiss(query=query.query, expect=query.expect, rank=rank, got=ids[:3]))
    total = _figures(ranks)
    return EvalReport(
        **total.model_dump(),
        misses=misses,
        groups={group: _figures(group_ranks) for group, group_ranks in sorted(by_group.items())},
    )
