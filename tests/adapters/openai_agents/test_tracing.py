"""Memory spans in the application's OpenTelemetry trace around an OpenAI Agents run: the SDK
traces with its own processors, not OTel, so an application traces a run under its own span;
every memory span of the run (hooks, the session) must be a child of it, across the SDK's
async tasks."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents import Agent, Runner  # noqa: E402
from oa_scripted import lookup, scripted_model  # noqa: E402
from opentelemetry import trace  # noqa: E402
from otel_helper import ancestors, exporter, in_fresh_process, memory_spans  # noqa: E402

from anneal_memory import Store  # noqa: E402
from anneal_memory.adapters.openai_agents import AnnealMemory, AnnealSession  # noqa: E402


def test_memory_spans_are_children_of_the_run_span(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    if in_fresh_process(request):
        return
    spans = exporter()
    with Store(tmp_path / "m.db", project_name="Oai") as store:
        store.record("The irrigation pump runs at 42 psi", "observation")
        spans.clear()
        memory = AnnealMemory(store)
        agent = Agent(name="gardener", instructions=memory.instructions(),
                      model=scripted_model(call_tool=True), tools=[lookup])
        with trace.get_tracer("app").start_as_current_span("invoke_agent gardener"):
            Runner.run_sync(agent, "What pressure does the irrigation pump use?",
                            hooks=memory.run_hooks, session=AnnealSession("s1", store))
    finished = list(spans.get_finished_spans())
    ours = memory_spans(finished)
    assert {"search_memory", "update_memory"} <= {s.attributes["gen_ai.operation.name"]
                                                  for s in ours}
    for sp in ours:
        assert "invoke_agent gardener" in ancestors(sp, finished), sp.name
    assert "42 psi" not in str([dict(s.attributes) for s in ours])
