"""A backup restores (issue 29 item 2): the JSON export imported into a new store (with
``restore``), ``migrate-store`` and ``export -f sqlite`` each give back a store whose every
observable equals the source's: status, namespaces, recall, each namespace's continuity,
wrap history and open wrap, items, crystals, spores, probes, governed records, baton
policy, and an audit chain that verifies. Run on each backend, at thousands of episodes
over many namespaces."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from anneal_memory import (
    AuditTrail,
    CrystalStore,
    MemoryRuntime,
    MemorySession,
    SporeStore,
    Store,
    ValidationError,
)
from anneal_memory.governance import MemoryCandidate, MemoryNamespace, SourceRef
from anneal_memory.migrate_store import migrate
from anneal_memory.testing import scripted_compress

USERS = [f"user{i:02d}" for i in range(8)]


def _gns(user: str) -> MemoryNamespace:
    return MemoryNamespace(tenant="default", user=user, agent="default")


def _build(store: Store, per_user: int) -> None:
    for n, user in enumerate(USERS):
        ses = MemorySession(store, namespace={"user": user})
        v = ses.store
        v.record_many({"content": f"{user} note {j}: the {['kettle', 'garden', 'boiler'][j % 3]} "
                       f"needs attention on day {j}", "episode_type": "observation"}
                      for j in range(per_user))
        v.record(f"{user} moved to Lisbon", "context", state_key="home_city")
        assert ses.wrap(scripted_compress).status == "saved"
        v.record(f"{user} said the tram is late again", "observation")  # not yet wrapped
        v.items("history").append({"role": "user", "text": f"{user} turn"})
        CrystalStore(v).crystallize("kettle", level=4, text=f"{user}: descale the kettle")
        SporeStore(v).add(type="task", text=f"{user}: book the boiler service")
        MemoryRuntime(store).write(MemoryCandidate(
            f"c-{user}", _gns(user), "semantic", "language", f"{user} prefers Python",
            SourceRef(f"conv-{user}#1", "user_message")))
        if n == 0:  # one namespace with its wrap open at backup time
            v.record(f"{user} is waiting for a parcel", "observation")
            assert ses.wrap_prompt() is not None
    root = MemorySession(store)
    root.store.record("the operator's own note", "observation")
    assert root.wrap(scripted_compress).status == "saved"
    store.add_drift_probe(fact="the operator's own note")
    store.set_consolidate_requires_baton(False)


def _observe(store: Store) -> dict[str, Any]:
    status = store.status().to_dict()
    for volatile in ("path", "audit_entry_count", "audit_write_failures", "audit_last_failure"):
        status.pop(volatile, None)
    out: dict[str, Any] = {
        "status": status,
        "namespaces": [(n["namespace"].to_dict(), n["episodes"], n["wraps"], n["records"])
                       for n in store.namespaces()],
        "root": store.load_continuity(), "probes": store.list_drift_probes(),
        "baton": store.consolidate_requires_baton(),
        "recall": [e.id for e in store.recall(keyword="kettle", limit=50).episodes],
    }
    rt = MemoryRuntime(store)
    for user in USERS:
        v = store.scoped({"user": user})
        out[user] = {
            "continuity": v.load_continuity(),
            "status": {k: x for k, x in v.status().to_dict().items()
                       if k not in ("path", "audit_entry_count", "audit_write_failures",
                                    "audit_last_failure")},
            "unwrapped": sorted(e.id for e in v.episodes_since_wrap()),
            "wraps": [(w["id"], w["wrapped_at"], w["episodes_compressed"], w["metrics"])
                      for w in v.wrap_history(None)],
            "items": [(i.key, i.value) for i in v.items("history").list()],
            "crystals": [(c.name, c.text) for c in CrystalStore(v).list()],
            "spores": [s.text for s in SporeStore(v).list_open()],
            "state": [e["current"] for e in v.state_key_report()],
            "gov": rt.current(_gns(user), "semantic", "language").content,
        }
    return out


def _diff(a: Any, b: Any, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b), key=str)
                for d in (_diff(a.get(k), b.get(k), f"{path}/{k}") if k in a and k in b
                          else [f"{path}/{k}: only on one side"])]
    return [] if a == b else [f"{path}: {str(a)[:120]!r} != {str(b)[:120]!r}"]


@pytest.fixture(scope="module")
def per_user() -> int:
    return 250  # 8 users x ~253 episodes: 2,000+ in all


def _paths(location: str, tmp_path: Path) -> dict[str, Path]:
    out = {"json": tmp_path / "restored-json.db", "migrate": tmp_path / "restored-migrate.db"}
    if "://" not in location:
        out["export-sqlite"] = tmp_path / "restored-export.db"
    return out


def test_every_backup_path_restores_everything(location: str, tmp_path: Path,
                                                per_user: int) -> None:
    with Store(location, project_name="Home") as src:
        _build(src, per_user)
        want = _observe(src)
        doc = json.loads(json.dumps(src.export()))
    paths = _paths(location, tmp_path)
    with Store(paths["json"], trust_ceiling="operator") as t:
        got = t.import_(doc, restore=True)
        assert got["state"]["restored"] is True
    migrate(location, str(paths["migrate"]))
    if "export-sqlite" in paths:
        r = subprocess.run([sys.executable, "-m", "anneal_memory", "--db", location, "export",
                            "-f", "sqlite", "-o", str(paths["export-sqlite"])],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
    for name, path in paths.items():
        assert AuditTrail.verify(path).valid, name
        with Store(path) as t:
            assert _diff(want, _observe(t)) == [], name
    # the restored store goes on as the source would: its open wrap is still open (and
    # cancels as there), and the next wrap compresses what was waiting
    with Store(paths["json"]) as t:
        v = MemorySession(t, namespace={"user": USERS[0]})
        assert t.scoped({"user": USERS[0]}).wrap_cancelled(force=True)
        assert v.wrap(scripted_compress).status == "saved"
        assert "parcel" in t.scoped({"user": USERS[0]}).load_continuity()


def test_restore_needs_a_new_store_and_the_operator(tmp_path: Path) -> None:
    with Store(tmp_path / "a.db") as a:
        ses = MemorySession(a, namespace={"user": "zoe"})
        ses.store.record("zoe's note about the garden", "observation")
        ses.wrap(scripted_compress)
        doc = a.export()
    with Store(tmp_path / "b.db") as b:  # the default ceiling: episodes only, unwrapped
        got = b.import_(doc)
        assert got["state"]["restored"] is False and "operator" in got["state"]["reason"]
        assert b.scoped({"user": "zoe"}).status().episodes_since_wrap == 1
        with pytest.raises(ValidationError, match="cannot restore"):
            b.import_(doc, restore=True)
    with Store(tmp_path / "c.db", trust_ceiling="operator") as c:
        MemorySession(c, namespace={"user": "zoe"}).store.items("x").put("k", 1)
        with pytest.raises(ValidationError, match="already holds"):
            c.import_(doc, restore=True)
        assert c.status().total_episodes == 0  # refused: nothing written
        assert c.import_(doc)["state"]["restored"] is False


@pytest.mark.parametrize("bad,needle", [
    ({"tables": {"episodes": {"columns": [], "rows": []}}}, "unknown table"),
    ({"tables": {"items": {"columns": ["x"], "rows": []}}}, "must hold 'columns'"),
    ({"tables": {}, "continuities": {"../../etc/passwd": "x"}}, "not one a store writes"),
    ({"tables": {}, "format": 99}, "newer"),
    ("nope", "must be an object"),
])
def test_a_malformed_state_is_refused_and_changes_nothing(tmp_path: Path, bad: Any,
                                                          needle: str) -> None:
    with Store(tmp_path / "a.db") as a:
        a.record("one", "observation")
        doc = a.export()
    doc["state"] = bad
    with Store(tmp_path / "b.db", trust_ceiling="operator") as b:
        with pytest.raises(ValidationError, match=needle):
            b.import_(doc, restore=True)
        assert b.status().total_episodes == 0
