"""Deep verify sees what was removed under the library on every backend (issue 52 item
6): an episode row, a supersession link and a state key deleted with SQL, as an attacker
with write access to the database (a SQLite file, a PostgreSQL schema) would leave them;
what the library removes itself is accounted for."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from anneal_memory import Store


def _sql(location: str, sql: str, *args: Any) -> int:
    """Run one statement on the store's database behind the library's back."""
    if location.startswith("postgres"):
        import psycopg

        with psycopg.connect(location, autocommit=True) as conn:
            return conn.execute(sql.replace("?", "%s"), args).rowcount
    conn = sqlite3.connect(location)
    try:
        n = conn.execute(sql, args).rowcount
        conn.commit()
        return n
    finally:
        conn.close()


def _fill(s: Store) -> dict[str, str]:
    ids = {"plain": s.record("the gate code is 4411", "observation").id}
    ids["old"] = s.record("the deploy window is Tuesday", "decision").id
    ids["new"] = s.record("the deploy window is Thursday", "decision",
                          supersedes=ids["old"]).id
    for name in ("k1", "k2"):
        ids[name] = s.record(f"on call: {name}", "observation", state_key="on-call").id
    return ids


@pytest.mark.parametrize("tamper,field,who", [
    ("DELETE FROM episodes WHERE id=?", "row", "plain"),
    ("DELETE FROM supersessions WHERE old_id=?", "link", "old"),
    ("DELETE FROM supersessions WHERE old_id=?", "link", "k1"),
    ("UPDATE episodes SET state_key=NULL WHERE id=?", "state_key", "k1"),
])
def test_a_removal_under_the_library_is_found(location: str, tamper: str, field: str,
                                              who: str) -> None:
    with Store(location) as s:
        ids = _fill(s)
        assert s.verify_content().valid
    assert _sql(location, tamper, ids[who]) == 1
    with Store(location) as s:
        check = s.verify_content()
        assert s.audit_trail.verify_stored().valid  # the chain itself is intact
    assert not check.valid
    assert [m for m in check.mismatches if m["episode_id"] == ids[who]
            and m["field"] == field], check.mismatches


def test_what_the_library_removes_passes(location: str) -> None:
    with Store(location) as s:
        ids = _fill(s)
        s.delete(ids["plain"])
        s.unsupersede(old_id=ids["old"], new_id=ids["new"])
        s.delete(ids["k2"])
        s.clear_state_key(ids["k1"])
        check = s.verify_content()
    assert check.valid and check.checked == 3, check
