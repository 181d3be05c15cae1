"""LlamaIndex-specific behaviour: the memory block, per-turn recording, the tool recorder, the wrap."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from li_scripted import Script, make_agent
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.memory import Memory

from anneal_memory import Store
from anneal_memory.adapters.llamaindex import (
    LOGGER_NAME,
    AnnealMemory,
    AnnealMemoryBlock,
    AnnealToolRecorder,
    llm_compressor,
)
from anneal_memory.errors import ValidationError
from anneal_memory.session import MemorySession

GAUGE = ("read_gauge", {"name": "pump"})


@pytest.fixture
def store(tmp_path: Path):
    s = Store(tmp_path / "memory.db", project_name="Llama")
    yield s
    s.close()


@pytest.fixture(autouse=True)
def no_leftover_handlers():
    before = list(get_dispatcher().span_handlers)
    yield
    assert list(get_dispatcher().span_handlers) == before, "a span handler was left attached"


def _run_plain(agent, text: str):
    """A plain agent run (the agent's own default memory)."""
    async def go():
        return await agent.run(user_msg=text)
    return asyncio.run(go())


def _episodes(store: Store):
    return store.recall(limit=1000).episodes


def test_a_turn_records_user_tool_and_outcome(store: Store) -> None:
    memory = AnnealMemory.from_store(store)
    result = asyncio.run(memory.arun(make_agent(Script("The pump reads 3.2 bar.", GAUGE)),
                                     "Check the irrigation pump"))
    assert str(result) == "The pump reads 3.2 bar."
    kinds = sorted((e.type.value, e.trust) for e in _episodes(store))
    assert kinds == [("context", "agent"), ("observation", "tool"), ("outcome", "agent")]
    tool = [e for e in _episodes(store) if e.trust == "tool"][0]
    assert "read_gauge" in tool.content and "3.2 bar" in tool.content


def test_recorder_alone_records_tools_with_any_memory(store: Store) -> None:
    session = MemorySession(store)
    recorder = AnnealToolRecorder(session)
    with recorder.attached():
        assert recorder in get_dispatcher().span_handlers
        _run_plain(make_agent(Script("ok", GAUGE)), "Read the pump gauge")
    assert recorder not in get_dispatcher().span_handlers
    tool = [e for e in _episodes(store) if e.trust == "tool"]
    assert len(tool) == 1 and "toolresult" in tool[0].content
    # detached: further runs are not seen
    _run_plain(make_agent(Script("ok", ("read_gauge", {"name": "tank"}))), "tank?")
    assert len([e for e in _episodes(store) if e.trust == "tool"]) == 1


def test_memory_and_recorder_together_record_a_tool_output_once(store: Store) -> None:
    memory = AnnealMemory.from_store(store)
    with AnnealToolRecorder(memory.session).attached():
        asyncio.run(memory.arun(make_agent(Script("ok", GAUGE)), "Read the pump gauge"))
    assert len([e for e in _episodes(store) if e.trust == "tool"]) == 1


def test_block_reaches_the_system_message_without_the_request_itself(store: Store) -> None:
    memory = AnnealMemory.from_store(store)
    asyncio.run(memory.arun(make_agent(Script("Noted.")), "The compost bin is behind the blue shed"))
    script = Script("Behind the blue shed.")
    asyncio.run(memory.arun(make_agent(script), "Where is the compost bin kept?"))
    system = script.inputs[0].split("Where is the compost bin kept?")[0]
    assert "blue shed" in system
    assert "kept?" not in system  # the turn's own request is not recalled back into memory


def test_block_works_inside_a_plain_memory(store: Store) -> None:
    session = MemorySession(store)
    session.record_decision("Harvest the pumpkins after the first frost")
    memory = Memory.from_defaults(memory_blocks=[AnnealMemoryBlock(session=session)])
    messages = asyncio.run(memory.aget(input="When do we harvest the pumpkins?"))
    assert any("first frost" in (m.content or "") for m in messages)


def test_evicted_history_is_recorded(store: Store) -> None:
    history = [ChatMessage(role="user", content=f"Old note {i} about the orchard fence " * 4)
               for i in range(6)]
    memory = AnnealMemory.from_store(store, chat_history=history, token_limit=60,
                                     token_flush_size=30)
    assert not _episodes(store)  # history handed in at construction is not put() yet
    asyncio.run(memory.arun(make_agent(Script("ok")), "Anything about the fence?"))
    contents = " ".join(e.content for e in _episodes(store))
    assert "Old note 0" in contents


def test_sync_put_and_get(store: Store) -> None:
    memory = AnnealMemory.from_store(store)
    memory.put(ChatMessage(role="user", content="The hose reel is in the garage"))
    memory.put(ChatMessage(role="assistant", content="Got it."))
    assert {e.type.value for e in _episodes(store)} == {"context", "outcome"}
    memory2 = AnnealMemory.from_store(store)
    got = memory2.get(input="Where is the hose reel?")
    assert any("garage" in (m.content or "") for m in got)


def test_wrap_is_off_by_default_then_explicit_wrap_with_the_agent_llm(store: Store) -> None:
    memory = AnnealMemory.from_store(store)
    agent = make_agent(Script("Water at dawn."))
    asyncio.run(memory.arun(agent, "Decide when to water the tomatoes"))
    assert store.load_continuity() is None
    outcome = memory.wrap()  # the LLM of the last arun()
    assert outcome.status == "saved", outcome.message
    assert "## State" in (store.load_continuity() or "")


def test_failed_compress_keeps_episodes(store: Store) -> None:
    def broken(prompt: str) -> str:
        raise RuntimeError("model offline")

    memory = AnnealMemory.from_store(store, wrap_on_end=True, compress=broken)
    agent = make_agent(Script("Mulch the beds."))
    asyncio.run(memory.arun(agent, "Decide how to keep the beds moist"))
    assert store.load_continuity() is None and store.status().episodes_since_wrap == 2
    assert memory.session.last_wrap is not None and memory.session.last_wrap.status == "failed"
    outcome = asyncio.run(memory.awrap(llm_compressor(agent.llm)))
    assert outcome.status == "saved" and store.status().total_wraps == 1
    assert memory.session.last_wrap is outcome


def test_memory_failures_are_logged_and_the_run_goes_on(tmp_path: Path, caplog) -> None:
    broken = Store(tmp_path / "b.db", project_name="B")
    broken.close()
    memory = AnnealMemory.from_store(broken)
    with caplog.at_level(logging.WARNING, logger=LOGGER_NAME):
        with AnnealToolRecorder(memory.session).attached():
            result = asyncio.run(memory.arun(make_agent(Script("still here", GAUGE)), "Go on"))
    assert str(result) == "still here"
    assert any(r.name == LOGGER_NAME for r in caplog.records)


def test_strict_session_lets_hook_failures_through(store: Store, monkeypatch) -> None:
    memory = AnnealMemory.from_store(MemorySession(store, strict=True))

    def boom(*args, **kwargs):
        raise RuntimeError("memory exploded")

    monkeypatch.setattr(memory.session, "memory_block", boom)
    with pytest.raises(RuntimeError, match="memory exploded"):
        asyncio.run(memory.arun(make_agent(Script("never")), "Go on"))


def test_configuration_errors_raise_at_construction(store: Store) -> None:
    with pytest.raises(ValidationError):
        AnnealToolRecorder(store)  # type: ignore[arg-type]
    with pytest.raises((ValidationError, ValueError)):
        AnnealMemoryBlock(session=store)
