"""``AnnealSession``: the SDK's Session protocol (as its own SQLiteSession behaves), on its
own and inside ``Runner.run`` with the memory's hooks."""

from __future__ import annotations

import asyncio
import logging
import math
from pathlib import Path

import pytest
from agents import Agent, Runner, SQLiteSession
from agents.memory import Session, SessionSettings
from oa_scripted import lookup, model_inputs, scripted_model

from anneal_memory import Store
from anneal_memory.adapters import MEMORY_LABEL
from anneal_memory.adapters.openai_agents import COLLECTION, AnnealMemory, AnnealSession
from anneal_memory.adapters.openai_agents._items import item_text
from anneal_memory.errors import ValidationError
from anneal_memory.governance.namespace import MemoryNamespace


def _items(n: int) -> list[dict]:
    return [{"role": "user", "content": f"message {i}"} for i in range(n)]


def _episodes(store: Store):
    return store.recall(limit=1000).episodes


def test_is_an_sdk_session(mem_store: Store) -> None:
    assert isinstance(AnnealSession("s1", mem_store), Session)


async def _script(session: Session) -> list[object]:
    """One sequence of Session calls; the answers are what the SDK relies on."""
    seen: list[object] = [await session.get_items(), await session.pop_item()]
    await session.add_items(_items(4))
    seen += [await session.get_items(), await session.get_items(limit=2),
             await session.get_items(limit=10), await session.pop_item()]
    await session.add_items([{"role": "user", "content": "message 9"},
                             {"type": "function_call_output", "call_id": "c1", "output": "x"}])
    seen += [await session.get_items(), await session.pop_item(), await session.pop_item()]
    await session.clear_session()
    seen += [await session.get_items(), await session.pop_item()]
    return seen


def test_behaves_as_the_sdks_sqlite_session(mem_store: Store, tmp_path: Path) -> None:
    reference = SQLiteSession("s1", str(tmp_path / "reference.db"))
    expected = asyncio.run(_script(reference))
    assert asyncio.run(_script(AnnealSession("s1", mem_store))) == expected


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")],
                         ids=["nan", "inf", "-inf"])
def test_non_finite_values_round_trip_as_in_the_sdks_sqlite_session(
        mem_store: Store, tmp_path: Path, value: float) -> None:
    """A tool output and a model item holding NaN / an infinity are stored and given back
    as the SDK's own SQLiteSession gives them (the store's JSON refused them)."""
    sent = [{"role": "user", "content": "measure it"},
            {"type": "function_call_output", "call_id": "c1", "output": {"reading": value}},
            {"role": "assistant", "content": "done", "logprob": value}]

    async def script(session: Session) -> list[object]:
        await session.add_items(sent)
        got = await session.get_items()
        last = await session.pop_item()
        return [got[0], got[1]["output"]["reading"], got[2]["logprob"], last["logprob"],
                len(await session.get_items())]

    reference = asyncio.run(script(SQLiteSession("s1", str(tmp_path / "reference.db"))))
    ours = asyncio.run(script(AnnealSession("s1", mem_store)))
    assert ours[0] == reference[0] and ours[4] == reference[4] == 2
    for got in (*ours[1:4], *reference[1:4]):
        assert math.isnan(got) if math.isnan(value) else got == value


def test_sessions_are_isolated(mem_store: Store) -> None:
    async def scenario() -> None:
        a, b = AnnealSession("alice", mem_store), AnnealSession("bob", mem_store)
        a2 = AnnealSession("alice/2", mem_store, namespace={"user": "alice"})
        await a.add_items(_items(2))
        await a2.add_items([{"role": "user", "content": "alice's second conversation"}])
        await b.add_items([{"role": "user", "content": "bob only"}])
        await a.clear_session()
        assert await a.get_items() == []
        assert [i["content"] for i in await a2.get_items()] == ["alice's second conversation"]
        assert [i["content"] for i in await b.get_items()] == ["bob only"]

    asyncio.run(scenario())


def test_session_settings_limit(mem_store: Store) -> None:
    async def scenario() -> None:
        session = AnnealSession("s1", mem_store, session_settings=SessionSettings(limit=1))
        await session.add_items(_items(3))
        assert [i["content"] for i in await session.get_items()] == ["message 2"]
        assert len(await session.get_items(limit=3)) == 3

    asyncio.run(scenario())


