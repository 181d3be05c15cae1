"""The operator console over HTTP: every page and action against a real server on
127.0.0.1 and a seeded real store, the hostile-content cases, and who may ask (login
token, session cookie, CSRF token, Host header, Origin, read-only)."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from anneal_memory import AuditTrail, MemorySession, Store, ValidationError
from anneal_memory.audit import same_label
from anneal_memory.governance import MemoryNamespace
from anneal_memory.testing import backend_of
from anneal_memory.ui import Console
from anneal_memory.ui.pages import ns_token

from uihelp import ALICE, EVIL_NAME, SCRIPT, Client, Reply, seed

PAGES = ["/", "/continuity", "/patterns", "/worklist", "/episodes", "/audit", "/namespaces",
         "/governed"]


@pytest.fixture
def seeded(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    db = tmp_path / "memory.db"
    return db, seed(db)


@pytest.fixture
def console(seeded: tuple[Path, dict[str, Any]]) -> Iterator[Console]:
    with Console(seeded[0], port=0) as c:
        yield c


@pytest.fixture
def ids(seeded: tuple[Path, dict[str, Any]]) -> dict[str, Any]:
    return seeded[1]


def logged_in(c: Console) -> Client:
    client = Client(c.url)
    r = client.login(c.login_url())
    assert r.status == 200 and client.cookie
    return client


@pytest.fixture
def client(console: Console) -> Client:
    return logged_in(console)


def events(db: Path, name: str | None = None) -> list[dict[str, Any]]:
    return [e for _f, e in AuditTrail.iter_entries(db) if name is None or e["event"] == name]


def text_of(html: str) -> str:
    """The page's visible text, tags removed and entities decoded once."""
    import html as h

    return " ".join(h.unescape(re.sub(r"<[^>]+>", " ", html)).split())


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))


#: every element the console itself writes
OUR_TAGS = {"html", "head", "meta", "title", "link", "body", "header", "span", "nav", "a",
            "main", "h1", "h2", "p", "div", "pre", "table", "thead", "tbody", "tr", "th", "td",
            "form", "input", "button", "select", "option", "label", "details", "summary",
            "strong", "code", "svg", "line", "text", "path", "circle", "rect", "ul", "li"}


def no_live_markup(body: str) -> None:
    """Parsed as a browser would: nothing hostile survived as markup (no script or
    injected element, no event-handler attribute, no javascript: link)."""
    parser = _Tags()
    parser.feed(body)
    assert parser.tags
    for tag, attrs in parser.tags:
        assert tag in OUR_TAGS, f"an element the console never writes: <{tag}>"
        for name, value in attrs:
            assert not name.startswith("on"), f"<{tag} {name}=...>"
            if name in ("href", "src", "action"):
                assert (value or "").startswith(("/", "#")), f"<{tag} {name}={value!r}>"


# ---------------------------------------------------------------------- pages

@pytest.mark.parametrize("path", PAGES)
def test_every_page_renders_with_the_security_headers(client: Client, path: str) -> None:
    r = client.get(path)
    assert r.status == 200, r.body
    assert r.headers["content-type"] == "text/html; charset=utf-8"
    assert "script-src" not in r.headers["content-security-policy"]  # default-src 'none'
    assert "default-src 'none'" in r.headers["content-security-policy"]
    assert r.headers["x-frame-options"] == "DENY" and r.headers["cache-control"] == "no-store"
    assert r.headers["referrer-policy"] == "no-referrer"
    no_live_markup(r.body)


def test_overview_counts(client: Client) -> None:
    t = text_of(client.get("/").body)
    assert "Episodes 15 (2 since the last wrap)" in t
    assert "By trust agent 12, external 1, tool 2" in t
    assert re.search(r"Wraps \(the root's own\)\s+3, last", t)
    assert "5 graduation(s) to judge" in t
    assert re.search(r"All namespaces\s+3 namespace\(s\)\s*: 3 wrap\(s\)", t)


def test_continuity_shows_levels_marks_and_cited_episodes(client: Client, ids: dict) -> None:
    body = client.get("/continuity").body
    t = text_of(body)
    for mark in ("ungrounded", "needs-evidence", "uncorroborated", "level-capped",
                 "no-contradicts"):
        assert mark in t, mark
    assert "cache misses" in t and "3x" in t
    # the cited episode is one click away: its text is inside the evidence <details>
    m = re.search(r"<details><summary>evidence <code>" + ids["third"] + r"</code>.*?</details>",
                  body, re.S)
    assert m and "Cache misses doubled checkout time" in m.group(0)
    assert f'href="/episode?id={ids["third"]}"' in m.group(0)
    assert "not in this store" in t  # the fabricated abcdef12 citation of a 1x sighting
    assert "<details open>" not in body
    opened = client.get("/continuity?open=1").body
    assert opened.count("<details open><summary>evidence") == 3


