"""`astra-memory memory ...`: browse, search, audit, prune and move the memory from the shell.

Actions that only read or delete never load the embedding model; search, import and eval
do, once. What only one action needs (evaluation, transfer, progress bars, tables, diff
syntax) is imported in that action, so a cold `memory search` pays for none of it. Over 400 lines:
one short function per `memory` action, kept together so the command reads in one place.
"""

from __future__ import annotations

import argparse
import errno
import json
import sys
from pathlib import Path

from app.config.settings import Settings
from app.console import make_console
from app.errors import CommandError
from app.text_fit import clip
from memory.records import MemoryRecord, MemorySearchResult, possibly_stale, utc_now
from memory.retrieval.explain import explanation, query_reading
from memory.service import MemoryService, clear_stale
from memory.stores.protocol import MemoryStore, open_store
from memory.text import as_markup, counts_text

console = make_console()
err_console = make_console(stderr=True)

# an export path that names no writable file: the user's to change (exit 2), unlike a full disk
BAD_PATH = frozenset(
    (
        errno.ENOENT,
        errno.ENOTDIR,
        errno.EISDIR,
        errno.EACCES,
        errno.EPERM,
        errno.EROFS,
        errno.ENAMETOOLONG,
    )
)


async def memory(args: argparse.Namespace, settings: Settings) -> int:
    if args.action == "migrate":
        return await memory_migrate(args, settings)
    store = open_store(args.memory or settings.memory_url)
    try:
        return await ACTIONS[args.action](args, settings, store)
    finally:
        await store.close()