def test_items_are_state_not_memory(mem_store: Store) -> None:
    model = scripted_model(call_tool=True)
    agent = Agent(name="a", model=model, tools=[lookup])
    Runner.run_sync(agent, "Look up the pump", session=AnnealSession("s1", mem_store))
    alice = mem_store.scoped({"user": "s1"})
    kinds = [i.value.get("type") or i.value.get("role") for i in alice.items(COLLECTION).list()]
    assert kinds == ["user", "function_call", "function_call_output", "message"]
    assert _episodes(mem_store) == []  # the transcript is never recalled as memory


def test_hooks_and_session_store_each_message_once(mem_store: Store) -> None:
    memory = AnnealMemory(mem_store)
    model = scripted_model(call_tool=True)
    agent = Agent(name="a", instructions=memory.instructions("Base."), model=model,
                  tools=[lookup], hooks=memory.agent_hooks)
    Runner.run_sync(agent, "Look up the pump", session=memory.conversation("s1"),
                    hooks=memory.run_hooks, run_config=memory.run_config())
    episodes = _episodes(mem_store)
    assert sorted(e.type.value + "/" + e.trust for e in episodes) == [
        "context/agent", "observation/tool", "outcome/agent"]
    assert [e.content for e in episodes if e.type.value == "context"] == ["Look up the pump"]
    assert mem_store.scoped({"user": "s1"}).items(COLLECTION).count() == 4


def test_the_current_request_is_never_recalled_to_itself(mem_store: Store) -> None:
    memory = AnnealMemory(mem_store)
    for text in ("How deep should the carrot bed be?", "How deep should the carrot bed be?"):
        model = scripted_model()
        agent = Agent(name="a", instructions=memory.instructions(), model=model)
        Runner.run_sync(agent, text, session=memory.conversation("s1"),
                        hooks=memory.run_hooks, run_config=memory.run_config())
        memory_messages = [i["content"] for i in model.calls[0].input
                           if isinstance(i, dict) and str(i.get("content", "")).startswith(
                               MEMORY_LABEL)]
        assert not any("carrot bed" in m for m in memory_messages), memory_messages


def test_recall_follows_the_runs_session(mem_store: Store) -> None:
    memory = AnnealMemory(mem_store)

    def run(session_id: str, text: str) -> list[str]:
        model = scripted_model()
        agent = Agent(name="a", instructions=memory.instructions(), model=model)
        Runner.run_sync(agent, text, hooks=memory.run_hooks, run_config=memory.run_config(),
                        session=memory.conversation(session_id,
                                                    session_settings=SessionSettings(limit=0)))
        return model_inputs(model)

    run("alice", "My shed key is under the blue pot")
    assert "blue pot" not in "\n".join(run("bob", "Where is my shed key?"))
    assert "blue pot" in "\n".join(run("alice", "Where is my shed key?"))
    assert not mem_store.scoped({"user": "bob"}).recall(keyword="blue pot").episodes


def test_memory_is_a_user_message_with_the_run_config(mem_store: Store, caplog) -> None:
    mem_store.record("The hose reel is in the garage", "observation")
    memory = AnnealMemory(mem_store)
    model = scripted_model()
    agent = Agent(name="a", instructions=memory.instructions("Base."), model=model)
    Runner.run_sync(agent, "Where is the hose reel?", run_config=memory.run_config(),
                    hooks=memory.run_hooks)
    call = model.calls[0]
    assert call.system_instructions == "Base."
    *_, memory_message, request = call.input
    assert memory_message["role"] == "user" and memory_message["content"].startswith(MEMORY_LABEL)
    assert "hose reel is in the garage" in memory_message["content"]
    assert request["content"] == "Where is the hose reel?"  # the user's own words come last
    # without the run config the memory stays in the instructions, and a warning says so
    model = scripted_model()
    agent = Agent(name="a", instructions=memory.instructions("Base."), model=model)
    with caplog.at_level(logging.WARNING):
        Runner.run_sync(agent, "Where is the hose reel?", hooks=memory.run_hooks)
    assert "garage" in model.calls[0].system_instructions
    assert "run_config=memory.run_config()" in caplog.text


