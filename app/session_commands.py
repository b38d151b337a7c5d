"""`astra-memory run`, `demo --headless` and `ledger`: sessions without the dashboard.

`demo` is the seed's two-session experiment, offline: alpha fixes its bug on an empty
memory scope and stores the fix; beta, a different project on a new response chain,
must retrieve it before its first edit; beta's fix is then checked against the original,
untouched tests in a fresh workspace.
"""

from __future__ import annotations

import argparse
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from agent import events as ev
from agent.workspace import WorkspaceTools
from app.headless_session import EventPrinter, HeadlessSupervisor
from app.options import (
    DEMO_PROJECTS,
    SessionOptions,
    new_session_id,
    options_from,
    require_demo_projects,
)
from app.session_builder import build_agent, ledger_for
from app.settings import Settings
from memory.store import open_store

console = Console(highlight=False)


async def run(args: argparse.Namespace, settings: Settings) -> int:
    options = options_from(args)
    store = open_store(options.memory or settings.memory_url)
    try:
        agent = build_agent(
            settings,
            options,
            workspace=Path(args.workspace),
            store=store,
            supervisor=HeadlessSupervisor(
                approve_live_cost=options.approve_live_cost, store=options.store
            ),
            emit=EventPrinter(as_json=args.json),
            session_id=new_session_id(),
        )
        try:
            report = await agent.run(options.prompt)
        finally:
            await agent.transport.aclose()
    finally:
        await store.close()
    return report.exit_code


async def ledger(args: argparse.Namespace, settings: Settings) -> int:
    book = ledger_for(settings)
    sessions = book.by_session()
    for session_id, row in sessions.items():
        console.print(
            f"{session_id}  {int(row['requests'])} requests  {int(row['input_tokens'])} in / "
            f"{int(row['output_tokens'])} out tokens  ${row['cost_usd']:.4f}",
            no_wrap=True,
            overflow="ellipsis",
        )
    if not sessions:
        console.print(f"No live spend recorded in {book.path}.")
    total = book.total()
    limit = settings.astra_budget_usd
    console.print(
        f"total ${total:.4f}"
        + (
            f" of ${limit:.2f} (ASTRA_BUDGET_USD), ${limit - total:.4f} left"
            if limit is not None
            else ""
        )
    )
    return 0


# -- demo ------------------------------------------------------------------------------


@dataclass
class DemoSession:
    name: str
    workspace: Path
    report: ev.SessionReport
    tools: WorkspaceTools


async def demo(args: argparse.Namespace, settings: Settings) -> int:
    """alpha then beta, printed as they run, then the five checks."""
    require_demo_projects()
    run_id = new_session_id("demo")
    root = settings.data_dir / "demo" / run_id
    store = open_store(args.memory or settings.memory_url)
    printer = EventPrinter(as_json=False)
    sessions: list[DemoSession] = []
    try:
        for name in ("alpha", "beta"):
            console.rule(f"session {name}")
            workspace = root / name
            shutil.copytree(DEMO_PROJECTS / f"scenario_{name}", workspace)
            options = SessionOptions(
                replay=DEMO_PROJECTS / "rehearsals" / f"scenario_{name}.jsonl",
                scope=run_id,
                store="yes",
            )
            agent = build_agent(
                settings,
                options,
                workspace=workspace,
                store=store,
                supervisor=HeadlessSupervisor(approve_live_cost=False, store="yes"),
                emit=printer,
                session_id=f"{run_id}-{name}",
            )
            try:
                report = await agent.run(options.prompt)
            finally:
                await agent.transport.aclose()
            sessions.append(DemoSession(name, workspace, report, agent.tools))
    finally:
        await store.close()
    verified = await verify_against_original_tests(sessions[1], root / "beta-original-tests")
    return print_demo_summary(sessions, verified, store.url)


async def verify_against_original_tests(session: DemoSession, fresh: Path) -> int | None:
    """Copy the untouched project, apply only the session's non-test edits, run the tests."""
    shutil.copytree(DEMO_PROJECTS / f"scenario_{session.name}", fresh)
    for relative in session.tools.edited_files:
        if relative.split("/")[0] == "tests" or "/tests/" in relative:
            continue
        shutil.copy2(session.workspace / relative, fresh / relative)
    run = await WorkspaceTools(fresh, base_env=dict(os.environ)).run_tests()
    return run.exit_code


def print_demo_summary(sessions: list[DemoSession], verify_exit: int | None, url: str) -> int:
    table = Table("session", "requests", "tool calls", "memory matches", "tests", "stored", "cost")
    for session in sessions:
        r = session.report
        matches = "; ".join(
            ", ".join(f"{m['memory_id'][:8]} {m['score']:.4f}" for m in search.matches) or "none"
            for search in r.memory_searches
        )
        tests = f"{r.tests.passed} passed, {r.tests.failed} failed" if r.tests else "not run"
        table.add_row(
            session.name,
            str(r.model_requests),
            str(r.tool_calls),
            matches or "no search",
            tests,
            ", ".join(i[:8] for i in r.stored_memory_ids) or "-",
            f"${r.cost_usd:.4f}",
        )
    console.print(table)
    alpha, beta = (session.report for session in sessions)
    beta_found = {m["memory_id"] for s in beta.memory_searches for m in s.matches}
    checks = [
        (
            "alpha passed its tests and stored a confirmed fix",
            alpha.exit_code == 0 and bool(alpha.stored_memory_ids),
        ),
        ("beta started a new response chain", not beta.first_request_chained),
        ("beta retrieved alpha's fix", bool(set(alpha.stored_memory_ids) & beta_found)),
        (
            "beta searched memory before its first edit",
            beta.first_search_turn is not None
            and (beta.first_edit_turn is None or beta.first_search_turn < beta.first_edit_turn),
        ),
        ("beta's fix passes the original, untouched tests", verify_exit == 0),
    ]
    for text, held in checks:
        console.print(f"{'[green]✓' if held else '[red]✗'} {text}[/]")
    console.print(f"memory: {url}")
    return 0 if all(held for _, held in checks) else 1
