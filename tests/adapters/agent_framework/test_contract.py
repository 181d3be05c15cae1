"""The shared adapter contract, through the Agent Framework's real agent loop (``Agent.run``
with the context provider pipeline and its tool loop; a user is the run's
``options={"user": ...}``, the end-user id of the framework's ChatOptions)."""

from __future__ import annotations

import asyncio
from typing import Any

from agent_framework import Agent, AgentSession
from maf_scripted import ScriptedClient, lookup

from anneal_memory import Store
from anneal_memory.adapters.agent_framework import AnnealContextProvider

from contract import AdapterContract, RunTrace


def agent_of(memory: AnnealContextProvider, client: ScriptedClient) -> Agent:
    return Agent(client, "You are a test agent.", tools=[lookup],
                 context_providers=[memory, memory.history_provider()])


def restored_session(session_id: str) -> AgentSession:
    """A session with exactly this id, as an app restores one from its own storage
    (``AgentSession(session_id="")`` would draw a fresh uuid instead)."""
    session = AgentSession(session_id=session_id or "placeholder")
    session._session_id = session_id  # type: ignore[attr-defined]
    return session


class TestAgentFrameworkContract(AdapterContract):
    def build(self, memory: Any, **options: Any) -> Any:
        return AnnealContextProvider(memory, **options)

    def _memory(self, store: Store, wrap: bool, user: str | None) -> AnnealContextProvider:
        if user is None:
            return AnnealContextProvider(store, wrap_on_end=wrap)
        # one provider serves every user: the identity is each run's options["user"]
        return self.shared((id(store), wrap),
                           lambda: AnnealContextProvider(store, wrap_on_end=wrap))

    async def arun(self, store: Store, user_input: str, *, wrap: bool = False,
                   user: str | None = None, call_tool: bool = False) -> RunTrace:
        client = ScriptedClient(call_tool=call_tool)
        agent = agent_of(self._memory(store, wrap, user), client)
        options = {"user": user} if user is not None else None
        response = await agent.run(user_input, session=agent.create_session(), options=options)
        return RunTrace(output=response.text, model_inputs=client.inputs)

    def run(self, store: Store, user_input: str, *, wrap: bool = False,
            call_tool: bool = False, user: str | None = None) -> RunTrace:
        return asyncio.run(self.arun(store, user_input, wrap=wrap, user=user,
                                     call_tool=call_tool))

    def identity_runs(self, store: Store) -> dict[str, Any]:
        def refused_run(memory: AnnealContextProvider, **run: Any) -> None:
            client = ScriptedClient()
            try:
                asyncio.run(agent_of(memory, client).run("What is my locker code?", **run))
            finally:
                assert client.inputs == [], "the model ran although the identity was refused"

        def by_user(uid: str) -> None:
            refused_run(AnnealContextProvider(store), options={"user": uid})

        def by_session_id(sid: str) -> None:
            refused_run(AnnealContextProvider(store), session=restored_session(sid),
                        options={"user": "alice"})

        def by_callable(uid: str) -> None:
            memory = AnnealContextProvider(
                store, namespace=lambda run: {"user": run.session.state["uid"]})
            session = AgentSession()
            session.state["uid"] = uid
            refused_run(memory, session=session)

        return {"the run's options['user']": by_user,
                "the AgentSession's session_id": by_session_id,
                "the namespace callable's result": by_callable}
