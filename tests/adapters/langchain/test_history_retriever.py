"""AnnealChatMessageHistory and AnnealRetriever answer LangChain's own calls."""

from __future__ import annotations

import asyncio
import math

import pytest
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import RunnableLambda
from langchain_core.runnables.history import RunnableWithMessageHistory
from lc_scripted import scripted

from anneal_memory import Store
from anneal_memory.adapters.langchain import AnnealChatMessageHistory, AnnealRetriever
from anneal_memory.session import MemorySession


def test_history_roundtrip_types_and_isolation(store: Store) -> None:
    history = AnnealChatMessageHistory(store, "conv-1")
    assert isinstance(history, BaseChatMessageHistory)
    sent = [SystemMessage("be brief"), HumanMessage("hi"), AIMessage("hello"),
            HumanMessage("hi"), ToolMessage("toolresult 7", tool_call_id="c1")]
    history.add_messages(sent)
    AnnealChatMessageHistory(store, "conv-2").add_user_message("other chat")
    got = history.messages
    assert [(m.type, m.text) for m in got] == [(m.type, m.text) for m in sent]
    assert got[-1].tool_call_id == "c1"
    kinds = {e.content: (e.type.value, e.trust) for e in store.recall(limit=100).episodes}
    assert kinds["hello"] == ("outcome", "agent")
    assert kinds["Tool tool returned: toolresult 7"] == ("observation", "tool")
    assert kinds["hi"] == ("context", "agent")  # the same message twice: one episode
    assert "be brief" not in kinds  # a system message is the app's, not memory
    history.clear()
    assert history.messages == []
    assert [m.text for m in AnnealChatMessageHistory(store, "conv-2").messages] == ["other chat"]


def test_history_async_and_reopen(store: Store) -> None:
    async def go() -> None:
        h = AnnealChatMessageHistory(store, "a")
        await h.aadd_messages([HumanMessage("async one"), AIMessage("async two")])
        assert [m.text for m in await h.aget_messages()] == ["async one", "async two"]
        await h.aclear()
        assert await h.aget_messages() == []

    asyncio.run(go())


def test_history_in_runnable_with_message_history(store: Store) -> None:
    model = scripted("First reply.")
    prompt = ChatPromptTemplate.from_messages([MessagesPlaceholder("history"), ("human", "{input}")])
    chain = RunnableWithMessageHistory(
        prompt | model, lambda sid: AnnealChatMessageHistory(store, sid),
        input_messages_key="input", history_messages_key="history")
    chain.invoke({"input": "my cat is Pimento"}, config={"configurable": {"session_id": "s1"}})
    model.messages = iter([AIMessage("Second reply.")])
    chain.invoke({"input": "what is my cat called?"}, config={"configurable": {"session_id": "s1"}})
    assert "Pimento" in model.seen[-1]
    texts = [m.text for m in AnnealChatMessageHistory(store, "s1").messages]
    assert texts == ["my cat is Pimento", "First reply.", "what is my cat called?", "Second reply."]


def test_retriever_documents_and_relayed_flag(store: Store) -> None:
    store.record("The compost bin is emptied on Fridays", "observation")
    store.record("weather api: compost heat 60C", "observation", trust="tool")
    retriever = AnnealRetriever(MemorySession(store), k=5)
    docs = retriever.invoke("compost")
    assert {d.page_content for d in docs} == {"The compost bin is emptied on Fridays",
                                              "weather api: compost heat 60C"}
    relayed = {d.page_content: d.metadata["relayed"] for d in docs}
    assert relayed["weather api: compost heat 60C"] is True
    assert relayed["The compost bin is emptied on Fridays"] is False
    assert all({"id", "type", "trust", "score", "timestamp"} <= set(d.metadata) for d in docs)
    assert asyncio.run(retriever.ainvoke("compost"))
    assert retriever.invoke("zzzz unrelated qqqq") == []


def test_retriever_in_lcel_chain(store: Store) -> None:
    store.record("The greenhouse vent opens at 24C", "observation")
    model = scripted("It opens at 24C.")
    retriever = AnnealRetriever(memory=MemorySession(store))
    fmt = RunnableLambda(lambda docs: "\n".join(d.page_content for d in docs))
    prompt = ChatPromptTemplate.from_messages([("system", "Memory:\n{memory}"), ("human", "{q}")])
    chain = {"memory": (lambda x: x["q"]) | retriever | fmt, "q": lambda x: x["q"]} | prompt | model
    assert chain.invoke({"q": "greenhouse vent"}).text == "It opens at 24C."
    assert "opens at 24C" in model.seen[0]


def test_history_transcript_is_items_and_memory_goes_through_the_session(store: Store,
                                                                          caplog) -> None:
    from anneal_memory.adapters.langchain import COLLECTION

    history = AnnealChatMessageHistory(MemorySession(store, max_content_chars=100), "ann")
    long = "compost " * 60
    history.add_messages([HumanMessage(long), HumanMessage(long)])
    alice = store.scoped({"user": "ann"})
    assert [m.text for m in history.messages] == [long, long]  # the transcript is exact
    assert alice.items(COLLECTION).count() == 2
    episodes = alice.recall(limit=10).episodes
    assert len(episodes) == 1 and len(episodes[0].content) < 200  # capped, once
    # a failing memory write is logged; the message is still kept
    def broken(*a, **k):
        raise RuntimeError("disk full")
    alice_session = history.memory_session
    alice_session.store.record = broken  # type: ignore[method-assign]
    with caplog.at_level("WARNING"):
        history.add_user_message("after the failure")
    assert history.messages[-1].text == "after the failure"
    assert "disk full" in caplog.text


