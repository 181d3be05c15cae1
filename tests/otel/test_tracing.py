"""Spans and metrics of memory operations by the GenAI memory conventions (issue 53 item 1),
read from the OpenTelemetry SDK's in-memory exporter: names, kinds, parents, attributes,
no content unless the capture switch is on, and metrics with bounded labels."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import metric_points
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode

from anneal_memory import MemorySession, Store, retrieve_relevant
from anneal_memory.errors import ContinuityValidationError, UnknownEpisodeTypeError
from anneal_memory.testing import scripted_compress

CAPTURE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
SECRET = "the vault code is 4417 and the harbour crane is blue"


@pytest.fixture
def store(tmp_path: Path) -> Any:
    s = Store(tmp_path / "m.db", project_name="Harbour")
    yield s
    s.close()


def _ops(spans: Any, op: str) -> list[Any]:
    return [s for s in spans.get_finished_spans() if s.attributes.get("gen_ai.operation.name") == op]


def _children(spans: Any, parent: Any) -> list[str]:
    return [s.name for s in spans.get_finished_spans()
            if s.parent is not None and s.parent.span_id == parent.context.span_id]


def _no_content(span: Any) -> None:
    text = json.dumps(dict(span.attributes))
    assert "4417" not in text and "vault" not in text


def test_record_is_an_update_memory_span_with_its_phases(store: Store, spans: Any) -> None:
    ep = store.record(SECRET, "observation")
    [sp] = _ops(spans, "update_memory")
    assert sp.name == "update_memory Harbour" and sp.kind == SpanKind.CLIENT
    assert sp.attributes["gen_ai.memory.store.id"] == store.store_id
    assert sp.attributes["gen_ai.memory.record.id"] == ep.id
    assert sp.attributes["gen_ai.provider.name"] == "anneal-memory"
    assert sp.attributes["anneal_memory.backend"] == "sqlite"
    assert sp.attributes["anneal_memory.operation"] == "record"
    assert {"group_commit", "audit_append"} <= set(_children(spans, sp)) | {
        n for c in spans.get_finished_spans() if c.parent is not None
        and c.parent.span_id in {x.context.span_id for x in spans.get_finished_spans()
                                 if x.name == "group_commit"} for n in [c.name]}
    _no_content(sp)


def test_recall_is_a_search_memory_span_without_the_query(store: Store, spans: Any) -> None:
    store.record(SECRET, "observation")
    store.record("lunch was soup", "observation")
    spans.clear()
    res = store.recall(keyword="harbour crane")
    [sp] = _ops(spans, "search_memory")
    assert sp.name == "search_memory Harbour"
    assert sp.attributes["anneal_memory.results"] == len(res.episodes) == 1
    assert "text_search" in _children(spans, sp)
    assert "gen_ai.memory.query.text" not in sp.attributes
    _no_content(sp)


def test_content_only_with_the_capture_switch(store: Store, spans: Any,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CAPTURE, "true")
    ep = store.record(SECRET, "observation")
    store.recall(keyword="vault code")
    [rec] = _ops(spans, "update_memory")
    assert json.loads(rec.attributes["gen_ai.memory.records"])[0]["content"] == SECRET
    [found] = _ops(spans, "search_memory")
    assert found.attributes["gen_ai.memory.query.text"] == "vault code"
    assert json.loads(found.attributes["gen_ai.memory.records"])[0]["id"] == ep.id


def test_retrieve_relevant_ranks_inside_its_span(store: Store, spans: Any) -> None:
    store.record("the crane on pier four lifts containers at dawn", "observation")
    store.record("containers wait at pier two", "observation")
    spans.clear()
    retrieve_relevant(store, None, "which pier lifts containers?")
    roots = [s for s in _ops(spans, "search_memory")
             if s.attributes["anneal_memory.operation"] == "retrieve_relevant"]
    assert len(roots) == 1
    names = {s.name for s in spans.get_finished_spans()}
    assert "ranking" in names


def test_a_namespace_is_its_salted_hash(store: Store, spans: Any) -> None:
    alice = store.scoped({"user": "alice"})
    alice.record("alice likes tea", "observation")
    [sp] = _ops(spans, "update_memory")
    ns = sp.attributes["anneal_memory.namespace"]
    assert ns and "alice" not in ns and ns == str(store.audit_trail.hash_label(alice.namespace.key))
    spans.clear()
    store.scoped({"user": "bob"}).recall(keyword="tea")
    [bob] = _ops(spans, "search_memory")
    assert bob.attributes["anneal_memory.namespace"] != ns


def test_deletes_are_delete_memory_spans(store: Store, spans: Any) -> None:
    a = store.record("first note", "observation").id
    b = store.record("second note", "observation").id
    spans.clear()
    assert store.delete(a)
    store.erase([b])
    ops = _ops(spans, "delete_memory")
    delete = next(s for s in ops if s.attributes["anneal_memory.operation"] == "delete")
    assert delete.attributes["gen_ai.memory.record.id"] == a
    assert delete.attributes["anneal_memory.deleted"] == 1
    assert {s.attributes["anneal_memory.operation"] for s in ops} == {"delete", "erase"}


def test_a_refusal_is_an_error_span(store: Store, spans: Any) -> None:
    with pytest.raises(UnknownEpisodeTypeError):
        store.record("x", "not-a-type")
    [sp] = _ops(spans, "update_memory")
    assert sp.status.status_code == StatusCode.ERROR
    assert sp.attributes["error.type"] == "UnknownEpisodeTypeError"


def test_the_wrap_is_one_span_with_prepare_and_save(store: Store, spans: Any) -> None:
    store.record("Chose the harbour route because the bridge is closed", "decision")
    before = sum(p.value for p in metric_points("anneal_memory.wraps")
                 if p.attributes.get("anneal_memory.wrap.status") == "saved")
    out = MemorySession(store).wrap(scripted_compress)
    assert out.saved
    wrap = next(s for s in _ops(spans, "update_memory")
                if s.attributes["anneal_memory.operation"] == "wrap")
    kids = [s for s in spans.get_finished_spans()
            if s.parent is not None and s.parent.span_id == wrap.context.span_id]
    assert [k.attributes["anneal_memory.operation"] for k in kids
            if "anneal_memory.operation" in k.attributes] == ["wrap.prepare", "wrap.save"]
    save = next(k for k in kids if k.attributes.get("anneal_memory.operation") == "wrap.save")
    assert save.attributes["anneal_memory.episodes"] == 1
    assert "anneal_memory.immune.validated" in save.attributes
    after = sum(p.value for p in metric_points("anneal_memory.wraps")
                if p.attributes.get("anneal_memory.wrap.status") == "saved")
    assert after == before + 1


def test_a_refused_save_counts_as_refused(store: Store, spans: Any) -> None:
    from anneal_memory import prepare_wrap, validated_save_continuity

    store.record("a note", "observation")
    w = prepare_wrap(store)

    def refused() -> float:
        return sum(p.value for p in metric_points("anneal_memory.wraps")
                   if p.attributes.get("anneal_memory.wrap.status") == "refused")
    before = refused()
    with pytest.raises(ContinuityValidationError):
        validated_save_continuity(store, "no sections at all", wrap_token=w["wrap_token"])
    [save] = [s for s in _ops(spans, "update_memory")
              if s.attributes["anneal_memory.operation"] == "wrap.save"]
    assert save.status.status_code == StatusCode.ERROR
    assert refused() == before + 1


def test_memory_spans_nest_under_the_callers_span(store: Store, spans: Any) -> None:
    tracer = trace.get_tracer("a-framework")
    with tracer.start_as_current_span("invoke_agent harbour-bot") as agent:
        store.record("pier four", "observation")
        store.recall(keyword="pier")
    ours = _ops(spans, "update_memory") + _ops(spans, "search_memory")
    assert len(ours) == 2
    assert all(s.parent.span_id == agent.get_span_context().span_id for s in ours)
    assert all(s.context.trace_id == agent.get_span_context().trace_id for s in ours)


def test_metrics_have_bounded_labels(store: Store, spans: Any) -> None:
    def recorded() -> float:
        return sum(p.value for p in metric_points("anneal_memory.episodes.recorded"))
    before = recorded()
    store.record_many([{"content": f"note {i}", "episode_type": "observation"}
                       for i in range(5)])
    store.recall(keyword="note")
    assert recorded() == before + 5
    labels = set()
    for p in metric_points("anneal_memory.operation.duration"):
        labels |= set(p.attributes)
        assert p.attributes["gen_ai.operation.name"] in (
            "update_memory", "search_memory", "delete_memory")
    assert labels <= {"gen_ai.operation.name", "anneal_memory.operation",
                      "anneal_memory.backend", "error.type"}
    assert any(p.count >= 1 for p in metric_points("anneal_memory.recall.results"))


@pytest.mark.parametrize("setup", [
    "import sys; sys.modules['opentelemetry'] = None",   # the extra not installed
    "pass",                                               # installed, no SDK configured
])
def test_without_an_sdk_nothing_is_traced_and_everything_works(tmp_path: Path,
                                                               setup: str) -> None:
    code = (f"{setup}\nfrom anneal_memory import Store, tracing\n"
            f"s = Store({str(tmp_path / 'x.db')!r})\n"
            "s.record('a note', 'observation'); r = s.recall(keyword='note')\n"
            "assert tracing.tracer() is None and tracing._meters() is None\n"
            "print(len(r.episodes))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1"


def test_the_cli_traces_with_the_standard_environment(tmp_path: Path) -> None:
    """``OTEL_TRACES_EXPORTER`` (here the SDK's console exporter) sets the CLI's SDK up."""
    import os

    env = {**os.environ, "OTEL_TRACES_EXPORTER": "console"}
    env.pop(CAPTURE, None)
    env.pop("OTEL_SDK_DISABLED", None)
    done = subprocess.run([sys.executable, "-m", "anneal_memory", "--db", str(tmp_path / "c.db"),
                           "record", "--type", "observation", SECRET],
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert '"name": "update_memory' in done.stdout and "4417" not in done.stdout
    plain = subprocess.run([sys.executable, "-m", "anneal_memory", "--db",
                            str(tmp_path / "c.db"), "search", "harbour"],
                           capture_output=True, text=True, timeout=120,
                           env={k: v for k, v in env.items() if k != "OTEL_TRACES_EXPORTER"})
    assert plain.returncode == 0 and '"name"' not in plain.stdout