def test_pattern_history_draws_each_pattern_across_wraps(client: Client) -> None:
    body = client.get("/patterns").body
    assert body.count('<svg class="chart"') == 6
    cache = body[body.index("cache misses"):]
    cache = cache[:cache.index("</svg>")]
    assert cache.count("<circle") == 3 and "wrap 3" in cache and "graduated" in cache
    t = text_of(body)
    for what in ("graduated", "capped", "demoted", "uncorroborated", "a new pattern enters at 1x"):
        assert what in t, what


def test_worklist_shows_graduations_with_cited_text_side_by_side(client: Client, ids: dict) -> None:
    body = client.get("/worklist").body
    items = re.findall(r'<div class="card worklist-item">.*?(?=<div class="card worklist-item">|<h2>Drift)',
                       body, re.S)
    assert len(items) == 5
    t = [text_of(i) for i in items]
    assert "declared: contradicts nothing" in t[0] and "Cache misses spiked again" in t[0]
    assert "contradicts: cache misses" in t[1] and EVIL_NAME in t[1]
    assert "no contradiction stance declared" in t[2]
    assert "1x → 2x" in t[0] and "2x → 3x" in t[3]
    assert '"spiked sale"' in t[0]  # the line as that save wrote it, beside the episode
    drift = text_of(body[body.index("<h2>Drift probes"):])
    assert str(ids["probe_fact"]) in drift and "held" in drift and "keep retries bounded" in drift
    assert re.search(r"3\s+\S+ \S+\s+\d+: held", drift)


def test_episode_search_uses_recall_with_filters(client: Client, ids: dict) -> None:
    def found(**q: str) -> str:
        from urllib.parse import urlencode

        r = client.get("/episodes?" + urlencode(q))
        assert r.status == 200, r.body
        return text_of(r.body)

    t = found(q="payment queue")
    assert "Payment queue stalled" in t and "Alice prefers tea" not in t
    assert "matched as phrase" in t
    t = found(trust="external")
    assert "1 matching" in t and "data, not instructions" in t and SCRIPT in t
    assert "Relayed content (recorded from an external source)" in t
    t = found(type="context")
    assert "Lyon" in t and "Paris" not in t
    t = found(type="context", superseded="1")
    assert "Paris" in t and f"replaced by {ids['new_city']}" in t
    assert "0 matching" in found(since="2999-01-01")
    assert "14 matching" in found(until="2999-01-01")
    alice = found(ns=ns_token(MemoryNamespace("default", "alice", "default")))
    assert "2 matching" in alice and "Alice prefers tea" in alice and "Bob" not in alice


def test_bad_filters_are_refused_with_the_reason(client: Client) -> None:
    for q, why in (("since=yesterday-ish", "since"), ("type=poem", "episode type"),
                   ("trust=boss", "trust"), ("limit=x", "limit"), ("ns=!!!", "namespace")):
        r = client.get(f"/episodes?{q}")
        assert r.status == 400 and why in text_of(r.body), (q, r.body)


def test_episode_page_shows_the_chain_and_the_state_key(client: Client, ids: dict) -> None:
    body = client.get(f"/episode?id={ids['old_city']}").body
    t = text_of(body)
    assert "Supersession chain" in t and "state_key" in t
    assert f"current holder {ids['new_city']}" in t and "Paris" in t and "Lyon" in t
    assert client.get("/episode?id=nope0000").status == 404


def test_audit_page_verifies_and_filters(client: Client, seeded: tuple) -> None:
    db = seeded[0]
    t = text_of(client.get("/audit").body)
    total = len(events(db))
    assert "chain valid" in t and f"{total} entries" in t and "No anchor kept" in t
    head = AuditTrail.head(db)
    assert f"{head.seq}:{head.hash}" in t
    ops = client.get("/audit?actor=operator").body.split("Event stream")[1]
    actors = re.findall(r"<td>(agent|operator|system)</td>", ops)
    assert actors and set(actors) == {"operator"}
    good = text_of(client.get(f"/audit?anchor={head.seq}:{head.hash}").body)
    assert "chain valid" in good and "matches" in good
    bad = text_of(client.get(f"/audit?anchor={head.seq}:{'0' * 64}").body)
    assert "chain valid" not in bad and "anchor" in bad
    r = client.get("/audit?anchor=/etc/passwd")
    assert r.status == 400 and "64-hex" in text_of(r.body)


