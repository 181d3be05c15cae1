"""migrate-store keeps a governed store's governed memory: SQLite -> (SQLite | PostgreSQL)
-> SQLite answers recall, profile, resolve and the review queue as the source did, a
forgotten memory stays forgotten, and the copies keep working (new versions, approvals)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from anneal_memory import AuditTrail, Store
from anneal_memory.cli.main import main as cli_main
from anneal_memory.errors import StoreError
from anneal_memory.governance import (
    MemoryCandidate,
    MemoryNamespace,
    MemoryRuntime,
    SourceRef,
    scoped,
)
from anneal_memory.migrate_store import migrate
from anneal_memory.storage.pg_copy import GOV_TABLES, counts, is_governed
from anneal_memory.storage.roles import AuditChain
from anneal_memory.testing import backend_of, repos_of

from wraphelp import doc, wrap


def main(argv: list[str]) -> int:
    return cli_main(["migrate-store", *argv])


PRICING = MemoryNamespace(tenant="acme", user="alice", agent="coder", project="pricing")
ALICE = MemoryNamespace(tenant="acme", user="alice", agent="coder")
BOB = MemoryNamespace(tenant="acme", user="bob", agent="coder", project="pricing")


def cand(cid: str, content: str, *, ns: MemoryNamespace = PRICING, subject: str = "language",
         kind: str = "user_message") -> MemoryCandidate:
    return MemoryCandidate(cid, ns, "semantic", subject, content,  # type: ignore[arg-type]
                           SourceRef(f"{cid}#src", kind))  # type: ignore[arg-type]


def _fill(path: Path) -> dict[str, Any]:
    """Writes in two namespaces (and a third owner), a correction, a forget, a hidden
    memory, a pending review, a decided review, and a scoped view's episodes and wrap."""
    with Store(path) as s:
        rt = MemoryRuntime(s)
        v1 = rt.write(cand("c1", "Prefer Python for code examples")).record
        assert v1 is not None
        v2 = rt.correct(cand("c2", "Prefer TypeScript for code examples"),
                        expected_record_id=v1.record_id).record
        assert v2 is not None and v2.version == 2
        assert rt.write(cand("u1", "Answers should be short", ns=ALICE, subject="tone")).ok
        assert rt.write(cand("b1", "Prefer Rust for code examples", ns=BOB)).ok
        assert rt.write(cand("d1", "Pricing runs on the billing-db host", subject="db")).ok
        rt.forget(PRICING, "semantic", "db", reason="user asked", request_id="req-1")
        assert rt.write(cand("h1", "Uses a dark theme", subject="theme")).ok
        assert rt.hide(PRICING, "semantic", "theme")
        pending = rt.write(cand("m1", "Likes tables in answers", subject="format", kind="model"))
        refused = rt.write(cand("m2", "Likes emoji", subject="emoji", kind="model"))
        assert pending.outcome == refused.outcome == "review"
        rt.reject_review(refused.review_id or "", reviewer="carol")
        view = scoped(s, PRICING)
        view.record("the pricing service moved to PostgreSQL", "decision")
        gone = view.record("a scratch note to drop", "observation")
        view.delete(gone.id)
        wrap(view, doc(patterns="- pricing on postgres | 1x"))
        return {"ids": [v1.record_id, v2.record_id], "review": pending.review_id,
                "view_continuity": view.load_continuity()}


def _answers(location: str | Path, seed: dict[str, Any]) -> dict[str, Any]:
    """What a governed store says: the same after every migration."""
    with Store(location) as s:
        rt = MemoryRuntime(s)
        view = scoped(s, PRICING)
        recalled = rt.recall(PRICING, "code examples", k=5)
        return {
            "recall": [(r.record_id, r.content) for r in recalled.records],
            "recall_bob": [r.record_id for r in rt.recall(BOB, "code examples").records],
            "profile": [rt.profile(ns) for ns in (PRICING, ALICE, BOB)],
            "resolve": [r.record_id for r in rt.resolve(PRICING, seed["ids"])],
            "versions": [(v.version, v.content) for v in rt.versions(PRICING, "semantic",
                                                                     "language")],
            "forgotten": (rt.state(PRICING, "semantic", "db"),
                          [v.content for v in rt.versions(PRICING, "semantic", "db")]),
            "hidden": rt.state(PRICING, "semantic", "theme"),
            "reviews": [(r["review_id"], r["status"]) for r in rt.pending_reviews(PRICING)],
            "decided": [(r.review_id, r.status, r.decided_by)
                        for r in repos_of(s).governance.reviews("alice", "pricing", status=None)],
            "view": (view.status().total_episodes, view.status().tombstone_count,
                     [e.content for e in view.recall(keyword="postgresql").episodes],
                     view.load_continuity()),
        }


