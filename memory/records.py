"""Data types of the codebase memory: what a confirmed fix looks like at rest and in a search.

Widgets import these for display, so this module depends on nothing outside memory/: each
type checks its fields as it is made (memory.checked).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal

from memory.checked import Checked, FieldError
from memory.retrieval.failure_text import focus
from memory.retrieval.signature import failure_signature

if TYPE_CHECKING:
    import numpy as np

EMBEDDING_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
EMBEDDING_DIMENSION = 384

Provenance = Literal["test-confirmed", "imported", "proposed"]  # proposed: over MCP
Label = Literal["weak", "possible", "strong"]
LABELS: tuple[Label, ...] = ("weak", "possible", "strong")  # weakest first


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, kw_only=True)
class TestEvidence(Checked):
    """The passing test run that confirmed a fix, with the failing run this session saw
    before its first edit (`failing`; absent from records stored before red-before-green)."""

    __test__ = False  # not a pytest test class

    command: str
    exit_code: int
    passed: int | None  # None: the test runner's output did not say
    failed: int | None
    output_excerpt: str = ""
    source: str = ""  # where the command came from: flag, pyproject.toml, detected: ...
    failing: TestEvidence | None = None


@dataclass(frozen=True, kw_only=True)
class Confirmation(Checked):
    """A later session whose tests confirmed the same fix again ("confirm again"): kept on
    the record instead of a second, near-identical record."""

    session_id: str
    confirmed_at: datetime
    evidence: TestEvidence | None = None
    symptom: str = ""


@dataclass(frozen=True, kw_only=True)
class MemoryRecord(Checked):
    """One confirmed (or imported) fix, with the proof and the failure it answered, and each
    later confirmation of it. Records stored before confirmations existed load with none."""

    memory_id: str
    scope: str = "default"
    fix_description: str
    error_type: str
    file_paths: tuple[str, ...]
    outcome: str
    symptom: str = ""
    diff: str = ""
    session_id: str
    response_id: str | None = None
    timestamp: datetime
    expires_at: datetime | None = None
    embedding_model: str = EMBEDDING_MODEL
    provenance: Provenance = "test-confirmed"
    evidence: TestEvidence | None = None
    flags: tuple[str, ...] = ()
    confirmations: tuple[Confirmation, ...] = ()
    # Sessions ended red after receiving this record that the operator has already looked
    # at and cleared ("unstale"): only red sessions beyond these count toward staleness.
    stale_cleared_red: int = 0

    @property
    def short_id(self) -> str:
        return self.memory_id[:8]

    @property
    def times_confirmed(self) -> int:
        """The first confirmation (the store) and every "confirm again" since."""
        return 1 + len(self.confirmations)

    def is_expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now

    @property
    def signature(self) -> tuple[str, ...]:
        """The shapes of the mismatch in the symptom (see memory.retrieval.signature)."""
        return failure_signature(self.symptom)

    @property
    def failure(self) -> str:
        """The symptom as it is embedded and indexed: without a pytest run's session noise."""
        return focus(self.symptom)

    def embedding_text(self) -> str:
        """The text whose embedding represents this record: the failure's shape, the failure,
        then the fix — the order in which a later failure will resemble it."""
        parts = [*self.signature, self.failure, self.error_type, self.fix_description]
        return "\n".join(part for part in parts if part)


@dataclass(frozen=True, kw_only=True)
class MemorySearchResult(Checked):
    """A record returned by a search. `rank` is its place in the fused ranking the search
    used; `score` is its cosine similarity to the query; `vector_rank` and `keyword_rank`
    are its places in each ranking (None: not among that ranking's candidates)."""

    record: MemoryRecord
    score: float
    rank: int
    vector_rank: int | None = None
    keyword_rank: int | None = None
    label: Label = "possible"
    stale: bool = False  # possibly stale: it reached sessions that then ended red

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.rank < 1:
            raise FieldError("rank", "should be at least 1")


@dataclass(frozen=True, kw_only=True)
class DeliveryStats(Checked):
    """How often a record reached a session, and how those sessions ended."""

    delivered: int = 0
    sessions_ended: int = 0
    sessions_green: int = 0

    @property
    def sessions_red(self) -> int:
        return self.sessions_ended - self.sessions_green

    def describe(self) -> str:
        if not self.delivered:
            return "never delivered"
        text = f"delivered {self.delivered} time{'s' if self.delivered != 1 else ''}"
        if self.sessions_ended:
            text += f", {self.sessions_green} of {self.sessions_ended} sessions ended green"
        return text


def possibly_stale(record: MemoryRecord, stats: DeliveryStats | None, after: int) -> bool:
    """Delivered to `after` or more sessions that then ended red, beyond those the operator
    cleared: the fix it describes may no longer hold."""
    return stats is not None and stats.sessions_red - record.stale_cleared_red >= after


@dataclass(frozen=True, kw_only=True)
class StoreStats(Checked):
    """Counts for `memory stats`."""

    records: int
    by_scope: dict[str, int]
    by_error_type: dict[str, int]
    flagged: int
    imported: int
    expired: int
    deliveries: int

    def held(self, scope: str | None) -> int:
        """Records in `scope`, or in every scope when it is None."""
        return self.by_scope.get(scope, 0) if scope else self.records


ProposalStatus = Literal["pending", "confirmed", "rejected"]


@dataclass(frozen=True, kw_only=True)
class Proposal(Checked):
    """A fix an MCP client proposed (`propose_fix`), redacted and flagged: never a record
    until the operator confirms it (`memory confirm`). Its tests ran on the client's side."""

    proposal_id: str
    scope: str
    client: str  # the MCP client's name, from its initialize request
    proposed_at: datetime
    symptom: str
    fix_description: str
    error_type: str
    file_paths: tuple[str, ...]
    diff: str
    test_command: str
    test_output: str
    flags: tuple[str, ...] = ()
    status: ProposalStatus = "pending"
    memory_id: str | None = None  # the record a confirmation wrote (or confirmed again)
    decided_at: datetime | None = None

    @property
    def short_id(self) -> str:
        return self.proposal_id[:8]


@dataclass(frozen=True)
class SearchRequest:
    """One search, as every store takes it: the query's vector and text, and what narrows
    the candidates before anything is ranked."""

    vector: np.ndarray
    query_text: str
    scope: str | None  # None searches every scope
    error_type: str | None
    top_k: int
    min_score: float  # cosine similarity
    now: datetime  # records expired by then are left out