def test_event_filter_keeps_only_that_event(client: Client) -> None:
    body = client.get("/audit?event=probe_added").body
    rows = re.findall(r'<span class="badge ">([a-z_]+)</span>', body.split("Event stream")[1])
    assert rows == ["probe_added", "probe_added"]


def test_audit_page_reports_a_tampered_chain(client: Client, seeded: tuple) -> None:
    db = seeded[0]
    trail = db.with_name("memory.audit.jsonl")
    lines = trail.read_text("utf-8").splitlines()
    entry = json.loads(lines[2])
    entry["actor"] = "operator"
    lines[2] = json.dumps(entry)
    trail.write_text("\n".join(lines) + "\n", "utf-8")
    t = text_of(client.get("/audit").body)
    assert "chain broken" in t and "breaks at entry 3" in t


def test_namespaces_are_listed_and_each_opens_as_its_own_view(client: Client) -> None:
    body = client.get("/namespaces").body
    t = text_of(body)
    assert "default/alice/*/default" in t and "default/bob/billing/default" in t
    assert "acme/carol/*/coder" in t
    links = re.findall(r'href="(/\?ns=[^"]+)"', body)
    assert len(links) == 3
    alice = next(link for link in links if "alice" in text_of(body.split(link)[1][:80]))
    view = client.get(alice.replace("&amp;", "&"))
    vt = text_of(view.body)
    assert "default/alice/*/default" in vt and re.search(r"Episodes\s+2 \(2 since", vt)
    # every link of the view stays in the view
    token = alice.split("ns=")[1]
    assert all(f"ns={token}" in h for h in re.findall(r'<nav>(.*?)</nav>', view.body)[0].split("<a")[1:])


def test_governed_queue_lists_pending_reviews_escaped(client: Client, ids: dict) -> None:
    body = client.get("/governed").body
    t = text_of(body)
    assert ids["review"] in t and ids["review2"] in t
    assert "model_inferred_needs_review" in t and "acme/carol/*/coder" in t
    assert "Carol seems to like terse replies " + SCRIPT in t
    assert "&lt;script&gt;" in body


def test_hostile_text_is_text_on_every_page(client: Client, ids: dict) -> None:
    for path in [*PAGES, f"/episode?id={ids['hostile']}", "/episodes?trust=external",
                 "/audit?event=record"]:
        r = client.get(path)
        assert r.status == 200
        no_live_markup(r.body)
    body = client.get(f"/episode?id={ids['hostile']}").body
    assert "&lt;script&gt;document.title=&#x27;PWNED&#x27;" in body
    assert "[click me](javascript:alert(document.cookie))" in text_of(body)
    assert "&lt;img src=x onerror=" in body
    assert "&lt;b onmouseover=alert(1)&gt;bold&lt;/b&gt; claim" in client.get("/continuity").body


# ---------------------------------------------------------------------- actions

def post(client: Client, path: str, fields: dict[str, Any], page: str = "/continuity") -> Reply:
    return client.post(path, {"csrf": client.csrf(page), **fields})


def test_approve_commits_through_the_runtime_and_is_audited(client: Client, ids: dict,
                                                            seeded: tuple,
                                                            console: Console) -> None:
    page = client.get("/governed").body
    assert 'name="reviewer"' not in page  # no box to type someone else's name in
    assert f'<strong id="reviewer">{console.reviewer}</strong>' in page
    # a forged form field is ignored: the decision is the logged-in operator's
    r = post(client, "/act/approve", {"review_id": ids["review"], "reviewer": "dana",
                                      "back": "/governed"}, "/governed")
    assert r.status == 303 and r.headers["location"] == "/governed"
    page = client.get("/governed")
    assert "approved: committed as human_reviewed" in text_of(page.body)
    assert ids["review"] not in page.body and ids["review2"] in page.body
    ev = events(seeded[0], "gov_review_decided")[-1]
    assert ev["actor"] == "operator" and ev["data"]["status"] == "approved"
    assert ev["data"]["reviewer"] != "dana"  # a label: hashed in the trail
    with Store(seeded[0]) as s:
        assert same_label(ev["data"]["reviewer"], s.audit_trail.hash_label(console.reviewer))
        assert not same_label(ev["data"]["reviewer"], s.audit_trail.hash_label("dana"))
    again = post(client, "/act/approve", {"review_id": ids["review"], "reviewer": "dana"},
                 "/governed")
    assert again.status == 400 and "already approved" in text_of(again.body)


