"""Hostile and concurrent use of the MCP server, driven by the official SDK client over
stdio: malformed arguments the first review did not cover (NUL bytes, lone surrogates,
floats and booleans for integers, huge numbers, bad list items, unknown tools and
resources), several clients on one store at once, and one client's wrap while others
record. Every refusal is a one-line tool error, the server keeps serving, and nothing
half-written is left behind."""

from __future__ import annotations

import re
from pathlib import Path

import anyio

from anneal_memory import AuditTrail, Store, claim_baton
from anneal_memory.testing import scripted_compress

from mcphelp import SESSION, call, connect, is_error, run, text_of

HOSTILE_CALLS = [
    ("record", {"content": "a\x00b", "episode_type": "decision"}, "content contains a NUL"),
    ("record", {"content": "ok", "episode_type": "decision", "source": "x\x00y"}, "source contains a NUL"),
    ("record", {"content": "ok", "episode_type": "decision", "state_key": "k\x00"}, "state key"),
    ("record", {"content": "ok", "episode_type": "decision", "metadata": [1, 2]},
     "'metadata' must be an object, not array"),
    ("record", {"content": "ok", "episode_type": "decision", "metadata": {"_anneal_ns": "x"}},
     "reserved"),
    ("record", {"content": "ok", "episode_type": "decision", "supersedes": [7]},
     "'supersedes[0]' must be a string, not integer"),
    ("record", {"content": "ok", "episode_type": "decision", "supersedes": ["x"] * 101},
     "101 items, over the limit of 100"),
    ("record", {"content": "ok", "episode_type": "decision", "supersedes": ["ghost"]}, "ghost"),
    ("record", {"content": "ok", "episode_type": "decision", "derived_from": ["ghost"]}, "ghost"),
    ("record", {"content": "ok", "episode_type": None}, "missing required argument(s) episode_type"),
    ("recall", {"limit": 2.5}, "'limit' must be a whole number, not number"),
    ("recall", {"limit": True}, "'limit' must be a whole number, not boolean"),
    ("recall", {"limit": 10**30}, "use a whole number from 1 to 200"),
    ("recall", {"offset": -1}, "use a whole number from 0 to"),
    ("recall", {"keyword": "a\x00b"}, "keyword contains a NUL"),
    ("recall", {"episode_id": "\x00"}, "NUL"),
    ("recall", {"since": "99999999999999999999d"}, "since"),
    ("recall", {"since": "2026-13-45"}, "not an ISO 8601 date"),
    ("prepare_wrap", {"max_chars": 10**12}, "'max_chars'"),
    ("save_continuity", {"text": "## State\n\x00"}, "NUL"),
    ("spore_add", {"type": "task", "text": "t", "salience": 7}, "'salience' is 7"),
    ("spore_add", {"type": "task", "text": "t", "next": "tomorrow"}, "YYYY-MM-DD"),
    ("spore_update", {"spore_id": "spore-999", "text": "x"}, "spore-999"),
    ("spore_touch", {"spore_id": "spore-999"}, "spore-999"),
    ("crystal_recall", {"query": "x", "max_patterns": 0}, "'max_patterns' is 0"),
    ("status", {"x": 1}, "unknown argument(s) x"),
    ("record\x00", {}, "unknown tool"),
    ("", {}, "unknown tool"),
]


def test_hostile_arguments_are_one_line_tool_errors_and_write_nothing(db: Path) -> None:
    async def body() -> None:
        async with connect(db) as client:
            for tool, args, expected in HOSTILE_CALLS:
                reply = await call(client, tool, args, ok=False)
                assert reply.startswith("Error: "), (tool, args, reply)
                assert expected in reply, (tool, args, reply)
                assert "unexpectedly" not in reply, (tool, args, reply)  # a refusal, not a crash
                assert "\n" not in reply.strip(), reply
            # a resource that does not exist is a protocol error, not a dead server
            try:
                await client.read_resource("anneal://nope")  # type: ignore[arg-type]
            except Exception as exc:
                assert "unknown resource" in str(exc) or exc, exc
            else:
                raise AssertionError("an unknown resource was served")
            # still serving, and nothing of the refused calls was written
            assert "Episodes: 0" in await call(client, "status")
            assert "No open spores" in await call(client, "spore_list")

    run(body)
    with Store(db) as s:
        assert s.status().total_episodes == 0
        assert s.audit_trail.entries() == [] or all(
            e["event"] != "record" for e in s.audit_trail.entries())