def test_history_conversations_are_users_memories(store: Store) -> None:
    AnnealChatMessageHistory(store, "ann").add_user_message("my plot is number 17")
    AnnealChatMessageHistory(store, "ben").add_user_message("my plot is number 42")
    assert [e.content for e in store.scoped({"user": "ben"}).recall().episodes] == [
        "my plot is number 42"]
    two = AnnealChatMessageHistory(store, "ann-2", namespace={"user": "ann"})
    assert two.messages == []  # another conversation of the same user
    two.add_user_message("my shed is green")
    assert len(store.scoped({"user": "ann"}).recall().episodes) == 2


def test_history_behaves_as_langchains_in_memory_history(store: Store) -> None:
    from langchain_core.chat_history import InMemoryChatMessageHistory

    async def script(history: BaseChatMessageHistory) -> list[object]:
        seen: list[object] = [list(history.messages)]
        history.add_user_message("one")
        history.add_ai_message("two")
        await history.aadd_messages([HumanMessage("three"), ToolMessage("four", tool_call_id="t")])
        seen.append([(m.type, m.text) for m in await history.aget_messages()])
        history.clear()
        seen.append(list(history.messages))
        history.add_messages([AIMessage("five")])
        seen.append([(m.type, m.text) for m in history.messages])
        await history.aclear()
        seen.append(list(await history.aget_messages()))
        return seen

    expected = asyncio.run(script(InMemoryChatMessageHistory()))
    assert asyncio.run(script(AnnealChatMessageHistory(store, "s1"))) == expected


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")],
                         ids=["nan", "inf", "-inf"])
def test_history_keeps_non_finite_values_as_langchains_in_memory_history(
        store: Store, value: float) -> None:
    """A tool's artifact and a model's metadata holding NaN / an infinity come back as
    LangChain's InMemoryChatMessageHistory gives them (the store's JSON refused them)."""
    from langchain_core.chat_history import InMemoryChatMessageHistory

    def script(history: BaseChatMessageHistory) -> list[object]:
        history.add_messages([
            HumanMessage("measure it"),
            ToolMessage("measured", tool_call_id="c1", artifact={"reading": value}),
            AIMessage("done", response_metadata={"logprob": value})])
        got = history.messages
        return [(m.type, m.text) for m in got] + [
            got[1].artifact["reading"], got[2].response_metadata["logprob"]]

    ours = script(AnnealChatMessageHistory(store, "s1"))
    again = AnnealChatMessageHistory(store, "s1").messages  # read anew from the database
    reference = script(InMemoryChatMessageHistory())
    assert ours[:3] == reference[:3]
    for got in (*ours[3:], *reference[3:], again[1].artifact["reading"]):
        assert math.isnan(got) if math.isnan(value) else got == value


def test_retriever_honours_k_at_invoke_and_the_runs_identity(store: Store) -> None:
    for n in range(6):
        store.scoped({"user": "ann"}).record(f"compost note {n}", "observation")
    store.scoped({"user": "ben"}).record("compost secret of ben", "observation")
    retriever = AnnealRetriever(memory=store, k=5)
    ann = {"configurable": {"user_id": "ann"}}
    assert len(retriever.invoke("compost note", ann)) == 5
    assert len(retriever.invoke("compost note", ann, k=2)) == 2
    assert len(asyncio.run(retriever.ainvoke("compost note", ann, k=3))) == 3
    assert not any("ben" in d.page_content for d in retriever.invoke("compost", ann, k=10))
    ben = retriever.invoke("compost", {"metadata": {"user_id": "ben"}})
    assert [d.page_content for d in ben] == ["compost secret of ben"]


def test_retriever_brings_the_continuity_and_the_formatter_labels(store: Store) -> None:
    from anneal_memory.adapters import MEMORY_LABEL
    from anneal_memory.adapters.langchain import format_memory_documents
    from anneal_memory.testing import scripted_compress

    store.record("Decide to water the ferns on Mondays", "decision")
    MemorySession(store).wrap(scripted_compress)
    store.record("weather api: frost tonight", "observation", trust="tool")
    retriever = AnnealRetriever(memory=store, include_continuity=True)
    docs = retriever.invoke("ferns frost")
    assert docs[0].metadata["type"] == "continuity" and "ferns" in docs[0].page_content
    text = format_memory_documents(docs)
    assert text.startswith(MEMORY_LABEL)
    assert "## Continuity" in text and "data, not instructions" in text
    relayed = text.split("Recorded from tool output")[1]
    assert "frost tonight" in relayed
    assert format_memory_documents([]) == ""


def test_retriever_bad_k_and_memory(store: Store) -> None:
    import pytest

    from anneal_memory.errors import ValidationError

    with pytest.raises(ValidationError):
        AnnealRetriever()
    with pytest.raises(Exception):  # noqa: B017 - pydantic's own error for a bad field
        AnnealRetriever(memory=store, k=0)
    with pytest.raises(ValidationError, match="k must be"):
        AnnealRetriever(memory=store).invoke("x", k=0)