def test_reject_closes_the_review_without_writing(client: Client, ids: dict, seeded: tuple) -> None:
    r = post(client, "/act/reject", {"review_id": ids["review2"], "reviewer": "dana"}, "/governed")
    assert r.status == 303
    assert ids["review2"] not in client.get("/governed").body
    assert events(seeded[0], "gov_review_decided")[-1]["data"]["status"] == "rejected"
    assert events(seeded[0], "gov_approve") == []
    missing = post(client, "/act/reject", {"review_id": " "}, "/governed")
    assert missing.status == 400 and "review_id" in text_of(missing.body)


def test_mark_reviewed_empties_the_worklist(client: Client, seeded: tuple) -> None:
    r = post(client, "/act/reviewed", {"through": "3", "back": "/worklist"}, "/worklist")
    assert r.status == 303 and r.headers["location"] == "/worklist"
    body = client.get("/worklist").body
    assert 'id="worklist-empty"' in body and "5 item(s)" in text_of(body)
    assert events(seeded[0], "worklist_reviewed")[-1]["data"]["through_wrap"] == 3
    bad = post(client, "/act/reviewed", {"through": "99"})
    assert bad.status == 400 and "after the newest" in text_of(bad.body)


def test_lowering_trust_is_open_and_audited(client: Client, ids: dict, seeded: tuple) -> None:
    r = post(client, "/act/trust", {"id": ids["tool"], "trust": "external", "back": "/episode"},
             f"/episode?id={ids['tool']}")
    assert r.status == 303 and r.headers["location"] == f"/episode?id={ids['tool']}"
    with Store(seeded[0], read_only=True) as s:
        assert s.get(ids["tool"]).trust == "external"
    ev = events(seeded[0], "trust_set")[-1]
    assert ev["data"]["trust_via"] == "ui" and ev["data"]["to"] == "external"


def test_raising_trust_needs_the_operator_console(client: Client, ids: dict, seeded: tuple) -> None:
    r = post(client, "/act/trust", {"id": ids["tool"], "trust": "agent"})
    assert r.status == 400 and "operator-only" in text_of(r.body)
    assert events(seeded[0], "trust_set") == []
    with Store(seeded[0], read_only=True) as s:
        assert s.get(ids["tool"]).trust == "tool"


def test_an_operator_console_raises_trust(seeded: tuple) -> None:
    db, ids = seeded
    with Console(db, port=0, operator_via="env") as c:
        client = logged_in(c)
        assert "raising it is operator-only" not in client.get(f"/episode?id={ids['tool']}").body
        r = post(client, "/act/trust", {"id": ids["tool"], "trust": "operator"})
        assert r.status == 303
    ev = events(db, "trust_set")[-1]
    assert ev["data"]["trust_via"] == "ui-env" and ev["data"]["to"] == "operator"


def test_demote_and_retire_a_pattern_by_hand(client: Client, seeded: tuple) -> None:
    r = post(client, "/act/demote", {"name": "cache misses", "level": "1", "back": "/continuity"},
             "/continuity")
    assert r.status == 303
    t = text_of(client.get("/continuity").body)
    assert "cache misses: demoted 3x -> 1x" in t
    with Store(seeded[0], read_only=True) as s:
        assert "- cache misses | 1x" in s.load_continuity()
    ev = events(seeded[0], "pattern_demoted")[-1]
    assert ev["actor"] == "operator" and (ev["data"]["from"], ev["data"]["to"]) == (3, 1)
    assert "operator-demoted" in text_of(client.get("/patterns").body)
    r = post(client, "/act/retire", {"name": EVIL_NAME}, "/continuity")
    assert r.status == 303
    with Store(seeded[0], read_only=True) as s:
        assert "bold</b> claim" not in s.load_continuity()
    assert events(seeded[0], "pattern_retired")
    bad = post(client, "/act/demote", {"name": "jitter retries", "level": "1"}, "/continuity")
    assert bad.status == 400 and "lowest" in text_of(bad.body)
    evil = post(client, "/act/retire", {"name": SCRIPT}, "/continuity")
    assert evil.status == 400 and "no pattern named" in text_of(evil.body)
    no_live_markup(evil.body)


