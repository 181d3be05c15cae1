"""A black-box review from the documented behaviour and hostile use: only the public API,
the ``anneal-memory`` console script run as a subprocess, real SQLite files and real
processes. Each test names what a demanding user or an attacker would try."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from anneal_memory import (
    AnnealMemoryError,
    AuditTrail,
    CrystalStore,
    MemorySession,
    SporeStore,
    Store,
    ValidationError,
    check_explanation_overlap,
    hard_max_chars,
    prepare_wrap,
    retrieve_relevant,
    validated_save_continuity,
)
from anneal_memory.governance import MemoryCandidate, MemoryNamespace, MemoryRuntime, SourceRef

TODAY = date.today().isoformat()
CONTINUITY = ("## State\n- {who} working\n\n## Patterns\n- none yet | 1x\n\n"
              "## Decisions\n- none\n\n## Context\n- {who} notes\n")


def cli(db: Path, *argv: str) -> tuple[int, str, str]:
    """The console script as a user runs it; a traceback is always a failure."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANNEAL_")}
    p = subprocess.run([sys.executable, "-m", "anneal_memory", "--db", str(db), *argv],
                       capture_output=True, text=True, timeout=60, env=env, stdin=subprocess.DEVNULL)
    assert "Traceback" not in p.stderr + p.stdout, p.stderr
    return p.returncode, p.stdout, p.stderr


def snapshot(store: Store) -> tuple[Any, ...]:
    """What a refused call must leave exactly as it was."""
    st = store.status()
    return (st.total_episodes, st.tombstone_count, st.audit_entry_count, st.superseded_count,
            store.load_continuity(), sorted(e.id for e in store.recall(limit=10_000).episodes))


# ---------------------------------------------------------------- export / import

def test_an_export_round_trip_keeps_every_user_in_their_namespace(tmp_path: Path) -> None:
    """The operator's export holds every namespace; importing it (a backup restored, a
    store moved) must not turn alice's private episodes into the root's, where a
    session that names nobody would read them."""
    src = Store(tmp_path / "src.db")
    alice, bob = src.scoped({"user": "alice"}), src.scoped({"user": "bob"})
    proj = src.scoped({"user": "alice", "project": "pricing"})
    a = alice.record("alice keeps the vault quokka code", "observation")
    b = bob.record("bob keeps the vault wombat code", "observation")
    p = proj.record("pricing vault kiwi tier", "decision")
    r = src.record("operator vault note", "context")
    data = src.export()
    src.close()
    ns_of = {e["id"]: e.get("namespace") for e in data["episodes"]}
    assert ns_of[r.id] is None and ns_of[a.id]["user"] == "alice"
    assert ns_of[p.id]["project"] == "pricing"

    dst = Store(tmp_path / "dst.db")
    assert dst.import_(json.dumps(data))["imported"] == 4
    seen = {who: {e.id for e in dst.scoped(ns).recall(keyword="vault").episodes}
            for who, ns in {"alice": {"user": "alice"}, "bob": {"user": "bob"},
                            "pricing": {"user": "alice", "project": "pricing"}}.items()}
    assert seen == {"alice": {a.id}, "bob": {b.id}, "pricing": {a.id, p.id}}
    nobody = MemorySession(dst).context_for("vault code quokka wombat kiwi")
    assert "quokka" not in nobody and "wombat" not in nobody and "kiwi" not in nobody
    assert dst.status().total_episodes == 4  # the operator's view still sees all of them
    dst.close()


@pytest.mark.parametrize("bad", [{"team": "x"}, {"user": ""}, "alice", ["alice"], {"user": 5}])
def test_an_import_with_a_bad_namespace_is_refused_and_writes_nothing(store: Store, bad: Any) -> None:
    store.record("already here", "observation")
    data = store.export()
    data["episodes"][0]["id"] = "feedbeef"
    data["episodes"][0]["namespace"] = bad
    before = snapshot(store)
    with pytest.raises(ValidationError, match="namespace"):
        store.import_(data)
    assert snapshot(store) == before


