"""The operator CLI in-process: episodes, wrap, baton, schema, probes, the operator gate.

Helpers and fixtures here are shared by the other test_cli_* modules.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from anneal_memory import Store, prepare_wrap, validated_save_continuity
from anneal_memory.cli import common as cli_common
from anneal_memory.cli import main


class Run:
    """Calls ``main`` in-process with ``--db`` and returns (status, stdout, stderr)."""

    def __init__(self, db: Path, capsys: Any) -> None:
        self.db = db
        self.capsys = capsys

    def __call__(self, *argv: str, db: bool = True) -> tuple[int, str, str]:
        self.capsys.readouterr()
        rc = main((["--db", str(self.db)] if db else []) + list(argv))
        out, err = self.capsys.readouterr()
        assert "Traceback" not in err
        return rc, out, err

    def json(self, *argv: str) -> Any:
        rc, out, err = self(*argv, "--json")
        assert rc == 0, err
        return json.loads(out)

    def ok(self, *argv: str) -> str:
        rc, out, err = self(*argv)
        assert rc == 0, err
        return out

    def refused(self, *argv: str) -> str:
        rc, out, err = self(*argv)
        assert rc == 1, (out, err)
        lines = err.strip().splitlines()
        # (after a terminal prompt the error shares the prompt's line)
        assert lines and "anneal-memory: error: " in lines[-1], err
        return lines[-1].split("anneal-memory: error: ", 1)[1]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("ANNEAL_MEMORY_DB", "ANNEAL_OPERATOR", "ANNEAL_MEMORY_DEBUG"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def cli(db: Path, capsys: Any) -> Run:
    return Run(db, capsys)


def continuity(eid: str, level: int, today: str, why: str) -> str:
    return (f"# Continuity\n## State\n- fixing uploads\n\n## Patterns\n"
            f"- retry_backoff | {level}x ({today}) [evidence: {eid} \"{why}\"] [no-contradicts]\n\n"
            "## Decisions\n- use backoff for uploads\n\n## Context\n- uploads were flaky\n")


def wrapped_store(db: Path) -> None:
    """A store with two saved wraps and a Proven (2x) pattern ``retry_backoff``."""
    with Store(db) as s:
        e1 = s.record("Retry with exponential backoff fixed the flaky upload", "observation")
        w = prepare_wrap(s)
        validated_save_continuity(s, continuity(e1.id, 1, w["package"]["today"],
                                                "retry backoff fixed flaky upload"),
                                  wrap_token=w["wrap_token"])
        e2 = s.record("Second run: the upload job recovered after a backoff retry", "decision")
        w = prepare_wrap(s)
        validated_save_continuity(s, continuity(e2.id, 2, w["package"]["today"],
                                                "job recovered second run"),
                                  wrap_token=w["wrap_token"])


def export_without_time(run: Run) -> str:
    doc = run.json("export")
    doc.pop("exported_at")
    return json.dumps(doc, sort_keys=True)


# ---------------------------------------------------------------------- init, record, search


def test_init_requires_baton_by_default_and_no_baton_opts_out(cli: Run, tmp_path: Path) -> None:
    data = cli.json("init")
    assert data["created"] is True and data["consolidate_requires_baton"] is True
    assert data["schema"] == ["State", "Durable Facts", "Patterns", "Decisions", "Context"]
    again = cli.json("init")
    assert again["created"] is False
    other = Run(tmp_path / "free.db", cli.capsys)
    data = other.json("init", "--no-baton", "--schema", "partnership")
    assert data["consolidate_requires_baton"] is False
    assert "Understanding" in data["schema"]


def test_record_every_option_and_get(cli: Run) -> None:
    old = cli.json("record", "The office is in Lisbon", "--type", "observation",
                   "--timestamp", "2025-06-01")
    new = cli.json("record", "The office moved to the Porto building", "--type", "observation",
                   "--supersedes", old["id"], "--source", "operator-notes",
                   "--metadata", '{"ticket": 7}', "--timestamp", "2026-01-02T03:04:05Z")
    assert new["type"] == "observation" and new["source"] == "operator-notes"
    assert new["metadata"] == {"ticket": 7}
    assert new["timestamp"].startswith("2026-01-02T03:04:05")
    got = cli.json("get", old["id"])
    assert got["superseded_by"] == new["id"]
    derived = cli.json("record", "Summary of the web page", "--type", "context",
                       "--trust", "tool", "--derived-from", old["id"])
    assert derived["trust"] == "tool" and derived["derived_from"] == [old["id"]]
    keyed = cli.json("record", "Home city is Austin", "--state-key", "user.home_city")
    assert keyed["state_key"] == "user.home_city"
    text = cli.ok("get", new["id"])
    assert "Porto building" in text and "operator-notes" in text


def test_record_from_stdin_keeps_unicode(cli: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("naïve café — 日本語のメモ\n"))
    ep = cli.json("record", "-", "--type", "decision")
    assert ep["content"] == "naïve café — 日本語のメモ"
    assert cli.json("search", "café")["episodes"][0]["id"] == ep["id"]


def test_search_filters_paging_and_superseded(cli: Run) -> None:
    a = cli.json("record", "Deploys run on Fridays", "--type", "decision",
                 "--timestamp", "2020-01-01T00:00:00Z")
    b = cli.json("record", "Deploys run on Tuesdays now", "--type", "decision",
                 "--supersedes", a["id"])
    cli.json("record", "A question about deploys?", "--type", "question", "--source", "user")
    hits = cli.json("search", "deploys")
    ids = {e["id"] for e in hits["episodes"]}
    assert b["id"] in ids and a["id"] not in ids
    with_old = cli.json("search", "deploys", "--include-superseded")
    assert a["id"] in {e["id"] for e in with_old["episodes"]}
    assert [e["type"] for e in cli.json("search", "--type", "question")["episodes"]] == ["question"]
    assert cli.json("search", "--source", "user")["total_matching"] == 1
    assert cli.json("search", "--since", "7d", "--include-superseded")["total_matching"] == 2
    assert cli.json("search", "--until", "2021-01-01", "--include-superseded")["total_matching"] == 1
    page = cli.json("search", "--limit", "1", "--offset", "1")
    assert len(page["episodes"]) == 1 and page["total_matching"] == 2
    text = cli.ok("search", "Tuesdays")
    assert b["id"] in text and "(1-1 of 1 matching)" in text


def test_delete_and_prune(cli: Run) -> None:
    ep = cli.json("record", "Temporary note")
    assert cli.json("delete", ep["id"])["deleted"] == ep["id"]
    assert "no episode" in cli.refused("get", ep["id"])
    assert "nothing was deleted" in cli.refused("delete", ep["id"])
    cli.json("record", "Ancient note", "--timestamp", "2001-01-01")
    cli.json("record", "Fresh note")
    assert cli.json("prune", "--older-than-days", "30", "--yes")["pruned"] == 1
    assert cli.json("status")["total_episodes"] == 1
    assert cli.json("status")["tombstone_count"] == 2


def test_state_keys_set_show_unset(cli: Run) -> None:
    old = cli.json("record", "I live in Seattle", "--state-key", "user.home_city",
                   "--timestamp", "2025-01-01")
    new = cli.json("record", "Settled into my new place in Austin")
    out = cli.json("state", "user.home_city", "--set", new["id"])
    assert out["replaced"] == [old["id"]]
    report = cli.json("state")  # 1.0.2's shape: [{key, current: [...], replaced: [...]}]
    assert report[0]["current"][0]["id"] == new["id"]
    assert report[0]["replaced"][0]["id"] == old["id"]
    assert "user.home_city: [" in cli.ok("state", "user.home_city")
    assert cli.json("state", "--unset", new["id"])["cleared"] is True
    assert "needs the KEY" in cli.refused("state", "--set", new["id"])


def test_unsupersede_removes_link(cli: Run) -> None:
    a = cli.json("record", "Build uses make", "--type", "decision")
    b = cli.json("record", "Build uses make with ninja now", "--type", "decision",
                 "--supersedes", a["id"])
    assert cli.json("unsupersede", "--old", a["id"], "--new", b["id"])["removed"] is True
    assert cli.json("get", a["id"])["superseded_by"] is None
    assert "no link" in cli.refused("unsupersede", "--old", a["id"], "--new", b["id"])


# ---------------------------------------------------------------------- operator gate


def _audit_events(cli: Run, event: str) -> list[dict[str, Any]]:
    return cli.json("audit", "--event", event, "--limit", "0")["entries"]


def test_trust_lowering_is_open_and_raising_needs_the_operator(cli: Run,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    ep = cli.json("record", "Fetched from a web page", "--trust", "external")
    before = export_without_time(cli)
    assert "operator-only" in cli.refused("trust", ep["id"], "agent")
    assert export_without_time(cli) == before
    monkeypatch.setenv("ANNEAL_OPERATOR", "1")
    assert cli.json("trust", ep["id"], "operator")["to"] == "operator"
    assert _audit_events(cli, "trust_set")[-1]["data"]["trust_via"] == "env"
    monkeypatch.delenv("ANNEAL_OPERATOR")
    low = cli.json("trust", ep["id"], "tool")
    assert low["from"] == "operator" and low["trust_via"] == "cli"
    assert "unknown trust class" in cli.refused("trust", ep["id"], "god")


def test_operator_gate_on_a_terminal(cli: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    ep = cli.json("record", "Tool output", "--trust", "tool")
    monkeypatch.setattr(cli_common, "_interactive", lambda: True)
    monkeypatch.setattr("builtins.input", lambda: "n")
    assert "not confirmed" in cli.refused("trust", ep["id"], "agent")
    assert cli.json("get", ep["id"])["trust"] == "tool"
    monkeypatch.setattr("builtins.input", lambda: "yes")
    cli.json("trust", ep["id"], "agent")
    assert _audit_events(cli, "trust_set")[-1]["data"]["trust_via"] == "tty"


def test_record_trust_operator_is_gated_and_audited(cli: Run,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    cli.json("init", "--no-baton")
    before = export_without_time(cli)
    assert "operator-only" in cli.refused("record", "Operator says so", "--trust", "operator")
    assert export_without_time(cli) == before
    monkeypatch.setenv("ANNEAL_OPERATOR", "1")
    ep = cli.json("record", "Operator says so", "--trust", "operator")
    assert ep["trust"] == "operator"
    gate = _audit_events(cli, "operator_gate")
    assert gate[-1]["data"] == {"action": "record", "id": ep["id"], "via": "env"}


# ---------------------------------------------------------------------- wrap and baton


def _continuity_for(package: dict[str, Any]) -> str:
    eid = package["episode_list"][0]["id"]
    return (f"# Continuity\n## State\n- working on the database choice\n\n## Patterns\n"
            f"- db_choice | 1x ({package['today']}) [evidence: {eid} \"PostgreSQL database ACID\"]\n\n"
            "## Decisions\n- chose PostgreSQL\n\n## Context\n- the pool was the bottleneck\n")


def test_gated_wrap_needs_the_baton_holder(cli: Run, tmp_path: Path) -> None:
    cli.json("init")
    cli.json("record", "Chose PostgreSQL as the database for ACID", "--type", "decision")
    capture = cli.json("prepare-wrap")
    assert capture["status"] == "downgraded" and capture["wrap_token"] is None
    assert "baton claim" in cli.ok("prepare-wrap")
    assert cli.json("baton", "claim", "seat-1")["holder"] == "seat-1"
    assert "held by session" in cli.refused("baton", "claim", "seat-2")
    prep = cli.json("prepare-wrap", "--session-id", "seat-1")  # the package, with its token
    token = prep["wrap_token"]
    assert prep["status"] == "ready" and "### Decisions (1)" in prep["episodes"]
    # as in 1.0.2, a second prepare is refused while the wrap is open; the token is readable
    assert "already in progress" in cli.refused("prepare-wrap", "--session-id", "seat-1")
    assert cli.ok("wrap-token-current").strip() == token
    assert cli.json("wrap-status")["wrap_token"] == token
    f = tmp_path / "c.md"
    f.write_text(_continuity_for(prep), "utf-8")
    assert "only that session" in cli.refused("save-continuity", str(f), "--wrap-token", token)
    saved = cli.json("save-continuity", str(f), "--session-id", "seat-1", "--wrap-token", token,
                     "--affect-tag", "calm", "--affect-intensity", "0.4")
    # a 1x sighting with evidence is not a graduation (2x and up are)
    assert saved["episodes_compressed"] == 1 and saved["graduations_validated"] == 0
    assert cli.json("status")["total_wraps"] == 1
    assert cli.json("baton", "status")["holder"] == "seat-1"
    assert cli.json("baton", "claim", "seat-2", "--take")["previous"] == "seat-1"
    assert "does not hold" in cli.refused("baton", "release", "seat-1")
    assert cli.json("baton", "release")["released"] is True
    assert "nobody" in cli.ok("baton", "status")


def test_ungated_wrap_from_stdin_and_summary(cli: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    cli.json("init", "--no-baton")
    cli.json("record", "Chose PostgreSQL as the database for ACID", "--type", "decision")
    prep = cli.json("prepare-wrap", "--max-chars", "5000", "--staleness-days", "3")
    assert prep["status"] == "ready" and prep["max_chars"] == 5000
    monkeypatch.setattr("sys.stdin", io.StringIO(_continuity_for(prep)))
    out = cli.ok("save-continuity", "-", "--today", prep["today"])
    assert "Saved" in out and "graduations validated: 0" in out
    assert "empty" in cli.ok("prepare-wrap")


def test_wrap_cancel_gated_needs_token_or_force(cli: Run) -> None:
    cli.json("init")
    cli.json("baton", "claim", "s1")
    cli.json("record", "Something to wrap")
    prep = cli.json("prepare-wrap", "--session-id", "s1")
    assert "--force" in cli.refused("wrap-cancel")
    assert cli.json("wrap-cancel", "--wrap-token", prep["wrap_token"])["cancelled"] is True
    assert cli.json("wrap-cancel")["cancelled"] is False
    cli.json("prepare-wrap", "--session-id", "s1")
    assert cli.json("wrap-cancel", "--force")["cancelled"] is True
    cli.json("prepare-wrap", "--session-id", "s1")
    assert "cancelled" in cli.ok("wrap-cancel", "--session-id", "s1")


def test_save_refusals_leave_the_wrap_open(cli: Run, tmp_path: Path) -> None:
    cli.json("init", "--no-baton")
    cli.json("record", "Some work")
    prep = cli.json("prepare-wrap")
    bad = tmp_path / "bad.md"
    bad.write_text("just some prose without any sections\n", "utf-8")
    cli.refused("save-continuity", str(bad))
    assert "does not exist" in cli.refused("save-continuity", str(tmp_path / "missing.md"))
    assert "does not match" in cli.refused("save-continuity", str(bad), "--wrap-token", "nope")
    assert cli.json("status")["wrap_in_progress"] is True
    good = tmp_path / "good.md"
    good.write_text(_continuity_for(prep), "utf-8")
    cli.json("save-continuity", str(good), "--wrap-token", prep["wrap_token"])


def test_set_schema_named_file_and_refusals(cli: Run, tmp_path: Path) -> None:
    cli.json("init", "--no-baton")
    changed = cli.json("set-schema", "partnership")
    assert changed["schema"] == "partnership" and "Understanding" in changed["sections"]
    spec = tmp_path / "schema.json"
    spec.write_text(json.dumps([{"heading": "Now", "role": "live-state"},
                                {"heading": "Lessons", "role": "graduating"},
                                {"heading": "Story", "role": "narrative"}]), "utf-8")
    custom = cli.json("set-schema", str(spec))  # 1.0.2's shape: a name, the sections
    assert custom["schema"] == "custom" and custom["sections"] == ["Now", "Lessons", "Story"]
    assert custom["missing_sections"] == ["Now", "Lessons", "Story"]  # the continuity lacks them
    assert "unknown schema" in cli.refused("set-schema", "fancy")
    spec.write_text("[{", "utf-8")
    assert "not valid JSON" in cli.refused("set-schema", str(spec))
    cli.json("set-schema", "default")
    cli.json("record", "work")
    cli.json("prepare-wrap")
    assert "wrap is open" in cli.refused("set-schema", "partnership")


def test_probes_add_list_status(cli: Run, tmp_path: Path) -> None:
    wrapped_store(cli.db)
    p1 = cli.json("probe", "add", "--pattern", "retry_backoff")["id"]
    p2 = cli.json("probe", "add", "--fact", "use backoff for uploads", "--section", "Decisions")["id"]
    cli.json("probe", "add", "--pattern", "retry_backoff", "--min-level", "3")
    listed = cli.json("probe", "list")  # the list itself, as 1.0.2
    assert [p["id"] for p in listed][:2] == [p1, p2]
    assert listed[0]["min_level"] == 2
    assert "not yet checked" in cli.ok("probe", "status")
    with Store(cli.db) as s:
        s.record("One more upload run", "observation")
        w = prepare_wrap(s)
        validated_save_continuity(s, s.load_continuity() or "", wrap_token=w["wrap_token"])
    status = cli.json("probe", "status")
    assert status["counts"] == {"held": 2, "weakened": 1}
    assert "held" in cli.ok("probe", "status")
    assert "empty" in cli.refused("probe", "add", "--pattern", " ")
    rc, _out, err = cli("probe", "add")
    assert rc == 2 and "one of the arguments" in err


def test_command_groups_alone_print_usage(cli: Run) -> None:
    for group in ("baton", "probe", "crystal", "spore", "migrate"):
        rc, _out, err = cli(group)
        assert rc == 2 and "usage:" in err


def test_help_and_version_need_no_store(capsys: Any) -> None:
    assert main(["--version"]) == 0
    assert "anneal-memory" in capsys.readouterr().out
    assert main(["--help"]) == 0
    assert "save-continuity" in capsys.readouterr().out
    assert main([]) == 2
