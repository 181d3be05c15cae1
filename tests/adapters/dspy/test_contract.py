"""The shared adapter contract, driven through a real dspy.ReAct loop on DummyLM."""

from __future__ import annotations

from typing import Any

import dspy
from dspy_scripted import ScriptedLM, plain_react, react_program, react_script

from anneal_memory import Store
from anneal_memory.adapters.dspy import MemoryProgram

from contract import AdapterContract, RunTrace


class TestDSPyContract(AdapterContract):
    def build(self, memory: Any, **options: Any) -> Any:
        return MemoryProgram(react_program(), memory, **options)

    def _program(self, store: Store, wrap: bool, user: str | None) -> MemoryProgram:
        if user is None:
            # a ReAct whose signature knows nothing of memory: the adapter adds the field
            return MemoryProgram(plain_react(), store, wrap_on_end=wrap)
        # one program serves every user; DSPy's own context says whose call it is
        return self.shared((id(store), wrap), lambda: MemoryProgram(plain_react(), store,
                                                                    wrap_on_end=wrap))

    def run(self, store: Store, user_input: str, *, wrap: bool = False,
            call_tool: bool = False, user: str | None = None) -> RunTrace:
        lm = ScriptedLM(react_script("Done: noted and answered.", call_tool=call_tool))
        program = self._program(store, wrap, user)
        with dspy.context(lm=lm, memory_namespace={"user": user} if user else None):
            prediction = program(question=user_input)
        return RunTrace(output=prediction.answer, model_inputs=list(lm.seen))

    async def arun(self, store: Store, user_input: str, *, wrap: bool = False,
                   user: str | None = None) -> RunTrace:
        lm = ScriptedLM(react_script("Done: noted and answered."))
        program = self._program(store, wrap, user)
        with dspy.context(lm=lm, memory_namespace={"user": user} if user else None):
            prediction = await program.acall(question=user_input)
        return RunTrace(output=prediction.answer, model_inputs=list(lm.seen))

    def identity_runs(self, store: Store) -> dict[str, Any]:
        def run(program: MemoryProgram, namespace: Any) -> None:
            lm = ScriptedLM(react_script("Done."))
            with dspy.context(lm=lm, memory_namespace=namespace):
                program(question="What is my locker code?")

        return {
            "dspy.context(memory_namespace=...)": lambda uid: run(
                MemoryProgram(plain_react(), store), {"user": uid}),
            "the namespace callable's result": lambda uid: run(
                MemoryProgram(plain_react(), store, namespace=lambda kwargs: {"user": uid}),
                None),
        }
