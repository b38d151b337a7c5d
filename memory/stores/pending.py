"""The pending queue: fixes MCP clients proposed, waiting for the operator's yes or no.

It lives in a SQLite file, each write one IMMEDIATE transaction with synchronous=FULL, so a
proposal acknowledged to a client survives kill -9 of the server or of `memory confirm`.
For a `sqlite://` store the file is the store's own (table `pending_proposals`, migration
m002). A VectorAI store has no local file, and its server is shared by a team while a
proposal is one operator's to review: the queue is then `pending.sqlite3` in the data dir,
beside the ledger and the transcripts, the same schema opened the same way.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from pathlib import Path
from urllib.parse import urlsplit

from memory.errors import MemoryValidationError
from memory.records import Proposal, ProposalStatus, utc_now
from memory.stores.database import LockedDatabase
from memory.stores.protocol import sqlite_path_from_url


class AmbiguousProposalIdError(MemoryValidationError):
    """A proposal id prefix that matches more than one proposal."""


def queue_path(memory_url: str, data_dir: Path) -> Path:
    """Where the pending queue of this memory lives (see the module's docstring)."""
    if urlsplit(memory_url).scheme == "sqlite":
        return sqlite_path_from_url(memory_url)
    return data_dir / "pending.sqlite3"


class PendingQueue(LockedDatabase):
    """Proposals by id, oldest first; a decision is taken once, only from `pending`."""

    def _write(self, sql: str, parameters: tuple[object, ...]) -> int:
        """One statement as one IMMEDIATE transaction; the number of rows it changed."""
        return self._transaction(lambda conn: conn.execute(sql, parameters).rowcount)

    async def add(self, proposal: Proposal) -> None:
        await self._run(
            self._write,
            "INSERT INTO pending_proposals (proposal_id, scope, proposed_at, proposal_json) "
            "VALUES (?, ?, ?, ?)",
            (
                proposal.proposal_id,
                proposal.scope,
                proposal.proposed_at.isoformat(),
                proposal.to_json(),
            ),
        )

    async def find(self, proposal_id: str) -> Proposal:
        """The proposal with this id, or the one whose id starts with it; else a clear error."""

        def read() -> list[tuple[str, ...]]:
            return self._conn.execute(
                f"SELECT proposal_id, {_COLUMNS} FROM pending_proposals "
                "WHERE substr(proposal_id, 1, length(?1)) = ?1 ORDER BY id",
                (proposal_id,),
            ).fetchall()

        rows = await self._run(read)
        exact = [row for row in rows if row[0] == proposal_id]
        if exact or len(rows) == 1:
            return _proposal(*(exact or rows)[0][1:])
        if rows:
            raise AmbiguousProposalIdError(
                f"proposal id prefix {proposal_id!r} matches {len(rows)} proposals; give more"
            )
        raise MemoryValidationError(f"no proposal with id {proposal_id!r}")

    async def listing(self, status: ProposalStatus | None = "pending") -> list[Proposal]:
        """Proposals of this status (None: all), oldest first."""

        def read() -> list[tuple[str, ...]]:
            return self._conn.execute(
                f"SELECT {_COLUMNS} FROM pending_proposals "
                "WHERE ?1 IS NULL OR status = ?1 ORDER BY id",
                (status,),
            ).fetchall()

        return [_proposal(*row) for row in await self._run(read)]

    async def count_pending(self) -> int:
        return await self._run(
            lambda: self._conn.execute(
                "SELECT count(*) FROM pending_proposals WHERE status = 'pending'"
            ).fetchone()[0]
        )

    async def decide(
        self, proposal_id: str, status: ProposalStatus, memory_id: str | None = None
    ) -> bool:
        """Mark a pending proposal confirmed or rejected; False if it was decided already."""

        changed = await self._run(
            self._write,
            "UPDATE pending_proposals SET status = ?, memory_id = ?, decided_at = ? "
            "WHERE proposal_id = ? AND status = 'pending'",
            (status, memory_id, utc_now().isoformat(), proposal_id),
        )
        return changed == 1

    async def close(self) -> None:
        await self._run(self._conn.close)  # closing may checkpoint the WAL: off the loop


_COLUMNS = "proposal_json, status, memory_id, decided_at"


def _proposal(body: str, status: str, memory_id: str | None, decided_at: str | None) -> Proposal:
    """A row as a Proposal: the JSON holds what was proposed, the columns its decision."""
    decided = datetime.fromisoformat(decided_at) if decided_at else None
    return replace(Proposal.from_json(body), status=status, memory_id=memory_id, decided_at=decided)
