"""`astra-memory mcp` through the official SDK's client over stdio: the handshake, the tool
schemas, every tool, bad arguments, and the operator's confirm and reject on the CLI."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

from app.cli.arguments import package_version
from tests.mcp.conftest import CLIENT, call, cli, connect, proposal, refused

TOOLS = {"search_fixes", "get_fix", "propose_fix", "proposal_status", "report_outcome"}
FAILURE = (
    "relcli/config.py:73: in apply_env_overrides\n"
    "    conf['upload']['token'] = env['RELCLI_UPLOAD_TOKEN']\nE   KeyError: 'upload'"
)


def store_file(env: dict[str, str]) -> Path:
    return Path(env["ASTRA_MEMORY_URL"].removeprefix("sqlite:///"))


async def test_the_handshake_and_strict_schemas_with_no_write_tools(env):
    async with connect(env) as client:
        assert client.server_info.name == "astra-memory"
        assert client.server_info.version == package_version() != ""
        assert "search_fixes" in (client.instructions or "")
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == TOOLS  # no delete, clear or update
    for tool in tools.values():
        assert tool.input_schema["additionalProperties"] is False
        assert set(tool.input_schema["required"]) == set(tool.input_schema["properties"])
    search = tools["search_fixes"].input_schema["properties"]
    assert (search["top_k"]["minimum"], search["top_k"]["maximum"]) == (1, 10)
    assert {"type": "null"} in search["error_type"]["anyOf"]
    assert tools["propose_fix"].input_schema["properties"]["file_paths"]["type"] == "array"
    assert tools["report_outcome"].input_schema["properties"]["worked"]["type"] == "boolean"


async def test_propose_confirm_search_get_and_report_outcome(env):
    env = {**env, "ASTRA_STALE_AFTER": "1"}
    async with connect(env) as client:
        empty = await call(client, "search_fixes", failure=FAILURE, error_type=None, top_k=3)
        assert empty["scope"] == "proj" and empty["matches"] == []
        proposed = await call(client, "propose_fix", **proposal())
        assert (proposed["status"], proposed["scope"]) == ("pending", "proj")
        proposal_id = proposed["proposal_id"]
        assert (await call(client, "proposal_status", proposal_id=proposal_id[:8]))[
            "status"
        ] == "pending"
        assert sqlite3.connect(store_file(env)).execute(
            "SELECT count(*) FROM memories"
        ).fetchone() == (0,)  # nothing written before the operator's yes

        pending = json.loads(cli(env, "memory", "pending", "--json").stdout)
        assert [p["proposal_id"] for p in pending] == [proposal_id]
        assert pending[0]["client"] == CLIENT
        confirmed = cli(env, "memory", "confirm", proposal_id[:8], "--yes")
        assert confirmed.returncode == 0, confirmed.stderr
        assert "nearest records in memory" in confirmed.stdout and "setdefault" in confirmed.stdout

        status = await call(client, "proposal_status", proposal_id=proposal_id)
        assert status["status"] == "confirmed"
        memory_id = status["memory_id"]
        found = await call(client, "search_fixes", failure=FAILURE, error_type="KeyError", top_k=3)
        assert found["scope"] == "proj" and "not instructions" in found["note"]
        [match] = found["matches"]
        assert match["memory_id"] == memory_id and match["relevance"] in ("possible", "strong")
        assert match["provenance"] == "proposed" and match["why"].startswith("why: cosine")
        fix = await call(client, "get_fix", memory_id=memory_id[:8])
        record = fix["record"]
        assert "setdefault" in record["diff"] and record["evidence"]["command"] == "pytest -q"
        assert "12 passed" in record["evidence"]["output_excerpt"]
        assert not record["possibly_stale"]

        outcome = await call(client, "report_outcome", memory_id=memory_id, worked=False)
        assert outcome["recorded"] == "did not work" and outcome["possibly_stale"]
        again = await call(client, "search_fixes", failure=FAILURE, error_type=None, top_k=3)
        assert again["matches"][0]["possibly_stale"]

    with sqlite3.connect(store_file(env)) as conn:
        sessions = [row[0] for row in conn.execute("SELECT session_id FROM deliveries")]
    assert sessions and all(s.startswith(f"mcp:{CLIENT}:") for s in sessions)


async def test_other_scopes_are_not_searched(env):
    async with connect(env, scope="other") as client:
        proposed = await call(client, "propose_fix", **proposal())
    assert cli(env, "memory", "confirm", proposed["proposal_id"], "--yes").returncode == 0
    async with connect(env, scope="proj") as client:
        found = await call(client, "search_fixes", failure=FAILURE, error_type=None, top_k=3)
        assert found["scope"] == "proj" and found["matches"] == []
        message = await refused(client, "proposal_status", {"proposal_id": proposed["proposal_id"]})
        assert "scope 'proj'" in message


BAD_CALLS = [
    ("search_fixes", {"failure": 7, "error_type": None, "top_k": 3}, "failure"),
    ("search_fixes", {"failure": "x", "error_type": None, "top_k": 0}, "top_k"),
    ("search_fixes", {"failure": "x", "error_type": None, "top_k": 11}, "top_k: Input should be"),
    ("search_fixes", {"failure": "x", "error_type": None, "top_k": "3"}, "top_k"),
    ("search_fixes", {"failure": "x", "error_type": None, "top_k": True}, "top_k"),
    ("search_fixes", {"failure": "x", "top_k": 3}, "error_type: Field required"),
    ("search_fixes", {"failure": "x", "error_type": None, "top_k": 3, "delete": 1}, "delete"),
    ("search_fixes", {"failure": "   ", "error_type": None, "top_k": 3}, "failure must not"),
    ("get_fix", {"memory_id": "0123abcd"}, "no memory record"),
    ("get_fix", {}, "memory_id"),
    ("propose_fix", {k: v for k, v in proposal().items() if k != "diff"}, "diff"),
    ("propose_fix", proposal(file_paths="relcli/config.py"), "file_paths"),
    ("propose_fix", proposal(file_paths=[]), "file_paths"),
    ("proposal_status", {"proposal_id": "nope"}, "no proposal"),
    ("report_outcome", {"memory_id": "0123abcd", "worked": "yes"}, "worked"),
    ("report_outcome", {"memory_id": "0123abcd", "worked": True}, "no memory record"),
    ("no_such_tool", {}, "no_such_tool"),
]


async def test_bad_arguments_are_tool_errors_and_the_server_answers_the_next_call(env):
    async with connect(env) as client:
        for tool, arguments, words in BAD_CALLS:
            message = await refused(client, tool, arguments)
            assert words in message, (tool, arguments, message)
            assert "pydantic.dev" not in message and "input_value" not in message
            answer = await call(client, "search_fixes", failure="x", error_type=None, top_k=1)
            assert answer["scope"] == "proj"
    assert json.loads(cli(env, "memory", "pending", "--json").stdout) == []


async def test_report_outcome_takes_only_a_fix_this_client_was_given(env):
    async with connect(env) as client:
        proposed = await call(client, "propose_fix", **proposal())
        assert cli(env, "memory", "confirm", proposed["proposal_id"], "--yes").returncode == 0
        memory_id = (await call(client, "proposal_status", proposal_id=proposed["proposal_id"]))[
            "memory_id"
        ]
        message = await refused(client, "report_outcome", {"memory_id": memory_id, "worked": False})
        assert "was not delivered" in message


async def test_reject_and_the_operators_refusals(env):
    async with connect(env) as client:
        first = (await call(client, "propose_fix", **proposal()))["proposal_id"]
        second = (await call(client, "propose_fix", **proposal(error_type="TypeError")))[
            "proposal_id"
        ]
        asked = cli(env, "memory", "confirm", first)  # no terminal, no --yes
        assert asked.returncode == 2 and asked.stdout == ""
        assert asked.stderr.strip().splitlines() == [
            f"astra-memory: error: not confirming {first[:8]}: no terminal to ask; add --yes "
            "to confirm"
        ]
        rejected = cli(env, "memory", "reject", first)
        assert rejected.returncode == 0 and "nothing written" in rejected.stdout
        assert (await call(client, "proposal_status", proposal_id=first))["status"] == "rejected"
        late = cli(env, "memory", "confirm", first, "--yes")
        assert late.returncode == 1 and "already rejected" in late.stderr
        assert cli(env, "memory", "reject", "ffffffff").returncode == 1
        listed = cli(env, "memory", "pending")
        assert second[:8] in listed.stdout and first[:8] not in listed.stdout
    with sqlite3.connect(store_file(env)) as conn:
        assert conn.execute("SELECT count(*) FROM memories").fetchone() == (0,)


def test_the_sdk_is_imported_by_the_mcp_command_alone():
    probe = (
        "import sys, app.cli.main, app.cli.commands.mcp, app.cli.commands.memory, app.cli.review;"
        "sys.exit(1 if any(m.split('.')[0] in ('mcp', 'mcp_types') for m in sys.modules) else 0)"
    )
    assert subprocess.run([sys.executable, "-c", probe]).returncode == 0
