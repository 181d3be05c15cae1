"""``AnnealSession``: the SDK's Session protocol, on its own and inside ``Runner.run``."""

from __future__ import annotations

import asyncio

import pytest
from agents import Agent, Runner
from agents.memory import Session, SessionSettings
from oa_scripted import lookup, model_inputs, scripted_model

from anneal_memory import Store
from anneal_memory.adapters.openai_agents import AnnealSession
from anneal_memory.errors import ValidationError


def _items(n: int) -> list[dict]:
    return [{"role": "user", "content": f"message {i}"} for i in range(n)]


def test_is_an_sdk_session(mem_store: Store) -> None:
    assert isinstance(AnnealSession("s1", mem_store), Session)


def test_add_get_pop_clear(mem_store: Store) -> None:
    async def scenario() -> None:
        session = AnnealSession("s1", mem_store)
        assert await session.get_items() == []
        assert await session.pop_item() is None
        await session.add_items(_items(4))
        assert [i["content"] for i in await session.get_items()] == [
            "message 0", "message 1", "message 2", "message 3"]
        assert [i["content"] for i in await session.get_items(limit=2)] == [
            "message 2", "message 3"]
        assert await session.pop_item() == {"role": "user", "content": "message 3"}
        assert len(await session.get_items()) == 3
        await session.add_items([{"role": "user", "content": "message 9"}])
        assert (await session.get_items())[-1]["content"] == "message 9"
        await session.clear_session()
        assert await session.get_items() == []

    asyncio.run(scenario())


def test_sessions_are_isolated(mem_store: Store) -> None:
    async def scenario() -> None:
        a, b = AnnealSession("alice", mem_store), AnnealSession("bob", mem_store)
        await a.add_items(_items(2))
        await b.add_items([{"role": "user", "content": "bob only"}])
        await a.clear_session()
        assert await a.get_items() == []
        assert [i["content"] for i in await b.get_items()] == ["bob only"]

    asyncio.run(scenario())


def test_session_settings_limit(mem_store: Store) -> None:
    async def scenario() -> None:
        session = AnnealSession("s1", mem_store, session_settings=SessionSettings(limit=1))
        await session.add_items(_items(3))
        assert [i["content"] for i in await session.get_items()] == ["message 2"]
        assert len(await session.get_items(limit=3)) == 3

    asyncio.run(scenario())


def test_items_are_typed_episodes(mem_store: Store) -> None:
    model = scripted_model(call_tool=True)
    agent = Agent(name="a", model=model, tools=[lookup])
    Runner.run_sync(agent, "Look up the pump", session=AnnealSession("s1", mem_store))
    episodes = {e.type.value + "/" + e.trust: e for e in mem_store.recall(limit=100).episodes}
    assert episodes["context/agent"].content == "Look up the pump"
    assert "toolresult" in episodes["observation/tool"].content
    assert episodes["outcome/agent"].content == "Done: noted."


def test_second_run_sees_the_history(mem_store: Store) -> None:
    agent = Agent(name="a", model=scripted_model(answer="The sky is blue."))
    Runner.run_sync(agent, "What colour is the sky?", session=AnnealSession("s1", mem_store))
    model = scripted_model(answer="You asked about the sky.")
    agent = Agent(name="a", model=model)
    Runner.run_sync(agent, "What did I ask?", session=AnnealSession("s1", mem_store))
    received = model_inputs(model)[0]
    assert "What colour is the sky?" in received and "The sky is blue." in received
    other = scripted_model()
    Runner.run_sync(Agent(name="a", model=other), "Hi", session=AnnealSession("s2", mem_store))
    assert "sky" not in model_inputs(other)[0]


def test_bad_arguments_raise(mem_store: Store) -> None:
    with pytest.raises(ValidationError):
        AnnealSession("", mem_store)
    with pytest.raises(ValidationError):
        AnnealSession("s1", "memory.db")  # type: ignore[arg-type]
