"""A small LCEL agent: the adapter's retriever -> labelled memory -> prompt -> scripted
model -> tools -> model.

langchain-core has no agent executor of its own, so the loop is a RunnableLambda that
passes its config on: every model and tool run is a child of the root chain run, the
way LangChain's own agents nest them. Memory reaches the prompt only through the
retriever (and its formatter): the loop never asks the session itself.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda, RunnablePassthrough
from langchain_core.tools import BaseTool

from anneal_memory.adapters.langchain import AnnealRetriever, format_memory_documents

PROMPT = ChatPromptTemplate.from_messages(
    [("system", "You are the garden agent."), ("human", "{memory}"), ("human", "{input}")]
)


def agent_chain(memory: Any, model: Any, tools: list[BaseTool]) -> Runnable:
    """``memory``: an AnnealRetriever, or what one takes (a Store, a path, a session)."""
    retriever = memory if isinstance(memory, AnnealRetriever) else AnnealRetriever(
        memory=memory, include_continuity=True)
    by_name = {t.name: t for t in tools}

    def loop(inputs: dict[str, Any], config: RunnableConfig) -> str:
        messages: list[BaseMessage] = PROMPT.invoke(inputs, config).to_messages()
        while True:
            reply = model.invoke(messages, config)
            messages.append(reply)
            if not reply.tool_calls:
                return reply.text
            for call in reply.tool_calls:
                messages.append(by_name[call["name"]].invoke(call, config))

    recalled = (lambda x: x["input"]) | retriever | format_memory_documents
    return RunnablePassthrough.assign(memory=recalled) | RunnableLambda(loop)
