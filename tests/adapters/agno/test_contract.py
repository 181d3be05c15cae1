"""The shared adapter contract, through Agno's real agent loop (a user is Agno's own
``user_id`` of the run: no namespace code in the app)."""

from __future__ import annotations

from typing import Any

from agno.agent import Agent
from agno.run.base import RunStatus
from agno_scripted import ScriptedModel, lookup

from anneal_memory import Store
from anneal_memory.adapters.agno import AnnealMemory
from anneal_memory.errors import IdentityError

from contract import AdapterContract, RunTrace


def agent_of(memory: AnnealMemory, model: ScriptedModel, *, asynchronous: bool = False,
             **options: Any) -> Agent:
    pre, post = ((memory.apre_hook, memory.apost_hook) if asynchronous
                 else (memory.pre_hook, memory.post_hook))
    return Agent(model=model, id="contract-agent", tools=[lookup], memory_manager=memory,
                 pre_hooks=[pre], post_hooks=[post], telemetry=False, **options)


def refused(output: Any, model: ScriptedModel) -> None:
    """Agno's run never raises: a refused run comes back with ``status=error`` and the
    refusal as its content, and its model was never called. Raise it as the contract
    expects."""
    if output.status == RunStatus.error:
        assert model.inputs == [], "the model ran although the identity was refused"
        raise IdentityError(str(output.content))


class TestAgnoContract(AdapterContract):
    def build(self, memory: Any, **options: Any) -> Any:
        return AnnealMemory(memory, **options)

    def _memory(self, store: Store, wrap: bool, user: str | None) -> AnnealMemory:
        if user is None:
            return AnnealMemory(store, wrap_on_end=wrap)
        # one memory manager serves every user: the identity is each run's user_id
        return self.shared((id(store), wrap), lambda: AnnealMemory(store, wrap_on_end=wrap))

    def run(self, store: Store, user_input: str, *, wrap: bool = False,
            call_tool: bool = False, user: str | None = None) -> RunTrace:
        scripted = ScriptedModel(call_tool=call_tool)
        out = agent_of(self._memory(store, wrap, user), scripted).run(user_input, user_id=user)
        assert out.status != RunStatus.error, out.content
        return RunTrace(output=str(out.content), model_inputs=scripted.inputs)

    async def arun(self, store: Store, user_input: str, *, wrap: bool = False,
                   user: str | None = None) -> RunTrace:
        scripted = ScriptedModel()
        agent = agent_of(self._memory(store, wrap, user), scripted, asynchronous=True)
        out = await agent.arun(user_input, user_id=user)
        assert out.status != RunStatus.error, out.content
        return RunTrace(output=str(out.content), model_inputs=scripted.inputs)

    def identity_runs(self, store: Store) -> dict[str, Any]:
        def by_user_id(uid: str) -> None:
            # the agent's user_id and the run's: Agno takes run(user_id="") as "not
            # given" (it falls back to the agent's), so both carry the bad id
            scripted = ScriptedModel()
            agent = agent_of(AnnealMemory(store), scripted, user_id=uid)
            refused(agent.run("What is my locker code?", user_id=uid), scripted)

        def by_session_id(sid: str) -> None:
            scripted = ScriptedModel()
            agent = agent_of(AnnealMemory(store), scripted)
            refused(agent.run("What is my locker code?", user_id="alice", session_id=sid),
                    scripted)

        def by_callable(uid: str) -> None:
            scripted = ScriptedModel()
            memory = AnnealMemory(store, namespace=lambda ctx: {"user": ctx.metadata["uid"]})
            refused(agent_of(memory, scripted).run("What is my locker code?",
                                                   metadata={"uid": uid}), scripted)

        return {"Agno's user_id": by_user_id, "Agno's session_id": by_session_id,
                "the namespace callable's result": by_callable}
