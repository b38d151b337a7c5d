"""The server store: Actian VectorAI DB over gRPC, so a team can share one memory.

Each record is a point whose id is its memory_id and whose payload is the record's JSON
plus two filter keys (a casefolded error type and an expiry epoch). Scope, error type and
expiry travel with the search as a server-side filter, so they narrow the candidates before
anything is ranked, as in the embedded store. The server has no keyword index, so ranking
is by cosine alone (`memory.retrieval.ranking` sets the two stores side by side). The delivery audit
lives in a second collection, one point per delivery, so writers on different machines
never overwrite each other's counts.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import datetime
from functools import partial
from typing import Any, TypeVar
from urllib.parse import parse_qs, urlsplit

import numpy as np
from actian_vectorai import AsyncVectorAIClient
from actian_vectorai.exceptions import CollectionExistsError, VectorAIError
from actian_vectorai.exceptions import ConnectionError as VaiConnectionError
from actian_vectorai.exceptions import TimeoutError as VaiTimeoutError
from actian_vectorai.filters import Field, FilterBuilder
from actian_vectorai.models.collections import VectorParams
from actian_vectorai.models.common import Condition, Filter
from actian_vectorai.models.enums import Distance
from actian_vectorai.models.points import PointStruct, RetrievedPoint

from memory.errors import MemoryStoreError
from memory.records import (
    EMBEDDING_DIMENSION,
    DeliveryStats,
    MemoryRecord,
    MemorySearchResult,
    SearchRequest,
    StoreStats,
    utc_now,
)
from memory.retrieval import ranking

T = TypeVar("T")

DEFAULT_PORT = 6574
DEFAULT_COLLECTION = "astra_codebase_memory"
AUDIT_SUFFIX = "_deliveries"
AUDIT_VECTOR = [1.0]  # audit points are found by filter only; the server requires a vector
NEVER_EXPIRES = 253402300799.0  # 9999-12-31T23:59:59Z: no-expiry records pass `expires > now`
ERROR_KEY = "error_type_key"
EXPIRES_KEY = "expires_epoch"
FILTER_KEYS = (ERROR_KEY, EXPIRES_KEY)
ATTEMPTS = 3
BACKOFF_S = 0.2
CALL_TIMEOUT_S = 5.0
PAGE = 256


def vectorai_address(url: str) -> tuple[str, str]:
    """`vectorai://host:port[?collection=NAME]` to (`host:port`, collection name)."""
    parts = urlsplit(url)
    try:
        port = parts.port or DEFAULT_PORT
    except ValueError as exc:
        raise MemoryStoreError(f"malformed memory URL {url!r}: {exc}") from exc
    if parts.scheme != "vectorai" or not parts.hostname or parts.path not in ("", "/"):
        raise MemoryStoreError(f"malformed memory URL {url!r}: expected vectorai://HOST:PORT")
    collection = parse_qs(parts.query).get("collection", [DEFAULT_COLLECTION])[0]
    return f"{parts.hostname}:{port}", collection


def _point_vector(vector: np.ndarray) -> list[float]:
    values = np.asarray(vector, dtype=np.float32).reshape(-1)
    if values.shape[0] != EMBEDDING_DIMENSION or not np.all(np.isfinite(values)):
        raise MemoryStoreError(
            f"vector has {values.shape[0]} entries or non-finite values, "
            f"expected {EMBEDDING_DIMENSION} finite floats"
        )
    return values.tolist()


def _payload(record: MemoryRecord) -> dict[str, Any]:
    payload = record.to_dict()
    payload[ERROR_KEY] = record.error_type.casefold()
    payload[EXPIRES_KEY] = record.expires_at.timestamp() if record.expires_at else NEVER_EXPIRES
    return payload


def _record(payload: dict[str, Any] | None) -> MemoryRecord:
    fields = {key: value for key, value in (payload or {}).items() if key not in FILTER_KEYS}
    return MemoryRecord.from_dict(fields)


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def _filter(*conditions: Condition) -> Filter:
    builder = FilterBuilder()
    for condition in conditions:
        builder.must(condition)
    return builder.build()


class VectorAIMemoryStore:
    """`vectorai://HOST:PORT`: records in an Actian VectorAI DB collection, 384-d cosine."""

    def __init__(
        self, address: str, collection: str = DEFAULT_COLLECTION, timeout: float = CALL_TIMEOUT_S
    ) -> None:
        self.address = address
        self.collection = collection
        self.audit_collection = collection + AUDIT_SUFFIX
        self.url = f"vectorai://{address}?collection={collection}"
        self._timeout = timeout
        self._client: AsyncVectorAIClient | None = None
        self._opening = asyncio.Lock()

    # -- plumbing ----------------------------------------------------------------------

    async def _call(self, what: str, operation: Callable[[], Awaitable[T]]) -> T:
        """Run one server operation, retrying transient failures a bounded number of times."""
        attempt = 1
        while True:
            try:
                return await operation()
            except (VaiConnectionError, VaiTimeoutError) as exc:
                if attempt == ATTEMPTS:
                    raise MemoryStoreError(
                        f"VectorAI DB at {self.address} did not answer ({what}) after {ATTEMPTS} "
                        f"attempts: {exc.message}; is it running? Start it with "
                        "`docker compose up -d`"
                    ) from exc
                await asyncio.sleep(BACKOFF_S * attempt)
                attempt += 1
            except VectorAIError as exc:
                raise MemoryStoreError(
                    f"VectorAI DB at {self.address}: {what} failed: {exc}"
                ) from exc

    async def _ready(self) -> AsyncVectorAIClient:
        """The connected client; the first call connects and checks both collections."""
        async with self._opening:
            if self._client is None:
                client = AsyncVectorAIClient(
                    self.address, timeout=self._timeout, max_retries=0, enable_tracing=False
                )
                await self._call("connect", client.connect)
                try:
                    await self._ensure(
                        client, self.collection, EMBEDDING_DIMENSION, Distance.Cosine
                    )
                    await self._ensure(client, self.audit_collection, 1, Distance.Dot)
                except BaseException:
                    await client.close()
                    raise
                self._client = client
            return self._client

    async def _ensure(
        self, client: AsyncVectorAIClient, name: str, size: int, distance: Distance
    ) -> None:
        """Create the collection if missing; refuse (and leave alone) one shaped differently."""

        async def create_if_missing() -> None:
            if not await client.collections.exists(name):
                with contextlib.suppress(CollectionExistsError):  # another writer was first
                    await client.collections.create(
                        name, vectors_config=VectorParams(size=size, distance=distance)
                    )

        await self._call(f"create collection {name}", create_if_missing)
        info = await self._call(
            f"read collection {name}", lambda: client.collections.get_info(name)
        )
        found_size = info.config.vector_size() if info.config else None
        found_distance = info.config.distance() if info.config else None
        if (found_size, found_distance) != (size, distance):
            shape = f"{found_size}-d {getattr(found_distance, 'name', found_distance)}"
            raise MemoryStoreError(
                f"collection {name!r} on {self.address} holds {shape} vectors, not the "
                f"{size}-d {distance.name} this memory needs; it was left untouched, so "
                "choose another collection name (vectorai://HOST:PORT?collection=NAME)"
            )

    async def _scroll(self, collection: str, condition: Filter | None) -> list[RetrievedPoint]:
        client = await self._ready()
        points: list[RetrievedPoint] = []
        offset = None
        while True:
            page, offset = await self._call(
                f"scroll {collection}",
                partial(
                    client.points.scroll, collection, offset=offset, limit=PAGE, filter=condition
                ),
            )
            points.extend(page)
            if offset is None or not page:
                return points

    # -- writes ------------------------------------------------------------------------

    async def upsert_many(self, items: Sequence[tuple[MemoryRecord, np.ndarray]]) -> None:
        """Write every record; a bad vector or id stops the batch before anything is sent."""
        for record, _ in items:
            if not _is_uuid(record.memory_id):
                raise MemoryStoreError(f"memory_id {record.memory_id!r} is not a UUID")
        points = [
            PointStruct(id=record.memory_id, vector=_point_vector(vector), payload=_payload(record))
            for record, vector in items
        ]
        client = await self._ready()
        for start in range(0, len(points), PAGE):
            batch = points[start : start + PAGE]
            await self._call("upsert", partial(client.points.upsert, self.collection, batch))

    async def delete(self, memory_id: str) -> bool:
        if await self.get(memory_id) is None:
            return False
        client = await self._ready()
        await self._call(
            "delete",
            lambda: client.points.delete(self.collection, ids=[memory_id], strict=False),
        )
        await self._call(
            "delete audit",
            lambda: client.points.delete(
                self.audit_collection, filter=_filter(Field("memory_id").eq(memory_id))
            ),
        )
        return True

    async def record_deliveries(
        self, session_id: str, response_id: str | None, results: Iterable[MemorySearchResult]
    ) -> None:
        now = utc_now().isoformat()
        points = [
            PointStruct(
                id=str(uuid.uuid4()),
                vector=AUDIT_VECTOR,
                payload={
                    "memory_id": r.record.memory_id,
                    "session_id": session_id,
                    "response_id": response_id,
                    "score": r.score,
                    "rank": r.rank,
                    "delivered_at": now,
                    "session_green": None,
                },
            )
            for r in results
        ]
        if points:
            client = await self._ready()
            await self._call(
                "record deliveries", lambda: client.points.upsert(self.audit_collection, points)
            )

    async def mark_session_outcome(self, session_id: str, green: bool) -> None:
        client = await self._ready()
        await self._call(
            "mark session outcome",
            lambda: client.points.set_payload(
                self.audit_collection,
                {"session_green": green},
                filter=_filter(Field("session_id").eq(session_id)),
            ),
        )

    # -- reads -------------------------------------------------------------------------

    async def get(self, memory_id: str) -> MemoryRecord | None:
        if not _is_uuid(memory_id):
            return None
        client = await self._ready()
        points = await self._call("get", lambda: client.points.get(self.collection, [memory_id]))
        return _record(points[0].payload) if points else None

    async def vectors(self, memory_ids: Sequence[str]) -> dict[str, np.ndarray]:
        ids = [memory_id for memory_id in memory_ids if _is_uuid(memory_id)]
        if not ids:
            return {}
        client = await self._ready()
        points = await self._call(
            "get vectors", lambda: client.points.get(self.collection, ids, with_vectors=True)
        )
        return {
            str(point.id): np.asarray(point.vectors, dtype=np.float32)
            for point in points
            if point.vectors is not None
        }

    async def list_records(
        self, *, scope: str | None = None, limit: int | None = None
    ) -> list[MemoryRecord]:
        """Newest first; the server scrolls in id order, so every match is read and sorted."""
        condition = _filter(Field("scope").eq(scope)) if scope is not None else None
        records = [_record(p.payload) for p in await self._scroll(self.collection, condition)]
        records.sort(key=lambda r: (r.timestamp, r.memory_id), reverse=True)
        return records if limit is None else records[:limit]

    async def count(self) -> int:
        client = await self._ready()
        return await self._call("count", lambda: client.points.count(self.collection))

    async def delivery_stats(self, memory_ids: Sequence[str]) -> dict[str, DeliveryStats]:
        stats = {memory_id: DeliveryStats() for memory_id in memory_ids}
        if not memory_ids:
            return stats
        condition = _filter(Field("memory_id").any_of(list(memory_ids)))
        rows: dict[str, list[dict[str, Any]]] = {}
        for point in await self._scroll(self.audit_collection, condition):
            payload = point.payload or {}
            rows.setdefault(payload["memory_id"], []).append(payload)
        for memory_id, deliveries in rows.items():
            ended = {d["session_id"] for d in deliveries if d.get("session_green") is not None}
            green = {d["session_id"] for d in deliveries if d.get("session_green") is True}
            stats[memory_id] = DeliveryStats(
                delivered=len(deliveries), sessions_ended=len(ended), sessions_green=len(green)
            )
        return stats

    async def stats(self, now: datetime) -> StoreStats:
        records = [_record(p.payload) for p in await self._scroll(self.collection, None)]
        by_scope: dict[str, int] = {}
        by_error: dict[str, int] = {}
        for record in records:
            by_scope[record.scope] = by_scope.get(record.scope, 0) + 1
            by_error[record.error_type] = by_error.get(record.error_type, 0) + 1
        client = await self._ready()
        deliveries = await self._call(
            "count deliveries", lambda: client.points.count(self.audit_collection)
        )
        return StoreStats(
            records=len(records),
            by_scope=by_scope,
            by_error_type=by_error,
            flagged=sum(bool(r.flags) for r in records),
            imported=sum(r.provenance == "imported" for r in records),
            expired=sum(r.is_expired(now) for r in records),
            deliveries=deliveries,
        )

    async def search(self, request: SearchRequest) -> list[MemorySearchResult]:
        """The in-scope (every scope for None), unexpired records nearest by cosine, then
        fused with BM25 over those candidates and the error type's ranking, as
        `memory.retrieval.ranking.hybrid` says."""
        conditions = [Field(EXPIRES_KEY).gt(request.now.timestamp())]
        if request.scope is not None:
            conditions.append(Field("scope").eq(request.scope))
        query = _point_vector(request.vector)
        client = await self._ready()
        points = await self._call(
            "search",
            lambda: client.points.search(
                self.collection,
                query,
                limit=ranking.candidate_pool(request.top_k),
                filter=_filter(*conditions),
                score_threshold=request.min_score,
            ),
        )
        candidates = [(_record(point.payload), point.score) for point in points]
        return ranking.hybrid(
            candidates, request.query_text, request.error_type, request.min_score, request.top_k
        )

    async def close(self) -> None:
        async with self._opening:
            if self._client is not None:
                await self._client.close()
                self._client = None
