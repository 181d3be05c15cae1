"""A plain record's round trips on PostgreSQL, and what its chain lock covers (PostgreSQL
runs only).

The audit chain's lock is held from its grant to the commit, so every round trip inside
it is paid by every host in turn: a plain record takes the lock and reads the chain's tip
in one round trip (two statements of one simple query). READ COMMITTED gives each of the
two statements its own snapshot, so the tip is read after the lock is granted: a record
that waited for another host's append chains onto it.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from conftest import PG_DSN

from anneal_memory import AuditTrail, Store

if PG_DSN:
    import psycopg

    from anneal_memory._audit_chain import canonical_json, chain_entry
    from anneal_memory.storage import pg_schema

    def _wait_for_a_waiter(admin: Any) -> None:
        for _ in range(500):
            if admin.execute("SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT "
                             "granted AND objid = %s", (pg_schema.WRITE_LOCK,)).fetchone():
                return
            time.sleep(0.01)
        raise AssertionError("the record never came to wait for the chain's lock")

    def test_a_record_that_waited_for_the_lock_chains_onto_the_holders_entry(
            pg_location: str) -> None:
        with Store(pg_location) as s:
            s.record("warm up", "observation")
            out: dict[str, Any] = {}
            with psycopg.connect(pg_location) as holder, \
                    psycopg.connect(PG_DSN, autocommit=True) as admin:
                # another host: holds the lock and appends an entry, not yet committed
                holder.execute("SELECT pg_advisory_xact_lock(%s)", (pg_schema.WRITE_LOCK,))
                seq, prev = holder.execute(
                    "SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1").fetchone()
                data = {"note": "another host"}
                ts = "2026-01-01T00:00:00+00:00"
                h, _line = chain_entry(seq + 1, ts, "operator", "host_note",
                                       canonical_json(data), prev)
                holder.execute("INSERT INTO audit_log(seq, ts, actor, event, data, prev_hash, "
                               "hash) VALUES (%s,%s,%s,%s,%s,%s,%s)",
                               (seq + 1, ts, "operator", "host_note",
                                json.dumps(data, sort_keys=True), prev, h))
                t = threading.Thread(target=lambda: out.__setitem__(
                    "ep", s.record("a plain note", "observation")))
                t.start()
                _wait_for_a_waiter(admin)  # the record waits, its snapshot before the commit
                holder.commit()
                t.join(30)
            assert "ep" in out, "the waiting record failed"
            mine = [e for e in s.audit_trail.entries(after_seq=seq + 1)
                    if e["event"] == "record"]
            assert [(e["seq"], e["prev_hash"]) for e in mine] == [(seq + 2, h)]
        assert AuditTrail.verify(pg_location).valid

    def test_a_plain_record_takes_the_lock_and_reads_the_tip_in_one_round_trip(
            pg_location: str, monkeypatch: pytest.MonkeyPatch) -> None:
        trips: list[str] = []
        real = psycopg.Connection.execute

        def counted(self: Any, query: Any, *a: Any, **k: Any) -> Any:
            trips.append(" ".join(str(query).split()))
            return real(self, query, *a, **k)

        with Store(pg_location) as s:
            s.record("warm up", "observation")
            monkeypatch.setattr(psycopg.Connection, "execute", counted)
            s.record("a plain note", "observation")
            monkeypatch.setattr(psycopg.Connection, "execute", real)
        locked = [i for i, q in enumerate(trips) if "pg_advisory_xact_lock" in q]
        assert len(locked) == 1, trips
        assert "FROM audit_log" in trips[locked[0]], trips  # the tip, in the lock's trip
        # inside the lock: that trip, the entry's insert, the commit
        inside = trips[locked[0]:]
        assert len(inside) == 3 and inside[1].startswith("INSERT INTO audit_log") \
            and inside[2] == "COMMIT", inside
