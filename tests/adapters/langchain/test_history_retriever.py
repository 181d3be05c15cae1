"""AnnealChatMessageHistory and AnnealRetriever answer LangChain's own calls."""

from __future__ import annotations

import asyncio

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
    assert kinds["hello"] == ("outcome", "agent") and kinds["toolresult 7"] == ("observation", "tool")
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
    retriever = AnnealRetriever(session=MemorySession(store), k=5)
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
    retriever = AnnealRetriever(session=MemorySession(store))
    fmt = RunnableLambda(lambda docs: "\n".join(d.page_content for d in docs))
    prompt = ChatPromptTemplate.from_messages([("system", "Memory:\n{memory}"), ("human", "{q}")])
    chain = {"memory": (lambda x: x["q"]) | retriever | fmt, "q": lambda x: x["q"]} | prompt | model
    assert chain.invoke({"q": "greenhouse vent"}).text == "It opens at 24C."
    assert "opens at 24C" in model.seen[0]
