"""Audit anchors on every backend: the head of the chain, kept elsewhere, catches a
rewrite the chain alone cannot (every entry rewritten and relinked)."""

from __future__ import annotations

import json

from anneal_memory import AuditTrail, Store
from anneal_memory.audit import GENESIS, entry_hash
from anneal_memory.storage.roles import AuditChain
from anneal_memory.testing import backend_of


def _where(store: Store, location: str) -> str:
    return location if location.startswith("postgres") else str(store.path)


def test_anchor_catches_a_consistent_rewrite(store: Store, location: str) -> None:
    for i in range(6):
        store.record(f"anchored entry {i}", "observation")
    store.audit_trail.flush()
    where = _where(store, location)
    head = AuditTrail.head(where)
    assert head.seq == AuditChain(backend_of(store)).audit_count() and len(head.hash) == 64
    assert AuditTrail.verify(where, anchor=head.to_dict()).valid
    assert AuditTrail.verify(where, anchor=str(head)).valid
    assert AuditTrail.verify(where, anchor=head.hash).valid

    # rewrite entry 2 and relink every later one, in the database's copy (on SQLite the
    # mirrored entries are kept there as their hashes: those are what is rewritten)
    b = backend_of(store)
    rows = AuditChain(b).audit_entries()
    rows[1]["actor"] = "forged"
    prev = rows[0]["hash"] if rows else GENESIS
    compacted = {seq for seq, _h, c in AuditChain(b).audit_digests() if c}
    assert compacted or location.startswith("postgres")
    with b.transaction():
        for e in rows[1:]:
            e["prev_hash"] = prev
            e["hash"] = entry_hash(e)
            prev = e["hash"]
            if e["seq"] in compacted:
                b.execute("UPDATE audit_hashes SET hash=? WHERE seq=?",
                          (bytes.fromhex(e["hash"]), e["seq"]))
                continue
            b.execute("UPDATE audit_log SET actor=?, prev_hash=?, hash=?, data=? WHERE seq=?",
                      (e["actor"], e["prev_hash"], e["hash"],
                       json.dumps(e["data"], sort_keys=True, ensure_ascii=False), e["seq"]))
    r = AuditTrail.verify(where, anchor=head.to_dict())
    if location.startswith("postgres"):
        # one copy only: the rewrite is consistent, so only the anchor shows it
        assert AuditTrail.verify(where).valid
        assert not r.valid and r.chain_break_at == head.seq and r.chain_break_file == "anchor"
    else:
        # the files still hold the original entries: named at the rewritten entry
        assert not AuditTrail.verify(where).valid
        assert not r.valid and r.chain_break_at == 2
