"""The operator CLI in-process: audit, status and reports, export/import, migrate, serve,
and the long-term tiers (crystal, spore, outcome, worth)."""

from __future__ import annotations

import io
import json
import sys
import types
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import test_cli
from test_cli import Run, wrapped_store

from anneal_memory.audit import AuditPaths

# the shared fixtures (pytest finds fixtures by module attribute)
clean_env = test_cli.clean_env
cli = test_cli.cli

# ---------------------------------------------------------------------- audit


def test_audit_filters_and_verify(cli: Run) -> None:
    a = cli.json("record", "First")
    cli.json("record", "Second")
    cli.json("delete", a["id"])
    entries = cli.json("audit")["entries"]
    assert [e["event"] for e in entries] == ["record", "record", "delete"]
    assert all("First" not in json.dumps(e) for e in entries)  # hashes, never content
    assert [e["event"] for e in cli.json("audit", "--event", "delete")["entries"]] == ["delete"]
    assert len(cli.json("audit", "--limit", "1")["entries"]) == 1
    assert cli.json("audit", "--since", "1h")["count"] == 3
    assert cli.json("audit", "--since", "2999-01-01")["count"] == 0
    assert "delete" in cli.ok("audit")
    for argv in (("verify",), ("audit", "verify")):
        res = cli.json(*argv)
        assert res["valid"] is True and res["total_entries"] == 3
    assert "Audit chain valid" in cli.ok("verify")


def test_verify_reports_a_tampered_chain_and_repair_rebuilds_it(cli: Run) -> None:
    cli.json("record", "One")
    cli.json("record", "Two")
    active = AuditPaths(cli.db).active
    lines = active.read_text("utf-8").splitlines()
    entry = json.loads(lines[0])
    entry["event"] = "forged"
    active.write_text("\n".join([json.dumps(entry)] + lines[1:]) + "\n", "utf-8")
    msg = cli.refused("verify")
    assert "breaks at entry 1" in msg and "audit-repair" in msg
    rc, out, _err = cli("audit", "verify", "--json")
    assert rc == 1 and json.loads(out)["valid"] is False
    # entry 1 is mirrored: the database keeps its hash, no line on disk has it any more
    msg = cli.refused("audit-repair")
    assert "entries 1 are kept in the database as their hashes only" in msg
    assert "set-aside" in msg
    msg = cli.refused("verify")
    assert "breaks at entry 1" in msg and "its text is in no copy" in msg
    # a copy of the untampered line comes back beside the store: repair finds it by hash
    AuditPaths(cli.db).db.with_name("memory.audit.backup.jsonl").write_text(lines[0] + "\n")
    repaired = cli.json("audit-repair")
    assert repaired["rebuilt_entries"] == 2 and repaired["set_aside"]
    assert repaired["salvaged_entries"] == 2 and repaired["lost_entries"] == []
    assert cli.json("verify")["valid"] is True
    assert "nothing to repair" in cli.ok("audit-repair", "--set-aside-unreadable")
    assert "rebuilt 2 entries" in cli.ok("audit-repair", "--force")


def test_audit_of_a_missing_store_is_refused(cli: Run) -> None:
    assert "no store at" in cli.refused("audit")
    assert "no store at" in cli.refused("verify")
    assert not cli.db.exists()


# ---------------------------------------------------------------------- reports


def test_status_stats_diff_graph(cli: Run) -> None:
    wrapped_store(cli.db)
    cli.json("record", "Tool said hello", "--trust", "tool")
    st = cli.json("status")
    assert st["total_episodes"] == 3 and st["total_wraps"] == 2 and st["audit_enabled"] is True
    assert "episodes: 3 (1 since the last wrap)" in cli.ok("status")
    stats = cli.json("stats")
    assert stats["episodes"]["by_trust"] == {"agent": 2, "tool": 1}
    assert stats["patterns"] == {"total": 1, "by_level": {"2x": 1}, "proven": 1}
    assert stats["wraps"]["total"] == 2
    assert "patterns: 1 (1 proven)" in cli.ok("stats")
    diff = cli.json("diff", "--wraps", "5")["wraps"]
    assert [w["wrap_id"] for w in diff] == [1, 2]
    assert diff[1]["graduations_validated"] == 1 and "chars_delta" in diff[1]
    assert len(cli.json("diff", "--wraps", "1")["wraps"]) == 1
    assert "--wraps must be" in cli.refused("diff", "--wraps", "0")
    graph = cli.json("graph", "--format", "json")
    assert graph["nodes"] == [] and graph["edges"] == [] and "no association" in graph["note"]
    dot = cli.ok("graph")
    assert "digraph" in dot and "forms no association links" in dot


