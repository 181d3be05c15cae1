"""The tool texts a model reads say only what is true now: save_continuity does not
advertise the retired affect argument (an old client that still sends it is not refused:
test_mcp_wrap), status says nothing about association links, and crystal_index names a
call that does load a crystal (test_mcp_memory)."""

from __future__ import annotations

from pathlib import Path

from mcphelp import call, connect, run


def test_no_retired_layer_is_advertised(db: Path) -> None:
    async def body() -> None:
        async with connect(db) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            save = tools["save_continuity"]
            schema = getattr(save, "inputSchema", None) or save.input_schema
            assert set(schema["properties"]) == {"text", "wrap_token", "allow_shrink"}
            assert "affect" not in (save.description or "")
            # what a 1.0.2 client still sends is accepted, not advertised
            saved = await call(client, "save_continuity", {
                "text": "x", "affective_state": {"tag": "calm"}, "allow_unlinked": True},
                ok=False)
            assert "unknown argument" not in saved
            status = await call(client, "status")
            assert "ssociation" not in status  # no line about a retired layer

    run(body)
