"""The embedded store's file: opened in WAL mode, its schema kept by append-only migrations.

As in simonw/llm, each migration is a function `mNNN_what(conn)`, registered in order by
`@migration`; its number is its place in the list. `migrate` applies each missing one in its
own IMMEDIATE transaction, together with its row in the migrations table, so a migration
that fails part-way leaves nothing behind and runs again next time. Never edit or reorder
a shipped migration: a database that already ran it will not run it again. Add the next.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

from memory.errors import MemoryStoreError
from memory.records import utc_now

SCHEMA_TABLE = "astra_schema_migrations"
BUSY_TIMEOUT_MS = 10_000

Migration = Callable[[sqlite3.Connection], None]
MIGRATIONS: list[Migration] = []


def migration(function: Migration) -> Migration:
    """Register `function` as the next migration; its name must carry its number."""
    number = len(MIGRATIONS) + 1
    if not function.__name__.startswith(f"m{number:03d}_"):
        raise ValueError(f"migration {function.__name__} must be named m{number:03d}_...")
    MIGRATIONS.append(function)
    return function


FTS_COLUMNS = ("fix_description", "symptom", "error_type", "file_paths", "signature")


def fts_triggers(table: str, fts: str, columns: tuple[str, ...]) -> list[str]:
    """The triggers that keep an external-content FTS5 index in step with its table: an
    insert adds the row's words, a delete removes them, an update does both."""
    names = ", ".join(columns)
    new = ", ".join(f"new.{column}" for column in columns)
    old = ", ".join(f"old.{column}" for column in columns)
    add = f"INSERT INTO {fts}(rowid, {names}) VALUES (new.id, {new});"
    remove = f"INSERT INTO {fts}({fts}, rowid, {names}) VALUES ('delete', old.id, {old});"
    return [
        f"CREATE TRIGGER {table}_ai AFTER INSERT ON {table} BEGIN {add} END",
        f"CREATE TRIGGER {table}_ad AFTER DELETE ON {table} BEGIN {remove} END",
        f"CREATE TRIGGER {table}_au AFTER UPDATE ON {table} BEGIN {remove} {add} END",
    ]


@migration
def m001_records_keywords_audit(conn: sqlite3.Connection) -> None:
    conn.execute(
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
            )"""
    )
    conn.execute("CREATE INDEX memories_scope ON memories(scope, error_type_key)")
    conn.execute(
        f"""CREATE VIRTUAL TABLE memories_fts USING fts5(
                {", ".join(FTS_COLUMNS)},
                content='memories', content_rowid='id', tokenize='porter unicode61'
            )"""
    )
    for statement in fts_triggers("memories", "memories_fts", FTS_COLUMNS):
        conn.execute(statement)
    conn.execute(
        """CREATE TABLE deliveries (
                id INTEGER PRIMARY KEY,
                memory_id TEXT NOT NULL,
                session_id TEXT NOT NULL,
                response_id TEXT,
                score REAL NOT NULL,
                rank INTEGER NOT NULL,
                delivered_at TEXT NOT NULL,
                session_green INTEGER
            )"""
    )
    conn.execute("CREATE INDEX deliveries_memory ON deliveries(memory_id)")
    conn.execute("CREATE INDEX deliveries_session ON deliveries(session_id)")


@migration
def m002_pending_proposals(conn: sqlite3.Connection) -> None:
    """The MCP clients' proposals waiting for the operator (memory.stores.pending)."""
    conn.execute(
        """CREATE TABLE pending_proposals (
                id INTEGER PRIMARY KEY,
                proposal_id TEXT NOT NULL UNIQUE,
                scope TEXT NOT NULL,
                proposed_at TEXT NOT NULL,
                proposal_json TEXT NOT NULL,
                status TEXT NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'confirmed', 'rejected')),
                memory_id TEXT,
                decided_at TEXT
            )"""
    )
    conn.execute("CREATE INDEX pending_proposals_status ON pending_proposals(status, id)")


LATEST_VERSION = len(MIGRATIONS)


def describe_error(exc: sqlite3.Error, path: Path) -> str:
    """What went wrong with the database at `path`, in words that say what to do: a full
    disk and a read-only file are not damage, and only a file that is not SQLite is "not a
    database"."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code == sqlite3.SQLITE_FULL:
        return f"memory database {path}: disk full ({exc}); free some space and try again"
    if code == sqlite3.SQLITE_READONLY or _read_only_filesystem(path):
        return f"memory database {path} is read-only ({exc}); it was not changed"
    if code == sqlite3.SQLITE_NOTADB:
        return f"{path} is not a memory database ({exc})"
    return f"memory database {path}: {exc}"


def _read_only_filesystem(path: Path) -> bool:
    try:
        return bool(os.statvfs(path.parent).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def open_database(path: Path) -> sqlite3.Connection:
    """Open (or create) the memory database at `path` in WAL mode with its schema up to
    date; a file that is not ours is refused untouched. Writes are synchronous=FULL: a
    commit is on disk before we say "stored"."""
    if str(path) in {":memory:", ""} or str(path).startswith("file::memory:"):
        raise MemoryStoreError(
            "sqlite:///:memory: is not supported: memory must outlive the process; "
            "name a file, e.g. sqlite:///memory.sqlite3"
        )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise MemoryStoreError(f"cannot create {path.parent}: {exc.strerror}") from exc
    conn = None
    try:
        conn = sqlite3.connect(
            path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000
        )
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    except sqlite3.DatabaseError as exc:
        if conn is not None:
            conn.close()
        raise MemoryStoreError(describe_error(exc, path)) from exc
    if tables and SCHEMA_TABLE not in tables:
        conn.close()
        raise MemoryStoreError(
            f"{path} is a SQLite database but not a memory database; refusing to touch it"
        )
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        migrate(conn, str(path))
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise MemoryStoreError(describe_error(exc, path)) from exc
    return conn


def schema_version(conn: sqlite3.Connection) -> int:
    row = conn.execute(f"SELECT max(version) FROM {SCHEMA_TABLE}").fetchone()
    return int(row[0] or 0)


def migrate(conn: sqlite3.Connection, database: str) -> None:
    """Apply each missing migration to `conn` (in autocommit mode) in its own transaction.

    Several processes may open the same file at once: each migration is re-checked after
    the write lock is taken, so only one of them applies it.
    """
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {SCHEMA_TABLE} "
        "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    found, latest = schema_version(conn), len(MIGRATIONS)
    if found > latest:
        raise MemoryStoreError(
            f"{database} has schema version {found}, newer than this program's "
            f"{latest}; upgrade astra-codebase-memory"
        )
    applied = {row[0] for row in conn.execute(f"SELECT version FROM {SCHEMA_TABLE}")}
    for version, function in enumerate(MIGRATIONS, start=1):
        if version in applied:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            if conn.execute(
                f"SELECT 1 FROM {SCHEMA_TABLE} WHERE version = ?", (version,)
            ).fetchone():
                conn.execute("ROLLBACK")  # another process applied it while we waited
                continue
            function(conn)
            conn.execute(
                f"INSERT INTO {SCHEMA_TABLE} VALUES (?, ?, ?)",
                (version, function.__name__, utc_now().isoformat()),
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
