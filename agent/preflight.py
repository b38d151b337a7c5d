"""Checks a session needs to pass before its first model request, and `doctor` prints.

Found at the end, an unreachable store costs every paid turn before it; found first, it
costs nothing. Each check is one named line, ok or failed, and none raises: a check that
breaks is a failed check saying why.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from agent.budget import Price, UnknownPriceError, price_for
from agent.project_tests import TestCommandError, resolve_test_command
from agent.sandbox import CONFINEMENT, INSTALL_HINT, Sandbox, find_sandbox, start_failure
from agent.transport import HttpResponsesTransport, ResponsesAPIError, insecure_base_url
from agent.workspace_tools import ToolError, WorkspaceTools
from agent.worktree import WorkspaceError, git_checkout_top, uncommitted, uncommitted_count
from memory.embedding.embedder import Embedder
from memory.records import EMBEDDING_DIMENSION, MemoryRecord
from memory.stores.protocol import open_store
from memory.text import mask_url_passwords

# A fixed id, so that a probe a crash left behind is the one the next check removes.
PROBE_ID = "00000000-0000-5000-8000-a57ad0c70c70"
PROBE_SCOPE = "astra-preflight-probe"
STORE_TIMEOUT_S = 30.0
BASE_URL_TIMEOUT_S = 15.0
NOT_RUNNABLE = (126, 127)  # a shell's "not executable" and "not found"
NO_TESTS = 5  # pytest's (and unittest's, from 3.12) "collected no tests": a red no fix turns green


@dataclass(frozen=True)
class Check:
    """One preflight check's verdict, with one line saying what was found."""

    name: str
    ok: bool
    detail: str

    def line(self) -> str:
        return f"{'ok' if self.ok else 'FAILED':<6} {self.name}: {self.detail}"


async def check_store(url: str) -> Check:
    """The store opens, answers, and takes a write: a probe record, written then deleted."""
    try:
        detail = await asyncio.wait_for(_probe_store(url), STORE_TIMEOUT_S)
    except TimeoutError:
        return Check("store", False, f"{url} did not answer within {STORE_TIMEOUT_S:g}s")
    except Exception as error:  # any failure of the store is this check's verdict
        return Check("store", False, _one_line(error))
    return Check("store", True, detail)


async def _probe_store(url: str) -> str:
    store = open_store(url)
    try:
        records = await store.count()
        probe = MemoryRecord(
            memory_id=PROBE_ID,
            scope=PROBE_SCOPE,
            fix_description="preflight probe: written and deleted at once",
            error_type="PreflightProbe",
            file_paths=(),
            outcome="preflight",
            session_id="preflight",
            timestamp=datetime.now(UTC),
        )
        vector = np.zeros(EMBEDDING_DIMENSION, dtype=np.float32)
        vector[0] = 1.0
        await store.upsert_many([(probe, vector)])
        try:
            if await store.get(PROBE_ID) is None:
                raise RuntimeError("a record written to the store could not be read back")
        finally:
            await store.delete(PROBE_ID)
    finally:
        await store.close()
    return f"{url}: {records} record(s), writable"


async def check_embedder(embedder: Embedder) -> Check:
    """The embedding model loads and makes a vector of the expected size."""
    try:
        vector = np.asarray(await embedder.embed("preflight probe"))
    except Exception as error:  # the model's failure to load is this check's verdict
        return Check("embedding model", False, _one_line(error))
    if vector.shape != (EMBEDDING_DIMENSION,) or not np.all(np.isfinite(vector)):
        return Check("embedding model", False, f"made a vector of shape {vector.shape}")
    return Check("embedding model", True, f"{embedder.model_name} loaded")


def check_live(model: str, api_key: str | None, price_override: Price | None = None) -> list[Check]:
    """For live use: the key is set (never shown), and the model has a price."""
    missing = (
        "OPENAI_API_KEY is not set: set it in the environment or in the .env beside the file "
        "`astra-memory config path` names (the base URL is not tried without it)"
    )
    key = Check("api key", bool(api_key), "set" if api_key else missing)
    try:
        price = price_for(model, price_override)
    except UnknownPriceError as error:
        return [key, Check("model price", False, _one_line(error))]
    per_million = f"${price.input_per_million:g} / ${price.output_per_million:g}"
    return [key, Check("model price", True, f"{model}: {per_million} per million in / out")]


