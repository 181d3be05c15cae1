"""The shared adapter contract, driven through a real FunctionAgent with MockFunctionCallingLLM."""

from __future__ import annotations

import asyncio
from typing import Any

from async_contract import AsyncLoopContract
from li_scripted import Script, make_agent

from anneal_memory import Store
from anneal_memory.adapters.llamaindex import AnnealMemory

from contract import RunTrace


class TestLlamaIndexContract(AsyncLoopContract):
    embedder_option = "embed_model"

    def build(self, memory: Any, **options: Any) -> Any:
        return AnnealMemory.from_store(memory, **options)

    async def _run(self, store: Store, user_input: str, *, wrap: bool = False,
                   call_tool: bool = False, user: str | None = None) -> RunTrace:
        script = Script(answer="Noted and done.",
                        call=("read_gauge", {"name": "pump"}) if call_tool else None)
        # LlamaIndex's identity is the memory's session_id; a fresh Memory per run, so its
        # own chat history carries nothing from run to run (only anneal's recall does)
        memory = AnnealMemory.from_store(store, session_id=user, wrap_on_end=wrap)
        # the native call, as LlamaIndex documents memory
        result = await make_agent(script).run(user_msg=user_input, memory=memory)
        return RunTrace(output=str(result), model_inputs=script.inputs)

    def identity_runs(self, store: Store) -> dict[str, Any]:
        def run(**options: Any) -> None:
            async def go() -> None:
                memory = AnnealMemory.from_store(store, **options)
                await make_agent(Script(answer="Done.")).run(
                    user_msg="What is my locker code?", memory=memory)
            asyncio.run(go())

        return {
            "the Memory's session_id": lambda uid: run(session_id=uid),
            "the namespace callable's result": lambda uid: run(
                session_id="chat-1", namespace=lambda sid: {"user": uid}),
        }
