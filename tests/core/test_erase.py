"""Erase means erased (issue 29 item 1), checked as an attacker would: after each erase
path, read the raw bytes of every file in the store's folder (gzipped ones unpacked) and
find no trace of a canary planted in every place the library writes text. Each test has
a control that finds the canary before the erase."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

import anneal_memory.store_continuity as store_continuity
from anneal_memory import (
    AuditTrail,
    CrystalStore,
    MemoryRuntime,
    MemorySession,
    SporeStore,
    Store,
    TrustError,
    ValidationError,
)
from anneal_memory._unit import Units
from anneal_memory.governance import MemoryCandidate, MemoryNamespace, SourceRef
from anneal_memory.storage.rows import PatternRow
from anneal_memory.testing import repos_of, scripted_compress


def raw_hits(folder: Path, needle: str) -> dict[str, int]:
    """How often ``needle`` occurs in each file under ``folder``, as bytes on disk."""
    hits = {}
    for f in sorted(folder.rglob("*")):
        if not f.is_file():
            continue
        data = f.read_bytes()
        if f.suffix == ".gz":
            data += gzip.decompress(data)
        n = data.count(needle.encode()) + data.count(needle.encode("utf-16-le"))
        if n:
            hits[f.name] = n
    return hits


def plant(store: Store, canary: str, ns: dict[str, str]) -> tuple[MemorySession, str]:
    """An episode holding ``canary``, and every copy the library makes of its text: the
    continuity (a wrap), a chat-history item, a crystal, a spore, a drift probe's fact,
    a JSON sidecar file beside the database."""
    ses = MemorySession(store, namespace=ns)
    v = ses.store
    text = f"The {canary} password hint is the name of the first dog we had"
    ep = v.record(text, "observation", metadata={"note": canary + "-meta"})
    v.record("An unrelated note about the weather in spring", "observation")
    v.record(f"Decided to keep {canary} out of the shared drive for good", "decision")
    assert ses.wrap(scripted_compress).status == "saved"
    v.items("history").append({"role": "user", "text": text})
    CrystalStore(v).crystallize("hint", level=4, text=f"Remember: {text}", evidence=[ep.id])
    SporeStore(v).add(type="thought", text=f"follow up: {text}")
    v.add_drift_probe(fact=text)
    v.add_drift_probe(pattern=f"the {canary} password hint is the name of the first dog")
    # a pattern named after the episode, as a composing model may name one
    repos_of(v).wraps.upsert_pattern(PatternRow(
        f"the {canary} password hint is the name of the dog", 1, 1, "2026-01-01", None,
        "2026-01-01", [], []))
    SporeStore(store.path).add(type="thought", text=text)  # a sidecar file beside the db
    return ses, ep.id


def test_delete_leaves_no_byte_of_the_episode_in_any_file(tmp_path: Path) -> None:
    store = Store(tmp_path / "memory.db", project_name="P")
    ses, eid = plant(store, "ZQXDEL", {"user": "alice"})
    keep = ses.store.record("A fact that stays: the boiler is serviced in May", "observation")
    assert raw_hits(tmp_path, "ZQXDEL")  # control: the text is in the files
    assert "ZQXDEL" in ses.store.load_continuity()
    victims = [e.id for e in ses.store.recall(keyword="ZQXDEL", include_superseded=True).episodes]
    assert eid in victims
    report = ses.store.erase(victims)
    assert sorted(report.episodes) == sorted(victims)
    assert report.continuity_lines and all(c["namespace"] for c in report.continuity_lines)
    assert report.cells >= 3 and report.files  # item, crystal, spore, probe; the sidecar
    store.close()
    assert raw_hits(tmp_path, "ZQXDEL") == {}
    with Store(tmp_path / "memory.db") as again:
        view = again.scoped({"user": "alice"})
        assert view.get(keep.id) is not None
        assert "weather" in view.load_continuity()  # what did not quote it stays
        assert view.items("history").list()[0].value["text"] == "[erased]"
        assert AuditTrail.verify(tmp_path / "memory.db").valid
        assert view.status().tombstone_count == len(victims)


def test_delete_by_id_returns_bool_and_removes_lines_citing_the_id(store: Store) -> None:
    ep = store.record("Short one", "observation")
    store.save_continuity(f"# C\n\n## State\n- see [{ep.id}]\n- other\n")
    assert store.delete(ep.id) is True
    assert store.last_erasure.continuity_lines[0]["section"] == "State"
    assert ep.id not in store.load_continuity() and "- other" in store.load_continuity()
    assert store.delete(ep.id) is False


def test_unlocated_text_is_reported_not_silently_kept(store: Store) -> None:
    ses = MemorySession(store)
    ep = ses.store.record("The courier comes on Tuesdays before noon to the back door",
                          "observation")
    ses.wrap(lambda prompt: "# C\n\n## State\n- deliveries early in the week\n\n"
             "## Patterns\n- none | 1x\n\n## Decisions\n- none\n\n## Context\n- quiet\n")
    report = store.erase([ep.id])
    assert report.unlocated == [ep.id]  # the wrap compressed it; no line quotes it
    assert report.continuity_lines == []


def test_prune_erases_the_text_everywhere(tmp_path: Path) -> None:
    store = Store(tmp_path / "memory.db")
    ses, _eid = plant(store, "ZQXPRUNE", {"user": "carol"})
    n = ses.store.prune(0)
    assert n == 3 and store.last_erasure is None and ses.store.last_erasure.continuity_lines
    store.close()
    assert raw_hits(tmp_path, "ZQXPRUNE") == {}


def test_governed_forget_keeps_ids_and_digests_only(tmp_path: Path) -> None:
    store = Store(tmp_path / "memory.db")
    rt = MemoryRuntime(store)
    ns = MemoryNamespace(tenant="t", user="u", agent="a")
    rt.write(MemoryCandidate("cand-ZQXGOV", ns, "semantic", "pin ZQXGOV",
                             "ZQXGOV the pin is 4921", SourceRef("conv#ZQXGOV", "user_message")))
    assert raw_hits(tmp_path, "ZQXGOV")
    receipt = rt.forget(ns, "semantic", "pin ZQXGOV", reason="user asked")
    assert receipt.content_digests
    store.close()
    assert raw_hits(tmp_path, "ZQXGOV") == {}


def _wrapped_user(store: Store, user: str, n: int = 3) -> MemorySession:
    ses = MemorySession(store, namespace={"user": user})
    for i in range(n):
        ses.store.record(f"{user} note {i}: the tea is kept in the blue tin on shelf {i}",
                         "observation")
    assert ses.wrap(scripted_compress).status == "saved"
    return ses


def test_erase_namespace_leaves_no_byte_of_the_user(tmp_path: Path) -> None:
    store = Store(tmp_path / "memory.db")
    user = "alice-ZQXUSER"
    plant(store, "ZQXERASE", {"user": user})
    MemorySession(store, namespace={"user": user, "project": "p1"}).store.record(
        "project note ZQXERASE", "observation")
    rt = MemoryRuntime(store)
    gns = MemoryNamespace(tenant="default", user=user, agent="default")
    rt.write(MemoryCandidate("c1", gns, "semantic", "pin", "ZQXERASE governed",
                             SourceRef("conv#1", "user_message")))
    bob = _wrapped_user(store, "bob")
    bob.store.items("history").append({"text": "bob's own turn"})
    bob_text = bob.store.load_continuity()
    users = [n["namespace"].user for n in store.namespaces()]
    assert users.count(user) == 2 and "bob" in users
    assert raw_hits(tmp_path, "ZQXUSER") and raw_hits(tmp_path, "ZQXERASE")  # control

    report = store.erase_namespace({"user": user})
    assert len(report.episodes) == 4 and report.governed_records == 1
    assert [n["namespace"].user for n in store.namespaces()] == ["bob"]
    view = store.scoped({"user": user})
    assert view.load_continuity() is None and view.items("history").list() == []
    assert view.status().total_episodes == 0
    # bob is untouched
    assert bob.store.load_continuity() == bob_text
    assert bob.store.items("history").list()[0].value == {"text": "bob's own turn"}
    assert bob.store.status().total_episodes == 3
    store.close()
    # the sidecar file beside the db quoted the episode: redacted too
    assert raw_hits(tmp_path, "ZQXERASE") == {}
    assert raw_hits(tmp_path, "ZQXUSER") == {}
    assert AuditTrail.verify(tmp_path / "memory.db").valid
    events = [json.loads(x)["event"] for x in
              (tmp_path / "memory.audit.jsonl").read_text().splitlines()]
    assert "namespace_erased" in events


def test_erase_one_project_keeps_the_users_other_memory(store: Store) -> None:
    MemorySession(store, namespace={"user": "dan"}).store.record("dan's own", "observation")
    proj = MemorySession(store, namespace={"user": "dan", "project": "x"}).store
    proj.record("project only", "observation")
    store.erase_namespace({"user": "dan", "project": "x"})
    assert store.scoped({"user": "dan"}).status().total_episodes == 1
    assert store.scoped({"user": "dan", "project": "x"}).recall(keyword="project").episodes == []


def test_a_view_erases_only_itself(store: Store) -> None:
    a = store.scoped({"user": "a"})
    a.record("a's", "observation")
    store.scoped({"user": "b"}).record("b's", "observation")
    with pytest.raises(ValidationError, match="parent Store"):
        a.erase_namespace({"user": "b"})
    a.erase_namespace()
    assert [n["namespace"].user for n in store.namespaces()] == ["b"]
    with pytest.raises(ValidationError, match="needs the namespace"):
        store.erase_namespace()


def test_erase_above_the_trust_ceiling_is_refused_and_changes_nothing(store: Store) -> None:
    with Store(store.path, trust_ceiling="operator") as op:
        op.scoped({"user": "e"}).record("operator fact", "observation", trust="operator")
    with pytest.raises(TrustError, match="trust ceiling"):
        store.erase_namespace({"user": "e"})
    assert store.scoped({"user": "e"}).status().total_episodes == 1


def test_a_crash_after_the_commit_is_finished_at_the_next_open(tmp_path: Path,
                                                               monkeypatch) -> None:
    store = Store(tmp_path / "memory.db")
    _wrapped_user(store, "frank")
    path = store.scoped({"user": "frank"}).continuity_path
    ses = _wrapped_user(store, "gina")
    victim = ses.store.recall(keyword="shelf 1").episodes[0].id
    monkeypatch.setattr(store_continuity, "flush_pending_blobs", lambda *a, **k: [])
    # the "crash" right after each commit: nothing staged is put in place
    monkeypatch.setattr(Units, "_publish_staged",
                        lambda self: setattr(self._local, "staged", []))
    store.erase_namespace({"user": "frank"})
    ses.store.erase([victim])
    assert path.exists()  # the "crash": the files were not touched after the commit
    store.close()
    monkeypatch.undo()
    with Store(tmp_path / "memory.db") as again:
        assert not path.exists()
        assert "shelf 1" not in again.scoped({"user": "gina"}).load_continuity()
    assert raw_hits(tmp_path, "frank") == {}


def test_erase_at_volume_keeps_every_other_user(tmp_path: Path) -> None:
    store = Store(tmp_path / "memory.db")
    users = [f"u{i:02d}" for i in range(20)]
    with store.batch():
        for u in users:
            store.scoped({"user": u}).record_many(
                {"content": f"{u} entry {j} about item {j * 7} in room {j % 5}",
                 "episode_type": "observation"} for j in range(100))
    store.erase_namespace({"user": "u07"})
    victims = [e.id for e in store.scoped({"user": "u03"}).recall(limit=60).episodes]
    assert len(store.scoped({"user": "u03"}).erase(victims).episodes) == 60
    counts = {n["namespace"].user: n["episodes"] for n in store.namespaces()}
    assert "u07" not in counts and counts["u03"] == 40
    assert all(counts[u] == 100 for u in users if u not in ("u07", "u03"))
    store.close()
    assert raw_hits(tmp_path, "u07 entry") == {}
    assert AuditTrail.verify(tmp_path / "memory.db").valid


def _cli(db: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "anneal_memory", "--db", str(db), *args],
                          capture_output=True, text=True, input=stdin, timeout=120)


def test_cli_erase(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    with Store(db) as s:
        _wrapped_user(s, "hal-ZQXCLI")
        _wrapped_user(s, "ivy")
    r = _cli(db, "erase", "--namespace", "user=hal-ZQXCLI", stdin="")
    assert r.returncode == 1 and "pass --yes" in r.stderr and "Traceback" not in r.stderr
    assert raw_hits(tmp_path, "ZQXCLI")  # refused: nothing changed
    r = _cli(db, "--json", "erase")
    assert r.returncode == 1 and json.loads(r.stdout)["error"]["type"] == "ValidationError"
    r = _cli(db, "--json", "erase", "--namespace", "user=hal-ZQXCLI", "--yes")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["erased"]["user"] == "hal-ZQXCLI" and len(doc["episodes"]) == 3
    assert raw_hits(tmp_path, "ZQXCLI") == {}
    r = _cli(db, "namespaces")
    assert "ivy" in r.stdout and "hal" not in r.stdout

