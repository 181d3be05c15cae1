"""The shared adapter contract, on a real ``Runner.run`` with the SDK's ScriptedModel.

A user is the run's ``AnnealSession`` (its id is the user id: the adapter's default
identity); the session keeps no history here (``limit=0``), so what a run recalls came
through the adapter, not through the transcript.
"""

from __future__ import annotations

from typing import Any

from agents import Agent, Runner
from agents.memory import SessionSettings
from oa_scripted import lookup, model_inputs, scripted_model

from anneal_memory import Store
from anneal_memory.adapters.openai_agents import AnnealMemory

from contract import AdapterContract, RunTrace


class TestOpenAIAgentsContract(AdapterContract):
    def build(self, memory: Any, **options: Any) -> Any:
        return AnnealMemory(memory, **options)

    def _setup(self, store: Store, wrap: bool, user: str | None, call_tool: bool = False
               ) -> tuple[Any, Any, dict[str, Any]]:
        model = scripted_model(call_tool=call_tool, wrap=wrap)
        if user is None:
            memory = AnnealMemory(store, wrap_on_end=wrap)
            extra: dict[str, Any] = {}
        else:
            memory = self.shared((id(store), wrap), lambda: AnnealMemory(store, wrap_on_end=wrap))
            extra = {"session": memory.conversation(
                user, session_settings=SessionSettings(limit=0))}
        agent = Agent(name="gardener", instructions=memory.instructions("You help gardeners."),
                      model=model, tools=[lookup])
        return agent, model, {"hooks": memory.run_hooks, "run_config": memory.run_config(),
                              **extra}

    def run(self, store: Store, user_input: str, *, wrap: bool = False,
            call_tool: bool = False, user: str | None = None) -> RunTrace:
        agent, model, options = self._setup(store, wrap, user, call_tool)
        result = Runner.run_sync(agent, user_input, **options)
        return RunTrace(output=str(result.final_output), model_inputs=model_inputs(model))

    async def arun(self, store: Store, user_input: str, *, wrap: bool = False,
                   user: str | None = None) -> RunTrace:
        agent, model, options = self._setup(store, wrap, user)
        result = await Runner.run(agent, user_input, **options)
        return RunTrace(output=str(result.final_output), model_inputs=model_inputs(model))

    def identity_runs(self, store: Store) -> dict[str, Any]:
        def run(memory: AnnealMemory, session: Any = None) -> None:
            agent = Agent(name="gardener", instructions=memory.instructions("You help."),
                          model=scripted_model(), tools=[lookup])
            Runner.run_sync(agent, "What is my locker code?", hooks=memory.run_hooks,
                            run_config=memory.run_config(),
                            **({"session": session} if session is not None else {}))

        def with_session(uid: str) -> None:
            memory = AnnealMemory(store)
            run(memory, memory.conversation(uid))

        return {
            "the AnnealSession's session_id": with_session,
            "the namespace callable's result": lambda uid: run(
                AnnealMemory(store, namespace=lambda ctx: {"user": uid})),
        }
