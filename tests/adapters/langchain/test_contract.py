"""The shared adapter contract, driven through an LCEL chain: the retriever brings memory
in (labelled, with the continuity), the callback handler records. A user is the run's
``config["metadata"]["user_id"]``, the identity both take by default."""

from __future__ import annotations

from typing import Any

from lc_loop import agent_chain
from lc_scripted import read_gauge, scripted

from anneal_memory import Store
from anneal_memory.adapters.langchain import AnnealCallbackHandler, model_compressor

from contract import AdapterContract, RunTrace


class TestLangChainContract(AdapterContract):
    def build(self, memory: Any, **options: Any) -> Any:
        return AnnealCallbackHandler(memory, **options)

    def _parts(self, store: Store, wrap: bool, user: str | None, model: Any) -> tuple[Any, Any]:
        def make(wrap_model: Any) -> AnnealCallbackHandler:
            return AnnealCallbackHandler(store, wrap_on_end=wrap,
                                         compress=model_compressor(wrap_model))
        # a handler cannot reach the run's model: one shared by every user's runs wraps
        # through a model of its own (scripted too), so no run's trace holds another's wrap
        handler = self.shared((id(store), wrap), lambda: make(scripted("unused"))) if user \
            else make(model)
        return handler, agent_chain(store, model, [read_gauge])

    def run(self, store: Store, user_input: str, *, wrap: bool = False,
            call_tool: bool = False, user: str | None = None) -> RunTrace:
        model = scripted("Done: noted and answered.", call_tool=call_tool)
        handler, chain = self._parts(store, wrap, user, model)
        config: dict[str, Any] = {"callbacks": [handler]}
        if user:
            config["metadata"] = {"user_id": user}
        output = chain.invoke({"input": user_input}, config=config)
        return RunTrace(output=output, model_inputs=list(model.seen))

    async def arun(self, store: Store, user_input: str, *, wrap: bool = False,
                   user: str | None = None) -> RunTrace:
        model = scripted("Done: noted and answered.")
        handler, chain = self._parts(store, wrap, user, model)
        output = await chain.ainvoke({"input": user_input}, config={
            "callbacks": [handler], "metadata": {"user_id": user}})
        return RunTrace(output=output, model_inputs=list(model.seen))

    def identity_runs(self, store: Store) -> dict[str, Any]:
        from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
        from langchain_core.runnables.history import RunnableWithMessageHistory

        from anneal_memory.adapters.langchain import AnnealChatMessageHistory, AnnealRetriever

        def invoke(config: dict[str, Any], handler: Any = None, retriever: Any = None) -> None:
            model = scripted("Done.")
            chain = agent_chain(retriever or store, model, [read_gauge])
            chain.invoke({"input": "What is my code?"},
                         config={"callbacks": [handler or AnnealCallbackHandler(store)],
                                 **config})

        def with_history(sid: str) -> None:
            prompt = ChatPromptTemplate.from_messages(
                [MessagesPlaceholder("history"), ("human", "{input}")])
            chain = RunnableWithMessageHistory(
                prompt | scripted("Done."), lambda sid: AnnealChatMessageHistory(store, sid),
                input_messages_key="input", history_messages_key="history")
            chain.invoke({"input": "What is my code?"},
                         config={"configurable": {"session_id": sid}})

        def by_callable(uid: str) -> None:
            handler = AnnealCallbackHandler(store, namespace=lambda meta: {"user": uid})
            retriever = AnnealRetriever(memory=store, namespace=lambda values: {"user": "ann"})
            invoke({}, handler, retriever)

        return {
            "config['metadata']": lambda uid: invoke({"metadata": {"user_id": uid}}),
            "config['configurable']": lambda uid: invoke({"configurable": {"user_id": uid}}),
            "the chat history's conversation_id": with_history,
            "the namespace callable's result": by_callable,
        }