async def resolve_id(store: MemoryStore, memory_id: str) -> MemoryRecord:
    """The record with this id, or the one record whose id starts with it; an ambiguous
    prefix is a usage error (exit 2), an unknown id exit 1."""
    record = await store.get(memory_id)
    if record is not None:
        return record
    matches = [r for r in await store.list_records() if r.memory_id.startswith(memory_id)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise CommandError(f"id prefix {memory_id!r} matches {len(matches)} records; give more", 2)
    raise CommandError(f"no memory record with id {memory_id!r}")


def provenance_label(record: MemoryRecord) -> str:
    if record.provenance == "proposed":
        return "proposed over MCP, tests run by the client, confirmed by the operator"
    return "test-confirmed" if record.provenance == "test-confirmed" else "IMPORTED, not tested"


def _markers(record: MemoryRecord) -> str:
    """Rich markup that flags imported and instruction-like records, each mark led by two
    spaces (none when there is no mark: a line must not end in spaces)."""
    marks = "  [yellow]IMPORTED, not tested[/]" if record.provenance == "imported" else ""
    return marks + ("  [red]FLAGGED as instruction-like[/]" if record.flags else "")


# -- memory actions --------------------------------------------------------------------


async def memory_list(args: argparse.Namespace, settings: Settings, store: MemoryStore) -> int:
    records = await store.list_records(scope=args.scope, limit=args.limit or None)
    stats = await store.delivery_stats([r.memory_id for r in records])
    if args.json:
        print(json.dumps([{**r.to_dict(), "audit": stats[r.memory_id].to_dict()} for r in records]))
        return 0
    if not records:
        console.print("No memory records." + (f" (scope {args.scope})" if args.scope else ""))
        if args.scope:
            await _other_scopes_hint(store, args.scope, "pass another --scope, or none for all")
        return 0
    for r in records:
        audit = stats[r.memory_id]
        console.print(
            f"[bold]{r.short_id}[/]  {as_markup(r.error_type)}  scope {as_markup(r.scope)}  "
            f"{r.timestamp:%Y-%m-%d}  {audit.describe()}{_markers(r)}"
            + (
                "  [red]POSSIBLY STALE[/]"
                if possibly_stale(r, audit, settings.astra_stale_after)
                else ""
            )
        )
        console.print(f"    {as_markup(r.fix_description)}", overflow="ellipsis", no_wrap=True)
        console.print(
            f"    [dim]{as_markup(', '.join(r.file_paths))}[/]",
            overflow="ellipsis",
            no_wrap=True,
        )
    if args.limit and len(records) == args.limit:
        total = (await store.stats(utc_now())).held(args.scope)
        if total > len(records):
            console.print(
                f"{len(records)} of {total} records, newest first: --limit 0 lists all",
                style="dim",
            )
    return 0


async def memory_show(args: argparse.Namespace, settings: Settings, store: MemoryStore) -> int:
    record = await resolve_id(store, args.memory_id)
    audit = (await store.delivery_stats([record.memory_id]))[record.memory_id]
    stale = possibly_stale(record, audit, settings.astra_stale_after)
    if args.json:
        row = {**record.to_dict(), "audit": audit.to_dict()}
        print(json.dumps({**row, "possibly_stale": stale}))
        return 0
    rows = [
        ("memory id", record.memory_id),
        ("scope", record.scope),
        ("kind", provenance_label(record)),
        ("error type", record.error_type),
        ("files", ", ".join(record.file_paths)),
        ("fix", record.fix_description),
        ("outcome", record.outcome),
        ("stored", record.timestamp.isoformat()),
        ("expires", record.expires_at.isoformat() if record.expires_at else "never"),
        (
            "session",
            record.session_id + (f" (response {record.response_id})" if record.response_id else ""),
        ),
        ("embedding", record.embedding_model),
        ("audit", audit.describe()),
    ]
    if record.confirmations:
        last = record.confirmations[-1]
        rows.append(
            (
                "confirmed",
                f"{record.times_confirmed} times, last {last.confirmed_at.isoformat()} "
                f"by session {last.session_id}",
            )
        )
    if stale:
        rows.append(
            (
                "POSSIBLY STALE",
                f"{audit.sessions_red - record.stale_cleared_red} sessions given it ended red; "
                f"`memory unstale {record.short_id}` clears this",
            )
        )
    if record.evidence:
        e = record.evidence
        rows.append(
            ("evidence", f"`{e.command}` exit {e.exit_code}: {counts_text(e.passed, e.failed)}")
        )
    if record.flags:
        rows.append(("FLAGGED", "; ".join(record.flags)))
    _print_fields(rows)
    for title, body in (
        ("symptom", record.symptom),
        ("passing output", record.evidence.output_excerpt if record.evidence else ""),
    ):
        if body:
            console.print(f"\n[bold]{title}[/]")
            console.print(body, markup=False)
    if record.diff:
        from rich.syntax import Syntax

        console.print("\n[bold]diff[/]")
        console.print(Syntax(record.diff, "diff", theme="ansi_dark", word_wrap=True))
    return 0


def _print_fields(rows: list[tuple[str, str]]) -> None:
    """Name and value side by side: a grid on a terminal (long values wrap under their
    column); piped, one whole line each, without the spaces a grid pads its lines with."""
    from rich.table import Table

    table = Table.grid(padding=(0, 2))
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        style = "bold red" if name == "FLAGGED" else "bold"
        if console.is_terminal:
            table.add_row(f"[{style}]{name}[/]", as_markup(value))
        else:
            console.print(f"[{style}]{name}[/]{' ' * (width - len(name))}  {as_markup(value)}")
    if table.rows:
        console.print(table)


async def memory_search(args: argparse.Namespace, settings: Settings, store: MemoryStore) -> int:
    if args.query == "-":
        args.query = _stdin_query()
    service = MemoryService(
        store,
        settings.embedder(),
        session_id="cli",
        scope=args.scope,
        stale_after=settings.astra_stale_after,
    )
    results = await service.find(
        args.query,
        error_type=args.error_type,
        top_k=args.top_k,
        min_score=args.min_score,
        all_scopes=args.all_scopes,
    )
    if args.json:
        rows = [_search_row(r) for r in results]
        if args.explain:  # how the query was read, and why each match ranked, as printed
            reading = query_reading(args.query)
            rows = [
                {**row, "why": explanation(args.query, r), "reading": reading}
                for row, r in zip(rows, results, strict=True)
            ]
        print(json.dumps(rows))
        return 0
    if args.explain:
        console.print(f"[dim]{as_markup(query_reading(args.query))}[/]")
    if not results:
        where = "any scope" if args.all_scopes else f"scope {args.scope!r}"
        console.print(f"No matches in {as_markup(where)}.")
        if not args.all_scopes:
            await _other_scopes_hint(store, args.scope)
        return 0
    for r in results:
        console.print(
            f"[bold]#{r.rank}  {r.label}  {r.score:.4f}[/]  {r.record.short_id}  "
            f"{as_markup(r.record.error_type)}"
            + (f"  scope {as_markup(r.record.scope)}" if args.all_scopes else "")
            + _markers(r.record)
            + ("  [red]POSSIBLY STALE[/]" if r.stale else "")
        )
        console.print(
            f"    {as_markup(r.record.fix_description)}", overflow="ellipsis", no_wrap=True
        )
        console.print(f"    [dim]{as_markup(', '.join(r.record.file_paths))}[/]")
        if args.explain:
            console.print(f"    [dim]{as_markup(explanation(args.query, r))}[/]")
    return 0


async def _other_scopes_hint(
    store: MemoryStore, scope: str, advice: str = "pass --scope S or --all-scopes"
) -> None:
    """Where the records are when the scope searched or listed has none that match (after
    the demo, its records are in the demo's own scope): one line, the biggest scopes named."""
    counts = (await store.stats(utc_now())).by_scope
    others = sorted(((n, s) for s, n in counts.items() if s != scope), reverse=True)
    if others:
        named = ", ".join(f"{s} {n}" for n, s in others[:3]) + (", …" if len(others) > 3 else "")
        console.print(
            f"{sum(n for n, _ in others)} record(s) in other scopes ({as_markup(named)}): {advice}"
        )


def _search_row(result: MemorySearchResult) -> dict[str, object]:
    """One match as `memory search --json` prints it: the record's fields, its cosine as
    `score`, and where and how it ranked."""
    return {
        "score": result.score,
        "rank": result.rank,
        "label": result.label,
        "vector_rank": result.vector_rank,
        "keyword_rank": result.keyword_rank,
        "possibly_stale": result.stale,
        **result.record.to_dict(),
    }


async def memory_delete(args: argparse.Namespace, settings: Settings, store: MemoryStore) -> int:
    record = await resolve_id(store, args.memory_id)
    if not args.yes:
        if not sys.stdin.isatty():
            raise CommandError(
                f"not deleting {record.short_id}: no terminal to ask; add --yes to delete", 2
            )
        fix = clip(" ".join(record.fix_description.split()), 60)
        err_console.print(
            f"Delete {record.short_id} ({as_markup(record.error_type)}: "
            f"{as_markup(fix)})? This cannot be undone. [y/N] ",
            end="",
        )
        if sys.stdin.readline().strip().lower() not in {"y", "yes"}:
            console.print("nothing deleted")
            return 1
    await store.delete(record.memory_id)
    console.print(f"deleted {record.memory_id}")
    return 0


async def memory_unstale(args: argparse.Namespace, settings: Settings, store: MemoryStore) -> int:
    """Clear the possibly-stale mark: the red sessions so far stop counting."""
    record = await resolve_id(store, args.memory_id)
    cleared = await clear_stale(store, record)
    console.print(
        f"{record.short_id}: not stale; {cleared.stale_cleared_red} red session(s) set aside"
    )
    return 0


async def memory_stats(args: argparse.Namespace, settings: Settings, store: MemoryStore) -> int:
    stats = await store.stats(utc_now())
    if args.json:
        print(stats.to_json())
        return 0
    console.print(f"store: {as_markup(store.url)}")
    console.print(
        f"records: {stats.records} · imported: {stats.imported} · flagged: {stats.flagged} · "
        f"expired: {stats.expired} · deliveries: {stats.deliveries}"
    )
    from rich.table import Table

    for title, counts in (("scope", stats.by_scope), ("error type", stats.by_error_type)):
        table = Table(title, "records")
        for name, count in sorted(counts.items(), key=lambda item: -item[1]):
            table.add_row(as_markup(name), str(count))
        console.print(table)
    return 0


async def memory_export(args: argparse.Namespace, settings: Settings, store: MemoryStore) -> int:
    from memory.transfer import export_lines, export_to_file

    if args.out:
        try:
            count = await export_to_file(store, Path(args.out), args.scope)
        except OSError as exc:  # a bad path, as import's unreadable file is: a usage error
            if exc.errno not in BAD_PATH:
                raise
            raise CommandError(f"cannot write {args.out}: {exc.strerror}", 2) from exc
    else:
        count = 0
        async for line in export_lines(store, scope=args.scope):
            sys.stdout.write(line + "\n")
            count += 1
    err_console.print(
        f"exported {count} record(s)" + (f" to {as_markup(args.out)}" if args.out else "")
    )
    return 0


def _stdin_query() -> str:
    """The query piped in (`pytest 2>&1 | astra-memory memory search -`), checked as a
    QUERY argument is: a usage error (exit 2) when blank or not UTF-8."""
    data = sys.stdin.buffer.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CommandError(f"the query on stdin: byte {exc.start} is not UTF-8 text", 2) from exc
    if not text.strip():
        raise CommandError("the query on stdin is empty", 2)
    return text


def _read_lines(name: str) -> list[str]:
    """A JSONL file's lines, split on "\\n" alone so U+2028 and U+0085 stay inside a line;
    a file that cannot be read is a usage error (exit 2), as `run --replay`'s is."""
    from memory.transfer import split_lines

    try:
        data = sys.stdin.buffer.read() if name == "-" else Path(name).read_bytes()
        text = data.decode("utf-8")  # as bytes: stdin's and a file's bad byte, told alike
        return split_lines(text.replace("\r\n", "\n").replace("\r", "\n"))
    except UnicodeDecodeError as exc:
        raise CommandError(f"cannot read {name}: byte {exc.start} is not UTF-8 text", 2) from exc
    except OSError as exc:  # the path once, not again inside the error's own text
        raise CommandError(f"cannot read {name}: {exc.strerror or exc}", 2) from exc


async def memory_import(args: argparse.Namespace, settings: Settings, store: MemoryStore) -> int:
    from rich.progress import Progress

    from memory.transfer import import_records, parse_import

    records = parse_import(_read_lines(args.file), default_scope=args.scope, now=utc_now())
    if not records:
        raise CommandError(f"{args.file} holds no records")
    present = {r.memory_id for r in records if await store.get(r.memory_id) is not None}
    with Progress(
        console=err_console, transient=True, disable=not err_console.is_terminal
    ) as progress:
        task = progress.add_task("embedding", total=len(records))
        result = await import_records(
            store,
            settings.embedder(),
            records,
            lambda done, total: progress.update(task, completed=done),
        )
    conflicts = set(result.conflicts)
    written = [r for r in records if r.memory_id not in conflicts]
    imported = sum(r.provenance == "imported" for r in written)
    updated = len(present - conflicts)
    console.print(
        f"imported {result.written} record(s) into {as_markup(store.url)}: "
        f"{result.written - updated} new, {updated} already present"
        + (" (updated in place)" if updated else "")
        + (f" ({imported} marked imported, not test-confirmed)" if imported else "")
    )
    for memory_id in result.conflicts:
        err_console.print(
            f"conflict: {memory_id} is test-confirmed in the store; the untested line for it "
            "was not imported"
        )
    return 0


async def memory_migrate(args: argparse.Namespace, settings: Settings) -> int:
    from rich.progress import Progress

    from memory.transfer import migrate

    if args.source == args.target:
        raise CommandError("--from and --to name the same store", 2)
    source = open_store(args.source)
    try:
        target = open_store(args.target)
        try:
            with Progress(
                console=err_console, transient=True, disable=not err_console.is_terminal
            ) as progress:
                task = progress.add_task("migrating", total=None)
                count = await migrate(
                    source,
                    target,
                    settings.embedder(),
                    lambda done, total: progress.update(task, completed=done, total=total),
                )
        finally:
            await target.close()
    finally:
        await source.close()
    console.print(
        f"copied {count} record(s) from {as_markup(source.url)} to {as_markup(target.url)}"
    )
    return 0


async def memory_eval(args: argparse.Namespace, settings: Settings, store: MemoryStore) -> int:
    from memory.evaluation import (
        CALIBRATION_DEPTH,
        AmbiguousExpectError,
        evaluate,
        fix_text_baseline,
        parse_queries,
        plain_bm25,
        prime,
        resolve_expected,
        vector_only,
    )

    service = MemoryService(store, settings.embedder(), session_id="eval", scope=args.scope)
    try:
        queries = await resolve_expected(service, parse_queries(_read_lines(args.queries)))
    except AmbiguousExpectError as exc:
        raise CommandError(str(exc), 2) from exc
    await prime(service, queries, baseline=args.baseline)
    report = await evaluate(service, queries)
    peers = {
        "bm25": await plain_bm25(service, queries),
        "vector": await vector_only(service, queries),
    }
    if args.baseline:
        peers["baseline"] = await fix_text_baseline(service, queries)
    if args.json:
        payload = report.model_dump(exclude=set() if report.groups else {"groups"})
        payload |= {
            key: figures.model_dump(exclude={"misses", "calibration"})
            for key, figures in peers.items()
        }
        print(json.dumps(payload))
        return 0
    names = {"bm25": "plain BM25 (bm25s)", "vector": "vectors alone", "baseline": "fix text alone"}
    for name, figures in (("memory", report), *((names[key], f) for key, f in peers.items())):
        console.print(
            f"{name}: queries {figures.queries} · recall@1 {figures.recall_at_1:.3f} · "
            f"recall@3 {figures.recall_at_3:.3f} · MRR {figures.mrr:.3f}"
        )
    if report.recall_at_1 < peers["bm25"].recall_at_1:
        console.print(
            "[yellow]warning:[/] on these queries plain BM25 puts the right fix first more often"
        )
    console.print(f"labels of the top {CALIBRATION_DEPTH}, how often right:")
    for label, figures in report.calibration.items():
        share = f"{figures.precision:.2f}" if figures.precision is not None else "-"
        console.print(f"  {label}: {share} ({figures.right} of {figures.matches})")
    for group, figures in report.groups.items():
        console.print(
            f"  {as_markup(group)}: queries {figures.queries} · "
            f"recall@1 {figures.recall_at_1:.3f} · "
            f"recall@3 {figures.recall_at_3:.3f} · MRR {figures.mrr:.3f}"
        )
    for miss in report.misses:
        where = f"rank {miss.rank}" if miss.rank else "not in top 10"
        query = clip(" ".join(miss.query.split()), 70)
        console.print(
            f"miss ({where}): expected {miss.expect[:8]}, got "
            f"{', '.join(i[:8] for i in miss.got) or 'nothing'} · {as_markup(query)}"
        )
    return 0


async def memory_review(args: argparse.Namespace, settings: Settings, store: MemoryStore) -> int:
    """pending, confirm and reject: the MCP clients' proposals (app/cli/review.py)."""
    from app.cli.review import REVIEW_ACTIONS

    return await REVIEW_ACTIONS[args.action](args, settings, store)


ACTIONS = {
    "list": memory_list,
    "show": memory_show,
    "search": memory_search,
    "delete": memory_delete,
    "unstale": memory_unstale,
    "stats": memory_stats,
    "export": memory_export,
    "import": memory_import,
    "eval": memory_eval,
    "pending": memory_review,
    "confirm": memory_review,
    "reject": memory_review,
}
