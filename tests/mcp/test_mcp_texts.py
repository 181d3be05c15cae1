"""The tool texts a model reads say only what is true now: crystal_index names a call that
does load a crystal, save_continuity does not advertise the retired affect argument (an old
client that still sends it is not refused: test_mcp_wrap), and status says nothing about
association links."""

from __future__ import annotations

from pathlib import Path

from anneal_memory import Store
from anneal_memory.crystal import CrystalStore

from mcphelp import call, connect, run


def test_crystal_index_tells_the_model_a_call_that_works(db: Path) -> None:
    with Store(db) as store:
        ep = store.record("Retries with jitter stopped the thundering herd", "outcome")
    CrystalStore(db).crystallize("jittered retries", text="Spread retries out in time",
                                 level=2, evidence=[{"id": ep.id, "why": "jitter stopped herd"}])

    async def body() -> None:
        async with connect(db) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            hint = tools["crystal_index"].description
            assert "crystal_recall with its name as the query and mode 'query'" in hint
            index = await call(client, "crystal_index")
            name = index.split(" — ")[0].strip("- ")
            full = await call(client, "crystal_recall", {"query": name, "mode": "query"})
            assert "Spread retries out in time" in full  # the whole text, as promised
            save = tools["save_continuity"]
            schema = getattr(save, "inputSchema", None) or save.input_schema
            assert "affective_state" not in schema["properties"]
            assert "affect" not in save.description
            status = await call(client, "status")
            assert "ssociation" not in status and "retired" not in status

    run(body)