def test_memory_role_system_keeps_the_instructions(mem_store: Store) -> None:
    mem_store.record("The hose reel is in the garage", "observation")
    memory = AnnealMemory(mem_store, memory_role="system")
    model = scripted_model()
    agent = Agent(name="a", instructions=memory.instructions("Base."), model=model)
    Runner.run_sync(agent, "Where is the hose reel?", run_config=memory.run_config())
    assert "garage" in model.calls[0].system_instructions
    assert [i["content"] for i in model.calls[0].input] == ["Where is the hose reel?"]


def test_namespace_callable_gets_the_run_context(mem_store: Store) -> None:
    memory = AnnealMemory(mem_store, namespace=lambda ctx: {"user": ctx.context["user"]})
    agent = Agent(name="a", instructions=memory.instructions(), model=scripted_model())
    Runner.run_sync(agent, "My seed tray count is 12", context={"user": "cat"},
                    hooks=memory.run_hooks)
    assert [e.content for e in mem_store.scoped({"user": "cat"}).recall().episodes
            if e.type.value == "context"] == ["My seed tray count is 12"]
    everyone_default = MemoryNamespace("default", "default", "default")
    assert mem_store.scoped(everyone_default).recall().episodes == []


def test_bad_arguments_raise(mem_store: Store) -> None:
    with pytest.raises(ValidationError, match="session_id"):
        AnnealSession("", mem_store)
    with pytest.raises(ValidationError, match="AnnealSession needs"):
        AnnealSession("s1", 42)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="namespace"):
        AnnealSession("x" * 300, mem_store)  # too long for a user id: say namespace=
    with pytest.raises(ValidationError, match="callable"):
        AnnealSession("s1", mem_store, namespace=lambda ctx: {"user": "a"})


def test_recall_does_not_repeat_the_transcript(mem_store: Store) -> None:
    """Issue 30 item 3: within one conversation the recalled block leaves out the turns the
    model already receives from the session's history; another conversation of the same
    user still recalls them."""
    memory = AnnealMemory(mem_store)

    def turn(session: AnnealSession, text: str, answer: str) -> object:
        model = scripted_model(answer=answer)
        agent = Agent(name="gardener", instructions=memory.instructions("Base."), model=model)
        Runner.run_sync(agent, text, session=session, hooks=memory.run_hooks,
                        run_config=memory.run_config())
        return model.calls[0]

    def split(call: object) -> tuple[str, str]:
        """(the recalled block, the rest of what the model received)."""
        texts = [item_text(i) for i in call.input]  # type: ignore[attr-defined]
        block = "\n".join(t for t in texts if t.startswith(MEMORY_LABEL))
        return block, "\n".join(t for t in texts if not t.startswith(MEMORY_LABEL))

    first = AnnealSession("alice", memory)
    turn(first, "Remember that my locker code is Quasar-1711", "Noted.")
    block, history = split(turn(first, "What is my locker code?", "It is in your notes."))
    assert "Quasar-1711" in history  # the transcript carries it ...
    assert "Quasar-1711" not in block  # ... the block does not repeat it
    other = AnnealSession("alice-2", memory, namespace={"user": "alice"})
    block, _ = split(turn(other, "What is my locker code?", "Quasar-1711."))
    assert "Quasar-1711" in block  # another conversation of alice recalls it


@pytest.mark.parametrize("user", [None, "", "\u200b", "default"],
                         ids=["none", "empty", "invisible", "reserved"])
def test_a_callable_naming_no_user_never_reaches_the_shared_memory(mem_store: Store,
                                                                    user: object) -> None:
    """``{"tenant": t, "user": ctx.user}`` for a run with no user (issue 52): refused by the
    identity rule, never the tenant's shared memory, and nothing written."""
    from anneal_memory.errors import IdentityError

    mem_store.scoped({"tenant": "acme"}).record("the tenant's code is Vermilion", "observation")
    memory = AnnealMemory(mem_store, namespace=lambda ctx: {"tenant": "acme", "user": user})
    model = scripted_model()
    agent = Agent(name="a", instructions=memory.instructions(), model=model)
    with pytest.raises(IdentityError):
        Runner.run_sync(agent, "What is the code?", context={}, hooks=memory.run_hooks)
    assert [e.content for e in mem_store.recall(limit=100).episodes] == [
        "the tenant's code is Vermilion"]
    assert "Vermilion" not in str(model_inputs(model))
