"""Retrieval quality on the user's own data: recall@1, recall@3 and MRR over labelled queries.

Each query is searched exactly as the agent's tool searches (same embedder, same hybrid
ranking, same filters), but nothing is written to the delivery audit.
"""

from __future__ import annotations

import tempfile
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from memory.errors import MemoryValidationError
from memory.service import MemoryService
from memory.sqlite_store import SQLiteMemoryStore

MRR_DEPTH = 10


class EvalQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str
    expect: str
    error_type: str | None = None
    scope: str | None = None


class EvalMiss(BaseModel):
    query: str
    expect: str
    rank: int | None  # where the expected record came, if within MRR_DEPTH
    got: list[str]


class EvalReport(BaseModel):
    recall_at_1: float
    recall_at_3: float
    mrr: float
    queries: int
    misses: list[EvalMiss]


def parse_queries(lines: Iterable[str]) -> list[EvalQuery]:
    queries = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            queries.append(EvalQuery.model_validate_json(line))
        except ValidationError as exc:
            problem = exc.errors()[0]
            raise MemoryValidationError(f"line {number}: {problem['msg']}") from exc
    if not queries:
        raise MemoryValidationError("no queries in the file")
    return queries


async def evaluate(service: MemoryService, queries: list[EvalQuery]) -> EvalReport:
    """Search each query in its scope (or the service's); score where the expected record came."""

    async def ranking(query: EvalQuery) -> list[str]:
        results = await service.find(
            query.query,
            error_type=query.error_type,
            top_k=MRR_DEPTH,
            min_score=-1.0,
            scope=query.scope,
        )
        return [r.record.memory_id for r in results]

    return await _score(queries, ranking)


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
                await service.embedder.embed(query.query),
                "",
                scope=query.scope or service.scope,
                error_type=query.error_type,
                top_k=MRR_DEPTH,
                min_score=-1.0,
                now=service.clock(),
            )
            return [r.record.memory_id for r in results]

        try:
            return await _score(queries, ranking)
        finally:
            await store.close()


async def _score(
    queries: list[EvalQuery], ranking: Callable[[EvalQuery], Awaitable[list[str]]]
) -> EvalReport:
    hits_1 = hits_3 = 0
    reciprocal = 0.0
    misses = []
    for query in queries:
        ids = await ranking(query)
        rank = ids.index(query.expect) + 1 if query.expect in ids else None
        hits_1 += rank == 1
        hits_3 += rank is not None and rank <= 3
        reciprocal += 1 / rank if rank else 0.0
        if rank != 1:
            misses.append(EvalMiss(query=query.query, expect=query.expect, rank=rank, got=ids[:3]))
    count = len(queries)
    return EvalReport(
        recall_at_1=hits_1 / count,
        recall_at_3=hits_3 / count,
        mrr=reciprocal / count,
        queries=count,
        misses=misses,
    )
