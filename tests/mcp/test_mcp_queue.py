"""The pending queue under pressure: secrets never stored, two clients proposing while the
operator confirms, and kill -9 of the server or of `memory confirm`."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
from pathlib import Path

from tests.mcp.conftest import CLI, call, cli, connect, proposal

AWS_KEY = "AKIAQ7R3XAMPLEK2LZ4M"
AWS_SECRET = "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"
OPENAI_KEY = "sk-proj-Zt3v9QmW1xY7bN4cL8pR2sT6uV0aB5dE"


def store_files(env: dict[str, str]) -> list[Path]:
    """The store file and its WAL and shared-memory files: everything SQLite wrote."""
    path = Path(env["ASTRA_MEMORY_URL"].removeprefix("sqlite:///"))
    return [p for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")) if p.exists()]


def queue_rows(env: dict[str, str]) -> list[tuple[str, str, str | None]]:
    path = Path(env["ASTRA_MEMORY_URL"].removeprefix("sqlite:///"))
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        return conn.execute(
            "SELECT proposal_id, status, memory_id FROM pending_proposals ORDER BY id"
        ).fetchall()


async def test_a_proposal_with_secrets_never_stores_them(env):
    secret = proposal(
        fix_description=f"Read the key from the environment, not OPENAI_API_KEY={OPENAI_KEY}.",
        diff=f"--- a/c.py\n+++ b/c.py\n@@ -1 +1 @@\n-KEY = '{AWS_KEY}'\n+KEY = os.environ['K']\n",
        test_output=f"aws_secret_access_key = {AWS_SECRET}\n3 passed in 0.1s",
        symptom=f"E   AuthError: bad key {AWS_KEY}",
    )
    async with connect(env) as client:
        proposed = await call(client, "propose_fix", **secret)
        shown = json.loads(cli(env, "memory", "pending", "--json").stdout)[0]
        assert "[REDACTED]" in shown["fix_description"] and "[REDACTED]" in shown["diff"]
        assert cli(env, "memory", "confirm", proposed["proposal_id"], "--yes").returncode == 0
        memory_id = (await call(client, "proposal_status", proposal_id=proposed["proposal_id"]))[
            "memory_id"
        ]
        fix = json.dumps(await call(client, "get_fix", memory_id=memory_id))
    record = cli(env, "memory", "show", memory_id, "--json").stdout
    assert "[REDACTED]" in record
    for text in (fix, record, *(p.read_bytes().decode("latin-1") for p in store_files(env))):
        for value in (AWS_KEY, AWS_SECRET, OPENAI_KEY):
            assert value not in text


async def confirm_some(env: dict[str, str], wanted: int) -> list[str]:
    """The operator confirming pending proposals one by one as they arrive."""
    confirmed: list[str] = []
    while len(confirmed) < wanted:
        listed = await asyncio.create_subprocess_exec(
            *CLI, "memory", "pending", "--json", env=env, stdout=subprocess.PIPE
        )
        pending = json.loads((await listed.communicate())[0])
        if not pending:
            await asyncio.sleep(0.1)
            continue
        proposal_id = pending[0]["proposal_id"]
        done = await asyncio.create_subprocess_exec(
            *CLI, "memory", "confirm", proposal_id, "--yes", env=env, stdout=subprocess.DEVNULL
        )
        assert await done.wait() == 0
        confirmed.append(proposal_id)
    return confirmed


async def propose_many(env: dict[str, str], name: str, count: int) -> list[str]:
    async with connect(env, name=name) as client:
        replies = await asyncio.gather(
            *(
                call(client, "propose_fix", **proposal(error_type=f"Error{name}{i}"))
                for i in range(count)
            )
        )
    return [reply["proposal_id"] for reply in replies]


async def test_two_clients_proposing_while_the_operator_confirms_lose_nothing(env):
    first, second, confirmed = await asyncio.gather(
        propose_many(env, "client-a", 8), propose_many(env, "client-b", 8), confirm_some(env, 3)
    )
    rows = queue_rows(env)
    assert sorted(row[0] for row in rows) == sorted(first + second)  # each exactly once
    decided = {proposal_id: memory_id for proposal_id, status, memory_id in rows if memory_id}
    assert set(decided) == set(confirmed)
    assert sum(status == "pending" for _, status, _ in rows) == 16 - 3
    path = Path(env["ASTRA_MEMORY_URL"].removeprefix("sqlite:///"))
    with sqlite3.connect(path) as conn:
        stored = {row[0] for row in conn.execute("SELECT memory_id FROM memories")}
    assert stored == set(decided.values())


def server_pid(marker: str) -> int:
    """The pid of our child process whose command line holds `marker`."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if int(stat[1]) == os.getpid() and marker in command:
            return int(entry.name)
    raise AssertionError(f"no child process running {marker!r}")


async def test_kill_9_of_the_server_mid_run_leaves_the_queue_readable(env):
    acknowledged: list[str] = []
    try:
        async with connect(env, scope="killed-scope") as client:
            for i in range(5):
                reply = await call(client, "propose_fix", **proposal(error_type=f"E{i}"))
                acknowledged.append(reply["proposal_id"])
            calls = [
                asyncio.create_task(client.call_tool("propose_fix", proposal(error_type=f"L{i}")))
                for i in range(20)
            ]
            os.kill(server_pid("killed-scope"), signal.SIGKILL)
            await asyncio.gather(*calls, return_exceptions=True)
    except Exception:  # the SDK reports the dead server in its own way; the queue is the point
        pass
    rows = queue_rows(env)
    assert {row[0] for row in rows} >= set(acknowledged)
    listed = cli(env, "memory", "pending", "--json")
    assert listed.returncode == 0
    assert {p["proposal_id"] for p in json.loads(listed.stdout)} == {row[0] for row in rows}


async def test_kill_9_of_memory_confirm_leaves_the_proposal_confirmable_once(env):
    async with connect(env) as client:
        proposal_id = (await call(client, "propose_fix", **proposal()))["proposal_id"]
    confirm = subprocess.Popen(
        [*CLI, "memory", "confirm", proposal_id, "--yes"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert confirm.stdout.readline().startswith(f"proposal {proposal_id[:8]}")
    confirm.kill()  # SIGKILL, as the record is being written or just before
    confirm.wait()
    [(_, status, memory_id)] = queue_rows(env)
    if status == "pending":
        assert cli(env, "memory", "confirm", proposal_id, "--yes").returncode == 0
    [(_, status, memory_id)] = queue_rows(env)
    assert status == "confirmed"
    records = json.loads(cli(env, "memory", "list", "--json").stdout)
    assert [r["memory_id"] for r in records] == [memory_id]
