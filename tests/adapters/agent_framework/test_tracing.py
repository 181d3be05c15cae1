"""Memory spans inside Agent Framework's own trace: a real Agent run with the scripted chat
client and the OTel SDK's in-memory exporter; our spans sit under the framework's
``invoke_agent`` span. Agent Framework 1.0.0's own instrumented run fails without us (a
context-variable token reset in another context), so on that release the run is traced
under the application's span instead, as an application on it would."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent_framework import Agent, AgentSession, observability  # noqa: E402
from maf_scripted import ScriptedClient, lookup  # noqa: E402
from opentelemetry import trace  # noqa: E402
from otel_helper import ancestors, exporter, in_fresh_process, memory_spans  # noqa: E402

from anneal_memory import Store  # noqa: E402
from anneal_memory.adapters.agent_framework import AnnealContextProvider  # noqa: E402

#: releases whose instrumented run works (disable_instrumentation came with the fix)
NATIVE = hasattr(observability, "disable_instrumentation")


def test_memory_spans_are_children_of_the_agent_run(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    if in_fresh_process(request):
        return
    spans = exporter()
    settings = observability.OBSERVABILITY_SETTINGS  # the switch, in every release since 1.0
    was = settings.enable_instrumentation
    settings.enable_instrumentation = NATIVE
    try:
        with Store(tmp_path / "m.db", project_name="Maf") as store:
            store.record("The irrigation pump runs at 42 psi", "observation")
            spans.clear()
            agent = Agent(ScriptedClient(), "You are a test agent.", tools=[lookup],
                          context_providers=[AnnealContextProvider(store)])

            async def run() -> None:
                await agent.run("What pressure does the irrigation pump use?",
                                session=AgentSession(session_id="s1"), options={"user": "alice"})

            if NATIVE:
                asyncio.run(run())
            else:
                with trace.get_tracer("app").start_as_current_span("invoke_agent app"):
                    asyncio.run(run())
    finally:
        settings.enable_instrumentation = was
    finished = list(spans.get_finished_spans())
    ours = memory_spans(finished)
    assert {"search_memory", "update_memory"} <= {s.attributes["gen_ai.operation.name"]
                                                  for s in ours}
    for sp in ours:
        chain = ancestors(sp, finished)
        assert any(n.startswith("invoke_agent") for n in chain), (sp.name, chain)
        if NATIVE:
            assert "invoke_agent app" not in chain
    assert "42 psi" not in str([dict(s.attributes) for s in ours])
