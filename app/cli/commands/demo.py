"""`astra-memory demo [--headless]`: the seed's two-session experiment, offline.

alpha fixes its bug on an empty memory scope and stores the fix; beta, a different project
with a bug of the same cause (`SHARED_CAUSE`), on a new response chain, must retrieve it
before its first edit; beta's fix is then checked against the original, untouched tests in
a fresh workspace. Only alpha's fix counts as a retrieval: any other match delivered to beta
is of another cause, and the summary says nothing relevant was found.

One plan (`plan_demo`) serves both ways to run it: in the dashboard, where the operator
confirms each store, and headless, printed as it runs. The dashboard's first frame must not
wait for the agent and memory layers, so they load only inside the headless run and the
checks, which come after the dashboard has closed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rich.table import Table

from app.config.file import config_path
from app.config.settings import Settings
from app.console import make_console
from app.dashboard.app import build_app, require_terminal
from app.sessions.options import (
    DEMO_PROJECTS,
    SessionOptions,
    new_session_id,
    require_demo_projects,
)
from app.sessions.queue import FinishedSession, SessionPlan
from memory.text import counts_text

if TYPE_CHECKING:
    from agent.loop import AstraAgent

console = make_console()

# alpha's CORS origins and beta's post tags: a comma-separated value keeps the space after
# its comma (demo_projects/README.md)
SHARED_CAUSE = "a comma-separated value keeps the space after its comma"


@dataclass(frozen=True)
class DemoPlan:
    """alpha then beta, each on a fresh copy of its project, in a scope of their own."""

    run_id: str
    root: Path
    sessions: list[SessionPlan]


def plan_demo(settings: Settings, memory: str | None, store: str) -> DemoPlan:
    """Copy the two projects into the data dir and plan a session on each."""
    require_demo_projects()
    run_id = new_session_id("demo")
    root = settings.data_dir / "demo" / run_id
    sessions = []
    for name in ("alpha", "beta"):
        shutil.copytree(DEMO_PROJECTS / f"scenario_{name}", root / name)
        options = SessionOptions(
            replay=DEMO_PROJECTS / "rehearsals" / f"scenario_{name}.jsonl",
            memory=memory,
            scope=run_id,
            store=store,
            on_success="branch",  # the copy keeps the fix, for the check against the tests
            demo_project=True,  # our own code: unconfined where bwrap is missing (README)
        )
        sessions.append(SessionPlan(options, root / name, f"{run_id}-{name}"))
    return DemoPlan(run_id, root, sessions)


async def demo(args: argparse.Namespace, settings: Settings) -> int:
    """The two sessions, in the dashboard or printed, then the five checks."""
    url = args.memory or settings.memory_url
    if args.headless:
        plan = plan_demo(settings, args.memory, store="yes")
        finished, url = await run_printed(plan, settings, url)
    else:
        require_terminal("`astra-memory demo --headless` prints the demo instead")
        plan = plan_demo(settings, args.memory, store="ask")  # the operator confirms each
        options = SessionOptions(memory=args.memory, scope=plan.run_id)
        app = build_app(settings, options, None, plans=plan.sessions)
        app.keep_theme(args.config.theme, config_path())  # as `tui` does
        code = await app.run_async()
        finished = app.sessions.finished
        if len(finished) < len(plan.sessions):
            console.print("the demo did not finish both sessions")
            return code or 1
    verified = await verify_against_original_tests(finished[1], plan.root / "beta-original-tests")
    return print_demo_summary(finished, verified, url)


async def run_printed(
    plan: DemoPlan, settings: Settings, url: str
) -> tuple[list[FinishedSession], str]:
    """Each planned session in turn, its events printed, every store confirmed; the
    sessions and the store's URL. A session's first, red test run is made while the one
    before it works (the projects share nothing but the store); its preflight, in its own
    turn, takes that run, and so does its first run_tests, as no file changed since."""
    from app.sessions.builder import build_agent, finish, finish_choice, preflight
    from app.sessions.headless import EventPrinter, HeadlessSupervisor
    from memory.stores.protocol import open_store

    store = open_store(url)
    printer = EventPrinter(as_json=False)
    agents: list[AstraAgent] = []
    ahead: asyncio.Task[object] | None = None  # the next session's red run
    begun = 0  # sessions whose turn came (a failed preflight discards its own workspace)
    finished: list[FinishedSession] = []
    try:
        for session in plan.sessions:
            agents.append(
                build_agent(
                    settings,
                    session.options,
                    workspace=session.workspace,
                    store=store,
                    supervisor=HeadlessSupervisor(approve_live_cost=False, store="yes"),
                    emit=printer,
                    session_id=session.session_id,
                )
            )
        for index, (session, agent) in enumerate(zip(plan.sessions, agents, strict=True)):
            console.rule(f"session {session.workspace.name}")
            begun += 1
            if ahead is not None:  # a run that failed is made again by the preflight
                await asyncio.gather(ahead, return_exceptions=True)
            await preflight(settings, session.options, agent)
            if index + 1 < len(agents):
                ahead = asyncio.create_task(agents[index + 1].tools.run_tests(offer=True))
            report = await agent.run(session.options.prompt)
            await agent.transport.aclose()
            ended = await finish(agent, finish_choice(report, "branch"))
            console.print(ended or "")
            finished.append(FinishedSession(session, report, agent.tools))
    finally:
        if ahead is not None:
            ahead.cancel()
            await asyncio.gather(ahead, return_exceptions=True)
        for index, agent in enumerate(agents[len(finished) :], start=len(finished)):
            await agent.transport.aclose()
            if index >= begun and agent.workspace is not None:
                agent.workspace.discard()  # made ahead, for a turn that never came
        await store.close()
    return finished, store.url


async def verify_against_original_tests(session: FinishedSession, fresh: Path) -> int | None:
    """Copy the untouched project, apply only the session's non-test edits, run the tests."""
    from agent.workspace_tools import WorkspaceTools

    shutil.copytree(DEMO_PROJECTS / f"scenario_{session.plan.workspace.name}", fresh)
    for relative in session.tools.edited_files:
        if relative.split("/")[0] == "tests" or "/tests/" in relative:
            continue
        shutil.copy2(session.tools.root / relative, fresh / relative)
    run = await WorkspaceTools(fresh, base_env=dict(os.environ)).run_tests()
    return run.exit_code


