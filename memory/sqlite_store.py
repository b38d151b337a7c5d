"""The embedded memory store: one SQLite file, searched as one in-memory matrix plus FTS5.

Rows hold each record's JSON, its filter columns and its vector as a little-endian float32
blob. Search ranks the in-scope, unexpired candidates twice — by cosine over the matrix
and by BM25 over the keyword index — and fuses the two by reciprocal rank. The matrix is
kept in step with this connection's writes and reloaded when another process commits.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import TypeVar

import numpy as np

from memory.errors import MemoryStoreError
from memory.records import (
    EMBEDDING_DIMENSION,
    DeliveryStats,
    MemoryRecord,
    MemorySearchResult,
    StoreStats,
    utc_now,
)
from memory.vector_index import VectorIndex

T = TypeVar("T")

SCHEMA_TABLE = "astra_schema_migrations"
BUSY_TIMEOUT_MS = 10_000
RRF_K = 60

# Append-only: never edit a shipped migration, add the next one.
MIGRATIONS: tuple[tuple[int, str, tuple[str, ...]], ...] = (
    (
        1,
        "m001_records_keywords_audit",
        (
            """CREATE TABLE memories (
                id INTEGER PRIMARY KEY,
                memory_id TEXT NOT NULL UNIQUE,
                scope TEXT NOT NULL,
                error_type_key TEXT NOT NULL,
                expires_epoch REAL,
                timestamp TEXT NOT NULL,
                fix_description TEXT NOT NULL,
                symptom TEXT NOT NULL,
                error_type TEXT NOT NULL,
                file_paths TEXT NOT NULL,
                signature TEXT NOT NULL,
                record_json TEXT NOT NULL,
                embedding BLOB NOT NULL
            )""",
            "CREATE INDEX memories_scope ON memories(scope, error_type_key)",
            """CREATE VIRTUAL TABLE memories_fts USING fts5(
                fix_description, symptom, error_type, file_paths, signature,
                content='memories', content_rowid='id', tokenize='porter unicode61'
            )""",
            """CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
                INSERT INTO memories_fts(rowid, fix_description, symptom, error_type, file_paths,
                                         signature)
                VALUES (new.id, new.fix_description, new.symptom, new.error_type, new.file_paths,
                        new.signature);
            END""",
            """CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
                INSERT INTO memories_fts(memories_fts, rowid, fix_description, symptom,
                                         error_type, file_paths, signature)
                VALUES ('delete', old.id, old.fix_description, old.symptom, old.error_type,
                        old.file_paths, old.signature);
            END""",
            """CREATE TRIGGER memories_au AFTER UPDATE ON memories BEGIN
                INSERT INTO memories_fts(memories_fts, rowid, fix_description, symptom,
                                         error_type, file_paths, signature)
                VALUES ('delete', old.id, old.fix_description, old.symptom, old.error_type,
                        old.file_paths, old.signature);
                INSERT INTO memories_fts(rowid, fix_description, symptom, error_type, file_paths,
                                         signature)
                VALUES (new.id, new.fix_description, new.symptom, new.error_type, new.file_paths,
                        new.signature);
            END""",
            """CREATE TABLE deliveries (
                id INTEGER PRIMARY KEY,
                memory_id TEXT NOT NULL,
                session_id TEXT NOT NULL,
                response_id TEXT,
                score REAL NOT NULL,
                rank INTEGER NOT NULL,
                delivered_at TEXT NOT NULL,
                session_green INTEGER
            )""",
            "CREATE INDEX deliveries_memory ON deliveries(memory_id)",
            "CREATE INDEX deliveries_session ON deliveries(session_id)",
        ),
    ),
)
LATEST_VERSION = MIGRATIONS[-1][0]

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]{2,}")
_MAX_WORDS = 64
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


def _vector_blob(vector: np.ndarray) -> bytes:
    vector = np.asarray(vector, dtype="<f4").reshape(-1)
    if vector.shape[0] != EMBEDDING_DIMENSION:
        raise MemoryStoreError(
            f"vector has {vector.shape[0]} entries, expected {EMBEDDING_DIMENSION}"
        )
    return vector.tobytes()


class SQLiteMemoryStore:
    """`sqlite:///PATH`: the embedded default store."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.url = f"sqlite:///{self.path}"
        self._lock = threading.Lock()
        self._index = VectorIndex(EMBEDDING_DIMENSION)
        self._data_version: int | None = None
        self._conn = self._connect()

    # -- opening -----------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise MemoryStoreError(f"cannot create {self.path.parent}: {exc.strerror}") from exc
        conn = None
        try:
            conn = sqlite3.connect(
                self.path,
                isolation_level=None,
                check_same_thread=False,
                timeout=BUSY_TIMEOUT_MS / 1000,
            )
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        except sqlite3.DatabaseError as exc:
            if conn is not None:
                conn.close()
            raise MemoryStoreError(f"{self.path} is not a memory database ({exc})") from exc
        if tables and SCHEMA_TABLE not in tables:
            conn.close()
            raise MemoryStoreError(
                f"{self.path} is a SQLite database but not a memory database; refusing to touch it"
            )
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            self._migrate(conn)

        except sqlite3.DatabaseError as exc:
            conn.close()
            raise MemoryStoreError(f"cannot open memory database {self.path}: {exc}") from exc
        return conn

    def _migrate(self, conn: sqlite3.Connection) -> None:
        """Apply each missing migration in its own transaction."""
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {SCHEMA_TABLE} "
            "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )
        applied = {row[0] for row in conn.execute(f"SELECT version FROM {SCHEMA_TABLE}")}
        if applied and max(applied) > LATEST_VERSION:
            raise MemoryStoreError(
                f"{self.path} has schema version {max(applied)}, newer than this program's "
                f"{LATEST_VERSION}; upgrade astra-codebase-memory"
            )
        for version, name, statements in MIGRATIONS:
            if version in applied:
                continue
            conn.execute("BEGIN IMMEDIATE")
            try:
                if conn.execute(
                    f"SELECT 1 FROM {SCHEMA_TABLE} WHERE version = ?", (version,)
                ).fetchone():
                    conn.execute("ROLLBACK")  # another process applied it while we waited
                    continue
                for statement in statements:
                    conn.execute(statement)
                conn.execute(
                    f"INSERT INTO {SCHEMA_TABLE} VALUES (?, ?, ?)",
                    (version, name, utc_now().isoformat()),
                )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def schema_version(self) -> int:
        with self._lock:
            row = self._conn.execute(f"SELECT max(version) FROM {SCHEMA_TABLE}").fetchone()
        return int(row[0] or 0)

    # -- plumbing ----------------------------------------------------------------------

    async def _run(self, function: Callable[..., T], *args: object) -> T:
        return await asyncio.to_thread(self._locked, function, *args)

    def _locked(self, function: Callable[..., T], *args: object) -> T:
        with self._lock:
            try:
                return function(*args)
            except sqlite3.DatabaseError as exc:
                raise MemoryStoreError(f"memory database {self.path}: {exc}") from exc

    def _write(self, statements: Callable[[sqlite3.Connection], T]) -> T:
        """Run `statements` as one IMMEDIATE transaction; all of it lands or none does."""
        self._sync_index()
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            result = statements(self._conn)
            self._conn.execute("COMMIT")
        except BaseException:
            self._conn.execute("ROLLBACK")
            self._data_version = None  # our view may be stale; reload on next use
            raise
        return result

    def _sync_index(self) -> None:
        """Reload the vector matrix if any other connection has committed since we looked."""
        version = self._conn.execute("PRAGMA data_version").fetchone()[0]
        if version == self._data_version:
            return
        rows = self._conn.execute(
            "SELECT memory_id, scope, error_type_key, expires_epoch, embedding FROM memories"
        )
        self._index.reload(rows)
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
            record.symptom,
            record.error_type,
            " ".join(record.file_paths),
            " ".join(record.signature),
            record.model_dump_json(),
            _vector_blob(vector),
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
        return MemoryRecord.model_validate_json(row[0]) if row else None

    async def list_records(
        self, *, scope: str | None = None, limit: int | None = None
    ) -> list[MemoryRecord]:
        return await self._run(self._list_records, scope, limit)

    def _list_records(self, scope: str | None, limit: int | None) -> list[MemoryRecord]:
        rows = self._conn.execute(
            "SELECT record_json FROM memories WHERE (?1 IS NULL OR scope = ?1) "
            "ORDER BY timestamp DESC, id DESC LIMIT ?2",
            (scope, -1 if limit is None else limit),
        )
        return [MemoryRecord.model_validate_json(row[0]) for row in rows]

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
            "SELECT count(*) FILTER (WHERE json_array_length(record_json, '$.flags') > 0), "
            "count(*) FILTER (WHERE record_json ->> '$.provenance' = 'imported') FROM memories"
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

    async def search(
        self,
        vector: np.ndarray,
        query_text: str,
        *,
        scope: str,
        error_type: str | None,
        top_k: int,
        min_score: float,
        now: datetime,
    ) -> list[MemorySearchResult]:
        return await self._run(
            self.search_sync, vector, query_text, scope, error_type, top_k, min_score, now
        )

    def search_sync(
        self,
        vector: np.ndarray,
        query_text: str,
        scope: str,
        error_type: str | None,
        top_k: int,
        min_score: float,
        now: datetime,
    ) -> list[MemorySearchResult]:
        """Hybrid search over the records that pass scope, error type and expiry."""
        with self._snapshot():
            self._sync_index()
            error_key = error_type.casefold() if error_type else None
            query = np.asarray(vector, dtype=np.float32).reshape(-1)
            pool = max(top_k * 10, 50)
            by_vector = self._index.top(query, scope, error_key, now.timestamp(), pool)
            if not by_vector:
                return []
            by_keyword = self._keyword_ranking(query_text, scope, error_key, now, pool)
            fused: dict[str, float] = {}
            for ranking in ([memory_id for memory_id, _ in by_vector], by_keyword):
                for rank, memory_id in enumerate(ranking, start=1):
                    fused[memory_id] = fused.get(memory_id, 0.0) + 1.0 / (RRF_K + rank)
            cosine = dict(by_vector)
            missing = [memory_id for memory_id in fused if memory_id not in cosine]
            cosine.update(self._index.similarities(query, missing))
            ranked = sorted(
                (memory_id for memory_id in fused if cosine[memory_id] >= min_score),
                key=lambda memory_id: (fused[memory_id], cosine[memory_id]),
                reverse=True,
            )[:top_k]
            records = self._records(ranked)
            return [
                MemorySearchResult(record=records[memory_id], score=cosine[memory_id], rank=rank)
                for rank, memory_id in enumerate(ranked, start=1)
            ]

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
        self, text: str, scope: str, error_key: str | None, now: datetime, limit: int
    ) -> list[str]:
        words = self._rare_words(keyword_words(text))
        if not words:
            return []
        match = " OR ".join(f'"{word}"' for word in words)
        rows = self._conn.execute(
            """SELECT m.memory_id FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid
               WHERE memories_fts MATCH ?1 AND m.scope = ?2
                 AND (?3 IS NULL OR m.error_type_key = ?3)
                 AND (m.expires_epoch IS NULL OR m.expires_epoch > ?4)
               ORDER BY bm25(memories_fts) LIMIT ?5""",
            (match, scope, error_key, now.timestamp(), limit),
        )
        return [row[0] for row in rows]

    def _rare_words(self, words: list[str]) -> list[str]:
        """The rarest of `words`, as many as fit the postings budget; common ones left out.

        Each word's record count is counted only up to the ceiling, so looking is cheap
        however common a word is.
        """
        ceiling = int(max(RARE_WORD_FLOOR, RARE_WORD_SHARE * len(self._index)))
        counts = {word: self._records_with(word, ceiling + 1) for word in words}
        chosen, postings = [], 0
        for word in sorted((w for w in words if 0 < counts[w] <= ceiling), key=counts.__getitem__):
            if postings + counts[word] > POSTINGS_BUDGET:
                break
            chosen.append(word)
            postings += counts[word]
        return chosen

    def _records_with(self, word: str, cap: int) -> int:
        return self._conn.execute(
            "SELECT count(*) FROM (SELECT 1 FROM memories_fts WHERE memories_fts MATCH ? LIMIT ?)",
            (f'"{word}"', cap),
        ).fetchone()[0]

    def _records(self, memory_ids: list[str]) -> dict[str, MemoryRecord]:
        if not memory_ids:
            return {}
        rows = self._conn.execute(
            f"SELECT memory_id, record_json FROM memories "
            f"WHERE memory_id IN ({','.join('?' * len(memory_ids))})",
            memory_ids,
        )
        return {memory_id: MemoryRecord.model_validate_json(body) for memory_id, body in rows}

    async def close(self) -> None:
        with self._lock:
            self._conn.close()
