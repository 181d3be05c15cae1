"""The shared adapter contract, driven through smolagents' real ToolCallingAgent and CodeAgent."""

from __future__ import annotations

from typing import Any

from smol_scripted import ScriptedModel, make_agent

from anneal_memory import Store
from anneal_memory.adapters.smolagents import AnnealMemory

from contract import AdapterContract, RunTrace


def _user_of(run: Any) -> dict[str, str]:
    # smolagents carries no user identity: the app passes it with the run
    return {"user": run.additional_args["user_id"]}


class _SmolagentsContract(AdapterContract):
    code = False

    def build(self, memory: Any, **options: Any) -> Any:
        return AnnealMemory(memory, **options)

    def run(self, store: Store, user_input: str, *, wrap: bool = False,
            call_tool: bool = False, user: str | None = None) -> RunTrace:
        model = ScriptedModel(code=self.code, answer="Noted and done.", call_tool=call_tool)
        if user is None:
            memory = AnnealMemory(store, wrap_on_end=wrap)
            output = memory.run(make_agent(model), user_input)
        else:  # one memory serves every user, as in a server
            memory = self.shared((id(store), wrap), lambda: AnnealMemory(
                store, namespace=_user_of, wrap_on_end=wrap))
            output = make_agent(model, memory).run(user_input,
                                                   additional_args={"user_id": user})
        return RunTrace(output=str(output), model_inputs=model.inputs)

    def identity_runs(self, store: Store) -> dict[str, Any]:
        def run(uid: str) -> None:
            memory = AnnealMemory(store, namespace=_user_of)
            model = ScriptedModel(code=self.code, answer="Noted and done.")
            make_agent(model, memory).run("What is my locker code?",
                                          additional_args={"user_id": uid})

        return {"the namespace callable's result": run}


class TestToolCallingAgentContract(_SmolagentsContract):
    code = False


class TestCodeAgentContract(_SmolagentsContract):
    code = True

