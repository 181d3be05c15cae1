"""AnnealCallbackHandler on a bare chat model, async chains, options and failures."""

from __future__ import annotations

import asyncio
import logging

import pytest
from lc_loop import agent_chain
from lc_scripted import read_gauge, scripted

from anneal_memory import Store
from anneal_memory.adapters.langchain import AnnealCallbackHandler, model_compressor
from anneal_memory.errors import ValidationError


def _contents(store: Store, kind: str) -> list[str]:
    return [e.content for e in store.recall(limit=100).episodes if e.type.value == kind]


def test_bare_chat_model_run_is_recorded(store: Store) -> None:
    handler = AnnealCallbackHandler(store)
    model = scripted("Sow the beans after the last frost.")
    model.invoke("When should I sow the beans?", config={"callbacks": [handler]})
    assert _contents(store, "context") == ["When should I sow the beans?"]
    assert _contents(store, "outcome") == ["Sow the beans after the last frost."]


def test_async_chain_records_tool_with_arguments(store: Store) -> None:
    handler = AnnealCallbackHandler(store)
    chain = agent_chain(handler.session, scripted("42 psi.", call_tool=True), [read_gauge])
    out = asyncio.run(chain.ainvoke({"input": "Read the pump"}, config={"callbacks": [handler]}))
    assert out == "42 psi."
    tool = [e for e in store.recall(limit=100).episodes if e.trust == "tool"]
    assert len(tool) == 1 and "42 psi" in tool[0].content and tool[0].type.value == "observation"
    assert _contents(store, "outcome") == ["42 psi."]


def test_llm_steps_are_opt_in(store: Store) -> None:
    quiet = AnnealCallbackHandler(store)
    agent_chain(quiet.session, scripted("fine", call_tool=True), [read_gauge]).invoke(
        {"input": "Read the pump"}, config={"callbacks": [quiet]})
    assert "Checking the gauge first." not in _contents(store, "observation")
    chatty = AnnealCallbackHandler(store, record_llm_steps=True)
    agent_chain(chatty.session, scripted("fine", call_tool=True), [read_gauge]).invoke(
        {"input": "Read the pump"}, config={"callbacks": [chatty]})
    assert "Checking the gauge first." in _contents(store, "observation")


def test_same_event_twice_is_recorded_once(store: Store) -> None:
    handler = AnnealCallbackHandler(store)
    for _ in range(2):
        scripted("Same answer.").invoke("Same question?", config={"callbacks": [handler]})
    assert _contents(store, "context") == ["Same question?"]
    assert _contents(store, "outcome") == ["Same answer."]


def test_explicit_wrap_does_not_record_its_own_prompt(store: Store) -> None:
    model = scripted("Noted.")
    handler = AnnealCallbackHandler(store)
    model.invoke("We chose drip irrigation", config={"callbacks": [handler]})
    before = store.status().total_episodes
    assert handler.wrap(model_compressor(model)).status == "saved"
    assert "## State" in (store.load_continuity() or "")
    assert store.status().total_episodes == before


def test_failed_run_still_records_request(store: Store) -> None:
    handler = AnnealCallbackHandler(store)
    model = scripted("x")
    model.messages = iter([])  # the scripted model has nothing to say: the run fails
    with pytest.raises(StopIteration):
        model.invoke("This request fails", config={"callbacks": [handler]})
    assert _contents(store, "context") == ["This request fails"]


def test_broken_store_does_not_break_the_run(tmp_path, caplog) -> None:
    broken = Store(tmp_path / "b.db", project_name="B")
    broken.close()
    handler = AnnealCallbackHandler(broken)
    with caplog.at_level(logging.WARNING):
        out = scripted("still answering").invoke("hi there", config={"callbacks": [handler]})
    assert out.text == "still answering"


def test_configuration_errors(store: Store) -> None:
    with pytest.raises(ValidationError):
        AnnealCallbackHandler(store, wrap_on_end=True)


def test_store_path_opens_a_store_the_handler_owns(tmp_path) -> None:
    handler = AnnealCallbackHandler(str(tmp_path / "owned.db"))
    assert handler.session.owns_store
    scripted("noted").invoke("Store the seed order", config={"callbacks": [handler]})
    assert any("seed order" in e.content for e in handler.session.store.recall(limit=10).episodes)
    handler.close()


def _owners(store: Store) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for user in ("alice", "bob"):
        view = store.scoped({"user": user})
        out[user] = {e.content for e in view.recall(limit=100).episodes}
    return out


def test_configurable_only_ids_reach_the_handler_of_an_lcel_chain(store: Store) -> None:
    """langchain-core 1.x no longer copies config['configurable'] into the metadata callbacks
    receive: the handler reads the running config, so a chain run with the id only in
    configurable is that user's memory, not the shared root."""
    from langchain_core.prompts import ChatPromptTemplate

    handler = AnnealCallbackHandler(store)
    prompt = ChatPromptTemplate.from_messages([("human", "{input}")])
    (prompt | scripted("Noted.")).invoke(
        {"input": "My locker code is 4471"},
        config={"callbacks": [handler], "configurable": {"user_id": "alice"}})
    (prompt | scripted("Noted.")).invoke({"input": "My locker code is 9902"},
                 config={"callbacks": [handler], "configurable": {"user_id": "bob"}})
    owners = _owners(store)
    assert any("4471" in c for c in owners["alice"]) and not any("9902" in c for c in owners["alice"])
    assert any("9902" in c for c in owners["bob"]) and not any("4471" in c for c in owners["bob"])
    root_only = {e.content for e in store.recall(limit=100).episodes} - owners["alice"] - owners["bob"]
    assert not any("4471" in c or "9902" in c for c in root_only)


@pytest.mark.parametrize("uid", ["", " ", "\u200b"])
def test_an_empty_configurable_id_stops_the_run_and_writes_nothing(store: Store, uid: str) -> None:
    from langchain_core.prompts import ChatPromptTemplate

    from anneal_memory.errors import IdentityError

    handler = AnnealCallbackHandler(store)
    chain = ChatPromptTemplate.from_messages([("human", "{input}")]) | scripted("Noted.")
    with pytest.raises(IdentityError, match="configurable|metadata"):
        chain.invoke({"input": "My locker code is 4471"},
                     config={"callbacks": [handler], "configurable": {"user_id": uid}})
    assert store.recall(limit=100).episodes == []
