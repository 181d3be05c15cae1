"""An import obeys the rules a write obeys (issue 29, item 3).

Each hostile document is refused through the library and through ``anneal-memory
import`` (exit 1, one line naming the entry), and nothing is written: the episode
count, the links and the audit chain are as before. A control import of the same
document without the hostile part succeeds, so each refusal is the rule's, not a
side effect. Malformed fields are ``ValidationError``, never TypeError/ValueError.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from test_cli import Run

from anneal_memory import AuditTrail, Store
from anneal_memory.errors import SupersessionError, ValidationError
from anneal_memory.testing import repos_of

FACT = "the production database password rotates every ninety days on the first"
LIE = "the production database password never rotates and stays on the first day"


def _episode(eid: str, content: str, *, trust: str = "external", ts: str = "2026-02-01T00:00:00Z",
             **extra: Any) -> dict[str, Any]:
    return {"id": eid, "timestamp": ts, "type": "observation", "content": content,
            "source": "agent", "trust": trust, **extra}


def _doc(episodes: list[dict[str, Any]], links: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"format": "anneal-memory-export", "format_version": 1, "episodes": episodes,
            "supersessions": links or []}


def _link(old: str, new: str, kind: str = "explicit") -> dict[str, Any]:
    return {"old_id": old, "new_id": new, "kind": kind, "created_at": "2026-02-01T00:00:00Z"}


def _state(db: Path) -> tuple[int, int, list[tuple[str, str]], int]:
    with Store(db) as s:
        links = sorted((o, n) for o, n, _k, _c in repos_of(s).links.all_supersessions())
        count = s.status().total_episodes
        nss = len(s.namespaces())
    res = AuditTrail.verify(db)
    assert res.valid, res.reason
    return count, nss, links, res.total_entries


def _operator_fact(db: Path, **kw: Any) -> str:
    with Store(db, trust_ceiling="operator") as s:
        return s.record(FACT, "observation", trust="operator",
                        timestamp="2026-01-01T00:00:00Z", **kw).id


def _both_refuse(db: Path, run: Run, tmp_path: Path, doc: dict[str, Any],
                 error: type[Exception], *names: str) -> None:
    """The library and the CLI refuse ``doc``, naming ``names``, and write nothing."""
    before = _state(db)
    with Store(db) as s, pytest.raises(error) as exc:
        s.import_(copy.deepcopy(doc))
    for n in names:
        assert n in str(exc.value), str(exc.value)
    assert _state(db) == before
    f = tmp_path / "hostile.json"
    text = _dumps(doc)
    f.write_text(text)
    line = run.refused("import", str(f))
    # the JSON reader itself refuses a 5,000-digit number, as a ValidationError
    for n in names if ": " + HUGE not in text else ("5000 digits",):
        assert n in line, line
    assert "\n" not in line and "internal error" not in line
    assert _state(db) == before


def _dumps(doc: Any) -> str:
    """JSON text of ``doc``, a huge whole number written out as its digits."""
    def mark(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: mark(x) for k, x in v.items()}
        if isinstance(v, list):
            return [mark(x) for x in v]
        return "@@HUGE@@" if isinstance(v, int) and v > 10**100 else v
    return json.dumps(mark(doc)).replace('"@@HUGE@@"', HUGE)


@pytest.fixture
def run(tmp_path: Path, capsys: Any) -> Run:
    return Run(tmp_path / "memory.db", capsys)


def test_an_external_episode_cannot_supersede_an_operator_fact(run: Run, tmp_path: Path) -> None:
    fact = _operator_fact(run.db)
    doc = _doc([_episode("e0000001", LIE)], [_link(fact, "e0000001")])
    _both_refuse(run.db, run, tmp_path, doc, SupersessionError, "supersessions[0]",
                 "external episode cannot supersede a operator")
    doc["episodes"][0]["trust"] = "agent"  # control: still below operator
    _both_refuse(run.db, run, tmp_path, doc, SupersessionError, "supersessions[0]")
    doc["supersessions"] = []  # control: the episode alone imports
    with Store(run.db) as s:
        assert s.import_(doc)["imported"] == 1
        assert s.get(fact).superseded_by is None


def test_a_legacy_export_cannot_supersede_an_operator_fact(run: Run, tmp_path: Path) -> None:
    fact = _operator_fact(run.db)
    legacy = {"anneal_memory_export": True, "version": "1.0.2", "episodes": [
        {"id": "e0000001", "timestamp": "2026-02-01T00:00:00Z", "type": "observation",
         "content": LIE, "source": "agent", "session_id": "3", "trust": "external"}],
        "supersessions": [{"old_id": fact, "new_id": "e0000001", "source": "explicit",
                           "recorded_at": "2026-02-01T00:00:00Z"}],
        "wraps": [{"id": 3}]}
    _both_refuse(run.db, run, tmp_path, legacy, SupersessionError, "supersessions[0]")
    legacy["supersessions"] = []
    with Store(run.db) as s:
        assert s.import_(legacy)["imported"] == 1


def test_a_future_relayed_episode_cannot_take_an_operator_key(run: Run, tmp_path: Path) -> None:
    fact = _operator_fact(run.db, state_key="db.password.rotation")
    doc = _doc([_episode("e0000002", LIE, ts="2099-01-01T00:00:00Z",
                         state_key="db.password.rotation")])
    _both_refuse(run.db, run, tmp_path, doc, SupersessionError, "episode 0 (e0000002) state_key")
    doc["episodes"][0]["state_key"] = "db.password.other"  # control: its own slot
    with Store(run.db) as s:
        s.import_(doc)
        assert s.get(fact).superseded_by is None
        assert s.state_report("db.password.rotation")[0]["current"]["id"] == fact


def test_an_older_relayed_episode_joins_the_key_history(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    fact = _operator_fact(db, state_key="db.password.rotation")
    doc = _doc([_episode("e0000003", LIE, ts="2025-01-01T00:00:00Z",
                         state_key="db.password.rotation")])
    with Store(db) as s:
        s.import_(doc)  # older: it hides nothing, as record() allows
        assert s.get("e0000003").superseded_by == fact
        assert s.get(fact).superseded_by is None


def test_one_users_import_cannot_touch_anothers(run: Run, tmp_path: Path) -> None:
    with Store(run.db) as s:
        bob = s.scoped({"user": "bob"}).record(FACT, "observation",
                                               timestamp="2026-01-01T00:00:00Z").id
        s.scoped({"user": "bob"}).record("bob's keyed fact", "observation",
                                         state_key="home.city", timestamp="2026-01-01T00:00:00Z")
    alice = {"user": "alice"}
    doc = _doc([_episode("e0000004", LIE, trust="agent", namespace=alice)],
               [_link(bob, "e0000004")])
    _both_refuse(run.db, run, tmp_path, doc, SupersessionError, "supersessions[0]",
                 f"no episode {bob!r}")
    # a key in alice's namespace never joins bob's slot
    keyed = _doc([_episode("e0000005", "alice's keyed fact", trust="agent", namespace=alice,
                           ts="2099-01-01T00:00:00Z", state_key="home.city")])
    with Store(run.db) as s:
        s.import_(keyed)
        bob_view = s.scoped({"user": "bob"})
        assert bob_view.state_report("home.city")[0]["current"]["content"] == "bob's keyed fact"
        assert s.scoped({"user": "alice"}).get("e0000005").superseded_by is None


def test_links_must_name_episodes_and_share_words(run: Run, tmp_path: Path) -> None:
    with Store(run.db) as s:
        old = s.record(FACT, "observation", timestamp="2026-01-01T00:00:00Z").id
    unknown = _doc([_episode("e0000006", LIE, trust="agent")], [_link("f0000000", "e0000006")])
    _both_refuse(run.db, run, tmp_path, unknown, SupersessionError, "supersessions[0]",
                 "no episode 'f0000000'")
    missing_new = _doc([_episode("e0000006", LIE, trust="agent")], [_link("e0000006", "f0000000")])
    _both_refuse(run.db, run, tmp_path, missing_new, SupersessionError, "supersessions[0]",
                 "new_id")
    unrelated = _doc([_episode("e0000007", "lunch was a sandwich with pickles", trust="agent")],
                     [_link(old, "e0000007")])
    _both_refuse(run.db, run, tmp_path, unrelated, SupersessionError, "supersessions[0]",
                 "share too few words")
    newer_old = _doc([_episode("e0000008", LIE, trust="agent", ts="2025-01-01T00:00:00Z")],
                     [_link(old, "e0000008")])
    _both_refuse(run.db, run, tmp_path, newer_old, SupersessionError, "supersessions[0]", "newer")
    sources = _doc([_episode("e0000009", LIE, trust="agent", derived_from=["f1111111"])])
    _both_refuse(run.db, run, tmp_path, sources, ValidationError, "episode 0 (e0000009)",
                 "derived_from")
    good = _doc([_episode("e000000a", LIE, trust="agent")], [_link(old, "e000000a")])
    with Store(run.db) as s:  # control: a link record() would accept
        s.import_(good)
        assert s.get(old).superseded_by == "e000000a"


HUGE = "1" * 5000


@pytest.mark.parametrize("mutate, field", [
    (lambda d: d.update(supersessions=5), "supersessions"),
    (lambda d: d.update(episodes=5), "episodes"),
    (lambda d: d.update(tombstones=5), "tombstones"),
    (lambda d: d.update(format_version=HUGE), "version"),
    (lambda d: d.update(format_version=10**4999), "version"),
    (lambda d: d["episodes"][0].update(timestamp=10**4999), "timestamp"),
    (lambda d: d["episodes"][0].update(trust=5), "trust"),
    (lambda d: d["episodes"][0].update(derived_from=[5]), "derived_from"),
    (lambda d: d["episodes"][0].update(state_key=5), "state key"),
    (lambda d: d["supersessions"].append(5), "supersessions[1]"),
    (lambda d: d["supersessions"][0].update(kind="magic"), "kind"),
    (lambda d: d["supersessions"][0].update(created_at="yesterday-ish"), "created_at"),
    (lambda d: d["supersessions"][0].update(created_at=10**4999), "created_at"),
    (lambda d: d["supersessions"][0].update(old_id=5), "old_id"),
    (lambda d: d["supersessions"][0].update(new_id="²"), "new_id"),
])
def test_malformed_fields_are_validation_errors(run: Run, tmp_path: Path, mutate: Any,
                                                field: str) -> None:
    doc = _doc([_episode("e0000001", FACT, trust="agent", ts="2026-01-01T00:00:00Z"),
                _episode("e0000002", FACT + " still", trust="agent")],
               [_link("e0000001", "e0000002")])
    mutate(doc)
    _both_refuse(run.db, run, tmp_path, doc, ValidationError, field)


@pytest.mark.parametrize("mutate, field", [
    (lambda d: d.update(supersessions=5), "supersessions"),
    (lambda d: d.update(episodes=5), "episodes"),
    (lambda d: d.update(wraps=5), "wraps"),
    (lambda d: d["supersessions"].append(5), "supersessions[1]"),
    (lambda d: d["episodes"][0].update(timestamp=10**4999), "timestamp"),
])
def test_malformed_legacy_fields_are_validation_errors(run: Run, tmp_path: Path, mutate: Any,
                                                       field: str) -> None:
    doc = {"anneal_memory_export": True, "version": "1.0.2", "episodes": [
        {"id": "e0000001", "timestamp": "2026-01-01T00:00:00Z", "type": "observation",
         "content": FACT, "source": "agent", "session_id": "2"}],
        "supersessions": [{"old_id": "e0000001", "new_id": "e0000001", "source": "explicit"}],
        "wraps": [{"id": "²"}, {"id": HUGE}, {"id": 2}]}
    mutate(doc)
    _both_refuse(run.db, run, tmp_path, doc, ValidationError, field)


def test_odd_legacy_wrap_ids_count_as_no_wrap(tmp_path: Path) -> None:
    doc = {"anneal_memory_export": True, "version": "1.0.2", "episodes": [
        {"id": "e0000001", "timestamp": "2026-01-01T00:00:00Z", "type": "observation",
         "content": FACT, "source": "agent", "session_id": "²"},
        {"id": "e0000002", "timestamp": "2026-01-01T00:00:00Z", "type": "observation",
         "content": FACT, "source": "agent", "session_id": HUGE},
        {"id": "e0000003", "timestamp": "2026-01-01T00:00:00Z", "type": "observation",
         "content": FACT, "source": "agent", "session_id": "2"}],
        "wraps": [{"id": "²"}, {"id": HUGE}, {"id": 2}],
        "continuity": "# C\n\n## State\n- restored\n"}
    with Store(tmp_path / "m.db", trust_ceiling="operator") as s:
        assert s.import_(doc)["imported"] == 3
        assert s.status().episodes_since_wrap == 2  # only e0000003 was wrapped
        assert s.load_continuity().endswith("- restored\n")
    # without the continuity restored, nothing counts as compressed into this store
    with Store(tmp_path / "n.db") as s:
        assert s.import_(doc)["state"]["restored"] is False
        assert s.status().episodes_since_wrap == 3 and s.load_continuity() is None


def test_a_store_export_with_every_link_kind_imports(tmp_path: Path) -> None:
    """Control: what a store writes (explicit, key, wrap-free, rewired links) passes."""
    with Store(tmp_path / "a.db") as a:
        x = a.record("the api limit is 100 requests per minute", "observation",
                     timestamp="2026-01-01T00:00:00Z")
        y = a.record("the api limit is now 150 requests per minute", "observation",
                     supersedes=[x.id], timestamp="2026-01-02T00:00:00Z")
        a.record("the api limit is 200 requests per minute, final", "observation",
                 supersedes=[y.id], timestamp="2026-01-03T00:00:00Z")
        a.delete(y.id)  # rewires x -> z
        a.record("office in Berlin", "context", state_key="office", timestamp="2026-01-01")
        a.record("office in Munich", "context", state_key="office", timestamp="2026-01-05")
        doc = a.export()
        kinds = sorted(link["kind"] for link in doc["supersessions"])
        links = sorted((o, n, k) for o, n, k, _c in repos_of(a).links.all_supersessions())
    assert kinds == ["rewired", "state_key"]
    with Store(tmp_path / "b.db") as b:
        b.import_(doc)
        assert sorted((o, n, k) for o, n, k, _c in repos_of(b).links.all_supersessions()) == links
