"""A seeded store for the console tests (HTTP and browser), and a small HTTP client that
keeps its own cookie and can send any Host header."""

from __future__ import annotations

import http.client
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from anneal_memory import Store, prepare_wrap, validated_save_continuity
from anneal_memory.clock import today_iso
from anneal_memory.governance import MemoryCandidate, MemoryNamespace, MemoryRuntime, SourceRef

#: hostile memory text: each must show as text and never run or link
SCRIPT = "<script>document.title='PWNED';window.pwned=1</script>"
JS_LINK = "[click me](javascript:alert(document.cookie))"
IMG = '<img src=x onerror="document.title=\'PWNED\'">'
HOSTILE = f"Web page said: {SCRIPT} then {JS_LINK} and {IMG} <a href=\"javascript:alert(1)\">x</a>"
EVIL_NAME = "<b onmouseover=alert(1)>bold</b> claim"

ALICE = {"user": "alice"}
BOB = {"user": "bob", "project": "billing"}


def _doc(patterns: str) -> str:
    return ("# Continuity\n\n## State\n- working on the queue\n\n## Patterns\n"
            f"{patterns}\n\n## Decisions\n- keep retries bounded\n\n## Context\n- {SCRIPT}\n")


def dated(patterns: str) -> str:
    """Each claim of 2x or more dated the wrap's day (an undated or back-dated line is not
    a graduation claim)."""
    return re.sub(r"\|\s*(\d+)x\b(?!\s*\()", lambda m: f"| {m.group(1)}x ({today_iso()})"
                  if int(m.group(1)) >= 2 else m.group(0), patterns)


def _wrap(store: Store, patterns: str, **kw: Any) -> dict[str, Any]:
    patterns = dated(patterns)
    w = prepare_wrap(store)
    assert w["status"] == "ready", w
    return validated_save_continuity(store, _doc(patterns), wrap_token=w["wrap_token"], **kw)


def seed(path: Path) -> dict[str, Any]:
    """Three wraps with graduations (one per stance), a capped and a demoted line, a drift
    probe, relayed and hostile episodes, a supersession chain and a state key, two
    namespaces and a governed review; returns the ids the tests look for."""
    import warnings

    ids: dict[str, Any] = {}
    with Store(path, project_name="Console") as s, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        a = s.record("Checkout latency rose with cache misses after the deploy", "observation")
        b = s.record("Retries without jitter overloaded the payment queue", "observation")
        h = s.record(HOSTILE, "observation", trust="external")
        ids["hostile"] = h.id
        # each rung's explanation uses fresh words (a rephrase of a prior one demotes)
        _wrap(s, f'- cache misses | 1x [evidence: {a.id} "checkout latency rose"]\n'
                 f'- {EVIL_NAME} | 1x [evidence: {b.id} "retries jitter overloaded"]\n'
                 f'- jitter retries | 1x [evidence: {b.id} "payment queue overloaded"]')
        c = s.record("Cache misses spiked again at checkout during the sale", "observation")
        d = s.record("Payment queue stalled when retries had no jitter", "observation")
        e = s.record("Tool output: jitter config missing in retry policy", "observation",
                     trust="tool")
        ids["tool"] = e.id
        ids["cited"] = [c.id, d.id]
        v = s.record("Vendor status page claims their API never goes down", "observation")
        _wrap(s, f'- cache misses | 2x [evidence: {c.id} "spiked sale"] [no-contradicts]\n'
                 f'- {EVIL_NAME} | 2x [evidence: {d.id} "payment queue stalled"] '
                 "[contradicts: cache misses]\n"
                 f'- jitter retries | 2x [evidence: {d.id} "stalled retries jitter"]\n'
                 f'- vendor uptime | 1x [evidence: {v.id} "vendor status page claims"]\n'
                 "- brand new claim | 9x")
        s.add_drift_probe(pattern="cache misses")
        ids["probe_fact"] = s.add_drift_probe(fact="keep retries bounded")
        g = s.record("Cache misses doubled checkout time in the load test", "observation")
        w = s.record("Vendor API docs say it never goes down, per their page", "observation",
                     trust="tool")
        n = s.record("Nightly export finished early after the index rebuild", "observation")
        ids["third"] = g.id
        _wrap(s, f'- cache misses | 3x [evidence: {g.id} "doubled time load test"] '
                 "[no-contradicts]\n"
                 f'- {EVIL_NAME} | 2x [evidence: abcdef12 "made up entirely here"]\n'
                 "- jitter retries | 2x\n"
                 f'- vendor uptime | 2x [evidence: {w.id} "api docs say"]\n'
                 f'- brand new claim | 5x [evidence: {n.id} "nightly export index rebuild"]\n'
                 '- odd sighting | 1x [evidence: abcdef12 "seen once somewhere"]',
              carryforward_cold_days=None)
        old = s.record("The user lives in Paris with family", "context", state_key="user.city")
        new = s.record("The user lives in Lyon with family", "context", state_key="user.city")
        ids["old_city"], ids["new_city"] = old.id, new.id
        alice = s.scoped(ALICE)
        alice.record("Alice prefers tea over coffee", "observation")
        alice.record("Alice works on the billing export", "observation")
        bob = s.scoped(BOB)
        bob.record("Bob's billing job runs nightly", "observation")
        rt = MemoryRuntime(s)
        res = rt.write(MemoryCandidate(
            "c-1", MemoryNamespace(tenant="acme", user="carol", agent="coder"), "semantic",
            "tone", f"Carol seems to like terse replies {SCRIPT}",
            SourceRef("s-1", "model"), confidence=0.7))
        ids["review"] = res.review_id
        res2 = rt.write(MemoryCandidate(
            "c-2", MemoryNamespace(tenant="acme", user="carol", agent="coder"), "semantic",
            "editor", "Carol uses vim", SourceRef("s-2", "tool_output")))
        ids["review2"] = res2.review_id
    return ids


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: str


@dataclass
class Client:
    """An HTTP client for one console: its own cookie jar (one cookie), any Host header."""

    base: str
    cookie: str | None = None
    host: str | None = None
    history: list[Reply] = field(default_factory=list)

    def request(self, method: str, path: str, *, body: dict[str, Any] | None = None,
                headers: dict[str, str] | None = None, host: str | None = None,
                raw: bytes | None = None) -> Reply:
        u = urlsplit(self.base)
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        hdrs = {"Host": host if host is not None else self.host or u.netloc}
        if self.cookie:
            hdrs["Cookie"] = self.cookie
        data = raw
        if body is not None:
            data = urlencode(body).encode("utf-8")
            hdrs["Content-Type"] = "application/x-www-form-urlencoded"
        hdrs.update(headers or {})
        conn.request(method, path, body=data, headers=hdrs)
        r = conn.getresponse()
        reply = Reply(r.status, {k.lower(): v for k, v in r.getheaders()},
                      r.read().decode("utf-8", "replace"))
        conn.close()
        set_cookie = reply.headers.get("set-cookie")
        if set_cookie:
            self.cookie = set_cookie.split(";", 1)[0]
        self.history.append(reply)
        return reply

    def get(self, path: str, **kw: Any) -> Reply:
        return self.request("GET", path, **kw)

    def post(self, path: str, body: dict[str, Any], **kw: Any) -> Reply:
        return self.request("POST", path, body=body, **kw)

    def login(self, url: str) -> Reply:
        u = urlsplit(url)
        return self.get(f"{u.path}?{u.query}")

    def csrf(self, path: str = "/continuity") -> str:
        m = re.search(r'name="csrf" value="([^"]+)"', self.get(path).body)
        assert m, f"no form with a CSRF token on {path}"
        return m.group(1)
