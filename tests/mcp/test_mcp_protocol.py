"""The handshake, the tool and resource lists, and the manifest a host can check."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from anneal_memory.mcp.integrity import canonical_json, compute_manifest, sha256

from mcphelp import call, connect, run

EXPECTED_TOOLS = {
    "record", "recall", "prepare_wrap", "save_continuity", "delete_episode", "status",
    "wrap_cancel", "crystal_recall", "crystal_index", "spore_add", "spore_list",
    "spore_surface", "spore_get", "spore_update", "spore_touch", "spore_descend",
    "spore_ascend",
}


def _schema(tool: object) -> dict:
    return getattr(tool, "input_schema", None) or tool.inputSchema


def test_initialize_lists_17_typed_tools_and_two_resources(db: Path) -> None:
    async def body() -> None:
        async with connect(db) as client:
            tools = (await client.list_tools()).tools
            assert {t.name for t in tools} == EXPECTED_TOOLS
            assert len(tools) == 17
            for t in tools:
                schema = _schema(t)
                assert schema["type"] == "object"
                assert schema["additionalProperties"] is False
                assert len(t.description) > 40, t.name
                for name, prop in schema["properties"].items():
                    assert prop.get("description"), (t.name, name)
            record = next(t for t in tools if t.name == "record")
            props = _schema(record)["properties"]
            assert _schema(record)["required"] == ["content", "episode_type"]
            assert props["trust"]["enum"] == ["agent", "external", "tool"]  # never operator
            assert "session_id" not in _schema(next(t for t in tools if t.name == "prepare_wrap"))[
                "properties"]

            resources = (await client.list_resources()).resources
            assert {str(r.uri) for r in resources} == {"anneal://continuity",
                                                       "anneal://integrity/manifest"}
            continuity = await client.read_resource("anneal://continuity")
            assert "No continuity yet" in continuity.contents[0].text
            with pytest.raises(Exception, match="unknown resource"):
                await client.read_resource("anneal://secrets")
            assert "Episodes: 0" in await call(client, "status")  # still serving

    run(body)


def test_manifest_resource_matches_what_tools_list_delivered(db: Path) -> None:
    """What a host does: hash each delivered description and schema, compare."""
    async def body() -> None:
        async with connect(db) as client:
            manifest = json.loads((await client.read_resource(
                "anneal://integrity/manifest")).contents[0].text)
            tools = (await client.list_tools()).tools
        assert manifest["algorithm"] == "sha256"
        assert set(manifest["tools"]) == EXPECTED_TOOLS
        for t in tools:
            entry = manifest["tools"][t.name]
            assert entry["description"] == sha256(t.description)
            assert entry["input_schema"] == sha256(canonical_json(_schema(t)))
        assert manifest == compute_manifest()

    run(body)


def test_server_keeps_its_session_id_from_the_environment(db: Path) -> None:
    """ANNEAL_MEMORY_SESSION_ID works like --session-id."""
    from anneal_memory import claim_baton

    from mcphelp import server_env

    async def body() -> None:
        claim_baton(db, "from-env")
        env = server_env(db.parent, ANNEAL_MEMORY_SESSION_ID="from-env")
        async with connect(db, session=None, env=env) as client:
            await call(client, "record", {"content": "The env session records this", "episode_type": "context"})
            status = await call(client, "status")
            assert "this session (from-env) holds the baton" in status

    run(body)
