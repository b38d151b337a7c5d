"""`memory pending|confirm|reject`: the operator's side of the MCP clients' proposals.

`confirm` shows what a store confirmation shows (the exact record, its diff, the nearest
records) and asks the same question the headless session does; off a terminal it needs
`--yes`. What it shows and writes is memory/review.py's, as the dashboard's review screen's.
"""

from __future__ import annotations

import argparse
import json
import sys

from app.config.settings import Settings
from app.console import make_console
from app.errors import CommandError
from app.text_fit import clip
from memory import review
from memory.errors import MemoryValidationError
from memory.records import Proposal
from memory.stores.pending import AmbiguousProposalIdError, PendingQueue, queue_path
from memory.stores.protocol import MemoryStore
from memory.text import as_markup

console = make_console()


def open_queue(store: MemoryStore, settings: Settings) -> PendingQueue:
    return PendingQueue(queue_path(store.url, settings.data_dir))


async def pending_proposal(queue: PendingQueue, proposal_id: str) -> Proposal:
    """The pending proposal with this id or prefix: unknown or decided exit 1, ambiguous 2."""
    try:
        return await review.pending_proposal(queue, proposal_id)
    except AmbiguousProposalIdError as exc:
        raise CommandError(str(exc), 2) from exc
    except MemoryValidationError as exc:
        raise CommandError(str(exc)) from exc


async def memory_pending(args: argparse.Namespace, settings: Settings, store: MemoryStore) -> int:
    queue = open_queue(store, settings)
    try:
        proposals = await queue.listing("pending")
    finally:
        await queue.close()
    if args.json:
        print(json.dumps([p.to_dict() for p in proposals]))
        return 0
    if not proposals:
        console.print("No pending proposals.")
        return 0
    for p in proposals:
        flagged = "  [red]FLAGGED as instruction-like[/]" if p.flags else ""
        console.print(
            f"[bold]{p.short_id}[/]  {as_markup(p.error_type)}  scope {as_markup(p.scope)}  "
            f"from {as_markup(p.client)}  {p.proposed_at:%Y-%m-%d %H:%M}{flagged}"
        )
        console.print(f"    {as_markup(clip(' '.join(p.fix_description.split()), 90))}")
        console.print(f"    [dim]{as_markup(', '.join(p.file_paths))}[/]")
    return 0


async def memory_confirm(args: argparse.Namespace, settings: Settings, store: MemoryStore) -> int:
    from agent.supervisor import StoreProposal
    from app.sessions.headless import HeadlessSupervisor
    from widgets.record_view import record_renderable

    queue = open_queue(store, settings)
    try:
        proposal = await pending_proposal(queue, args.proposal_id)
        if not args.yes and not sys.stdin.isatty():
            raise CommandError(
                f"not confirming {proposal.short_id}: no terminal to ask; add --yes to confirm", 2
            )
        embedder = settings.embedder()
        seen = await review.review_of(store, embedder, proposal)
        console.print(
            f"[bold]proposal {proposal.short_id}[/] from the MCP client "
            f"{as_markup(proposal.client)}; tests reported passing, not run here"
        )
        console.print(record_renderable(seen.record, seen.nearest))
        supervisor = HeadlessSupervisor(approve_live_cost=False, store="yes" if args.yes else "ask")
        if not await supervisor.confirm_store(
            StoreProposal(seen.record, seen.nearest, seen.duplicate_of)
        ):
            console.print(f"nothing written; {proposal.short_id} stays pending")
            return 1
        try:
            memory_id = await review.confirm(queue, store, embedder, seen)
        except review.ProposalDecidedError as exc:  # by another process, meanwhile
            raise CommandError(str(exc)) from exc
    finally:
        await queue.close()
    again = " (confirmed again)" if seen.duplicate_of is not None else ""
    console.print(f"confirmed {proposal.proposal_id}: stored {memory_id}{again}")
    return 0


async def memory_reject(args: argparse.Namespace, settings: Settings, store: MemoryStore) -> int:
    queue = open_queue(store, settings)
    try:
        proposal = await pending_proposal(queue, args.proposal_id)
        try:
            await review.reject(queue, proposal)
        except review.ProposalDecidedError as exc:  # by another process, meanwhile
            raise CommandError(str(exc)) from exc
    finally:
        await queue.close()
    console.print(f"rejected {proposal.proposal_id}; nothing written")
    return 0


REVIEW_ACTIONS = {
    "pending": memory_pending,
    "confirm": memory_confirm,
    "reject": memory_reject,
}
