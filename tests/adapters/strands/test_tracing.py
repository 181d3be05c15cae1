"""Memory spans inside Strands' own trace: a real Agent loop with the scripted model and the
OTel SDK's in-memory exporter; our spans sit under Strands' ``invoke_agent`` span."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from otel_helper import ancestors, exporter, in_fresh_process, memory_spans  # noqa: E402
from strands import Agent  # noqa: E402
from strands_scripted import ScriptedModel, lookup  # noqa: E402

from anneal_memory import Store  # noqa: E402
from anneal_memory.adapters.strands import AnnealMemory  # noqa: E402


def test_memory_spans_are_children_of_invoke_agent(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    if in_fresh_process(request):
        return
    spans = exporter()
    spans.clear()
    with Store(tmp_path / "m.db", project_name="Strands") as store:
        store.record("The irrigation pump runs at 42 psi", "observation")
        spans.clear()
        agent = Agent(model=ScriptedModel(call_tool=True), tools=[lookup], callback_handler=None,
                      memory_manager=AnnealMemory(store))
        agent("What pressure does the irrigation pump use?")
    finished = list(spans.get_finished_spans())
    ours = memory_spans(finished)
    ops = {s.attributes["gen_ai.operation.name"] for s in ours}
    assert {"search_memory", "update_memory"} <= ops
    for sp in ours:
        chain = ancestors(sp, finished)
        assert any(n.startswith("invoke_agent") for n in chain), (sp.name, chain)
    assert "42 psi" not in str([dict(s.attributes) for s in ours])
