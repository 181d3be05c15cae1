"""The team server continues the caller's trace (issue 53): a request carrying a W3C
``traceparent`` is served in a SERVER span of that trace, and the memory operations it
causes are that span's children. The server runs as documented (``serve --http``) with the
standard environment asking for the SDK's console exporter; its spans are read from its
output after a graceful stop."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "mcp"))

import httphelp  # noqa: E402
from mcphelp import server_env  # noqa: E402

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"


def _spans(text: str) -> list[dict]:
    """The console exporter's JSON documents in ``text``."""
    out, depth, start = [], 0, None
    for i, ch in enumerate(text):
        if ch == "{":
            depth += 1
            start = i if depth == 1 else start
        elif ch == "}":
            depth -= 1
            if depth == 0 and start is not None:
                try:
                    doc = json.loads(text[start:i + 1])
                except ValueError:
                    continue
                if "context" in doc:
                    out.append(doc)
    return out


# without the protocol version header the SDK's session serves the call; with it, the
# server's direct path (its own threads: the request's context goes with the call)
@pytest.mark.parametrize("direct", [{}, {"mcp-protocol-version": "2025-06-18"}],
                         ids=["sdk", "direct"])
def test_a_request_continues_the_callers_trace(tmp_path: Path, monkeypatch,
                                               direct: dict[str, str]) -> None:
    from anneal_memory import Store

    db = tmp_path / "team.db"
    Store(db, project_name="Team").close()
    token = httphelp.make_token(db, "--namespace", "user=alice")["token"]
    env = server_env(tmp_path, OTEL_TRACES_EXPORTER="console")
    env.pop("OTEL_SDK_DISABLED", None)
    monkeypatch.setattr(httphelp, "server_env", lambda home: env)
    proc, url = httphelp.start_http(db)
    try:
        status, body = httphelp.post(url, token, headers={
            "traceparent": f"00-{TRACE}-{PARENT}-01", **direct})
        assert status == 200, body
        plain, _ = httphelp.post(url, token)  # no traceparent: a trace of its own
        assert plain == 200
    finally:
        assert httphelp.stop(proc) == 0
    assert proc.stdout is not None
    spans = _spans(proc.stdout.read())
    ours = [s for s in spans if s["context"]["trace_id"] == "0x" + TRACE]
    # ours is the request's span (the MCP SDK, from 2.x, adds its own "tools/call" span
    # beneath it)
    server = [s for s in ours if s["kind"] == "SpanKind.SERVER" and s["name"] == "POST /mcp"]
    assert len(server) == 1 and server[0]["parent_id"] == "0x" + PARENT
    assert server[0]["attributes"]["http.response.status_code"] == 200
    record = [s for s in ours if s["name"].startswith("update_memory")]
    assert len(record) == 1
    by_id = {s["context"]["span_id"]: s for s in ours}
    up, chain = record[0]["parent_id"], []
    while up in by_id:
        chain.append(by_id[up]["name"])
        up = by_id[up]["parent_id"]
    assert server[0]["name"] in chain
    # the request without a traceparent is another trace
    others = [s for s in spans if s["name"] == "POST /mcp" and s not in server]
    assert others and all(s["context"]["trace_id"] != "0x" + TRACE for s in others)
    assert "written by a refused request" not in json.dumps(spans)  # no content