def test_a_deleted_episode_never_comes_back(store: Store) -> None:
    """Not by import of an older export, not through a view, not by supersession."""
    keep = store.record("the sky is blue today", "observation")
    gone = store.record("the sky is green today", "observation")
    old = store.export()
    assert store.delete(gone.id)
    res = store.import_(old)
    assert res["refused_deleted"] == [gone.id] and res["imported"] == 0
    assert store.get(gone.id) is None
    with pytest.raises(AnnealMemoryError):
        store.record("the sky is blue", "observation", supersedes=[gone.id])
    with pytest.raises(AnnealMemoryError):
        store.set_state_key(gone.id, "sky.colour")
    assert [e.id for e in store.recall(include_superseded=True).episodes] == [keep.id]


# ---------------------------------------------------------------- many users

def _words(i: int) -> tuple[str, str]:
    pool = "amber basalt cedar dune ember fjord garnet harbor indigo juniper kelp lagoon".split()
    return pool[2 * i], pool[2 * i + 1]


def test_a_pattern_cannot_rise_on_another_users_or_a_deleted_episode(store: Store) -> None:
    alice, bob = store.scoped({"user": "alice"}), store.scoped({"user": "bob"})

    def line(writer: Store, i: int, lvl: int) -> tuple[str, str]:
        x, y = _words(i)
        e = writer.record(f"Observed {x} and {y} in the cache study", "observation")
        return f"- stale cache | {lvl}x ({TODAY}) [evidence: {e.id} \"{x} {y} seen\"]", e.id

    def save(text: str) -> dict[str, Any]:
        w = prepare_wrap(alice)
        body = CONTINUITY.format(who="alice").replace("- none yet | 1x", text)
        return validated_save_continuity(alice, body, wrap_token=w["wrap_token"],
                                         carryforward_cold_days=None)

    first, _ = line(alice, 0, 1)
    save(first)
    for i, writer in ((1, bob), (2, store)):  # another user's, the root's
        text, _ = line(writer, i, 2)
        alice.record(f"filler {i}", "observation")
        with pytest.warns(UserWarning):
            res = save(text)
        assert res["graduations_validated"] == 0 and res["demoted"] == 1
        assert "| 1x" in alice.load_continuity()
    text, eid = line(alice, 3, 2)
    assert alice.delete(eid)
    alice.record("filler 3", "observation")
    with pytest.warns(UserWarning):
        res = save(text)
    assert res["graduations_validated"] == 0 and "| 1x" in alice.load_continuity()
    text, _ = line(alice, 4, 2)  # and an own, live episode does count
    save(text)
    assert "| 2x" in alice.load_continuity()


def _wrap_user(db: str, user: str, n: int) -> None:
    with Store(db) as s:
        view = s.scoped({"user": user})
        for i in range(n):
            view.record(f"{user} note {i} about topic{i % 5}", "observation")
        w = prepare_wrap(view)
        validated_save_continuity(view, CONTINUITY.format(who=user), wrap_token=w["wrap_token"])


def test_users_wrapping_in_several_processes_keep_their_own_memory_and_a_valid_chain(
        tmp_path: Path) -> None:
    import multiprocessing as mp

    db = tmp_path / "m.db"
    Store(db).close()
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_wrap_user, args=(str(db), f"u{i}", 25)) for i in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0] * 4
    with Store(db) as s:
        for i in range(4):
            v = s.scoped({"user": f"u{i}"})
            text = v.load_continuity() or ""
            assert f"u{i} working" in text and all(f"u{j} " not in text for j in range(4) if j != i)
            assert v.status().total_episodes == 25 and v.episodes_since_wrap() == []
            assert {e.content.split()[0] for e in v.recall(limit=100).episodes} == {f"u{i}"}
    r = AuditTrail.verify(db)
    assert r.valid and r.total_entries == 4 * 25 + 4 * 3


WRITER = r"""
import sys
from anneal_memory import Store
s = Store(sys.argv[1])
v = s.scoped({"user": sys.argv[2]}) if sys.argv[2] != "-" else s
i = 0
while True:
    e = v.record(f"entry {i} " + "x" * 100, "observation")
    sys.stdout.write(e.id + "\n")
    sys.stdout.flush()
    i += 1
"""


