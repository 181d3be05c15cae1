"""Memory spans inside ADK's own trace: a real Runner with the scripted model, the OTel SDK's
in-memory exporter; each of our spans has an ADK span (``invocation``, ``invoke_agent``)
above it in one trace."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from adk_scripted import ScriptedLlm, make_runner, run_turn  # noqa: E402
from google.adk.agents import LlmAgent  # noqa: E402
from otel_helper import ancestors, exporter, in_fresh_process, memory_spans  # noqa: E402

from anneal_memory import Store  # noqa: E402
from anneal_memory.adapters.google_adk import AnnealMemoryPlugin, AnnealMemoryService  # noqa: E402


def test_memory_spans_are_children_of_the_agent_run(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    if in_fresh_process(request):
        return
    spans = exporter()
    spans.clear()
    with Store(tmp_path / "m.db", project_name="Adk") as store:
        service = AnnealMemoryService(store)
        agent = LlmAgent(name="gardener", model=ScriptedLlm(answer="Done.", inputs=[]), tools=[])
        runner = make_runner(agent, plugins=[AnnealMemoryPlugin(service)], memory_service=service)
        asyncio.run(run_turn(runner, "alice", "Check the irrigation pump"))
    finished = list(spans.get_finished_spans())
    ours = memory_spans(finished)
    assert {s.attributes["gen_ai.operation.name"] for s in ours} >= {"update_memory"}
    for sp in ours:
        chain = ancestors(sp, finished)
        assert any(n.startswith(("invoke_agent", "invocation", "invoke_workflow")) for n in chain), (sp.name, chain)
        assert sp.context.trace_id == sp.parent.trace_id
    assert "Check the irrigation pump" not in str([dict(s.attributes) for s in ours])
