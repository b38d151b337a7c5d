"""The operator's review of the fixes MCP clients proposed, shared by `memory confirm|reject`
and the dashboard's review screen: what a confirmation shows, and what it writes.

A confirmation writes the record first and marks the proposal after: one stopped in
between leaves the proposal pending, and confirming it again writes the same record id.
"""

from __future__ import annotations

from dataclasses import dataclass

from memory.embedding.embedder import Embedder
from memory.errors import MemoryValidationError
from memory.records import MemoryRecord, MemorySearchResult, Proposal
from memory.service import MemoryService
from memory.stores.pending import PendingQueue
from memory.stores.protocol import MemoryStore

OPERATOR_SESSION = "operator"


class ProposalDecidedError(MemoryValidationError):
    """The proposal was confirmed or rejected already, here or by another process."""


@dataclass(frozen=True)
class Review:
    """A pending proposal as the operator judges it: the exact record it would become, the
    nearest records in its scope, and the near-duplicate a yes would confirm again."""

    proposal: Proposal
    record: MemoryRecord
    nearest: list[MemorySearchResult]
    duplicate_of: MemoryRecord | None


async def pending_proposal(queue: PendingQueue, proposal_id: str) -> Proposal:
    """The pending proposal with this id or prefix; ProposalDecidedError once it is decided
    (the queue's own errors for an unknown or ambiguous id)."""
    proposal = await queue.find(proposal_id)
    if proposal.status != "pending":
        raise _decided(proposal)
    return proposal


def _decided(proposal: Proposal) -> ProposalDecidedError:
    into = f" as {proposal.memory_id}" if proposal.memory_id else ""
    return ProposalDecidedError(f"proposal {proposal.short_id} was already {proposal.status}{into}")


def _service(store: MemoryStore, embedder: Embedder, proposal: Proposal) -> MemoryService:
    return MemoryService(store, embedder, session_id=OPERATOR_SESSION, scope=proposal.scope)


async def review_of(store: MemoryStore, embedder: Embedder, proposal: Proposal) -> Review:
    """What a store confirmation shows for this proposal; nothing is written."""
    service = _service(store, embedder, proposal)
    record = service.record_of(proposal)
    nearest = await service.nearest(record)
    return Review(proposal, record, nearest, service.duplicate_of(record, nearest))


async def confirm(
    queue: PendingQueue, store: MemoryStore, embedder: Embedder, review: Review
) -> str:
    """Write the reviewed record (or confirm its near-duplicate again), then mark the
    proposal confirmed; the record's id. ProposalDecidedError, with nothing written, if the
    proposal was decided while the operator looked; naming the record if it was decided
    while the record was written."""
    proposal = await pending_proposal(queue, review.proposal.proposal_id)
    service = _service(store, embedder, proposal)
    if review.duplicate_of is None:
        memory_id = await service.commit(review.record)
    else:
        memory_id = (await service.confirm_again(review.duplicate_of, review.record)).memory_id
    if not await queue.decide(proposal.proposal_id, "confirmed", memory_id):
        raise ProposalDecidedError(f"{proposal.short_id} was decided meanwhile; stored {memory_id}")
    return memory_id


async def reject(queue: PendingQueue, proposal: Proposal) -> None:
    """Mark the proposal rejected; nothing is written to memory. ProposalDecidedError,
    saying how, if it was decided meanwhile."""
    if not await queue.decide(proposal.proposal_id, "rejected"):
        raise _decided(await queue.find(proposal.proposal_id))