def test_kill_9_mid_stream_loses_no_acknowledged_record(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    Store(db).close()
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(db), who],
                              stdout=subprocess.PIPE, text=True) for who in ("-", "alice")]
    deadline = time.monotonic() + 30
    first = [p.stdout.readline() for p in procs]  # type: ignore[union-attr]
    assert all(len(x.strip()) == 8 for x in first)
    time.sleep(0.4)
    assert time.monotonic() < deadline
    for p in procs:
        os.kill(p.pid, signal.SIGKILL)
    acked: list[str] = [x.strip() for x in first]
    for p in procs:
        out, _ = p.communicate(timeout=30)
        acked += [x for x in out.split("\n") if len(x) == 8]
    with Store(db) as s:
        assert set(s.get_many(acked)) == set(acked)
        assert s.status().total_episodes >= len(acked)
    r = AuditTrail.verify(db)
    assert r.valid, r


# ---------------------------------------------------------------- bad input changes nothing

BAD_CALLS: dict[str, Any] = {
    "content None": lambda s, e: s.record(None, "observation"),
    "content NUL": lambda s, e: s.record("a\x00b", "observation"),
    "content surrogate": lambda s, e: s.record("a\ud800b", "observation"),
    "unknown type": lambda s, e: s.record("x", "rumour"),
    "bad timestamp": lambda s, e: s.record("x", "observation", timestamp="2026-13-45"),
    "trust above ceiling": lambda s, e: s.record("x", "observation", trust="operator"),
    "bad trust": lambda s, e: s.record("x", "observation", trust="gossip"),
    "supersedes unknown": lambda s, e: s.record("x", "observation", supersedes=["nothere1"]),
    "derived unknown": lambda s, e: s.record("x", "observation", derived_from=["nothere1"]),
    "reserved metadata": lambda s, e: s.record("x", "observation", metadata={"_anneal_ns": {}}),
    "negative limit": lambda s, e: s.recall(limit=-1),
    "huge offset": lambda s, e: s.recall(offset=10**30),
    "bad since": lambda s, e: s.recall(since="yesterday"),
    "delete None": lambda s, e: s.delete(None),
    "prune negative": lambda s, e: s.prune(-1),
    "set_trust bad": lambda s, e: s.set_trust(e.id, "gossip"),
    "state key NUL": lambda s, e: s.set_state_key(e.id, "a\x00b"),
    "bad wrap token save": lambda s, e: validated_save_continuity(
        s, CONTINUITY.format(who="x"), wrap_token="not-a-token"),
    "import junk": lambda s, e: s.import_("{not json"),
    "export to a folder": lambda s, e: s.export_json(s.path.parent),
    "export to a missing folder": lambda s, e: s.export_json(s.path.parent / "no" / "x.json"),
    "overlap None": lambda s, e: check_explanation_overlap(None, "x"),
    "hard_max None": lambda s, e: hard_max_chars(None),  # type: ignore[arg-type]
    "crystal None": lambda s, e: CrystalStore(None),
    "spores NUL": lambda s, e: SporeStore("a\x00b"),
    "verify None": lambda s, e: AuditTrail.verify(None),  # type: ignore[arg-type]
}


@pytest.mark.parametrize("name", sorted(BAD_CALLS))
def test_bad_input_is_a_typed_refusal_that_changes_nothing(store: Store, name: str) -> None:
    e = store.record("the vault key rotates monthly", "observation")
    w = prepare_wrap(store)
    validated_save_continuity(store, CONTINUITY.format(who="op"), wrap_token=w["wrap_token"])
    files = sorted(os.listdir(store.path.parent))
    before = snapshot(store)
    with pytest.raises(AnnealMemoryError) as info:
        BAD_CALLS[name](store, e)
    assert str(info.value).strip()
    assert snapshot(store) == before
    assert sorted(os.listdir(store.path.parent)) == files  # no stray temp file either


@pytest.mark.parametrize("kwargs", [{"on_audit_event": 5}, {"on_audit_event": "print"}])
def test_a_store_refuses_a_callback_that_cannot_be_called(tmp_path: Path, kwargs: Any) -> None:
    with pytest.raises(ValidationError, match="on_audit_event"):
        Store(tmp_path / "m.db", **kwargs)
    assert not (tmp_path / "m.db").exists()


@pytest.mark.parametrize("path", [5, b"m.db", "a\x00b.db"])
def test_a_store_path_that_is_not_a_path_is_refused(tmp_path: Path, path: Any,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValidationError, match="store path"):
        Store(path)
    assert os.listdir(tmp_path) == []


