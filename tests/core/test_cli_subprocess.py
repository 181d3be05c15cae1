"""The operator CLI as a real subprocess (``python -m anneal_memory``): every command at
least once, UTF-8 under hostile locales, no home directory, a real terminal for the
operator gate, and the bad-input matrix (non-zero, one line, no traceback, store unchanged)."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_cli import wrapped_store

from anneal_memory.cli.main import build_parser

PY = [sys.executable, "-m", "anneal_memory"]


def base_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANNEAL_")}
    env.update(extra)
    return env


def run(db: Path | None, *argv: str, stdin: bytes | None = None,
        env: dict[str, str] | None = None) -> tuple[int, str, str]:
    cmd = PY + (["--db", str(db)] if db is not None else []) + list(argv)
    p = subprocess.run(cmd, input=stdin, capture_output=True, timeout=120,
                       env=env if env is not None else base_env())
    out, err = p.stdout.decode("utf-8"), p.stderr.decode("utf-8")
    assert "Traceback" not in err, err
    return p.returncode, out, err


def ok(db: Path | None, *argv: str, **kw: Any) -> str:
    rc, out, err = run(db, *argv, **kw)
    assert rc == 0, err
    return out


def js(db: Path | None, *argv: str, **kw: Any) -> Any:
    return json.loads(ok(db, *argv, "--json", **kw))


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("anneal-memory: error: "), err
    return lines[0]


def top_level_commands() -> set[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return set(sub.choices)  # type: ignore[arg-type]


def test_every_command_runs_as_a_subprocess(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    seen: set[str] = set()

    def go(*argv: str, **kw: Any) -> Any:
        seen.add(argv[0])
        return js(db, *argv, **kw)

    go("init", "--no-baton")
    a = go("record", "Chose PostgreSQL as the database", "--type", "decision",
           "--timestamp", "2025-01-01")
    b = go("record", "-", "--supersedes", a["id"], "--type", "decision",
           stdin=b"Chose PostgreSQL 16 as the database")
    assert go("search", "PostgreSQL")["total_matching"] == 1
    assert go("get", a["id"])["superseded_by"] == b["id"]
    go("unsupersede", "--old", a["id"], "--new", b["id"])
    go("state", "db.engine", "--set", b["id"])
    go("trust", a["id"], "tool")
    assert go("trust", a["id"], "agent", env=base_env(ANNEAL_OPERATOR="1"))["trust_via"] == "env"
    go("probe", "add", "--fact", "PostgreSQL database")
    prep = go("prepare-wrap")
    assert go("wrap-cancel")["cancelled"] is True
    prep = go("prepare-wrap")
    text = ("# Continuity\n## State\n- choosing\n\n## Patterns\n- db | 1x\n\n## Decisions\n"
            "- PostgreSQL database chosen\n\n## Context\n- none\n")
    saved = go("save-continuity", "-", "--wrap-token", prep["wrap_token"], stdin=text.encode())
    assert {k: v for k, v in saved["drift"]["counts"].items() if v} == {"held": 1}
    # the commands 1.0.2 had, in their 1.0.2 shapes
    assert go("continuity")["text"].replace("\n\n", "\n") == text.replace("\n\n", "\n")
    assert go("history")["total"] == 1 and go("history")["wraps"][0]["id"] == saved["wrap_id"]
    assert go("episodes", "--type", "decision")["total_matching"] == 2
    assert go("recall", "PostgreSQL")["total_matching"] == 2  # the link was removed above
    assert go("wrap-status")["status"] == "idle"
    assert go("wrap-token-current")["wrap_token"] is None
    c = go("record", "The deploy window is Friday evening", "--timestamp", "2025-02-01")
    d = go("record", "The deploy window is now Thursday evening")
    assert go("supersede", "--old", c["id"], "--new", d["id"])["recorded"] is True
    assert go("associations", "--stats")["associations"] == []
    assert go("pattern-associations")["associations"] == []
    assert go("worklist")["count"] == 0
    assert go("worklist", "--mark-reviewed")["through_wrap"] == saved["wrap_id"]
    assert go("pattern", "retire", "db")["lines_removed"] == 1
    go("set-schema", "partnership")
    go("baton", "claim", "seat")
    assert go("status")["total_wraps"] == 1
    assert go("embed", "--embedder", "anneal_memory.testing:HashingEmbedder")["pending"] == 0
    go("stats")
    assert len(go("diff", "--wraps", "2")["wraps"]) == 1
    assert go("graph")["edges"] == []
    assert go("audit", "--event", "record")["count"] == 4
    assert go("verify")["valid"] is True
    go("audit-repair")
    out = tmp_path / "e.json"
    go("export", "--output", str(out))
    assert js(tmp_path / "copy.db", "import", str(out))["imported"] == 4
    seen.add("import")
    go("migrate", "check")
    go("spore", "add", "Write the docs")
    go("outcome", "--exposure-id", "t1", "--outcome", "success")
    go("worth")
    go("delete", b["id"])
    go("prune", "--older-than-days", "3650", "--yes")
    js(None, "demo")
    seen.add("demo")
    ev = subprocess.run([sys.executable, "-m", "anneal_memory", "eval", "-o", str(tmp_path / "ev")],
                        capture_output=True, text=True)
    assert ev.returncode == 0 and "Traceback" not in ev.stderr
    assert json.loads((tmp_path / "ev" / "governance-eval.json").read_text())
    seen.add("eval")
    (tmp_path / "mig").mkdir()
    copy = tmp_path / "mig" / "target.db"
    mig = subprocess.run([sys.executable, "-m", "anneal_memory", "migrate-store", str(db), str(copy)],
                         capture_output=True, text=True)
    assert mig.returncode == 0, mig.stderr
    assert js(copy, "status")["total_episodes"] == js(db, "status")["total_episodes"]
    seen.add("migrate-store")
    tiers = tmp_path / "tiers.db"
    wrapped_store(tiers)
    assert js(tiers, "crystal", "crystallize", "retry_backoff")["crystal"]["level"] == 2
    seen.add("crystal")
    # namespaces: a record as alice, then the listing names her with her count
    go("record", "alice's own note", "--namespace", "user=alice")
    rows = go("namespaces")["namespaces"]
    assert [(r["namespace"]["user"], r["episodes"]) for r in rows] == [("alice", 1)]
    # erase: alice forgotten whole, then the listing is empty
    assert go("erase", "--namespace", "user=alice", "--yes")["erased"]["user"] == "alice"
    assert go("namespaces")["namespaces"] == []
    # token: made for one namespace, listed by it, revoked
    made = go("token", "create", "--namespace", "user=alice", "--expires", "30d")
    assert made["token"].startswith("amt_") and made["state"] == "active"
    assert [t["id"] for t in go("token", "list", "--namespace", "user=alice")["tokens"]] \
        == [made["id"]]
    assert go("token", "revoke", made["id"])["state"] == "revoked"
    # serve: the real CLI in a real process, with the mcp package made unimportable
    p = subprocess.run([sys.executable, "-c",
                        "import sys; sys.modules['mcp'] = None; "
                        "from anneal_memory.cli import main; sys.exit(main(['serve']))"],
                       capture_output=True, timeout=60, env=base_env(ANNEAL_MEMORY_DB=str(db)))
    assert p.returncode == 1
    assert "pip install 'anneal-memory[mcp]'" in one_error_line(p.stderr.decode())
    seen.add("serve")
    # ui serves until stopped: started for real, its JSON line read, then stopped
    ui = subprocess.Popen([sys.executable, "-m", "anneal_memory", "ui", "--db", str(db),
                           "--port", "0", "--json"], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=base_env(), stdin=subprocess.DEVNULL)
    try:
        assert ui.stdout is not None
        assert "token=" in json.loads(ui.stdout.readline())["login_url"]
    finally:
        ui.terminate()
        ui.wait(timeout=10)
    seen.add("ui")
    assert seen == top_level_commands()


@pytest.mark.parametrize("locale_env", [
    {"LC_ALL": "C", "LANG": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"},
    {"PYTHONIOENCODING": "cp1252", "PYTHONUTF8": "0"},
], ids=["LC_ALL=C", "cp1252"])
def test_streams_are_utf8_under_any_locale(tmp_path: Path, locale_env: dict[str, str]) -> None:
    db = tmp_path / "m.db"
    env = base_env(**locale_env)
    text = "naïve café — 日本語 ✓"
    rc, out, err = run(db, "record", "-", "--json", stdin=text.encode("utf-8"), env=env)
    assert rc == 0, err
    assert json.loads(out)["content"] == text
    rc, out, err = run(db, "search", "café", env=env)
    assert rc == 0 and text in out
    rc, out, _ = run(db, "search", "日本語", "--json", env=env)
    assert json.loads(out)["episodes"][0]["content"] == text
    rc, _, err = run(db, "record", "-", stdin="caf\xe9".encode("latin-1"), env=env)
    assert rc == 1 and "not UTF-8" in one_error_line(err)


def test_no_home_directory_only_default_path_commands_fail(tmp_path: Path) -> None:
    env = base_env(HOME="relative-no-home")
    rc, _out, err = run(None, "status", env=env)
    line = one_error_line(err)
    assert rc == 1 and "--db" in line and "ANNEAL_MEMORY_DB" in line
    assert run(None, "--version", env=env)[0] == 0
    assert "usage:" in run(None, "--help", env=env)[1]
    assert run(tmp_path / "m.db", "init", env=env)[0] == 0
    assert run(tmp_path / "m.db", "status", env=env)[0] == 0
    env["ANNEAL_MEMORY_DB"] = str(tmp_path / "env.db")
    assert run(None, "record", "x", env=env)[0] == 0
    assert (tmp_path / "env.db").exists()
    assert run(None, "status", env=env)[0] == 0


def test_db_flag_wins_over_the_environment(tmp_path: Path) -> None:
    env = base_env(ANNEAL_MEMORY_DB=str(tmp_path / "env.db"))
    rc, _, _ = run(tmp_path / "flag.db", "record", "where am I", env=env)
    assert rc == 0 and (tmp_path / "flag.db").exists() and not (tmp_path / "env.db").exists()


def test_operator_gate_on_a_real_terminal(tmp_path: Path) -> None:
    import pty

    db = tmp_path / "m.db"
    ep = js(db, "record", "From a tool", "--trust", "tool")
    master, slave = pty.openpty()
    p = subprocess.Popen(PY + ["--db", str(db), "trust", ep["id"], "agent"], stdin=slave,
                         stdout=subprocess.PIPE, stderr=slave, env=base_env())
    os.close(slave)
    seen = b""
    try:
        while b"[y/N]" not in seen:
            ready, _, _ = select.select([master], [], [], 30)
            assert ready, f"no prompt, got {seen!r}"
            seen += os.read(master, 1024)
        os.write(master, b"y\n")
        out, _ = p.communicate(timeout=60)
    finally:
        os.close(master)
    assert p.returncode == 0 and b"trust tool -> agent" in out
    entries = js(db, "audit", "--event", "trust_set")["entries"]
    assert entries[-1]["data"]["trust_via"] == "tty"


def test_bad_input_matrix_exits_nonzero_and_changes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    ok(db, "init", "--no-baton")
    ep = js(db, "record", "A decision worth keeping", "--type", "decision")
    js(db, "prepare-wrap")  # an open wrap, so a malformed save reaches the validator
    malformed = tmp_path / "malformed.md"
    malformed.write_text("no sections here, just prose\n", "utf-8")
    bad_json = tmp_path / "bad.json"
    bad_json.write_text('{"episodes": [', "utf-8")
    not_export = tmp_path / "other.json"
    not_export.write_text('{"hello": 1}', "utf-8")

    def snapshot() -> str:
        doc = js(db, "export")
        doc.pop("exported_at")
        return json.dumps(doc, sort_keys=True)

    before = snapshot()
    cases: list[tuple[list[str], dict[str, Any], str]] = [
        (["record", "x", "--metadata", "{oops"], {}, "not valid JSON"),
        (["record", "x", "--trust", "operator"], {}, "operator-only"),
        (["get", "zz999999"], {}, "no episode"),
        (["delete", "zz999999"], {}, "no episode"),
        (["trust", "zz999999", "tool"], {}, "no episode"),
        (["state", "--unset", "zz999999"], {}, "no episode"),
        (["unsupersede", "--old", ep["id"], "--new", "zz999999"], {}, "no link"),
        (["save-continuity", str(malformed)], {}, ""),
        (["save-continuity", str(tmp_path / "missing.md")], {}, "does not exist"),
        (["import", str(bad_json)], {}, "not valid JSON"),
        (["import", str(not_export)], {}, "not an anneal-memory export"),
        (["import", str(tmp_path / "missing.json")], {}, "does not exist"),
        (["spore", "touch", "spore-404"], {}, "no spore"),
        (["crystal", "get", "nope"], {}, "no crystal"),
    ]
    # a type outside the six is a usage error, exit 2 (as in 1.0.2), with the choices named
    rc, out, err = run(db, "record", "x", "--type", "bogus")
    assert rc == 2 and "invalid choice: 'bogus'" in err and "observation" in err
    for argv, kw, needle in cases:
        rc, out, err = run(db, *argv, **kw)
        assert rc == 1, (argv, out, err)
        assert needle in one_error_line(err), (argv, err)
    rc, _out, err = run(None, "record", "x", env=base_env(HOME="relative-no-home"))
    assert rc == 1 and "ANNEAL_MEMORY_DB" in one_error_line(err)
    rc, _out, err = run(db, "record")
    assert rc == 2 and "usage:" in err
    assert snapshot() == before


# -- the episode bound from the command line, and a reader that goes away

def test_max_episode_chars_is_a_cli_option_and_the_refusal_names_it(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    ok(db, "init")
    text = "word " * 30_000  # 150,000 characters: over the default bound, via stdin
    rc, _out, err = run(db, "record", "-", stdin=text.encode())
    line = one_error_line(err)
    assert rc == 1 and "--max-episode-chars N" in line and "Store(" not in line
    assert js(db, "status")["total_episodes"] == 0
    ok(db, "record", "-", "--max-episode-chars", "200,000", stdin=text.encode())
    ok(db, "--max-episode-chars", "none", "record", "-", stdin=(text * 2).encode())
    rc, _out, err = run(db, "record", "a short one", "--max-episode-chars", "5")
    assert rc == 1 and "bound of 5" in one_error_line(err)
    for bad in ("0", "-3", "lots"):
        rc, _out, err = run(db, "record", "x", "--max-episode-chars", bad)
        assert rc == 2 and "--max-episode-chars" in err and "whole number" in err
    assert js(db, "status")["total_episodes"] == 2


def _closed_reader(db: Path, *argv: str) -> tuple[int, str]:
    """Run the CLI with stdout a pipe whose reader has already gone (`| head` that quit)."""
    r, w = os.pipe()
    os.close(r)
    try:
        p = subprocess.run(PY + ["--db", str(db), *argv], stdout=w, stderr=subprocess.PIPE,
                           timeout=120, env=base_env())
    finally:
        os.close(w)
    return p.returncode, p.stderr.decode("utf-8")


def test_a_reader_that_went_away_gets_no_traceback(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    ok(db, "init")
    ok(db, "record", "something to export")
    rc, err = _closed_reader(db, "export", "--json")
    assert rc == 1 and "Traceback" not in err and "Exception ignored" not in err, err
    # a refusal owed to the JSON reader: the error line still reaches stderr
    rc, err = _closed_reader(tmp_path / "none.db", "status", "--json")
    assert rc == 1 and "Traceback" not in err and "Exception ignored" not in err, err
    assert "no store at" in one_error_line(err)


def test_an_export_holding_nan_is_refused_with_what_to_change(tmp_path: Path) -> None:
    """1.0.2 kept NaN / Infinity in metadata and wrote them into its exports as Python's
    json does; this store keeps strict JSON. The refusal says so (not 'pass the file that
    export wrote': it is one), and creates nothing."""
    src = tmp_path / "old.db"
    ok(src, "init")
    ok(src, "record", "a measured run", "--metadata", '{"score": 0.5}')
    export = tmp_path / "e.json"
    ok(src, "export", "--output", str(export))
    export.write_text(export.read_text("utf-8").replace('"score": 0.5', '"score": NaN'),
                      "utf-8")
    db = tmp_path / "new.db"
    rc, _out, err = run(db, "import", str(export))
    line = one_error_line(err)
    assert rc == 1 and "holds NaN" in line and "Replace each" in line
    assert "pass the file that" not in line
    assert not db.exists() and not list(tmp_path.glob("new.*"))
    rc, _out, err = run(src, "record", "x", "--metadata", '{"a": -Infinity}')
    line = one_error_line(err)
    assert rc == 1 and "holds -Infinity" in line and "pass an object" not in line
    assert js(src, "status")["total_episodes"] == 1
