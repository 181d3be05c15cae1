"""The shared adapter contract, driven through a real dspy.ReAct loop on DummyLM."""

from __future__ import annotations

from typing import Any

import dspy
from dspy_scripted import ScriptedLM, react_program, react_script

from anneal_memory import Store
from anneal_memory.adapters.dspy import MemoryProgram

from contract import AdapterContract, RunTrace


class TestDSPyContract(AdapterContract):
    def build(self, memory: Any, **options: Any) -> Any:
        return MemoryProgram(react_program(), memory, **options)

    def run(self, store: Store, user_input: str, *, wrap: bool = False,
            call_tool: bool = False) -> RunTrace:
        lm = ScriptedLM(react_script("Done: noted and answered.", call_tool=call_tool))
        program = MemoryProgram(react_program(), store, wrap_on_end=wrap)
        with dspy.context(lm=lm):
            prediction = program(question=user_input)
        return RunTrace(output=prediction.answer, model_inputs=list(lm.seen))
