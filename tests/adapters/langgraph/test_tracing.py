"""Memory spans in the application's OpenTelemetry trace around a LangGraph agent run
(LangGraph traces through LangSmith, not OTel, by default): every memory span the middleware
causes, sync and async, is a child of the application's run span."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from langchain.agents import create_agent  # noqa: E402
from lc_scripted import read_gauge, scripted  # noqa: E402
from opentelemetry import trace  # noqa: E402
from otel_helper import ancestors, exporter, in_fresh_process, memory_spans  # noqa: E402

from anneal_memory import Store  # noqa: E402
from anneal_memory.adapters.langgraph import AnnealMiddleware  # noqa: E402

ASK = {"messages": [{"role": "user", "content": "What pressure does the pump gauge show?"}]}


def _check(spans: object, name: str) -> None:
    finished = list(spans.get_finished_spans())  # type: ignore[attr-defined]
    ours = memory_spans(finished)
    assert {"search_memory", "update_memory"} <= {s.attributes["gen_ai.operation.name"]
                                                  for s in ours}
    for sp in ours:
        assert name in ancestors(sp, finished), sp.name
    assert "42 psi" not in str([dict(s.attributes) for s in ours])


def test_memory_spans_are_children_of_the_run_span(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    if in_fresh_process(request):
        return
    spans = exporter()
    with Store(tmp_path / "m.db", project_name="Lg") as store:
        store.record("The pump gauge was recalibrated by Ottoline last spring", "observation")
        spans.clear()
        agent = create_agent(scripted("It reads 42 psi.", call_tool=True), tools=[read_gauge],
                             middleware=[AnnealMiddleware(store)])
        with trace.get_tracer("app").start_as_current_span("invoke_agent garden"):
            agent.invoke(ASK)
        _check(spans, "invoke_agent garden")
        spans.clear()
        agent = create_agent(scripted("It reads 42 psi.", call_tool=True), tools=[read_gauge],
                             middleware=[AnnealMiddleware(store)])

        async def run() -> None:
            with trace.get_tracer("app").start_as_current_span("invoke_agent async"):
                await agent.ainvoke(ASK)
        asyncio.run(run())
        _check(spans, "invoke_agent async")
