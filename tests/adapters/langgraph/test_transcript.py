"""Recall does not repeat the transcript (issue 30 item 3): with a checkpointer, a thread's
earlier turns are in the state messages the model receives, so the recalled block leaves
out the episodes recorded from them; another thread still recalls them."""

from __future__ import annotations

from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from lc_scripted import ScriptedChatModel

from anneal_memory import Store
from anneal_memory.adapters import MEMORY_LABEL
from anneal_memory.adapters.langgraph import AnnealMiddleware


def _block(seen: str) -> str:
    """The recalled block in one model input ("" when none)."""
    return seen[seen.index(MEMORY_LABEL):] if MEMORY_LABEL in seen else ""


def test_a_threads_own_turns_are_not_recalled_into_it(store: Store) -> None:
    model = ScriptedChatModel(messages=iter([AIMessage(content="Noted."),
                                             AIMessage(content="See above."),
                                             AIMessage(content="Quasar-1711.")]))
    agent = create_agent(model, tools=[], middleware=[AnnealMiddleware(store)],
                         checkpointer=InMemorySaver())
    one = {"configurable": {"thread_id": "t1"}}
    agent.invoke({"messages": [{"role": "user",
                                "content": "Remember that my locker code is Quasar-1711"}]}, one)
    agent.invoke({"messages": [{"role": "user", "content": "What is my locker code?"}]}, one)
    second = model.seen[1]
    assert second.count("Quasar-1711") == 1, second  # the transcript's, not the block's too
    assert "Quasar-1711" not in _block(second)
    agent.invoke({"messages": [{"role": "user", "content": "What is my locker code?"}]},
                 {"configurable": {"thread_id": "t2"}})
    assert "Quasar-1711" in _block(model.seen[2])  # a new thread recalls it