async def check_base_url(
    base_url: str, api_key: str, model: str, *, allow_insecure: bool = False
) -> Check:
    """The base URL answers an unpaid request, its models list, with the key; never over
    plain http unless allowed, as a session would refuse it."""
    shown_url = mask_url_passwords(base_url)
    if insecure_base_url(base_url) and not allow_insecure:
        why = "not https: the key would cross the network in clear text"
        return Check("base url", False, f"{shown_url} is {why} (--allow-insecure-base-url)")
    transport = HttpResponsesTransport(base_url, api_key, request_timeout_s=BASE_URL_TIMEOUT_S)
    try:
        models = await transport.list_models()
    except ResponsesAPIError as error:
        if error.status == 404:  # a compatible server need not list its models
            return Check("base url", True, f"{shown_url}: reached; it offers no models list")
        return Check("base url", False, _one_line(error))
    finally:
        await transport.aclose()
    listed = "lists" if model in models else "does not list"
    return Check("base url", True, f"{shown_url}: reached, {len(models)} models; {listed} {model}")


async def check_test_command(
    workspace: Path,
    explicit: str | None,
    *,
    base_env: Mapping[str, str],
    timeout_s: float,
    run_in: Path | None = None,
    sandbox: Sandbox | None = None,
    tools: WorkspaceTools | None = None,
) -> Check:
    """The test command resolves, is found, and runs to an end within the timeout (pass or
    fail: a failing run is what a session starts from; one that collected no tests is not).
    It runs in `run_in`, the session's folder, when given, so that the user's own is not
    touched; through the session's own `tools` when they run the same command there, which
    offer the run to the session's first run_tests (taken if no file changed in between)."""
    try:
        command = resolve_test_command(workspace, explicit)
    except TestCommandError as error:
        return Check("test command", False, str(error))
    named = f"{command.display} ({command.source})"
    folder = Path(run_in or workspace)
    program = command.argv[0]
    if os.sep not in program and shutil.which(program, path=base_env.get("PATH")) is None:
        return Check("test command", False, f"{named}: {program} is not found on PATH")
    target = folder / program  # where the session's run looks for it
    if os.sep in program and not os.access(target, os.X_OK):
        problem = "not executable" if target.is_file() else "not found"
        where = ""
        if not os.path.isabs(program):  # the session's folder goes with it: name the user's
            where = (
                f" in {workspace}" if run_in is None else f" in the session's copy of {workspace}"
            )
        return Check("test command", False, f"{named}: {program} is {problem}{where}")
    wanted = (folder.resolve(), command, sandbox, timeout_s)
    sessions_own = tools is not None and wanted == (
        tools.root,
        tools.test_command,
        tools.sandbox,
        tools.test_timeout_s,
    )
    if tools is None or not sessions_own:
        tools = WorkspaceTools(
            folder,
            base_env=base_env,
            test_command=command,
            test_timeout_s=timeout_s,
            sandbox=sandbox,
        )
    try:
        run = await tools.run_tests(offer=sessions_own)  # only the session's takes it later
    except ToolError as error:
        return Check("test command", False, str(error))
    if run.timed_out:
        return Check("test command", False, f"{named}: timed out after {timeout_s:g}s")
    if cannot_start := start_failure(run.output):
        return Check("test command", False, f"{named}: it could not start ({cannot_start})")
    if run.exit_code in NOT_RUNNABLE or "No module named pytest" in run.output:
        last = run.output.strip().splitlines()[-1:] or [f"exit code {run.exit_code}"]
        return Check("test command", False, f"{named}: {last[0]}")
    ran = run.summary
    if not ran.startswith("exit code"):
        ran = f"exit code {run.exit_code}, {ran}"
    if run.exit_code == NO_TESTS and (run.passed, run.failed) == (0, 0):
        return Check(
            "test command",
            False,
            f"{named}: ran no tests ({ran}); a session starts from a failing one",
        )
    # either is a working command; what it means for a session, said for the newcomer
    meaning = "red: a session starts here" if run.exit_code else "green: nothing to fix yet"
    return Check("test command", True, f"{named}: ran, {ran} ({meaning})")


