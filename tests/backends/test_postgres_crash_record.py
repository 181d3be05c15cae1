"""kill -9 of PostgreSQL writers in the middle of a stream of durable records (PostgreSQL
runs only).

Acknowledged means ``record()`` returned: its commit is over. Killed with their
transactions open (some holding the chain's lock), the writers lose nothing they
acknowledged, and the chain they leave verifies: the server rolls back what was not
committed, lock included, and a writer started afterwards chains onto the last commit.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import PG_DSN, admin_sql, with_schema

from anneal_memory import AuditTrail, Store

WRITER = textwrap.dedent("""
    import sys, threading
    from anneal_memory import Store
    location, name, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
    s = Store(location)
    lock = threading.Lock()

    def writer(t):
        for n in range(100_000):
            e = s.record(f"{name} writer {t} note {n}", "observation")
            with lock:
                print(e.id, flush=True)   # acknowledged: record() returned

    ts = [threading.Thread(target=writer, args=(t,), daemon=True) for t in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
""")

if PG_DSN:

    @pytest.fixture
    def pg_location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
        monkeypatch.setenv("ANNEAL_MEMORY_SIDECAR_DIR", str(tmp_path))
        schema = f"t_{secrets.token_hex(6)}"
        admin_sql(f"CREATE SCHEMA {schema}")
        yield with_schema(PG_DSN, schema)
        admin_sql(f"DROP SCHEMA {schema} CASCADE")

    @pytest.mark.slow
    def test_writers_killed_mid_stream_lose_no_acknowledged_record(pg_location: str) -> None:
        Store(pg_location).close()
        procs = [subprocess.Popen([sys.executable, "-c", WRITER, pg_location, f"host{i}", "3"],
                                  stdout=subprocess.PIPE, text=True) for i in range(3)]
        acked: list[str] = []
        deadline = time.monotonic() + 120
        try:
            for i, p in enumerate(procs):  # each killed after its own count of acks
                assert p.stdout is not None
                for line in p.stdout:
                    acked.append(line.strip())
                    if len(acked) >= 40 * (i + 1) or time.monotonic() > deadline:
                        break
                os.kill(p.pid, signal.SIGKILL)
        finally:
            for p in procs:
                if p.poll() is None:
                    os.kill(p.pid, signal.SIGKILL)
                p.wait(timeout=60)
        assert len(acked) >= 120
        res = AuditTrail.verify(pg_location)
        assert res.valid, (res.reason, res.chain_break_at)
        with Store(pg_location) as s:
            got = s.get_many(acked)
            assert [i for i in acked if i not in got] == []
            after = s.record("after the kills", "observation")  # the lock was given back
        recorded = {e["data"].get("episode_id") for _n, e in AuditTrail.iter_entries(pg_location)
                    if e["event"] == "record"}
        assert set(acked) | {after.id} <= recorded
        assert AuditTrail.verify(pg_location).valid