def _raw_session(db: Path, lines: list[str], last_id: int) -> dict[object, dict[str, object]]:
    """Speak JSON-RPC to the server by hand, as a client outside the SDK may: write
    ``lines`` after the handshake and collect replies until the one with ``last_id``."""
    import json
    import subprocess
    import threading

    from mcphelp import anneal_bin, serve_args, server_env

    hello = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    data = "".join(json.dumps(m) + "\n" for m in hello) + "".join(x + "\n" for x in lines)
    with open(db.parent / "raw-stderr.log", "wb") as err:
        proc = subprocess.Popen([anneal_bin(), *serve_args(db)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=err, env=server_env(db.parent))
        timer = threading.Timer(45, proc.kill)  # a server that stops answering fails the test
        timer.start()
        try:
            assert proc.stdin and proc.stdout
            proc.stdin.write(data.encode("utf-8"))
            proc.stdin.flush()
            replies: dict[object, dict[str, object]] = {}
            for raw in proc.stdout:
                msg = json.loads(raw)  # stdout carries protocol messages only
                if "id" in msg:
                    replies[msg["id"]] = msg
                if msg.get("id") == last_id:
                    break
            proc.stdin.close()
            proc.wait(30)
        finally:
            timer.cancel()
            proc.kill()
    assert last_id in replies, f"the server stopped answering: {replies}"
    return replies


def test_a_lone_surrogate_or_garbage_from_a_raw_client_stores_nothing(db: Path) -> None:
    """A JSON "\\ud800" escape (a lone surrogate, which no database holds) and a line that
    is not JSON at all: neither is stored and the server answers the next call. (The SDK
    drops a message its JSON parser refuses without a reply; a decoded one is refused by
    our checks as a tool error.)"""
    lines = [
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"record",'
        '"arguments":{"content":"broken \\ud800 text","episode_type":"observation"}}}',
        "this is not json",
        '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"record",'
        '"arguments":"not an object"}}',
        '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"record",'
        '"arguments":{"content":"survived","episode_type":"observation"}}}',
    ]
    replies = _raw_session(db, lines, last_id=3)
    if 1 in replies:
        first = replies[1]["result"]
        assert first["isError"] is True and "surrogate" in first["content"][0]["text"]  # type: ignore[index]
    assert "error" in replies[2] or replies[2]["result"]["isError"], replies[2]  # type: ignore[index]
    assert replies[3]["result"]["isError"] is False, replies[3]  # type: ignore[index]
    with Store(db) as s:
        assert [e.content for e in s.recall().episodes] == ["survived"]


def test_a_lone_surrogate_that_reaches_the_tools_is_a_clear_tool_error(tmp_path: Path) -> None:
    """The same text decoded by a lenient transport reaches the tool layer: refused there
    with the reason, never an 'unexpected failure'."""
    from anneal_memory.mcp.handlers import MemoryTools
    from anneal_memory.mcp.server import call_tool

    with Store(tmp_path / "m.db", trust_ceiling="agent") as s:
        tools = MemoryTools(s, SESSION)
        for name, args in [("record", {"content": "x \ud800", "episode_type": "context"}),
                           ("recall", {"keyword": "\udfff"}),
                           ("spore_add", {"type": "task", "text": "\ud800"}),
                           ("save_continuity", {"text": "## State\n\ud800"})]:
            text, err = call_tool(tools, name, args)
            assert err and "unexpectedly" not in text and ("surrogate" in text), (name, text)
        assert s.status().total_episodes == 0


async def _record_many(db: Path, who: str, n: int, out: dict[str, list[str]]) -> None:
    async with connect(db, session=who) as client:
        for i in range(n):
            reply = await call(client, "record", {"content": f"{who} finding number {i}",
                                                  "episode_type": "observation"})
            m = re.search(r"Recorded \[(\w+)\]", reply)
            assert m, reply
            out.setdefault(who, []).append(m.group(1))


def test_several_clients_recording_at_once_lose_nothing(db: Path) -> None:
    Store(db).close()
    ids: dict[str, list[str]] = {}

    async def body() -> None:
        async with anyio.create_task_group() as tg:
            for who in ("c1", "c2", "c3"):
                tg.start_soon(_record_many, db, who, 12, ids)

    run(body)
    every = [i for v in ids.values() for i in v]
    assert len(every) == 36 and len(set(every)) == 36
    with Store(db) as s:
        assert s.status().total_episodes == 36
        for who in ids:
            got = s.recall(keyword=who, limit=100).episodes
            assert {e.id for e in got} == set(ids[who])
    assert AuditTrail.verify(db).valid


def _token(reply: str) -> str:
    m = re.search(r"^Wrap token: (\S+)$", reply, re.MULTILINE)
    assert m, reply
    return m.group(1)


def test_a_wrap_while_other_clients_record_freezes_only_what_it_showed(db: Path) -> None:
    """Episodes recorded by another client between prepare and save are neither lost nor
    silently counted as wrapped: they wait for the next wrap."""
    claim_baton(db, SESSION)
    late: dict[str, list[str]] = {}

    async def body() -> None:
        async with connect(db) as wrapper, connect(db, session="other") as other:
            for i in range(3):
                await call(wrapper, "record", {"content": f"before the wrap {i}",
                                               "episode_type": "observation"})
            package = await call(wrapper, "prepare_wrap")
            token = _token(package)
            # the other session may not open a wrap of its own, and a second prepare of
            # the baton holder is refused while this one is open
            assert "Capture-only" in await call(other, "prepare_wrap")
            assert "in progress" in await call(wrapper, "prepare_wrap", ok=False)

            async def save() -> None:
                saved = await call(wrapper, "save_continuity",
                                   {"text": scripted_compress(package), "wrap_token": token})
                assert "Continuity saved" in saved and "from 3 episode(s)" in saved, saved

            async with anyio.create_task_group() as tg:
                tg.start_soon(_record_many, db, "late", 8, late)
                tg.start_soon(save)
            status = await call(other, "status")
            assert "Waiting for a wrap: 8 episode(s)" in status, status
            again = await call(wrapper, "prepare_wrap")
            assert all(f"late finding number {i}" in again for i in range(8))
            assert "before the wrap 0" not in again.split("## Episodes")[-1]

    run(body)
    with Store(db) as s:
        assert s.status().total_episodes == 11
    assert AuditTrail.verify(db).valid


def test_two_servers_with_the_baton_race_prepare_and_one_wrap_opens(db: Path) -> None:
    claim_baton(db, SESSION)
    replies: list[tuple[bool, str]] = []

    async def prep(client: object) -> None:
        res = await client.call_tool("prepare_wrap", {})  # type: ignore[attr-defined]
        text = text_of(res)
        assert "Traceback" not in text and "unexpectedly" not in text, text
        replies.append((is_error(res), text))

    async def body() -> None:
        async with connect(db) as a, connect(db) as b:
            await call(a, "record", {"content": "one thing", "episode_type": "outcome"})
            async with anyio.create_task_group() as tg:
                tg.start_soon(prep, a)
                tg.start_soon(prep, b)

    run(body)
    opened = [t for err, t in replies if not err and "Wrap token:" in t]
    refused = [t for err, t in replies if err]
    assert len(opened) == 1 and len(refused) == 1, replies
    assert "in progress" in refused[0], refused
