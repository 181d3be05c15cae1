"""An OpenTelemetry SDK for a framework's test process, reading finished spans from the
SDK's in-memory exporter: our memory spans must be children of the framework's own run
spans (issue 53). The offline environment disables the SDK (OTEL_SDK_DISABLED); a test
that reads spans turns it back on for its own provider."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Any

_EXPORTER: Any = None
#: set in the fresh interpreter a tracing test runs in (to the test's node id)
CHILD = "ANNEAL_OTEL_TEST_CHILD"


def in_fresh_process(request: Any) -> bool:
    """True when the calling test has just passed in a fresh interpreter (and should
    return); False inside that interpreter, where its body runs. A process sets its
    tracer provider once, and a framework's earlier tests may have set theirs (ADK's
    FastAPI app does, with the SDK disabled): a trace is read where ours is the first."""
    node = request.node.nodeid
    if os.environ.get(CHILD) == node:
        return False
    env = {**os.environ, CHILD: node}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", node],
                          cwd=str(request.config.rootpath), env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, f"{done.stdout[-4000:]}\n{done.stderr[-2000:]}"
    assert re.search(r"(^|\s)1 passed\b", done.stdout), done.stdout  # it ran, not skipped
    return True


def exporter() -> Any:
    """The process's in-memory span exporter (the global provider is set once)."""
    global _EXPORTER
    if _EXPORTER is None:
        os.environ.pop("OTEL_SDK_DISABLED", None)
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        _EXPORTER = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        trace.set_tracer_provider(provider)
    return _EXPORTER


def memory_spans(finished: list[Any]) -> list[Any]:
    """Our operation spans (those named by the GenAI memory conventions)."""
    return [s for s in finished if s.attributes.get("gen_ai.provider.name") == "anneal-memory"
            and "gen_ai.operation.name" in s.attributes]


def ancestors(span: Any, finished: list[Any]) -> list[str]:
    """The names of ``span``'s ancestors among ``finished``, nearest first."""
    by_id = {s.context.span_id: s for s in finished}
    out: list[str] = []
    parent = span.parent
    while parent is not None and parent.span_id in by_id:
        up = by_id[parent.span_id]
        out.append(up.name)
        parent = up.parent
    return out