def check_sandbox(sandbox: Sandbox | None, *, no_sandbox: bool, why: str = "--no-sandbox") -> Check:
    """Whether the test command runs confined; without a sandbox, only --no-sandbox (or a
    demo project: `why`) lets it run."""
    if sandbox is not None:
        return Check("sandbox", True, CONFINEMENT)
    if no_sandbox:
        return Check("sandbox", True, f"off: the test command runs unconfined ({why})")
    return Check("sandbox", False, f"{find_sandbox()[1]}; {INSTALL_HINT}")


def check_git_tree(workspace: Path, *, allow_dirty: bool) -> Check:
    """A git checkout must be clean (or the dirt allowed); other folders are copied."""
    top = git_checkout_top(workspace)
    if top is None:
        return Check("git tree", True, "not a git checkout; the session works in a copy")
    try:
        changes = uncommitted(top)
    except WorkspaceError as error:
        return Check("git tree", False, str(error))
    if not changes:
        return Check("git tree", True, f"{top} is clean")
    counted = f"{top} has {uncommitted_count(changes)}"
    if allow_dirty:
        return Check("git tree", True, f"{counted}, allowed by --allow-dirty")
    shown = changes[0].strip() + (", ..." if len(changes) > 1 else "")
    return Check("git tree", False, f"{counted} ({shown}); commit or stash them")


async def run_preflight(
    *,
    memory_url: str,
    embedder: Embedder,
    base_env: Mapping[str, str],
    workspace: Path | None = None,
    test_cmd: str | None = None,
    test_timeout_s: float = 120.0,
    run_in: Path | None = None,
    allow_dirty: bool = False,
    live: bool = False,
    model: str = "gpt-6-astra",
    api_key: str | None = None,
    price_override: Price | None = None,
    base_url: str | None = None,
    allow_insecure_base_url: bool = False,
    sandbox: Sandbox | None = None,
    no_sandbox: bool = False,
    unconfined_why: str = "--no-sandbox",
    tools: WorkspaceTools | None = None,
) -> list[Check]:
    """Every check, in the order they are printed: store, model, live (with `base_url`, it
    is reached too), and with a workspace the sandbox, git tree and tests. The test command
    runs in `sandbox`, else (with `no_sandbox`) unconfined; without either it is not run.
    The checks run at once: the model loads while the tests run. `tools`: the session's,
    see `check_test_command`."""

    async def workspace_checks(workspace: Path, sandbox: Sandbox | None) -> list[Check]:
        if sandbox is None and not no_sandbox:
            sandbox = (await asyncio.to_thread(find_sandbox))[0]
        checks = [
            check_sandbox(sandbox, no_sandbox=no_sandbox, why=unconfined_why),
            await asyncio.to_thread(check_git_tree, workspace, allow_dirty=allow_dirty),
        ]
        if sandbox is not None or no_sandbox:
            checks.append(
                await check_test_command(
                    workspace,
                    test_cmd,
                    base_env=base_env,
                    timeout_s=test_timeout_s,
                    run_in=run_in,
                    sandbox=sandbox,
                    tools=tools,
                )
            )
        return checks

    store, model_check, in_workspace = await asyncio.gather(
        check_store(memory_url),
        check_embedder(embedder),
        workspace_checks(workspace, sandbox) if workspace is not None else asyncio.sleep(0, []),
    )
    live_checks = check_live(model, api_key, price_override) if live else []
    if live and api_key and base_url is not None:
        reach = check_base_url(base_url, api_key, model, allow_insecure=allow_insecure_base_url)
        live_checks.append(await reach)
    return [store, model_check, *live_checks, *in_workspace]


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__
