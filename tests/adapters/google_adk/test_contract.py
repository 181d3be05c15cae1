"""The shared adapter contract, driven through a real ADK Runner with a scripted model.
A user is ADK's own ``user_id`` (the memory is ``(app_name, user_id)``'s by default)."""

from __future__ import annotations

import asyncio
from typing import Any

from adk_scripted import APP, ScriptedLlm, make_runner, read_gauge, run_turn
from google.adk.agents import LlmAgent

from anneal_memory import Store
from anneal_memory.adapters.google_adk import AnnealMemoryPlugin, AnnealMemoryService
from anneal_memory.errors import IdentityError

from contract import AdapterContract, RunTrace


class TestGoogleAdkContract(AdapterContract):
    def build(self, memory: Any, **options: Any) -> Any:
        compress = options.pop("compress", None)  # a plugin option; the rest go to the service
        return AnnealMemoryPlugin(AnnealMemoryService(memory, **options), compress=compress)

    def memory_of(self, store: Store, user: str) -> Any:
        return store.scoped({"project": APP, "user": user})

    def _runner(self, store: Store, wrap: bool, llm: ScriptedLlm, shared: bool) -> Any:
        def make() -> tuple[AnnealMemoryService, AnnealMemoryPlugin]:
            service = AnnealMemoryService(store)
            return service, AnnealMemoryPlugin(service, wrap_on_end=wrap)
        service, plugin = self.shared((id(store), wrap), make) if shared else make()
        agent = LlmAgent(name="gardener", model=llm, tools=[read_gauge],
                         instruction="You look after the garden.")
        return make_runner(agent, plugins=[plugin], memory_service=service)

    def run(self, store: Store, user_input: str, *, wrap: bool = False,
            call_tool: bool = False, user: str | None = None) -> RunTrace:
        llm = ScriptedLlm(answer="Noted and done.", inputs=[],
                          call=("read_gauge", {"name": "pump"}) if call_tool else None)
        runner = self._runner(store, wrap, llm, user is not None)
        output = asyncio.run(run_turn(runner, user or "u1", user_input))
        return RunTrace(output=output, model_inputs=llm.inputs)

    async def arun(self, store: Store, user_input: str, *, wrap: bool = False,
                   user: str | None = None) -> RunTrace:
        llm = ScriptedLlm(answer="Noted and done.", inputs=[])
        runner = self._runner(store, wrap, llm, True)
        output = await run_turn(runner, user or "u1", user_input)
        return RunTrace(output=output, model_inputs=llm.inputs)

    def identity_runs(self, store: Store) -> dict[str, Any]:
        def turn(service: AnnealMemoryService, uid: str) -> None:
            agent = LlmAgent(name="gardener", model=ScriptedLlm(answer="Done.", inputs=[]),
                             tools=[read_gauge], instruction="You look after the garden.")
            runner = make_runner(agent, plugins=[AnnealMemoryPlugin(service)],
                                 memory_service=service)
            try:
                asyncio.run(run_turn(runner, uid, "What is my locker code?"))
            except RuntimeError as exc:  # ADK raises a plugin's error as its own, chained
                if isinstance(exc.__cause__, IdentityError):
                    raise exc.__cause__ from None
                raise

        return {
            "ADK's user_id": lambda uid: turn(AnnealMemoryService(store), uid),
            "the namespace callable's result": lambda uid: turn(
                AnnealMemoryService(store, namespace=lambda user: {"user": uid}), "u1"),
        }

    # the single-user checks, in the memory ADK's identity picks: (garden, u1)
    def test_wrap_saves_continuity(self, store: Store) -> None:
        view = self.memory_of(store, "u1")
        assert view.load_continuity() is None
        self.run(store, "Decide to water the tomatoes at dawn", wrap=True)
        text = view.load_continuity()
        assert text is not None and "## State" in text
        assert view.status().total_wraps == 1
        assert store.load_continuity() is None  # never the store's shared continuity
