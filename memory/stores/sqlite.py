"""The embedded memory store: one SQLite file, searched as one in-memory matrix plus FTS5.

Rows hold each record's JSON, its filter columns and its vector as a little-endian float32
blob. Search ranks the in-scope, unexpired candidates twice — by cosine over the matrix
and by BM25 over the keyword index — and fuses the two by reciprocal rank. The matrix is
kept in step with this connection's writes and reloaded when another process commits.
Opening the file and its schema live in `memory.stores.migrations`; the ranking policy, shared
with the VectorAI store, in `memory.retrieval.ranking`.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import TypeVar

import numpy as np

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
from memory.stores import migrations
from memory.stores.database import LockedDatabase
from memory.stores.sqlite_rows import readable_vectors, record_from_json, vector_blob
from memory.stores.vector_index import VectorIndex

T = TypeVar("T")


class SQLiteMemoryStore(LockedDatabase):
    """`sqlite:///PATH`: the embedded default store."""

    def __init__(self, path: Path) -> None:
        self._index = VectorIndex(EMBEDDING_DIMENSION)
        self._data_version: int | None = None
        super().__init__(path)
        self.url = f"sqlite:///{self.path}"

    def schema_version(self) -> int:
        with self._lock:
            return migrations.schema_version(self._conn)

    # -- plumbing ----------------------------------------------------------------------

    def _write(self, statements: Callable[[sqlite3.Connection], T]) -> T:
        """Run `statements` as one IMMEDIATE transaction, the vector matrix current first."""
        self._sync_index()
        try:
            return self._transaction(statements)
        except BaseException:
            self._data_version = None  # our view may be stale; reload on next use
            raise

    def _sync_index(self) -> None:
        """Reload the vector matrix if any other connection has committed since we looked."""
        version = self._conn.execute("PRAGMA data_version").fetchone()[0]
        if version == self._data_version:
            return
        rows = self._conn.execute(
            "SELECT memory_id, scope, error_type_key, expires_epoch, embedding FROM memories"
        )
        self._index.reload(readable_vectors(rows))
        self._data_version = version

    # -- writes ------------------------------------------------------------------------

    async def upsert_many(self, items: Sequence[tuple[MemoryRecord, np.ndarray]]) -> None:
        await self._run(self._upsert_many, list(items))

    def _upsert_many(self, items: list[tuple[MemoryRecord, np.ndarray]]) -> None:
        rows = [self._row(record, vector) for record, vector in items]

        def statements(conn: sqlite3.Connection) -> None:
            conn.executemany(
                """INSERT INTO memories (memory_id, scope, error_type_key, expires_epoch, timestamp,
                       fix_description, symptom, error_type, file_paths, signature, record_json,
                       embedding)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                   ON CONFLICT(memory_id) DO UPDATE SET
                       scope = excluded.scope, error_type_key = excluded.error_type_key,
                       expires_epoch = excluded.expires_epoch, timestamp = excluded.timestamp,
                       fix_description = excluded.fix_description, symptom = excluded.symptom,
                       error_type = excluded.error_type, file_paths = excluded.file_paths,
                       signature = excluded.signature, record_json = excluded.record_json,
                       embedding = excluded.embedding""",
                rows,
            )

        self._write(statements)
        for record, vector in items:
            self._index.put(
                record.memory_id,
                record.scope,
                record.error_type.casefold(),
                record.expires_at.timestamp() if record.expires_at else None,
                np.asarray(vector, dtype=np.float32),
            )

    @staticmethod
    def _row(record: MemoryRecord, vector: np.ndarray) -> tuple[object, ...]:
        return (
            record.memory_id,
            record.scope,
            record.error_type.casefold(),
            record.expires_at.timestamp() if record.expires_at else None,
            record.timestamp.isoformat(),
            record.fix_description,
            record.failure,
            record.error_type,
            " ".join(record.file_paths),
            " ".join(record.signature),
            record.to_json(),
            vector_blob(vector),
        )

    async def delete(self, memory_id: str) -> bool:
        return await self._run(self._delete, memory_id)

    def _delete(self, memory_id: str) -> bool:
        def statements(conn: sqlite3.Connection) -> bool:
            deleted = conn.execute("DELETE FROM memories WHERE memory_id = ?", (memory_id,))
            conn.execute("DELETE FROM deliveries WHERE memory_id = ?", (memory_id,))
            return deleted.rowcount > 0

        found = self._write(statements)
        self._index.remove(memory_id)
        return found

    async def record_deliveries(
        self, session_id: str, response_id: str | None, results: Iterable[MemorySearchResult]
    ) -> None:
        now = utc_now().isoformat()
        rows = [
            (r.record.memory_id, session_id, response_id, r.score, r.rank, now) for r in results
        ]
        if rows:
            await self._run(
                self._write,
                lambda conn: conn.executemany(
                    "INSERT INTO deliveries (memory_id, session_id, response_id, score, rank, "
                    "delivered_at) VALUES (?, ?, ?, ?, ?, ?)",
                    rows,
                ),
            )

    async def mark_session_outcome(self, session_id: str, green: bool) -> None:
        await self._run(
            self._write,
            lambda conn: conn.execute(
                "UPDATE deliveries SET session_green = ? WHERE session_id = ?",
                (int(green), session_id),
            ),
        )

    # -- reads -------------------------------------------------------------------------

    async def get(self, memory_id: str) -> MemoryRecord | None:
        return await self._run(self._get, memory_id)

    def _get(self, memory_id: str) -> MemoryRecord | None:
        row = self._conn.execute(
            "SELECT record_json FROM memories WHERE memory_id = ?", (memory_id,)
        ).fetchone()
        return record_from_json(memory_id, row[0]) if row else None

    async def list_records(
        self, *, scope: str | None = None, limit: int | None = None
    ) -> list[MemoryRecord]:
        return await self._run(self._list_records, scope, limit)

    def _list_records(self, scope: str | None, limit: int | None) -> list[MemoryRecord]:
        rows = self._conn.execute(
            "SELECT memory_id, record_json FROM memories WHERE (?1 IS NULL OR scope = ?1) "
            "ORDER BY timestamp DESC, id DESC LIMIT ?2",
            (scope, -1 if limit is None else limit),
        )
        records = (record_from_json(memory_id, body) for memory_id, body in rows)
        return [record for record in records if record is not None]

    async def count(self) -> int:
        return await self._run(
            lambda: self._conn.execute("SELECT count(*) FROM memories").fetchone()[0]
        )

    async def vectors(self, memory_ids: Sequence[str]) -> dict[str, np.ndarray]:
        def read() -> dict[str, np.ndarray]:
            self._sync_index()
            return self._index.vectors(list(memory_ids))

        return await self._run(read)

    async def delivery_stats(self, memory_ids: Sequence[str]) -> dict[str, DeliveryStats]:
        return await self._run(self._delivery_stats, list(memory_ids))

    def _delivery_stats(self, memory_ids: list[str]) -> dict[str, DeliveryStats]:
        stats = {memory_id: DeliveryStats() for memory_id in memory_ids}
        rows = self._conn.execute(
            f"""SELECT memory_id, count(*),
                       count(DISTINCT CASE WHEN session_green IS NOT NULL THEN session_id END),
                       count(DISTINCT CASE WHEN session_green = 1 THEN session_id END)
                FROM deliveries WHERE memory_id IN ({",".join("?" * len(memory_ids))})
                GROUP BY memory_id""",
            memory_ids,
        )
        for memory_id, delivered, ended, green in rows:
            stats[memory_id] = DeliveryStats(
                delivered=delivered, sessions_ended=ended, sessions_green=green
            )
        return stats

    async def stats(self, now: datetime) -> StoreStats:
        return await self._run(self._stats, now)

    def _stats(self, now: datetime) -> StoreStats:
        conn = self._conn
        by_scope = dict(conn.execute("SELECT scope, count(*) FROM memories GROUP BY scope"))
        by_error = dict(
            conn.execute("SELECT error_type, count(*) FROM memories GROUP BY error_type")
        )
        flagged, imported = conn.execute(
            "SELECT count(*) FILTER (WHERE CASE WHEN json_valid(record_json) "
            "THEN json_array_length(record_json, '$.flags') > 0 END), "
            "count(*) FILTER (WHERE CASE WHEN json_valid(record_json) "
            "THEN record_json ->> '$.provenance' = 'imported' END) FROM memories"
        ).fetchone()
        expired = conn.execute(
            "SELECT count(*) FROM memories WHERE expires_epoch <= ?", (now.timestamp(),)
        ).fetchone()[0]
        deliveries = conn.execute("SELECT count(*) FROM deliveries").fetchone()[0]
        return StoreStats(
            records=sum(by_scope.values()),
            by_scope=by_scope,
            by_error_type=by_error,
            flagged=flagged,
            imported=imported,
            expired=expired,
            deliveries=deliveries,
        )

    # -- search ------------------------------------------------------------------------

    async def search(self, request: SearchRequest) -> list[MemorySearchResult]:
        return await self._run(self.search_sync, request)

    def search_sync(self, request: SearchRequest) -> list[MemorySearchResult]:
        """Hybrid search over the records that pass scope and expiry: cosine, BM25 and the
        error type's rankings fused as `memory.retrieval.ranking` says."""
        text, scope, top_k = request.query_text, request.scope, request.top_k
        with self._snapshot():
            self._sync_index()
            error_key = request.error_type.casefold() if request.error_type else None
            query = np.asarray(request.vector, dtype=np.float32).reshape(-1)
            pool = ranking.candidate_pool(top_k)
            by_vector = self._index.top(query, scope, request.now.timestamp(), pool)
            if not by_vector:
                return []
            by_keyword = self._keyword_ranking(text, scope, request.now, pool)
            vector_ids = [memory_id for memory_id, _ in by_vector]
            weights = ranking.weights(text, by_vector[0][1])
            wants_types = error_key or weights.query_type
            types = self._index.error_keys([*vector_ids, *by_keyword]) if wants_types else {}
            by_type = ranking.error_type_ranking(error_key, vector_ids, by_keyword, types)
            by_query_type = []
            if weights.query_type:
                by_query_type = ranking.query_type_ranking(text, vector_ids, by_keyword, types)
            by_path = []
            if weights.path:
                looked_at = ranking.path_candidates(top_k, vector_ids, by_keyword)
                by_path = ranking.path_ranking(text, self._file_paths(looked_at))
            fused = ranking.fuse(vector_ids, by_keyword, by_path, weights, by_type, by_query_type)
            fused = {m: score for m, score in fused.items() if m in self._index}  # unreadable
            cosine = dict(by_vector)
            missing = [memory_id for memory_id in fused if memory_id not in cosine]
            cosine.update(self._index.similarities(query, missing))
            best = ranking.best_fused(
                fused, cosine, request.min_score, max(top_k, ranking.RERANK_DEPTH)
            )
            records = self._records(best)
            best = ranking.second_look(
                text, best, records, fused, cosine, vector_ids, by_keyword, by_path
            )
            return ranking.ranked(
                ((records[memory_id], cosine[memory_id]) for memory_id in best[:top_k]),
                {memory_id: rank for rank, memory_id in enumerate(vector_ids, start=1)},
                {memory_id: rank for rank, memory_id in enumerate(by_keyword, start=1)},
                ranking.runner_up([score for _, score in by_vector[:2]]),
            )

    @contextlib.contextmanager
    def _snapshot(self) -> Iterator[None]:
        """One read transaction: the matrix, the keyword index and the rows read inside it
        come from the same snapshot even while another process writes."""
        self._conn.execute("BEGIN")
        try:
            yield
        finally:
            self._conn.execute("COMMIT")

    def _keyword_ranking(
        self, text: str, scope: str | None, now: datetime, limit: int
    ) -> list[str]:
        words = self._rare_words(ranking.query_words(text))
        if not words:
            return []
        match = " OR ".join(f'"{word}"' for word in words)
        rows = self._conn.execute(
            """SELECT m.memory_id FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid
               WHERE memories_fts MATCH ?1 AND (?2 IS NULL OR m.scope = ?2)
                 AND (m.expires_epoch IS NULL OR m.expires_epoch > ?3)
               ORDER BY bm25(memories_fts) LIMIT ?4""",
            (match, scope, now.timestamp(), limit),
        )
        return [row[0] for row in rows]

    def _rare_words(self, words: list[str]) -> list[str]:
        return ranking.rare_words(words, len(self._index), self._records_with)

    def _records_with(self, word: str, cap: int) -> int:
        return self._conn.execute(
            "SELECT count(*) FROM (SELECT 1 FROM memories_fts WHERE memories_fts MATCH ? LIMIT ?)",
            (f'"{word}"', cap),
        ).fetchone()[0]

    def _file_paths(self, memory_ids: list[str]) -> dict[str, list[str]]:
        """Each id's files, in the order given, from the keyword index's column (the paths
        joined by spaces: a path with a space in it comes back in pieces)."""
        joined = dict(
            self._conn.execute(
                f"SELECT memory_id, file_paths FROM memories "
                f"WHERE memory_id IN ({','.join('?' * len(memory_ids))})",
                memory_ids,
            )
        )
        return {i: joined[i].split(" ") for i in memory_ids if i in joined}

    def _records(self, memory_ids: list[str]) -> dict[str, MemoryRecord]:
        if not memory_ids:
            return {}
        rows = self._conn.execute(
            f"SELECT memory_id, record_json FROM memories "
            f"WHERE memory_id IN ({','.join('?' * len(memory_ids))})",
            memory_ids,
        )
        records = {memory_id: record_from_json(memory_id, body) for memory_id, body in rows}
        return {memory_id: record for memory_id, record in records.items() if record}

    async def close(self) -> None:
        with self._lock:
            self._conn.close()
