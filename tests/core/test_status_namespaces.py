"""Status on a store that serves many users: the root says what it holds itself and what
all namespaces hold together; a namespace's status counts that namespace only (its wraps,
continuity, audit entries and baton), through the library and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import test_cli
from test_cli import Run

from anneal_memory import (
    NamespaceTotals,
    Store,
    claim_baton,
    prepare_wrap,
    render_package,
    validated_save_continuity,
)
from anneal_memory.testing import scripted_compress

clean_env = test_cli.clean_env
cli = test_cli.cli


def _wrap(view: Store) -> None:
    w = prepare_wrap(view)
    validated_save_continuity(view, scripted_compress(render_package(w["package"])),
                              wrap_token=w["wrap_token"])


def _store(db: Path, users: int = 3, per_user: int = 4) -> None:
    with Store(db) as s:
        for i in range(users):
            v = s.scoped({"user": f"u{i}"})
            for j in range(per_user + i):  # unequal on purpose: counts cannot coincide
                v.record(f"user {i} fact {j} about tea", "observation")
            if i < users - 1:  # the last user never wraps
                _wrap(v)
        prepare_wrap(s.scoped({"user": f"u{users - 1}"}))  # ... and leaves one open


def test_root_status_counts_every_namespace(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    _store(db)
    with Store(db) as s:
        st = s.status()
        assert st.namespace is None
        assert st.total_wraps == 0 and st.continuity_chars is None  # the root's own
        assert st.all_namespaces == NamespaceTotals(
            namespaces=3, wraps=2, last_wrap_at=st.all_namespaces.last_wrap_at,
            open_wraps=1, continuities=2)
        assert st.all_namespaces.last_wrap_at is not None
        assert st.to_dict()["all_namespaces"]["wraps"] == 2


def test_namespace_status_is_that_namespaces_own(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    _store(db)
    with Store(db) as s:
        total_audit = s.status().audit_entry_count
        seen = []
        for i in range(3):
            st = s.scoped({"user": f"u{i}"}).status()
            assert st.namespace is not None and st.namespace["user"] == f"u{i}"
            assert st.all_namespaces is None
            assert st.total_episodes == 4 + i
            assert st.total_wraps == (1 if i < 2 else 0)
            assert (st.continuity_chars is not None) == (i < 2)
            assert st.wrap_in_progress == (i == 2)
            seen.append(st.audit_entry_count)
        # each namespace counts the entries it caused: records + its wrap's entries
        per_wrap = seen[0] - 4
        assert per_wrap >= 2 and seen[1] == 5 + per_wrap
        assert sum(seen) <= total_audit
        assert seen[2] == 4 + 2 + 1  # six records and one wrap_started
        assert s.scoped({"user": "nobody"}).status().audit_entry_count == 0


def test_namespace_audit_count_holds_at_volume(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with Store(db) as s:
        for i in range(20):
            v = s.scoped({"user": f"u{i:02d}"})
            for j in range(50 + i):
                v.record(f"u{i} note {j}", "observation")
        for i in range(20):
            assert s.scoped({"user": f"u{i:02d}"}).status().audit_entry_count == 50 + i
    with Store(db) as s:  # counted durably, not in memory
        assert s.scoped({"user": "u07"}).status().audit_entry_count == 57


def test_cli_status_root_and_namespace(cli: Run) -> None:
    _store(cli.db)
    rc, out, _ = cli("status")
    assert rc == 0
    assert "wraps: 0, last never (the root's own)" in out
    assert "all namespaces: 3 namespace(s); 2 wrap(s)" in out and "1 open" in out
    rc, out, _ = cli("status", "--json")
    doc = json.loads(out)
    assert doc["all_namespaces"]["continuities"] == 2 and doc["namespace"] is None
    rc, out, _ = cli("status", "--json", "--namespace", "user=u1")
    doc = json.loads(out)
    assert doc["namespace"]["user"] == "u1" and doc["all_namespaces"] is None
    assert doc["total_wraps"] == 1 and doc["total_episodes"] == 5
    assert doc["audit"]["entry_count"] == doc["audit_entry_count"] < json.loads(
        cli("status", "--json")[1])["audit_entry_count"]
    rc, out, _ = cli("status", "--namespace", "user=u1")
    assert "namespace: tenant=default, user=u1" in out and "root's own" not in out


@pytest.mark.parametrize("who", ["u0", "u1"])
def test_cli_status_shows_the_namespaces_baton(cli: Run, who: str) -> None:
    _store(cli.db)
    with Store(cli.db) as s:
        claim_baton(s.scoped({"user": "u0"}), "worker-a")
    doc = json.loads(cli("status", "--json", "--namespace", f"user={who}")[1])
    assert doc["baton_holder"] == ("worker-a" if who == "u0" else None)
    assert json.loads(cli("status", "--json")[1])["baton_holder"] is None