def test_actions_in_a_namespace_view_act_on_that_namespace_only(seeded: tuple) -> None:
    db, ids = seeded
    with Console(db, port=0) as c:
        client = logged_in(c)
        ns = ns_token(MemoryNamespace("default", "alice", "default"))
        csrf = client.csrf()
        r = client.post("/act/trust", {"csrf": csrf, "ns": ns, "id": ids["tool"],
                                       "trust": "external"})
        assert r.status == 400 and "no episode" in text_of(r.body)
        with Store(db, read_only=True) as s:
            alice_ep = s.scoped(ALICE).recall().episodes[0].id
        r = client.post("/act/trust", {"csrf": csrf, "ns": ns, "id": alice_ep,
                                       "trust": "tool", "back": "/episode"})
        assert r.status == 303 and f"ns={ns}" in r.headers["location"]
    with Store(db, read_only=True) as s:
        assert s.get(ids["tool"]).trust == "tool" and s.get(alice_ep).trust == "tool"


# ---------------------------------------------------------------------- who may ask

def test_nothing_is_served_without_a_session(console: Console) -> None:
    anon = Client(console.url)
    for path in [*PAGES, "/episode?id=x"]:
        r = anon.get(path)
        assert r.status == 403 and "login link" in text_of(r.body)
        assert "Alice" not in r.body and "cache misses" not in r.body
    assert anon.post("/act/reviewed", {"through": "3"}).status == 403
    assert anon.get("/static/console.css").status == 200  # the stylesheet holds nothing


def test_login_token_works_once_and_sets_a_strict_cookie(console: Console) -> None:
    url = console.login_url("/worklist")
    first = Client(console.url)
    r = first.login(url)
    assert r.status == 200 and "Review worklist" in text_of(r.body)  # the page itself
    cookie = r.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert cookie.startswith(f"anneal_console_{console.port}=")
    assert first.get("/worklist").status == 200
    # a reload of the spent link in the browser that used it: the cookie is what counts
    assert first.login(url).status == 200 and "set-cookie" not in first.history[-1].headers
    second = Client(console.url)
    again = second.login(url)
    assert again.status == 403 and "already used" in text_of(again.body)
    assert second.cookie is None and second.get("/").status == 403
    assert Client(console.url).get("/?token=guessed-token").status == 403
    assert Client(console.url, cookie=f"anneal_console_{console.port}=forged").get("/").status == 403


def test_requests_naming_another_host_are_refused(client: Client, console: Console) -> None:
    for host in (f"evil.example:{console.port}", "127.0.0.1", f"127.0.0.1:{console.port + 1}",
                 f"attacker.test.127.0.0.1.nip.io:{console.port}", ""):
        r = client.get("/", host=host)
        assert r.status == 403 and "Wrong host" in r.body, host
        p = client.post("/act/reviewed", {"csrf": "x"}, host=host)
        assert p.status == 403
    assert client.get("/", host=f"localhost:{console.port}").status == 200
    assert client.get("/", host=f"127.0.0.1:{console.port}").status == 200


def test_a_request_without_host_is_refused(console: Console) -> None:
    import socket

    with socket.create_connection(("127.0.0.1", console.port), timeout=10) as sock:
        sock.sendall(b"GET / HTTP/1.0\r\n\r\n")
        reply = sock.recv(4096).decode("latin-1")
    assert reply.startswith("HTTP/1.0 403")


def test_csrf_token_is_required_for_every_action(client: Client, console: Console,
                                                 seeded: tuple) -> None:
    before = len(events(seeded[0]))
    other = logged_in(console)
    for path, fields in (("/act/reviewed", {"through": "3"}),
                         ("/act/trust", {"id": seeded[1]["tool"], "trust": "external"}),
                         ("/act/demote", {"name": "cache misses", "level": "1"}),
                         ("/act/retire", {"name": "cache misses"}),
                         ("/act/approve", {"review_id": seeded[1]["review"], "reviewer": "x"}),
                         ("/act/reject", {"review_id": seeded[1]["review"], "reviewer": "x"})):
        for token in (None, "wrong", other.csrf()):
            body = dict(fields, **({"csrf": token} if token else {}))
            r = client.post(path, body)
            assert r.status == 403 and "CSRF" in text_of(r.body), (path, token)
    assert len(events(seeded[0])) == before