def test_export_to_stdout_and_file_and_import_round_trip(cli: Run, tmp_path: Path,
                                                          capsys: Any,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    a = cli.json("record", "Keep this fact", "--type", "decision")
    cli.json("record", "Relayed page text", "--trust", "external")
    doc = json.loads(cli.ok("export", "--format", "json"))
    assert doc["episode_count"] == 2
    out = tmp_path / "export.json"
    assert cli.json("export", "--output", str(out))["episodes"] == 2
    other = Run(tmp_path / "other.db", capsys)
    res = other.json("import", str(out))
    assert res["imported"] == 2
    assert other.json("get", a["id"])["content"] == "Keep this fact"
    again = other.json("import", str(out))
    assert again["imported"] == 0 and len(again["skipped_existing"]) == 2
    monkeypatch.setattr("sys.stdin", io.StringIO(out.read_text("utf-8")))
    third = Run(tmp_path / "third.db", capsys)
    assert "Imported 2" in third.ok("import", "-")


def test_import_of_operator_episodes_is_gated(cli: Run, tmp_path: Path, capsys: Any,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANNEAL_OPERATOR", "1")
    cli.json("record", "Operator ruling", "--trust", "operator")
    out = tmp_path / "export.json"
    cli.json("export", "--output", str(out))
    monkeypatch.delenv("ANNEAL_OPERATOR")
    other = Run(tmp_path / "other.db", capsys)
    assert "operator-only" in other.refused("import", str(out))
    assert not other.db.exists()  # refused at the gate: no store was made
    monkeypatch.setenv("ANNEAL_OPERATOR", "1")
    assert other.json("import", str(out))["imported"] == 1
    imports = other.json("audit", "--event", "import")["entries"]
    assert imports[-1]["data"]["via"] == "env"


def test_migrate_check_then_ack(cli: Run) -> None:
    cli.json("init")
    first = cli.json("migrate", "check")
    assert first["up_to_date"] is False and first["acknowledged"] is None
    assert first["changes"] and first["installed"] == first["changes"][-1]["version"]
    assert "migrate ack" in cli.ok("migrate", "check")
    assert cli.json("migrate", "ack")["acknowledged"] == first["installed"]
    after = cli.json("migrate", "check")
    assert after["up_to_date"] is True and after["changes"] == []
    assert "up to date" in cli.ok("migrate", "check")


def test_serve_without_the_mcp_extra_is_one_line(cli: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)  # import mcp -> ImportError
    rc, out, err = cli("serve")
    assert rc == 1 and out == ""
    assert err.strip().splitlines() == [
        "anneal-memory: error: the MCP server needs the mcp package, which is not installed: "
        "pip install 'anneal-memory[mcp]'"]


def test_serve_passes_the_global_flags_to_the_server(cli: Run,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[Any, ...]] = []
    server = types.ModuleType("anneal_memory.mcp.server")
    server.run_server = lambda *a, **kw: calls.append(a + tuple(kw.values())) or 0  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "mcp", types.ModuleType("mcp"))
    monkeypatch.setitem(sys.modules, "anneal_memory.mcp.server", server)
    rc = __import__("anneal_memory.cli", fromlist=["main"]).main(
        ["--db", str(cli.db), "--project-name", "P", "--skip-integrity", "serve",
         "--session-id", "seat"])
    assert rc == 0
    assert calls == [(str(cli.db), "P", "seat", True, False, True, None)]  # audit on, stdio


# ---------------------------------------------------------------------- crystal


def test_crystal_lifecycle(cli: Run, tmp_path: Path) -> None:
    wrapped_store(cli.db)
    assert "(no crystals)" in cli.ok("crystal", "index")
    made = cli.json("crystal", "crystallize", "retry_backoff")
    assert made["crystal"]["level"] == 2 and len(made["removed_lines"]) == 1
    assert "retry_backoff" not in (cli.db.with_suffix(".continuity.md")).read_text("utf-8")
    assert cli.json("crystal", "index")["crystals"] == ["retry_backoff"]
    hits = cli.json("crystal", "recall", "why did the upload job recover?")
    assert hits and hits[0]["name"] == "retry_backoff"
    assert "(no crystal matches)" in cli.ok("crystal", "recall", "zebra giraffe")
    assert cli.json("crystal", "get", "retry_backoff", "--no-record")["name"] == "retry_backoff"
    assert cli.json("worth")["pulls"] == 0
    assert "retry_backoff (2x, live)" in cli.ok("crystal", "get", "retry_backoff")
    assert cli.json("worth")["pulls"] == 1
    assert [c["name"] for c in cli.json("crystal", "list")] == ["retry_backoff"]
    assert cli.json("crystal", "retire", "retry_backoff", "--kind", "obsolete",
                    "--reason", "moved to S3")["status"] == "retired"
    assert cli.json("crystal", "list") == []
    assert len(cli.json("crystal", "list", "--status", "all")) == 1
    assert cli.json("crystal", "restore", "retry_backoff")["status"] == "crystallized"
    assert "no crystal named" in cli.refused("crystal", "get", "nope")
    events = [e["event"] for e in cli.json("audit", "--limit", "0")["entries"]]
    assert {"crystallize", "crystal_retire", "crystal_restore"} <= set(events)
    receipts = tmp_path / "receipts.jsonl"
    old = (datetime.now(timezone.utc) - timedelta(hours=1)).isoformat()
    receipts.write_text(json.dumps({"event_id": "r1", "ts": old, "exposed": ["retry_backoff"]})
                        + "\n", "utf-8")
    folded = cli.json("crystal", "fold-surfaced", "--receipts", str(receipts))
    assert folded["counts"] == {"retry_backoff": 1}
    assert cli.json("crystal", "get", "retry_backoff", "--no-record")["surfaced_count"] == 1
    assert "does not exist" in cli.refused("crystal", "fold-surfaced", "--receipts",
                                           str(tmp_path / "none.jsonl"))


def test_crystallize_refusals(cli: Run) -> None:
    assert "no store at" in cli.refused("crystal", "crystallize", "x")
    cli.json("init", "--no-baton")
    assert "no continuity" in cli.refused("crystal", "crystallize", "x")
    wrapped_store(cli.db)
    assert "no pattern named" in cli.refused("crystal", "crystallize", "nothing_here")


# ---------------------------------------------------------------------- spores, outcomes, worth


def test_spore_lifecycle(cli: Run) -> None:
    cli.json("init")
    s = cli.json("spore", "add", "Ship the CLI docs", "--type", "task", "--tier", "hot",
                 "--salience", "2", "--domain", "docs", "--pointer", "docs/cli.md")
    assert s["id"] == "spore-001" and s["germination"] == "growing"
    q = cli.json("spore", "add", "Why is the import slow?", "--type", "question",
                 "--next", "2000-01-01")
    assert [x["id"] for x in cli.json("spore", "list")] == [s["id"], q["id"]]
    assert [x["id"] for x in cli.json("spore", "list", "--type", "question")] == [q["id"]]
    assert cli.json("spore", "list", "--domain", "docs")[0]["id"] == s["id"]
    assert cli.json("spore", "surface", "--limit", "1")[0]["id"] == q["id"]
    assert cli.json("spore", "get", s["id"])["pointer"] == "docs/cli.md"
    assert cli.json("spore", "touch", q["id"])["next"] is None
    upd = cli.json("spore", "update", s["id"], "--tier", "warm", "--note", "halfway")
    assert upd["tier"] == "warm" and upd["notes"][0].endswith("halfway")
    assert cli.json("spore", "descend", s["id"], "--kind", "done")["status"] == "resolved"
    assert cli.json("spore", "ascend", q["id"], "--kind", "episode",
                    "--ref", "ep-1")["resolution"]["ref"] == "ep-1"
    assert len(cli.json("spore", "list", "--closed")) == 2
    assert "already closed" in cli.refused("spore", "touch", s["id"])
    assert "no spore" in cli.refused("spore", "get", "spore-999")
    assert "spore-001" in cli.ok("spore", "list", "--closed")
    rc, _o, err = cli("spore", "ascend", s["id"], "--kind", "project")
    assert rc == 2 and "--ref" in err


def test_outcome_and_worth(cli: Run) -> None:
    wrapped_store(cli.db)
    cli.json("crystal", "crystallize", "retry_backoff")
    rec = cli.json("outcome", "--exposure-id", "turn-1", "--item", "crystal:retry_backoff=followed",
                   "--outcome", "success", "--exposed", "crystal:retry_backoff")
    assert rec["items"] == [{"kind": "crystal", "ref": "retry_backoff", "label": "followed"}]
    cli.json("outcome", "--exposure-id", "turn-2", "--outcome", "failure",
             "--exposed", "crystal:retry_backoff")
    report = cli.json("worth")
    row = report["crystals"]["retry_backoff"]
    assert row["success"] == 1 and row["followed"] == 1 and row["unlabelled"]["failure"] == 1
    assert report["episodes"] == {}
    assert cli.json("worth", "--episodes")["episodes"]
    assert "retry_backoff" in cli.ok("worth")
    assert "KIND:REF=LABEL" in cli.refused("outcome", "--exposure-id", "t", "--item", "crystal:x")
    assert "needs at least one" in cli.refused("outcome", "--exposure-id", "t")


def test_demo_runs_on_its_own_store(cli: Run) -> None:
    data = cli.json("demo")
    assert data["recorded"] == 5 and "## Patterns" in data["continuity"]