def _gov_rows(location: str | Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every governance row, as stored: the copy is row for row, sequence numbers too."""
    with Store(location, read_only=True) as s:
        return {t: [tuple(r) for r in backend_of(s).execute(f"SELECT {cols} FROM {t} ORDER BY {o}")]
                for t, cols, o in GOV_TABLES}


def _verify(location: str | Path) -> bool:
    return AuditTrail.verify(location).valid


def _check_still_governed(location: str | Path, seed: dict[str, Any], tag: str) -> None:
    """A forgotten memory refuses writes; new versions and approvals number on."""
    with Store(location) as s:
        rt = MemoryRuntime(s)
        again = rt.write(cand(f"d-{tag}", "Pricing runs on another host", subject="db"))
        assert (again.outcome, again.reason) == ("rejected", "memory_deleted")
        retry = rt.forget(PRICING, "semantic", "db", reason="again", request_id="req-1")
        assert retry.request_id == "req-1"
        cur = rt.current(PRICING, "semantic", "language")
        assert cur is not None and cur.record_id == seed["ids"][1]
        v3 = rt.correct(cand(f"c3-{tag}", "Prefer Go for code examples"),
                        expected_record_id=cur.record_id).record
        assert v3 is not None and v3.version == 3
        assert rt.approve(seed["review"], reviewer="carol").reason == "human_reviewed"
        assert rt.rebuild_projection()["deleted"] == 1
        assert rt.current(PRICING, "semantic", "language") == v3


def test_governed_round_trip(location: str, tmp_path: Path,
                             capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "src.db"
    seed = _fill(src)
    want = _answers(src, seed)
    # the fixture is what the test says it is
    assert want["recall"] and want["recall"][0][1] == "Prefer TypeScript for code examples"
    assert want["resolve"] == [seed["ids"][1]] and want["forgotten"] == ("deleted", [None, ])
    assert want["hidden"] == "hidden" and want["reviews"] == [(seed["review"], "pending")]
    assert want["view"][:3] == (1, 1, ["the pricing service moved to PostgreSQL"])
    assert want["view"][3] == seed["view_continuity"] and seed["view_continuity"]
    with Store(src, read_only=True) as s:
        source_counts = counts(backend_of(s), governed=True)
    # every governance table holds rows, but the removed-episode trace: schema 2 keeps a
    # deleted episode's namespace on its tombstone instead
    assert all(source_counts[t] for t, _c, _o in GOV_TABLES if t != "gov_episode_removed"), \
        source_counts

    seen: list[tuple[str, int, int]] = []
    result = migrate(str(src), location, progress=lambda *a: seen.append(a))
    assert result["verified"] and result["governed"]
    assert {t: result["copied"][t] for t, _c, _o in GOV_TABLES} == {
        t: source_counts[t] for t, _c, _o in GOV_TABLES}
    assert {"gov_records", "gov_reviews"} <= {table for table, _done, _total in seen}
    back = tmp_path / "back.db"
    assert main([location, str(back)]) == 0
    assert "with its governed memory" in capsys.readouterr().out

    assert _answers(location, seed) == want
    assert _answers(back, seed) == want
    assert _gov_rows(src) == _gov_rows(location) == _gov_rows(back)
    assert _verify(location) and _verify(back) and _verify(src)
    _check_still_governed(location, seed, "copy")
    _check_still_governed(back, seed, "back")
    assert _verify(location) and _verify(back)


def test_copy_lists_every_governance_column(location: str) -> None:
    """GOV_TABLES holds every governance table and column the dialect creates."""
    with Store(location) as s:
        MemoryRuntime(s)
        b = backend_of(s)
        if not location.startswith("postgres"):
            names = [r[0] for r in b.execute(
                "SELECT name FROM sqlite_master WHERE type='table' AND name LIKE ?", ("gov%",))]
            cols = {n: [r[1] for r in b.execute(f"PRAGMA table_info({n})")] for n in names}
        else:
            names = [r[0] for r in b.execute(
                "SELECT table_name FROM information_schema.tables WHERE "
                "table_schema = current_schema() AND table_name LIKE ?", ("gov%",))]
            cols = {n: [r[0] for r in b.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = "
                "current_schema() AND table_name = ? ORDER BY ordinal_position", (n,))]
                for n in names}
    assert cols == {t: [c.strip() for c in cs.split(",")] for t, cs, _o in GOV_TABLES}


def test_empty_governance_tables_are_no_obstacle(location: str, tmp_path: Path) -> None:
    src = tmp_path / "src.db"
    _fill(src)
    with Store(location) as s:
        MemoryRuntime(s)  # a runtime opened on the new store created its tables
    assert migrate(str(src), location)["governed"]


def test_governed_records_alone_make_a_destination_not_empty(location: str,
                                                             tmp_path: Path) -> None:
    src = tmp_path / "src.db"
    _fill(src)
    with Store(location, audit=False) as s:
        assert MemoryRuntime(s).write(cand("x1", "Prefer Python for scripts")).ok
        assert (backend_of(s).count_episodes(), AuditChain(backend_of(s)).audit_count()) == (0, 0)
    with pytest.raises(StoreError, match="not empty"):
        migrate(str(src), location)
    with Store(location) as s:
        assert counts(backend_of(s), governed=True)["gov_records"] == 1


def test_a_plain_store_stays_plain(location: str, tmp_path: Path) -> None:
    src = tmp_path / "plain.db"
    with Store(src) as s:
        s.record("nothing governed here", "observation")
    result = migrate(str(src), location)
    assert not result["governed"] and "gov_records" not in result["copied"]
    with Store(location) as s:
        assert s.recall(keyword="governed").episodes
        assert not is_governed(backend_of(s))
