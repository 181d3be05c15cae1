"""Every kind of bad call is a tool error (isError) with a message naming the fix, and
the server keeps serving after each one."""

from __future__ import annotations

from pathlib import Path

from anneal_memory.mcp.tools import MAX_TEXT

from mcphelp import call, connect, run

BAD_CALLS = [
    ("no_such_tool", {}, "unknown tool 'no_such_tool'"),
    ("record", {"episode_type": "decision"}, "missing required argument(s) content"),
    ("record", {"content": 42, "episode_type": "decision"}, "'content' must be a string, not integer"),
    ("recall", {"limit": "ten"}, "'limit' must be a whole number, not string"),
    ("recall", {"limit": 0}, "use a whole number from 1 to 200"),
    ("wrap_cancel", {"force": "yes"}, "'force' must be true or false"),
    ("record", {"content": "x", "episode_type": "decision", "supersedes": "abc"}, "'supersedes' must be a list"),
    ("record", {"content": "x", "episode_type": "memo"}, "'episode_type' is 'memo'; use one of"),
    ("record", {"content": "x", "episode_type": "decision", "trust": "operator"}, "'trust' is 'operator'"),
    ("spore_descend", {"spore_id": "spore-001", "kind": "vanished"}, "'kind' is 'vanished'"),
    ("record", {"content": "x" * (MAX_TEXT + 1), "episode_type": "decision"}, "over the limit of 100,000"),
    ("record", {"content": "   ", "episode_type": "decision"}, "'content' is empty"),
    ("prepare_wrap", {"session_id": "me"}, "never from a tool argument"),
    ("recall", {"since": "last tuesday"}, "since"),
    ("save_continuity", {"text": "# nothing", "wrap_token": "t"}, "prepare_wrap"),
    ("delete_episode", {"episode_id": "nothere"}, "nothere"),
]


def test_each_bad_call_is_a_tool_error_and_the_server_keeps_serving(db: Path) -> None:
    async def body() -> None:
        async with connect(db) as client:
            for tool, args, expected in BAD_CALLS:
                reply = await call(client, tool, args, ok=False)
                assert reply.startswith("Error: "), (tool, reply)
                assert expected in reply, (tool, args, reply)
                assert "\n" not in reply.strip(), reply  # one clean line, no traceback
            # still serving, and none of the refused calls wrote anything
            assert "No matching episodes" in await call(client, "recall", {})
            await call(client, "record", {"content": "still here", "episode_type": "context"})
            assert "still here" in await call(client, "recall", {"keyword": "still here"})

    run(body)


def test_oversized_text_for_every_free_text_argument_is_refused(db: Path) -> None:
    big = "y" * (MAX_TEXT + 1)

    async def body() -> None:
        async with connect(db) as client:
            await call(client, "save_continuity", {"text": big, "wrap_token": "t"}, ok=False)
            await call(client, "crystal_recall", {"query": big}, ok=False)
            await call(client, "spore_add", {"type": "task", "text": big}, ok=False)
            await call(client, "recall", {"keyword": big}, ok=False)
            await call(client, "status")

    run(body)


def test_a_client_cannot_delete_an_operator_episode(db: Path) -> None:
    from anneal_memory import Store

    with Store(db, trust_ceiling="operator") as s:
        fact = s.record("operator fact the agent must not remove", "context", trust="operator")

    async def body() -> None:
        async with connect(db) as client:
            reply = await call(client, "delete_episode", {"episode_id": fact.id}, ok=False)
            assert reply.startswith("Error: ") and "trust ceiling" in reply, reply

    run(body)
    with Store(db) as s:
        assert s.get(fact.id) is not None
        assert any(e["event"] == "delete_refused" for e in s.audit_trail.entries())
