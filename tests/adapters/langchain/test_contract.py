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