def test_cross_site_posts_are_refused_even_with_the_token(client: Client, seeded: tuple) -> None:
    before = len(events(seeded[0]))
    csrf = client.csrf()
    for headers in ({"Origin": "http://evil.example"}, {"Origin": "null"},
                    {"Sec-Fetch-Site": "cross-site"}, {"Sec-Fetch-Site": "same-site"}):
        r = client.post("/act/reviewed", {"csrf": csrf, "through": "3"}, headers=headers)
        assert r.status == 403 and "another site" in text_of(r.body)
    assert len(events(seeded[0])) == before
    ok = client.post("/act/reviewed", {"csrf": csrf, "through": "3"},
                     headers={"Origin": client.base.rstrip("/"), "Sec-Fetch-Site": "same-origin"})
    assert ok.status == 303


def test_read_only_console_shows_no_actions_and_refuses_them(seeded: tuple) -> None:
    db, ids = seeded
    with Store(db, read_only=True) as ro, Console(ro, port=0) as c:
        assert c.read_only
        client = logged_in(c)
        for path in PAGES:
            r = client.get(path)
            assert r.status == 200 and 'method="post"' not in r.body, path
            assert "read-only" in text_of(r.body)
        # a CSRF token from a session is not enough: the console is read-only
        session = c.sessions.get(client.cookie.split("=", 1)[1])
        r = client.post("/act/reviewed", {"csrf": session.csrf, "through": "3"})
        assert r.status == 403 and "read-only" in text_of(r.body)
    with Console(db, port=0, read_only=True) as c:
        assert c.store.read_only and c.operator_via is None
    assert events(db, "worklist_reviewed") == []


