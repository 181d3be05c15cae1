"""The line between the library and the CLI: library refusals name library terms (the CLI
adds its own flag hints), the command-line mains live in cli/, recalled crystal text reaches
the memory block, and what was pruned stays gone while what 1.0.2 users pass still works."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import typing
from pathlib import Path

import pytest
import test_cli
from test_cli import Run

from anneal_memory import (
    AffectiveState,
    BatonError,
    CrystalStore,
    MemorySession,
    RelevantResult,
    Store,
    prepare_wrap,
)
from anneal_memory.continuity.durable import DurableFact
from anneal_memory.crystal import PatternMatch

from wraphelp import doc, wrap

clean_env = test_cli.clean_env
cli = test_cli.cli

LIB = Path(__file__).resolve().parents[2] / "core" / "anneal_memory"
# the command-line layers: they speak in flags on purpose
CLI_LAYERS = ("cli", "mcp")
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z-]+|anneal-memory audit-repair")


def _raised_messages() -> list[tuple[str, int, str]]:
    out = []
    for path in sorted(LIB.rglob("*.py")):
        rel = path.relative_to(LIB)
        if rel.parts[0] in CLI_LAYERS or rel.name == "__main__.py":
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                text = "".join(c.value for c in ast.walk(node.exc)
                               if isinstance(c, ast.Constant) and isinstance(c.value, str))
                out.append((str(rel), node.lineno, text))
    return out


def test_library_refusals_do_not_name_cli_flags() -> None:
    messages = _raised_messages()
    assert len(messages) > 100  # the walk sees the library's raises
    flagged = [f"{f}:{n}: {FLAG.search(t).group(0)}" for f, n, t in messages if FLAG.search(t)]
    assert not flagged, f"library errors that name CLI flags: {flagged}"


def test_the_cli_adds_its_own_hint(cli: Run) -> None:
    cli.json("init")
    cli.json("baton", "claim", "me")
    cli.json("record", "something to wrap")
    with Store(cli.db) as s:
        w = prepare_wrap(s, session_id="me")
        assert w["status"] == "ready"
        with pytest.raises(BatonError) as info:
            s.wrap_cancelled()
    assert "force=True" in str(info.value) and "--force" not in str(info.value)
    msg = cli.refused("wrap-cancel")
    assert "--wrap-token TOKEN, --session-id NAME, or --force" in msg
    assert "anneal-memory baton claim other --take" in cli.refused("baton", "claim", "other")
    assert "search --include-superseded" in cli.refused("unsupersede", "--old", "a", "--new", "b")


def test_command_line_mains_live_in_the_cli(tmp_path: Path) -> None:
    # the library call is the package; ``python -m`` runs its __main__, which hands the
    # command to the CLI (the library does not import the CLI)
    for module in ("eval/__init__.py", "eval/__main__.py", "migrate_store/__init__.py",
                   "migrate_store/__main__.py"):
        tree = ast.parse((LIB / module).read_text("utf-8"))
        imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert "argparse" not in imported, module
        assert not any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body)
        froms = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert ("cli.main" in froms) == module.endswith("__main__.py"), module
    with Store(tmp_path / "src.db") as s:
        s.record("moved by python -m", "observation")
    p = subprocess.run([sys.executable, "-m", "anneal_memory.migrate_store",
                        str(tmp_path / "src.db"), str(tmp_path / "dst.db"), "--json"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert '"episodes": 1' in p.stdout


def test_recalled_crystal_text_reaches_the_memory_block(tmp_path: Path) -> None:
    with Store(tmp_path / "m.db") as store:
        ep = store.record("Retries with jitter stopped the thundering herd", "outcome")
        crystals = CrystalStore(store.path)
        crystals.crystallize("jittered retries", text="Spread retries out with random jitter",
                             level=2, evidence=[{"id": ep.id, "why": "jitter stopped herd"}])
        block = MemorySession(store, crystal_store=crystals).context_for("jittered retries")
    assert "- pattern jittered retries (2x): Spread retries out with random jitter" in block


def test_relevant_result_is_typed() -> None:
    import anneal_memory.types as types_module

    hints = typing.get_type_hints(RelevantResult, vars(types_module) | {
        "PatternMatch": PatternMatch, "DurableFact": DurableFact})
    assert hints["patterns"] == list[PatternMatch] and hints["facts"] == list[DurableFact]


def test_pruned_names_are_gone() -> None:
    from anneal_memory import text, types
    from anneal_memory.continuity import parse, schema
    from anneal_memory.governance import ScopedStore
    from anneal_memory.governance.namespace import MemoryNamespace

    for owner, name in ((Store, "import_data"), (Store, "iter_episodes"), (Store, "warn"),
                        (ScopedStore, "import_data"), (text, "has_cjk"),
                        (text, "join_nonempty"), (types, "trust_rank"),
                        (parse.ContinuityDoc, "size_without"), (schema, "schema_name"),
                        (MemoryNamespace, "user_level")):
        assert not hasattr(owner, name), f"{owner}.{name}"
    assert not hasattr(Store, "import")


def test_what_1_0_2_users_pass_is_still_accepted(store: Store) -> None:
    e = store.record("Chose the blue pump for the greenhouse", "decision")
    res = wrap(store, doc(f"- pump choice | 1x [evidence: {e.id} \"blue pump\"]"),
               affective_state=AffectiveState("calm", 0.4))
    assert res["episodes_compressed"] == 1
    # 1.0.2 callers read these keys: the retired association layer reports zero / False
    assert (res["associations_formed"], res["associations_strengthened"],
            res["associations_decayed"], res["linkgate_overridden"]) == (0, 0, 0, False)


def test_an_unreadable_manifest_is_fixed_in_each_ones_terms(cli: Run) -> None:
    from anneal_memory import AuditError, AuditTrail
    from anneal_memory.audit import AuditPaths

    cli.json("record", "x")
    AuditPaths(cli.db).manifest.write_text("garbage", "utf-8")
    with pytest.raises(AuditError) as info:
        list(AuditTrail.iter_entries(cli.db))
    assert "AuditTrail.repair" in str(info.value) and "anneal-memory" not in str(info.value)
    for argv in (("audit",), ("verify",)):
        msg = cli.refused(*argv)
        assert "run anneal-memory audit-repair" in msg and "AuditTrail.repair" not in msg
        assert "entry None" not in msg
    assert cli.json("audit-repair")["rebuilt_entries"] >= 1
    assert cli.json("verify")["valid"] is True


def _written_events() -> set[str]:
    """Every audit event name the library's source writes: the first string argument of an
    append / audit_event / _audit call on an audit trail, and event= defaults."""
    found: set[str] = set()
    for path in LIB.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Call):
                func = node.func
                name = getattr(func, "attr", None) or getattr(func, "id", None)
                on_audit = name in ("audit_event", "_audit") or (
                    name == "append" and "audit" in ast.unparse(func))
                strings = [a.value for a in node.args
                           if isinstance(a, ast.Constant) and isinstance(a.value, str)]
                if on_audit and strings:
                    found.add(strings[0])
                found |= {k.value.value for k in node.keywords if k.arg == "event"
                          and isinstance(k.value, ast.Constant)}
            elif isinstance(node, ast.arguments):
                named = node.args + node.kwonlyargs
                defaults = [None] * (len(node.args) - len(node.defaults)) + list(
                    node.defaults) + list(node.kw_defaults)
                found |= {d.value for a, d in zip(named, defaults)
                          if a.arg == "event" and isinstance(d, ast.Constant)}
    return found


def test_audit_knows_every_event_the_library_writes() -> None:
    from anneal_memory.cli.audit import AUDIT_EVENTS

    written = _written_events()
    assert {"record", "crystallize", "gov_write", "continuity_saved"} <= written
    assert written <= AUDIT_EVENTS, f"add to cli.audit.AUDIT_EVENTS: {written - AUDIT_EVENTS}"


def test_a_bad_anchor_is_explained_in_cli_terms(cli: Run) -> None:
    cli.json("record", "x")
    msg = cli.refused("verify", "--anchor", "not-a-hash-or-file")
    assert "'anneal-memory audit head --json'" in msg and "AuditTrail.head" not in msg
