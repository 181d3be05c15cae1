"""Stale wraps (issue 34 item 4): a wrap left open by a host that died shows as stale in
status and wrap-status; with the operator's stale_wrap_after policy the next prepare_wrap
of that namespace takes it over, audited, its episodes intact. Off by default."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from anneal_memory import (
    AuditTrail,
    MemorySession,
    Store,
    ValidationError,
    WrapInProgressError,
    prepare_wrap,
)
from anneal_memory.storage.roles import Meta
from anneal_memory.testing import backend_of, scripted_compress
from anneal_memory.wrap.render import render_package


def _age(store: Store, seconds: int) -> None:
    """Backdate the open wrap(s), as if its host had died that long ago."""
    from datetime import timedelta

    from anneal_memory.clock import iso, utcnow

    with backend_of(store).transaction():
        backend_of(store).q("UPDATE wraps SET started_at=? WHERE status='open'",
                        (iso(utcnow() - timedelta(seconds=seconds)),))


def _dead_host(store: Store, ns: dict[str, str] | None = None) -> tuple[list[str], str]:
    """A host that recorded, prepared a wrap and died holding it."""
    store.set_consolidate_requires_baton(False)  # hosts wrap without the baton here
    view = store.scoped(ns) if ns else store
    ids = [view.record(f"fact {i} the dead host recorded about the boiler", "observation").id
           for i in range(3)]
    w = prepare_wrap(view)
    assert w["status"] == "ready"
    return ids, w["wrap_token"]


def test_off_by_default_a_stale_wrap_blocks_and_says_so(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    with Store(db) as s:
        _dead_host(s)
        _age(s, 7200)
        assert s.status().wrap_stale is True
        with pytest.raises(WrapInProgressError):
            prepare_wrap(s)
    r = subprocess.run([sys.executable, "-m", "anneal_memory", "--db", str(db), "--json",
                        "wrap-status"], capture_output=True, text=True, timeout=60)
    doc = json.loads(r.stdout)
    assert doc["wrap_stale"] is True and doc["wrap_age_seconds"] >= 7200
    assert doc["stale_wrap_after"] is None


def test_the_policy_takes_a_stale_wrap_over_with_its_episodes(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    with Store(db) as s:
        ids, old_token = _dead_host(s)
        _age(s, 1200)
    with Store(db, stale_wrap_after=600) as s:
        new = s.record("the live host's own note", "observation")
        w = prepare_wrap(s)
        assert w["status"] == "ready" and w["wrap_token"] != old_token
        listed = {e["id"] for e in w["package"]["episode_list"]}
        assert set(ids) | {new.id} == listed  # nothing of the dead host's wrap is lost
        from anneal_memory import validated_save_continuity

        saved = validated_save_continuity(s, scripted_compress(render_package(w["package"])),
                                          wrap_token=w["wrap_token"])
        assert saved["episodes_compressed"] == 4
        with pytest.raises(Exception, match="wrap"):  # the dead host's token is void
            validated_save_continuity(s, scripted_compress(render_package(w["package"])),
                                      wrap_token=old_token)
    events = [e for _f, e in AuditTrail.iter_entries(db) if e["event"] == "wrap_taken_over"]
    assert len(events) == 1 and events[0]["data"]["episodes"] == 3
    assert events[0]["data"]["age_seconds"] >= 1200
    assert AuditTrail.verify(db).valid


def test_a_wrap_younger_than_the_policy_is_left_alone(store: Store) -> None:
    _dead_host(store)
    _age(store, 100)
    store.set_stale_wrap_after(600)  # saved for every host of the store
    with pytest.raises(WrapInProgressError):
        prepare_wrap(store)
    assert store.status().wrap_stale is False


def test_the_saved_policy_reaches_every_host(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    with Store(db) as s:
        _dead_host(s, {"user": "alice"})
        _dead_host(s, {"user": "bob"})
        _age(s, 5000)
        s.set_stale_wrap_after(3600)
    with Store(db) as other:  # another host: no constructor option, the saved policy
        alice = MemorySession(other, namespace={"user": "alice"})
        assert alice.wrap(scripted_compress).status == "saved"
        # bob's wrap is his own: still open (and still stale) until his next wrap
        assert other.scoped({"user": "bob"}).status().wrap_in_progress
        assert other.scoped({"user": "bob"}).status().wrap_stale


@pytest.mark.parametrize("bad", [0, 30, -5, True, "1h", 10**12])
def test_bad_policies_are_refused(tmp_path: Path, bad: object) -> None:
    with pytest.raises(ValidationError, match="stale_wrap_after"):
        Store(tmp_path / "m.db", stale_wrap_after=bad)  # type: ignore[arg-type]
    with Store(tmp_path / "n.db") as s:
        with pytest.raises(ValidationError, match="stale_wrap_after"):
            s.set_stale_wrap_after(bad)  # type: ignore[arg-type]
        assert Meta(backend_of(s)).get_meta("stale_wrap_after") is None
