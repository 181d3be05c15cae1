"""The CLI's global ``--namespace``: every data command acts on one user's memory only, as
``store.scoped(...)`` does, and every store-wide command refuses it (never ignores it).

Two users share one store, each with a canary in an episode and in a saved continuity;
each command is run as alice and must neither print bob's canary nor touch bob's memory.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from anneal_memory import Store, prepare_wrap, validated_save_continuity
from anneal_memory.cli.common import STORE_WIDE
from anneal_memory.cli.main import build_parser, main
from anneal_memory.testing import backend_of, scripted_compress
from anneal_memory.wrap.render import render_package

ALICE, BOB = {"user": "alice"}, {"user": "bob"}
AS_ALICE = ("--namespace", "user=alice")


class Run:
    def __init__(self, db: Path, capsys: Any) -> None:
        self.db, self.capsys = db, capsys

    def __call__(self, *argv: str) -> tuple[int, str, str]:
        self.capsys.readouterr()
        rc = main(["--db", str(self.db), *argv])
        out, err = self.capsys.readouterr()
        assert "Traceback" not in err
        return rc, out, err


def _wrap(view: Any) -> None:
    w = prepare_wrap(view)
    assert w["status"] == "ready"
    validated_save_continuity(view, scripted_compress(render_package(w["package"])),
                              wrap_token=w["wrap_token"])


@pytest.fixture
def two_users(tmp_path: Path) -> dict[str, Any]:
    db = tmp_path / "m.db"
    ids: dict[str, Any] = {}
    with Store(db) as store:
        for who, ns in (("alice", ALICE), ("bob", BOB)):
            view = store.scoped(ns)
            canary = f"CANARY{who.upper()}"
            first = view.record(f"{who} prefers the quiet {canary} route to the office",
                                "observation")
            view.record(f"{who} decided the {canary} budget stays at forty", "decision")
            _wrap(view)
            view.record(f"{who} asked about the {canary} lease again", "question")
            ids[who] = first.id
        store.record("a root fact nobody owns", "observation")
    return {"db": db, "ids": ids}


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("ANNEAL_MEMORY_DB", "ANNEAL_OPERATOR", "ANNEAL_MEMORY_DEBUG"):
        monkeypatch.delenv(var, raising=False)


def _bob_intact(db: Path, bob_id: str) -> None:
    with Store(db) as store:
        bob = store.scoped(BOB)
        assert bob.get(bob_id) is not None
        assert "CANARYBOB" in (bob.load_continuity() or "")
        assert bob.recall(keyword="CANARYBOB").total_matching == 3


#: (argv after --namespace user=alice, {id placeholders}); each is run as alice
READS = [
    ("search", "lease"), ("recall", "quiet route"), ("search", "prefers"),
    ("episodes",), ("episodes", "--keyword", "budget"), ("continuity",), ("history",),
    ("status",), ("stats",), ("diff",), ("state",), ("wrap-status",),
    ("wrap-token-current",), ("export",), ("export", "-f", "markdown"), ("worklist",),
    ("worth",), ("spore", "list"), ("probe", "list"), ("baton", "status"),
]


@pytest.mark.parametrize("argv", READS, ids=lambda a: " ".join(a))
def test_reads_as_alice_never_show_bob(two_users: dict[str, Any], capsys: Any,
                                       argv: tuple[str, ...]) -> None:
    run = Run(two_users["db"], capsys)
    for form in ((), ("--json",)):
        rc, out, err = run(*argv, *AS_ALICE, *form)
        assert rc == 0, (argv, err)
        assert "CANARYBOB" not in out + err
    # the same read without the namespace (the root: the operator's view) is not
    # filtered to alice, so the control shows the filter is what hid bob
    if argv[0] in ("search", "recall") and argv[1] == "prefers":
        rc, out, _ = run(*argv)
        assert rc == 0 and "CANARYBOB" in out and "CANARYALICE" in out


def test_alices_view_shows_alices_memory(two_users: dict[str, Any], capsys: Any) -> None:
    run = Run(two_users["db"], capsys)
    rc, out, _ = run("continuity", *AS_ALICE)
    assert rc == 0 and "CANARYALICE" in out
    rc, out, _ = run("search", "prefers", *AS_ALICE, "--json")
    found = json.loads(out)
    assert [e["id"] for e in found["episodes"]] == [two_users["ids"]["alice"]]
    rc, out, _ = run("get", two_users["ids"]["alice"], *AS_ALICE)
    assert rc == 0 and "CANARYALICE" in out
    rc, out, _ = run("export", *AS_ALICE)
    doc = json.loads(out)
    assert len(doc["episodes"]) == 3 and "CANARYBOB" not in out


def test_bobs_ids_are_unknown_to_alice(two_users: dict[str, Any], capsys: Any) -> None:
    run = Run(two_users["db"], capsys)
    bob_id, alice_id = two_users["ids"]["bob"], two_users["ids"]["alice"]
    for argv in (("get", bob_id), ("delete", bob_id, "--force"),
                 ("trust", bob_id, "external"),
                 ("supersede", "--old", bob_id, "--new", alice_id),
                 ("state", "--set", bob_id)):
        rc, out, err = run(*argv, *AS_ALICE)
        assert rc == 1, (argv, out, err)
        assert "CANARYBOB" not in out + err
    _bob_intact(two_users["db"], bob_id)


def test_writes_land_in_alices_namespace(two_users: dict[str, Any], capsys: Any,
                                         tmp_path: Path) -> None:
    run = Run(two_users["db"], capsys)
    rc, out, err = run("record", "alice moved the standup to nine", "--type", "decision",
                       *AS_ALICE, "--json")
    assert rc == 0, err
    new_id = json.loads(out)["id"]
    with Store(two_users["db"]) as store:
        assert store.scoped(ALICE).get(new_id) is not None
        assert store.scoped(BOB).get(new_id) is None
    # a whole wrap through the CLI, as alice: her continuity changes, bob's does not
    rc, out, err = run("prepare-wrap", *AS_ALICE, "--json")
    assert rc == 0, err
    wrap = json.loads(out)
    assert wrap["status"] == "ready" and "CANARYBOB" not in out
    text = tmp_path / "alice.md"
    text.write_text(scripted_compress(render_package(wrap)), "utf-8")
    rc, out, err = run("save-continuity", str(text), "--wrap-token", wrap["wrap_token"],
                       *AS_ALICE)
    assert rc == 0, err
    rc, out, _ = run("continuity", *AS_ALICE)
    assert "standup" in out and "CANARYBOB" not in out
    rc, out, _ = run("delete", new_id, "--force", *AS_ALICE)
    assert rc == 0
    _bob_intact(two_users["db"], two_users["ids"]["bob"])
    with Store(two_users["db"]) as store:
        assert store.scoped(ALICE).get(new_id) is None


def test_namespaces_lists_each_user_with_counts(two_users: dict[str, Any],
                                                capsys: Any) -> None:
    run = Run(two_users["db"], capsys)
    rc, out, err = run("namespaces", "--json")
    assert rc == 0, err
    rows = {r["namespace"]["user"]: r for r in json.loads(out)["namespaces"]}
    assert set(rows) == {"alice", "bob"}
    assert rows["alice"]["episodes"] == 3 and rows["alice"]["wraps"] == 1
    rc, out, _ = run("namespaces")
    assert "default/alice/*/default: 3 episode(s), 1 wrap(s)" in out


def _top_commands() -> list[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return sorted(sub.choices)


def test_every_command_is_either_scoped_or_refuses(two_users: dict[str, Any],
                                                   capsys: Any) -> None:
    """A new command must be classified: run as alice in READS (or the write tests), or
    listed in STORE_WIDE, where --namespace is a typed refusal that changes nothing."""
    tested = {a[0] for a in READS} | {"get", "delete", "trust", "supersede", "record",
                                      "prepare-wrap", "save-continuity"} | set(SCOPED_WRITES)
    unclassified = [c for c in _top_commands() if c not in tested and c not in STORE_WIDE]
    assert not unclassified, unclassified
    run = Run(two_users["db"], capsys)
    before = two_users["db"].read_bytes()
    for command in sorted(STORE_WIDE):
        if command not in _top_commands():
            continue
        rc, out, err = run(command, *AS_ALICE)
        assert rc in (1, 2), (command, out, err)
        if rc == 1:
            assert f"--namespace does not apply to {command}" in err, err
    assert two_users["db"].read_bytes() == before


@pytest.mark.parametrize("value,needle", [
    ("alice", "is not KEY=VALUE"),
    ("=alice", "is not KEY=VALUE"),
    ("colour=blue", "unknown namespace key"),
    ('{"user": 5}', "user"),
    ("[1, 2]", "is not KEY=VALUE"),
    ('{"user": "alice"', "namespace"),
])
def test_malformed_namespace_is_refused_and_changes_nothing(
        two_users: dict[str, Any], capsys: Any, value: str, needle: str) -> None:
    run = Run(two_users["db"], capsys)
    before = two_users["db"].read_bytes()
    rc, out, err = run("record", "should not land", "--namespace", value)
    assert rc == 1, (out, err)
    assert needle in err and "anneal-memory: error: " in err
    rc, out, err = run("record", "should not land", "--namespace", value, "--json")
    assert rc == 1 and json.loads(out)["error"]["type"] == "ValidationError"
    assert two_users["db"].read_bytes() == before
    with Store(two_users["db"]) as store:
        assert store.recall(keyword="should not land").total_matching == 0


def test_a_key_given_twice_differently_is_refused(two_users: dict[str, Any],
                                                  capsys: Any) -> None:
    run = Run(two_users["db"], capsys)
    rc, _, err = run("search", "x", "--namespace", "user=alice", "--namespace", "user=bob")
    assert rc == 1 and "gives user twice" in err
    both = ("--namespace", "user=alice", "--namespace", "project=p1")
    rc, out, err = run("record", "the p1 rollout note", *both, "--json")
    assert rc == 0, err
    # both keys made the namespace: alice's user-level view does not see a project's
    # episode, and the project view (which also sees her user-level memory) does
    rc, out, _ = run("search", "rollout", *AS_ALICE, "--json")
    assert json.loads(out)["episodes"] == []
    rc, out, _ = run("search", "rollout", *both, "--json")
    assert [e["content"] for e in json.loads(out)["episodes"]] == ["the p1 rollout note"]
    rc, out, _ = run("search", "prefers", *both, "--json")
    assert "CANARYALICE" in out and "CANARYBOB" not in out


# --- the commands that change one namespace: as alice, each changes alice's only ---------

def _alice_ids(db: Path) -> set[str]:
    with Store(db) as store:
        return {e.id for e in store.scoped(ALICE).recall(limit=100).episodes}


def _prune(run: Run, users: dict[str, Any], tmp: Path) -> None:
    rc, out, err = run("prune", "--older-than-days", "0", "--yes", *AS_ALICE, "--json")
    assert rc == 0, err
    assert _alice_ids(users["db"]) == set()  # every one of alice's went


def _unsupersede(run: Run, users: dict[str, Any], tmp: Path) -> None:
    rc, out, err = run("unsupersede", "--old", users["ids"]["bob"], "--new",
                       users["ids"]["alice"], *AS_ALICE)
    assert rc == 1 and "CANARYBOB" not in out + err
    with Store(users["db"]) as store:
        view = store.scoped(ALICE)
        new = view.record("alice now prefers the CANARYALICE river route", "observation")
        view.supersede(old_id=users["ids"]["alice"], new_id=new.id)
    rc, out, err = run("unsupersede", "--old", users["ids"]["alice"], "--new", new.id,
                       *AS_ALICE)
    assert rc == 0, err


def _wrap_cancel(run: Run, users: dict[str, Any], tmp: Path) -> None:
    with Store(users["db"]) as store:
        assert prepare_wrap(store.scoped(BOB))["status"] == "ready"
        assert prepare_wrap(store.scoped(ALICE))["status"] == "ready"
    rc, out, err = run("wrap-cancel", "--force", *AS_ALICE, "--json")
    assert rc == 0, err
    rc, out, _ = run("wrap-status", *AS_ALICE, "--json")
    assert json.loads(out)["status"] != "in_progress"
    rc, out, _ = run("wrap-status", "--namespace", "user=bob", "--json")
    assert json.loads(out)["status"] == "in_progress"  # bob's open wrap is still bob's


def _set_schema(run: Run, users: dict[str, Any], tmp: Path) -> None:
    rc, out, err = run("set-schema", "partnership", *AS_ALICE, "--json")
    assert rc == 0, err
    with Store(users["db"]) as store:
        assert store.scoped(ALICE).section_schema != store.scoped(BOB).section_schema


def _outcome(run: Run, users: dict[str, Any], tmp: Path) -> None:
    rc, out, err = run("outcome", "--exposure-id", "ex-1", "--item",
                       "crystal:alice_rule=followed", "--outcome", "success", *AS_ALICE,
                       "--json")
    assert rc == 0, err
    rc, out, _ = run("worth", "--namespace", "user=bob", "--json")
    assert rc == 0 and "alice_rule" not in out
    rc, out, _ = run("worth", *AS_ALICE, "--json")
    assert rc == 0 and "alice_rule" in out


def _pattern(run: Run, users: dict[str, Any], tmp: Path) -> None:
    # both continuities hold the same pattern: retiring it as alice leaves bob's
    with Store(users["db"]) as store:
        bobs = store.scoped(BOB).load_continuity() or ""
    line = next(x for x in bobs.splitlines() if "| " in x and "x" in x.split("|")[1])
    name = line.split("|")[0].strip(" -*")
    rc, out, err = run("pattern", "retire", name, *AS_ALICE)
    assert rc == 0, err
    with Store(users["db"]) as store:
        assert name not in (store.scoped(ALICE).load_continuity() or "")
        assert store.scoped(BOB).load_continuity() == bobs
    rc, out, err = run("pattern", "demote", name, *AS_ALICE)
    assert rc == 1 and "CANARYBOB" not in out + err  # gone from alice's; bob's is not hers


def _erase(run: Run, users: dict[str, Any], tmp: Path) -> None:
    rc, out, err = run("erase", *AS_ALICE, "--yes", "--json")
    assert rc == 0, err
    assert _alice_ids(users["db"]) == set()
    rc, out, _ = run("namespaces", "--json")
    assert [r["namespace"]["user"] for r in json.loads(out)["namespaces"]] == ["bob"]


def _token(run: Run, users: dict[str, Any], tmp: Path) -> None:
    rc, out, err = run("token", "create", "--label", "alice-laptop", *AS_ALICE, "--json")
    assert rc == 0, err
    rc, out, _ = run("token", "list", "--namespace", "user=bob", "--json")
    assert rc == 0 and "alice-laptop" not in out
    rc, out, _ = run("token", "list", *AS_ALICE, "--json")
    assert rc == 0 and "alice-laptop" in out


def _embed(run: Run, users: dict[str, Any], tmp: Path) -> None:
    emb = "anneal_memory.testing:HashingEmbedder"
    rc, out, err = run("embed", "--embedder", emb, *AS_ALICE, "--json")
    assert rc == 0, err
    with Store(users["db"]) as store:
        embedded = {r[0] for r in backend_of(store).q("SELECT episode_id FROM episode_vectors")}
        assert embedded == _alice_ids(users["db"])  # alice's episodes only
    rc, out, err = run("search", "CANARYBOB", "--semantic", "--embedder", emb, *AS_ALICE,
                       "--json")
    found = json.loads(out)["episodes"]
    assert rc == 0 and found and not [e for e in found if "CANARYBOB" in e["content"]]


SCOPED_WRITES = {"prune": _prune, "unsupersede": _unsupersede, "wrap-cancel": _wrap_cancel,
                 "set-schema": _set_schema, "outcome": _outcome, "pattern": _pattern,
                 "erase": _erase, "token": _token, "embed": _embed}


@pytest.mark.parametrize("command", sorted(SCOPED_WRITES))
def test_a_write_as_alice_changes_alices_memory_only(two_users: dict[str, Any], capsys: Any,
                                                     tmp_path: Path, command: str) -> None:
    SCOPED_WRITES[command](Run(two_users["db"], capsys), two_users, tmp_path)
    _bob_intact(two_users["db"], two_users["ids"]["bob"])
