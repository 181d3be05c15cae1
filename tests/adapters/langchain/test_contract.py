"""The shared adapter contract, driven through an LCEL chain with the callback handler."""

from __future__ import annotations

from typing import Any

from lc_loop import agent_chain
from lc_scripted import read_gauge, scripted

from anneal_memory import Store
from anneal_memory.adapters.langchain import AnnealCallbackHandler, chat_model_compress

from contract import AdapterContract, RunTrace


class TestLangChainContract(AdapterContract):
    def build(self, memory: Any, **options: Any) -> Any:
        return AnnealCallbackHandler(memory, **options)

    def run(self, store: Store, user_input: str, *, wrap: bool = False,
            call_tool: bool = False) -> RunTrace:
        model = scripted("Done: noted and answered.", call_tool=call_tool)
        handler = AnnealCallbackHandler(store, wrap_on_end=wrap,
                                        compress=chat_model_compress(model))
        chain = agent_chain(handler.session, model, [read_gauge])
        output = chain.invoke({"input": user_input}, config={"callbacks": [handler]})
        return RunTrace(output=output, model_inputs=list(model.seen))