def print_demo_summary(sessions: list[FinishedSession], verify_exit: int | None, url: str) -> int:
    table = Table("session", "requests", "tool calls", "memory matches", "tests", "stored", "cost")

    for session in sessions:
        r = session.report
        matches = "; ".join(
            ", ".join(
                f"{m['memory_id'][:8]} {m.get('label', '')} {m['score']:.4f}"
                for m in search.matches
            )
            or "none"
            for search in r.memory_searches
        )
        tests = counts_text(r.tests.passed, r.tests.failed) if r.tests else "not run"
        table.add_row(
            session.plan.workspace.name,
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
    same_cause = bool(set(alpha.stored_memory_ids) & beta_found)
    # alpha's rehearsal always offers its fix once its tests pass: nothing stored then
    # means the operator said no, and beta had nothing to find.
    declined = alpha.exit_code == 0 and not alpha.stored_memory_ids
    checks: list[tuple[str, bool | None]] = [
        (
            "alpha passed its tests and stored a confirmed fix",
            None if declined else alpha.exit_code == 0 and bool(alpha.stored_memory_ids),
        ),
        ("beta started a new response chain", not beta.first_request_chained),
        (
            f"beta retrieved alpha's fix, the same cause: {SHARED_CAUSE}"
            if same_cause
            else "beta found nothing relevant in memory (alpha's fix, the same cause, was not "
            "delivered)",
            None if declined else same_cause,
        ),
        (
            "beta searched memory before its first edit",
            beta.first_search_turn is not None
            and (beta.first_edit_turn is None or beta.first_search_turn < beta.first_edit_turn),
        ),
        ("beta's fix passes the original, untouched tests", verify_exit == 0),
    ]
    for text, held in checks:
        mark = "[yellow]-" if held is None else "[green]✓" if held else "[red]✗"
        console.print(f"{mark} {text}{' (not run: nothing stored)' if held is None else ''}[/]")
    if other := len(beta_found - set(alpha.stored_memory_ids)):
        console.print(f"  beta was also given {other} match(es) of another cause: not counted")
    scope = sessions[0].plan.options.scope if sessions else "default"
    console.print(f"memory: {url} · scope {scope}")
    console.print(
        f"search it: {shlex.quote(own_program())} memory search "
        f"{shlex.join(['--memory', url, '--scope', scope, 'QUERY'])}"
    )
    if declined:
        console.print(
            "[yellow]the experiment is incomplete: alpha's tests passed, but the operator "
            "declined storing its fix, so beta had nothing to find (exit 3)[/]"
        )
        return 3
    return 0 if all(held for _, held in checks) else 1


def own_program() -> str:
    """How to run astra-memory from here: its name where the shell finds it, else its path
    in this interpreter's environment: relative below the current folder
    (`.venv/bin/astra-memory` after the README's set-up), whole elsewhere (not `../../..`)."""
    if shutil.which("astra-memory"):
        return "astra-memory"
    installed = Path(sys.executable).parent / "astra-memory"
    if not installed.exists():
        return "astra-memory"
    relative = os.path.relpath(installed)
    return str(installed.absolute()) if relative.startswith("..") else relative
