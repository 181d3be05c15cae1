"""Labels are hashed in the audit trail by default, like content: sources, state keys,
pattern names, forget reasons, reviewers and namespace ids never appear in clear."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from anneal_memory import AuditTrail, CrystalStore, Store, clock
from anneal_memory.governance import (
    MemoryCandidate,
    MemoryNamespace,
    MemoryRuntime,
    SourceRef,
    scoped,
)

from wraphelp import doc, wrap

LABELS = {
    "source": "alice-laptop-7",
    "state_key": "user.home_city",
    "pattern": "zanzibar retries",
    "reason": "gdpr request 4411",
    "reviewer": "carol-the-reviewer",
    "tenant": "acme-tenant-x",
    "user": "alice-user-x",
    "project": "pricing-proj-x",
    "agent": "coder-agent-x",
    "source_id": "msg-secret-991",
    "crystal": "vault rotation rule",
}


def _trail_text(db: Path, store: Store) -> str:
    store.audit_trail.flush()
    files = "".join(p.read_text() for p in db.parent.glob("memory.audit*.jsonl"))
    rows = json.dumps(store.audit_trail.entries(), ensure_ascii=False)
    return files + rows


def _exercise(store: Store) -> None:
    with clock.frozen("2026-11-10T09:00:00Z"):
        e = store.record("Retries without jitter overload the queue", "observation",
                         source=LABELS["source"], state_key=LABELS["state_key"])
        store.clear_state_key(e.id)
        with pytest.warns(UserWarning):
            wrap(store, doc(patterns=f"- {LABELS['pattern']} | 9x (2026-11-10) "
                                     f"[evidence: {e.id} \"retries without jitter overload\"]"))
        ns = MemoryNamespace(tenant=LABELS["tenant"], user=LABELS["user"],
                             project=LABELS["project"], agent=LABELS["agent"])
        rt = MemoryRuntime(store)
        q = rt.write(MemoryCandidate("c1", ns, "semantic", "editor", "Uses vim daily",
                                     SourceRef(LABELS["source_id"], "model")))
        rt.approve(q.review_id, reviewer=LABELS["reviewer"])
        rt.forget(ns, "semantic", "editor", reason=LABELS["reason"])
        scoped(store, ns).record("a scoped episode", "observation")
        CrystalStore(store.path).crystallize(
            LABELS["crystal"], text="Jitter every retry", level=3, store=store,
            evidence=[(e.id, "retries without jitter overload")])


def test_labels_are_hashed_by_default(db: Path) -> None:
    with Store(db) as store:
        _exercise(store)
        text = _trail_text(db, store)
        leaked = [k for k, v in LABELS.items() if v in text]
        assert leaked == []
        h = store.audit_trail.hash_label
        entries = store.audit_trail.entries()
        by_event: dict[str, dict] = {}
        for e in entries:  # the first entry of each event
            by_event.setdefault(e["event"], e["data"])
        assert by_event["record"]["source"] == h(LABELS["source"])
        assert by_event["record"]["state_key"] == h(LABELS["state_key"])
        assert h(LABELS["pattern"]) in by_event["continuity_saved"]["level_capped"]
        assert by_event["gov_forget"]["reason"] == h(LABELS["reason"])
        assert by_event["gov_review_decided"]["reviewer"] == h(LABELS["reviewer"])
        assert by_event["gov_forget"]["namespace"]["tenant"] == h(LABELS["tenant"])
        short = hashlib.sha256(LABELS["crystal"].encode()).hexdigest()[:16]
        assert short not in text and by_event["crystallize"]["name_sha256"] == h(short)
        # stable reason codes and ids stay readable
        refused = [e["data"] for e in entries if e["event"] == "gov_review_queued"]
        assert refused and refused[0]["reason"] == "model_inferred_needs_review"
    assert AuditTrail.verify(db).valid


def test_hashing_labels_can_be_turned_off(db: Path) -> None:
    with Store(db) as store:
        store.audit_trail.hash_labels = False
        store.record("in clear", "observation", source=LABELS["source"])
        assert LABELS["source"] in _trail_text(db, store)


def test_label_hashes_are_salted_per_store(tmp_path: Path) -> None:
    with Store(tmp_path / "a.db") as a, Store(tmp_path / "b.db") as b:
        assert a.audit_trail.hash_label("agent") != b.audit_trail.hash_label("agent")
        assert a.audit_trail.hash_label("agent") == a.audit_trail.hash_label("agent")
        assert a.audit_trail.hash_label("agent") != a.audit_trail.hash_content("agent")