def test_malformed_requests(client: Client) -> None:
    assert client.get("/nowhere").status == 404
    assert client.request("HEAD", "/").status == 405
    big = client.request("POST", "/act/reviewed", raw=b"x" * (70 * 1024),
                         headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert big.status == 413
    r = client.request("POST", "/act/reviewed", raw=b"csrf=%ff%fe",
                       headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert r.status == 400
    assert client.post("/act/nothing", {"csrf": client.csrf()}).status == 404


def test_the_log_never_holds_the_login_token(seeded: tuple) -> None:
    log = io.StringIO()
    with Console(seeded[0], port=0, log=log) as c:
        url = c.login_url()
        client = Client(c.url)
        client.login(url)
        client.get("/episodes?q=secret")
    token = url.split("token=")[1]
    assert token not in log.getvalue() and "secret" not in log.getvalue()
    assert "GET / 200" in log.getvalue() and "GET /episodes 200" in log.getvalue()


def test_console_refuses_to_listen_on_every_interface(seeded: tuple) -> None:
    # every spelling the operating system reads as "every interface"
    for host in ("0.0.0.0", "::", " ", "0", "0.0", "0x0", "000.000.000.000", "[::]", "0:0::0",
                 # IPv4-mapped and IPv4-compatible forms of 0.0.0.0: a dual-stack socket
                 # bound to them listens on every IPv4 interface
                 "::ffff:0.0.0.0", "[::ffff:0.0.0.0]", "::ffff:0:0", "0:0:0:0:0:ffff:0:0",
                 "0::ffff:0.0.0.0", "::0.0.0.0"):
        with pytest.raises(ValidationError, match="one address.*listens on every interface"):
            Console(seeded[0], host=host, port=0)
    with Console(seeded[0], port=0) as c:
        with pytest.raises(ValidationError, match=r"cannot listen.*in use\): choose another port"):
            Console(seeded[0], port=c.port)
    # an IPv4-mapped address of one interface is that IPv4 address, Host check included
    with Console(seeded[0], host="::ffff:127.0.0.1", port=0) as c:
        assert c.host == "127.0.0.1" and f"localhost:{c.port}" in c.allowed


def test_ui_names_an_address_this_machine_lacks_not_the_port(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    Store(db).close()
    # 192.0.2.1 is TEST-NET-1 (RFC 5737), never this machine's: the bind fails, nothing is sent
    r = subprocess.run([sys.executable, "-m", "anneal_memory", "--db", str(db), "ui",
                        "--host", "192.0.2.1", "--port", "8765"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 1 and "192.0.2.1 is not an address of this machine" in r.stderr, r.stderr
    assert "another port" not in r.stderr and "Traceback" not in r.stderr


# ---------------------------------------------------------------------- the CLI command

def cli(*args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "anneal_memory", *args], capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL, **kw)


def test_cli_ui_refusals_are_one_line(tmp_path: Path) -> None:
    r = cli("ui", "--db", str(tmp_path / "none.db"))
    assert r.returncode == 1 and "no store at" in r.stderr and "Traceback" not in r.stderr
    Store(tmp_path / "m.db").close()
    r = cli("ui", "--db", str(tmp_path / "m.db"), "--operator", "--read-only")
    assert r.returncode == 1 and "contradict" in r.stderr
    env = {k: v for k, v in os.environ.items() if k != "ANNEAL_OPERATOR"}
    r = cli("ui", "--db", str(tmp_path / "m.db"), "--operator", "--port", "0", env=env)
    assert r.returncode == 1 and "operator-only" in r.stderr


def _start_cli(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "anneal_memory", "ui", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL)


def _line_with(proc: subprocess.Popen[str], needle: str) -> str:
    assert proc.stdout is not None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if needle in line:
            return line.strip()
    raise AssertionError(f"the console printed no line with {needle!r}")


def test_cli_ui_serves_the_console(seeded: tuple) -> None:
    db, _ids = seeded
    proc = _start_cli("--db", str(db), "--port", "0", "--read-only")
    try:
        url = _line_with(proc, "?token=")
        assert url.startswith("http://127.0.0.1:"), url
        client = Client(url.split("?")[0])
        assert client.login(url).status == 200
        page = client.get("/continuity")
        assert page.status == 200 and "cache misses" in page.body and "read-only" in page.body
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert proc.stderr is not None and "token=" not in proc.stderr.read()


def test_cli_ui_json_prints_one_line_to_start_from(seeded: tuple) -> None:
    db, _ids = seeded
    proc = _start_cli("--db", str(db), "--port", "0", "--json")
    try:
        doc = json.loads(_line_with(proc, "login_url"))
        assert doc["store"] == str(db) and doc["read_only"] is False and not doc["operator"]
        client = Client(doc["url"])
        assert client.login(doc["login_url"]).status == 200
        assert client.get("/").status == 200
        assert Client(doc["url"]).login(doc["login_url"]).status == 403  # used once
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_login_link_to_no_page_still_logs_in_and_never_redirects(console: Console) -> None:
    client = Client(console.url)
    r = client.get("//evil.example/?" + console.login_url().split("?")[1])
    assert r.status == 404 and "location" not in r.headers and client.cookie
    assert client.get("/").status == 200


def test_a_plain_http_client_follows_the_printed_link(console: Console) -> None:
    import urllib.request

    with urllib.request.urlopen(console.login_url("/continuity"), timeout=30) as r:
        assert r.status == 200 and "cache misses" in r.read().decode("utf-8")


def test_hand_edits_are_refused_while_a_wrap_is_open(client: Client, seeded: tuple) -> None:
    from anneal_memory import prepare_wrap

    with Store(seeded[0]) as s:
        s.record("one more", "observation")
        assert prepare_wrap(s)["status"] == "ready"
    r = post(client, "/act/demote", {"name": "cache misses", "level": "1"})
    assert r.status == 400 and "a wrap is open" in text_of(r.body)
    assert events(seeded[0], "pattern_demoted") == []


def test_a_store_without_governed_memory(tmp_path: Path) -> None:
    from anneal_memory.storage.governance_sql import has_schema

    db = tmp_path / "plain.db"
    with Store(db) as s:
        s.record("plain note", "observation")
    with Console(db, port=0) as c:
        client = logged_in(c)
        assert "No governed memory" in text_of(client.get("/governed").body)
        assert "No continuity yet" in text_of(client.get("/continuity").body)
        assert "No wrap has recorded" in text_of(client.get("/patterns").body)
        assert "Nothing to review" in text_of(client.get("/worklist").body)
        assert "no namespaces" in text_of(client.get("/namespaces").body)
        assert not has_schema(backend_of(c.store))  # looking created nothing


def test_many_namespaces_are_paged(tmp_path: Path) -> None:
    db = tmp_path / "crowd.db"
    with Store(db) as s, s.batch():
        for i in range(230):
            s.scoped({"user": f"u{i:03d}"}).record(f"note of user {i}", "observation")
    with Console(db, port=0) as c:
        client = logged_in(c)
        first = client.get("/namespaces").body
        assert first.count('href="/?ns=') == 200 and "230 namespace(s)" in text_of(first)
        second = client.get("/namespaces?offset=200").body
        assert second.count('href="/?ns=') == 30 and "default/u229/*/default" in text_of(second)
        picker = client.get("/episodes").body
        assert picker.count("<option") - 7 - 5 - 1 == 100  # types, trusts, the root and "130 more" in text_of(picker)


def test_an_address_spelled_oddly_is_bound_and_checked_as_itself(seeded: tuple) -> None:
    with Console(seeded[0], host="127.1", port=0) as c:
        assert c.host == "127.0.0.1" and c.url.startswith("http://127.0.0.1:")
        client = Client(c.url)
        client.login(c.login_url())
        assert client.get("/").status == 200
        for spelled in (f"127.1:{c.port}", f"0:{c.port}", f"0.0.0.0:{c.port}"):
            assert client.get("/", host=spelled).status == 403


def test_ui_command_refuses_host_zero(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    Store(db).close()
    r = subprocess.run([sys.executable, "-m", "anneal_memory", "--db", str(db), "ui",
                        "--host", "0", "--port", "0"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 1 and "every interface" in r.stderr and "Traceback" not in r.stderr


def test_erasing_a_namespace_is_operator_only_and_needs_its_label(seeded: tuple) -> None:
    db, _ids = seeded
    ns = ns_token(MemoryNamespace("default", "alice", "default"))
    label = MemoryNamespace("default", "alice", "default").label()
    with Console(db, port=0) as c:  # not in operator mode: refused, nothing changed
        client = logged_in(c)
        r = client.post("/act/erase", {"csrf": client.csrf(), "ns": ns, "confirm": label})
        assert r.status == 400 and "operator-only" in text_of(r.body)
    with Console(db, port=0, operator_via="env") as c:
        client = logged_in(c)
        page = client.get(f"/?ns={ns}").body
        assert 'action="/act/erase"' in page and 'action="/act/erase"' not in client.get("/").body
        wrong = client.post("/act/erase", {"csrf": client.csrf(), "ns": ns, "confirm": "alice"})
        assert wrong.status == 400 and "exactly to confirm" in text_of(wrong.body)
        forged = client.post("/act/erase", {"csrf": "nope", "ns": ns, "confirm": label})
        assert forged.status == 403
        with Store(db, read_only=True) as s:
            assert s.scoped(ALICE).status().total_episodes > 0
        r = client.post("/act/erase", {"csrf": client.csrf(), "ns": ns, "confirm": label,
                                       "back": "/namespaces"})
        assert r.status == 303 and r.headers["location"].startswith("/namespaces")
        listing = client.get("/namespaces").body
        assert f"{label}</a>" not in listing and "erased default/alice" in text_of(listing)
    with Store(db, read_only=True) as s:
        assert s.scoped(ALICE).status().total_episodes == 0
        assert "alice" not in [n["namespace"].user for n in s.namespaces()]
    assert events(db, "namespace_erased")


def test_the_root_audit_page_names_each_entrys_namespace_and_filters_by_it(seeded: tuple,
                                                                          client: Client) -> None:
    db, _ids = seeded
    with Store(db) as s:
        s.scoped({"user": SCRIPT}).record("a hostile user's note", "observation")
    label = MemoryNamespace("default", "alice", "default").label()
    page = client.get("/audit").body
    assert f"<td>{label}</td>" in page and "<td>(root)</td>" in page
    no_live_markup(page)  # the hostile user id is shown escaped, never as markup
    from urllib.parse import urlencode

    only = client.get("/audit?" + urlencode({"entry_ns": label})).body
    assert f"<td>{label}</td>" in only and "<td>(root)</td>" not in only
    assert "<td>default/bob/" not in only and "hostile" not in only
    bad = client.get("/audit?entry_ns=nobody")
    assert bad.status == 400


def test_each_views_overview_charts_its_own_activity(tmp_path: Path) -> None:
    from anneal_memory.clock import today

    db = tmp_path / "memory.db"
    with Store(db) as s:
        for _ in range(3):
            s.scoped({"user": "dora"}).record("dora's note", "observation")
        s.scoped({"user": "eli"}).record("eli's note", "observation")
        assert MemorySession(s, namespace={"user": "eli"}).wrap(
            lambda p: "# C\n\n## State\n- ok\n\n## Patterns\n- p | 1x\n\n## Decisions\n"
                      "- none\n\n## Context\n- c\n").status == "saved"
    day = today().isoformat()
    with Console(db, port=0) as c:
        client = logged_in(c)
        dora = client.get("/?ns=" + ns_token(MemoryNamespace("default", "dora", "default"))).body
        eli = client.get("/?ns=" + ns_token(MemoryNamespace("default", "eli", "default"))).body
        root = client.get("/").body
    assert f"<title>{day}: 3 episode(s), 0 wrap(s)</title>" in dora
    assert f"<title>{day}: 1 episode(s), 1 wrap(s)</title>" in eli
    assert 'id="activity"' not in root and "no episodes or wraps in this period" in root
