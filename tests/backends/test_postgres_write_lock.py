"""When a PostgreSQL writer takes the write lock (PostgreSQL runs only).

A record that checks nothing against the store (no supersession, state key or sources)
only adds its row and its audit entry, so it takes the write lock at its audit append:
hosts insert rows (and maintain the text indexes) side by side and queue only for the
chain. Every other write takes the lock before its first statement, as before.
"""

from __future__ import annotations

import threading
import time

from conftest import PG_DSN
from threadhelp import run_threads

from anneal_memory import AuditTrail, Store

if PG_DSN:
    import psycopg

    from anneal_memory.storage import pg_schema

    def _waiting_writer(admin: psycopg.Connection, schema: str) -> tuple[int, bool]:
        """(pid, whether it holds a row lock on the episodes table) of the one backend
        waiting for the write lock."""
        for _ in range(200):
            row = admin.execute(
                "SELECT l.pid FROM pg_locks l WHERE l.locktype = 'advisory' AND NOT l.granted "
                "AND l.objid = %s", (pg_schema.WRITE_LOCK,)).fetchone()
            if row:
                holds = admin.execute(
                    "SELECT 1 FROM pg_locks WHERE pid = %s AND relation = %s::regclass "
                    "AND mode = 'RowExclusiveLock'", (row[0], f"{schema}.episodes")).fetchone()
                return int(row[0]), holds is not None
            time.sleep(0.02)
        raise AssertionError("no writer came to wait for the write lock")

    def _held_while(location: str, call: object) -> tuple[bool, object]:
        """Run ``call()`` in a thread while another session holds the write lock; return
        whether it had written an episode row when it came to wait, and its result."""
        schema = location.rsplit("search_path%3D", 1)[-1]
        out: dict[str, object] = {}
        with psycopg.connect(PG_DSN, autocommit=True) as holder, \
                psycopg.connect(PG_DSN, autocommit=True) as admin:
            holder.execute("SELECT pg_advisory_lock(%s)", (pg_schema.WRITE_LOCK,))
            t = threading.Thread(target=lambda: out.__setitem__("r", call()))  # type: ignore[operator]
            t.start()
            try:
                _pid, wrote = _waiting_writer(admin, schema)
            finally:
                holder.execute("SELECT pg_advisory_unlock(%s)", (pg_schema.WRITE_LOCK,))
            t.join(30)
        return wrote, out.get("r")

    def test_a_plain_record_writes_its_row_before_it_queues_for_the_chain(
            pg_location: str) -> None:
        with Store(pg_location) as s:
            s.record("warm up", "observation")
            wrote, ep = _held_while(pg_location, lambda: s.record("a plain note", "observation"))
            assert wrote, "the plain record waited for the lock before inserting its row"
            assert s.get(ep.id).content == "a plain note"  # type: ignore[union-attr]
            # a record with a link to check waits before its first statement
            wrote, _ = _held_while(pg_location, lambda: s.record(
                "a plain note, updated", "observation", supersedes=[ep.id]))  # type: ignore[union-attr]
            assert not wrote, "a record with a supersession link wrote before the lock"
        assert AuditTrail.verify(pg_location).valid

    def test_hosts_recording_at_once_keep_one_valid_chain(pg_location: str) -> None:
        Store(pg_location).close()

        def host(n: int) -> None:
            # even hosts record plain notes, odd ones keyed facts (locked from the start);
            # both backdate some, which writes one shared metadata row
            with Store(pg_location) as s:  # each its own pool: separate hosts
                for i in range(40):
                    s.record(f"host {n} note {i}", "observation",
                             timestamp=None if i % 3 else "2020-01-01T00:00:00+00:00",
                             state_key=f"host{n}.k{i % 4}" if n % 2 else None)

        run_threads(host, range(6))  # a deadlock between two hosts fails it
        res = AuditTrail.verify(pg_location)
        assert res.valid and res.total_entries >= 6 * 40, res
        with Store(pg_location) as s:
            assert s.status().total_episodes == 6 * 40