def test_the_governed_runtime_takes_one_bare_string_as_one_value(store: Store) -> None:
    rt = MemoryRuntime(store)
    ns = MemoryNamespace(tenant="t", user="alice", agent="a")
    res = rt.write(MemoryCandidate("c1", ns, "semantic", "pin_policy", "alice rotates the pin",
                                   SourceRef("m1", "user_message")))
    rid = res.record.record_id
    assert [i.content for i in rt.recall(ns, "rotates pin", sensitivity="internal").items] == \
        [i.content for i in rt.recall(ns, "rotates pin", sensitivity={"internal"}).items] != []
    assert rt.recall(ns, "rotates pin", memory_types="semantic").items
    assert [r.record_id for r in rt.resolve(ns, rid)] == [rid]
    with pytest.raises(ValidationError, match="'bogus'"):
        rt.recall(ns, "pin", sensitivity="bogus")
    with pytest.raises(ValidationError, match="record_ids"):
        rt.resolve(ns, 5)  # type: ignore[arg-type]


def test_a_session_takes_a_query_that_is_not_a_string_as_its_text(store: Store) -> None:
    class Msg:
        def __str__(self) -> str:
            return "vault rotation"

    s = MemorySession(store, strict=True)
    s.record_observation("the vault rotation happens monthly")
    assert "monthly" in s.context_for(Msg())  # type: ignore[arg-type]
    assert any("monthly" in x for x in s.recall_items(Msg()))  # type: ignore[arg-type]
    assert s.context_for(None) == "" and s.context_for("   ") == ""


# ---------------------------------------------------------------- known, reported defects

@pytest.mark.parametrize("keyword", ["a" * 60_000, "hello " * 9_000 + "you", "%" * 26_000])
def test_a_huge_keyword_is_answered(store: Store, keyword: str) -> None:
    """Past SQLite's 50,000-byte LIKE bound a phrase is still matched literally and
    case-insensitively; one character more and it no longer matches as a phrase."""
    hit = store.record(f"said: {keyword.upper()} (end)", "observation")
    store.record(keyword[: len(keyword) // 2], "observation")  # half of it only
    res = store.recall(keyword=keyword)
    assert [e.id for e in res.episodes] == [hit.id] and res.query_params["match"] == "phrase"
    assert res.total_matching == 1
    assert store.recall(keyword=keyword + "!").query_params["match"] == "words"
    retrieve_relevant(store, None, keyword)


def test_retrieve_relevant_refuses_a_crystal_store_that_is_not_one(store: Store) -> None:
    store.record("hello world", "observation")
    with pytest.raises(AnnealMemoryError, match="CrystalStore"):
        retrieve_relevant(store, "not a crystal store", "hello")  # type: ignore[arg-type]


# ---------------------------------------------------------------- the CLI

def test_cli_state_with_an_empty_id_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    rc, out, _ = cli(db, "--json", "record", "home city is Oslo", "--type", "observation")
    assert rc == 0 and json.loads(out)["id"]
    for argv in (["state", "user.city", "--set", ""], ["state", "--unset", " "]):
        rc, out, err = cli(db, "--json", *argv)
        assert rc != 0 and "episode id" in json.loads(out)["error"]["message"]
        rc, _out, err = cli(db, *argv)
        assert rc != 0 and "episode id" in err
    rc, out, _ = cli(db, "--json", "state")
    assert rc == 0 and "user.city" not in out  # nothing was set


@pytest.mark.parametrize("argv", [
    ["record", ""], ["record", "x", "--type", "rumour"], ["record", "x", "--trust", "gossip"],
    ["record", "x", "--timestamp", "2026-13-45"], ["record", "x", "--metadata", "{bad"],
    ["search", "--limit", "-5"], ["search", "--since", "yesterday"], ["get", "nothere1"],
    ["delete", "nothere1"], ["trust", "nothere1", "agent"],
    ["save-continuity", "--wrap-token", "bad", "/nonexistent/file.md"],
    ["import", "/nonexistent.json"], ["export", "--format", "bogus"],
])
def test_cli_bad_arguments_exit_non_zero_without_a_traceback(tmp_path: Path, argv: list[str]) -> None:
    db = tmp_path / "m.db"
    Store(db).close()
    rc, _out, err = cli(db, *argv)
    assert rc != 0 and err.strip()
    rc, out, _err = cli(db, "--json", *argv)
    assert rc != 0
    if out.strip():
        assert json.loads(out)["error"]["message"]
    with Store(db) as s:
        assert s.status().total_episodes == 0
