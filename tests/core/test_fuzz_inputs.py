"""Every bad input gets a typed error and changes nothing (property-based).

Each property drives a real store (a SQLite file in a temp folder) with generated values,
including the ones fuzzing found: lone surrogates, NUL, ages past the calendar, year-1 /
year-9999 times with offsets, integers past 64 bits, NaN wrap tokens, import versions
that are not numbers, JSON nested thousands deep, damaged database files; then the CLI
and the MCP server with the same inputs. The outcome is either success or an
``AnnealMemoryError``; after a refusal the store is exactly as before.
"""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from anneal_memory import AnnealMemoryError, Store, StoreError, clock, prepare_wrap
from anneal_memory.governance import MemoryCandidate, MemoryNamespace, MemoryRuntime, SourceRef
from anneal_memory.storage.roles import AuditChain
from anneal_memory.testing import backend_of, repos_of

FUZZ = settings(max_examples=120, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])

# Any code point at all, surrogates and NUL included (hypothesis's text() leaves them out).
any_char = st.integers(0, 0x10FFFF).map(chr)
nasty_char = st.sampled_from(["\ud800", "\udfff", "\x00", "\u200b", "\ufeff", "\u0430",
                              "\uff21", "\x1b", "\n", " ", "%", "'", '"', "*", "NEAR", "-"])
any_text = st.text(any_char, max_size=40) | st.lists(
    st.one_of(nasty_char, any_char), max_size=12).map("".join)
huge_int = st.one_of(st.integers(), st.integers(2**62, 2**80), st.integers(-2**80, -1))
odd_number = st.one_of(st.floats(allow_nan=True, allow_infinity=True), huge_int,
                       st.booleans(), st.none())
ages = st.builds(lambda n, u: f"{n}{u}", st.integers(0, 10**14), st.sampled_from("smhdw"))
stamps = st.one_of(
    st.datetimes(timezones=st.timezones()).map(lambda d: d.isoformat()),
    st.sampled_from(["0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00",
                     "0001-01-01T00:00:00-14:00", "9999-12-31T23:59:59+14:00",
                     "2026-02-30", "2026-13-01", "99999-01-01", "", " ", "now", "Z"]),
    ages, any_text)


@pytest.fixture(scope="module")
def store_dir() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="anneal-fuzz-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def store(store_dir: Path) -> Iterator[Store]:
    s = Store(store_dir / "memory.db")
    for i in range(5):
        s.record(f"seed episode {i} about the fuzzing run", "observation")
    yield s
    s.close()


def snapshot(s: Store) -> tuple[Any, ...]:
    st_ = s.status()
    return (st_.total_episodes, st_.tombstone_count, st_.wrap_in_progress,
            AuditChain(backend_of(s)).audit_count(), s.audit_trail.tip())


def typed_or_ok(s: Store, fn: Callable[[], Any]) -> Any:
    """Run ``fn``; a refusal must be typed and leave the store as it was."""
    before = snapshot(s)
    try:
        return fn()
    except AnnealMemoryError:
        assert snapshot(s) == before, "a refused call changed the store"
        return None


# ---------------------------------------------------------------------- the library
@FUZZ
@given(content=any_text, source=any_text, key=st.none() | any_text, ts=st.none() | stamps)
@example(content="bad \ud800 text", source="agent", key=None, ts=None)
@example(content="ok text", source="\udc00", key=None, ts=None)
@example(content="ok text", source="agent", key=None, ts="0001-01-01T00:00:00+05:00")
@example(content="ok text", source="agent", key=None, ts="9999-12-31T23:59:59-05:00")
def test_record_is_typed(store: Store, content: str, source: str, key: str | None,
                         ts: str | None) -> None:
    typed_or_ok(store, lambda: store.record(content, "observation", source=source,
                                            state_key=key, timestamp=ts))


@FUZZ
@given(meta=st.recursive(st.none() | st.booleans() | odd_number | any_text,
                         lambda kids: st.lists(kids, max_size=3)
                         | st.dictionaries(any_text, kids, max_size=3), max_leaves=8))
def test_record_metadata_is_typed(store: Store, meta: Any) -> None:
    typed_or_ok(store, lambda: store.record("with metadata", "observation",
                                            metadata={"m": meta}))


@pytest.mark.parametrize("depth", [150, 250, 5_000, 100_000])
def test_deeply_nested_metadata_and_import_are_typed(store: Store, depth: int) -> None:
    nested: Any = []
    for _ in range(min(depth, 5_000)):
        nested = [nested]
    typed_or_ok(store, lambda: store.record("deep", "observation", metadata={"x": nested}))
    text = "[" * depth + "]" * depth
    doc = '{"episodes": [], "x": ' + text + "}"
    typed_or_ok(store, lambda: store.import_(doc))


@FUZZ
@given(keyword=st.none() | any_text, since=st.none() | stamps, until=st.none() | stamps,
       source=st.none() | any_text, limit=huge_int, offset=huge_int)
@example(keyword="a\x00b", since=None, until=None, source=None, limit=10, offset=0)
@example(keyword="x\udc00", since=None, until=None, source=None, limit=10, offset=0)
@example(keyword=None, since="99999999999d", until=None, source=None, limit=10, offset=0)
@example(keyword=None, since=None, until=None, source=None, limit=2**70, offset=0)
@example(keyword=None, since=None, until=None, source=None, limit=5, offset=2**70)
def test_recall_is_typed(store: Store, keyword: str | None, since: str | None,
                         until: str | None, source: str | None, limit: int,
                         offset: int) -> None:
    typed_or_ok(store, lambda: store.recall(keyword=keyword, since=since, until=until,
                                            source=source, limit=limit, offset=offset))


@FUZZ
@given(query=any_text, k=huge_int, since=st.none() | stamps)
def test_retrieve_relevant_is_typed(store: Store, query: str, k: int, since: str | None) -> None:
    from anneal_memory import retrieve_relevant

    typed_or_ok(store, lambda: retrieve_relevant(store, None, query, max_episodes=k,
                                                 since=since))


@FUZZ
@given(eid=any_text)
@example(eid="ab\ud800")
def test_ids_are_typed(store: Store, eid: str) -> None:
    typed_or_ok(store, lambda: store.get(eid))
    typed_or_ok(store, lambda: store.delete(eid))
    typed_or_ok(store, lambda: store.set_trust(eid, "tool"))
    typed_or_ok(store, lambda: store.set_state_key(eid, "user.city"))
    typed_or_ok(store, lambda: store.record("links", "observation", supersedes=[eid]))


@FUZZ
@given(days=odd_number)
@example(days=2**70)
@example(days=10**7)
@example(days=True)
def test_prune_refuses_what_is_not_a_day_count(store: Store, days: Any) -> None:
    # a whole number of days that still lands inside the calendar is a valid prune
    import datetime as _dt

    in_calendar = (_dt.date.today() - _dt.date.min).days - 1
    assume(not (isinstance(days, int) and not isinstance(days, bool) and
                0 <= days <= in_calendar))
    before = snapshot(store)
    with pytest.raises(AnnealMemoryError):
        store.prune(days)
    assert snapshot(store) == before


# The defects the outside probe reported, one by one: each must be refused, typed,
# with nothing changed.
REPORTED: list[tuple[str, Callable[[Store], Any]]] = [
    ("lone surrogate in content", lambda s: s.record("bad \ud800 text", "observation")),
    ("lone surrogate in keyword", lambda s: s.recall(keyword="x\udc00")),
    ("lone surrogate in id", lambda s: s.get("ab\ud800")),
    ("lone surrogate in delete id", lambda s: s.delete("ab\ud800")),
    ("NUL in keyword", lambda s: s.recall(keyword="a\x00b")),
    ("since 99999999999d", lambda s: s.recall(since="99999999999d")),
    ("year 1 with an offset", lambda s: s.record("x y", "observation",
                                                 timestamp="0001-01-01T00:00:00+05:00")),
    ("year 9999 with an offset", lambda s: s.record("x y", "observation",
                                                    timestamp="9999-12-31T23:59:59-05:00")),
    ("since year 1 with an offset", lambda s: s.recall(since="0001-01-01T00:00:00+05:00")),
    ("limit 2**70", lambda s: s.recall(limit=2**70)),
    ("offset 2**70", lambda s: s.recall(offset=2**70)),
    ("wrap_token nan", lambda s: prepare_wrap(s, wrap_token=math.nan)),
    ("import version abc", lambda s: s.import_({"format": "anneal-memory-export",
                                                "version": "abc", "episodes": []})),
    ("import nested 100000 deep", lambda s: s.import_("[" * 100_000 + "]" * 100_000)),
    ("metadata nested 900 deep", lambda s: s.record("x", "observation", metadata={
        "a": json.loads("[" * 900 + "]" * 900)})),
    ("prune 2**70 days", lambda s: s.prune(2**70)),
    ("surrogate in source", lambda s: s.record("x y", "observation", source="\ud800")),
    ("surrogate in metadata", lambda s: s.record("x y", "observation", metadata={"a": "\ud800"})),
    ("NaN in metadata", lambda s: s.record("x y", "observation", metadata={"a": math.nan})),
]


@pytest.mark.parametrize("name,call", REPORTED, ids=[r[0] for r in REPORTED])
def test_each_reported_input_is_refused_typed(store: Store, name: str,
                                              call: Callable[[Store], Any]) -> None:
    before = snapshot(store)
    with pytest.raises(AnnealMemoryError) as info:
        call(store)
    assert str(info.value)
    assert snapshot(store) == before


@FUZZ
@given(token=st.one_of(odd_number, any_text, st.lists(st.integers(), max_size=2)),
       max_chars=st.none() | odd_number, stale=odd_number)
@example(token=math.nan, max_chars=None, stale=7)
def test_prepare_wrap_is_typed(store: Store, token: Any, max_chars: Any, stale: Any) -> None:
    res = typed_or_ok(store, lambda: prepare_wrap(store, wrap_token=token, max_chars=max_chars,
                                                  staleness_days=stale))
    if res is not None and res.get("wrap_token"):
        store.wrap_cancelled()


json_value = st.recursive(
    st.none() | st.booleans() | odd_number | any_text,
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(any_text, kids, max_size=3),
    max_leaves=10)


@FUZZ
@given(version=json_value, fmt=json_value, episodes=st.lists(
    st.fixed_dictionaries({"id": json_value | any_text, "content": json_value | any_text,
                           "type": st.sampled_from(["observation", "bogus"]) | json_value,
                           "timestamp": stamps | json_value}, optional={
        "trust": json_value, "metadata": json_value, "state_key": json_value,
        "derived_from": json_value, "source": json_value, "session_id": json_value}),
    max_size=3))
@example(version="abc", fmt="anneal-memory-export", episodes=[])
def test_import_is_typed(store: Store, version: Any, fmt: Any, episodes: list[Any]) -> None:
    doc = {"format": fmt, "version": version, "episodes": episodes}
    typed_or_ok(store, lambda: store.import_(doc))


@FUZZ
@given(value=stamps)
def test_every_clock_parse_is_typed(value: str) -> None:
    for fn in (clock.parse_since, clock.normalize_timestamp, clock.as_date, clock.iso_week,
               clock.parse_or_none):
        try:
            fn(value)
        except AnnealMemoryError:
            pass


@FUZZ
@given(subject=any_text, content=any_text, cid=any_text, source_id=any_text)
def test_governed_writes_are_typed(store: Store, subject: str, content: str, cid: str,
                                   source_id: str) -> None:
    ns = MemoryNamespace(tenant="t", user="u", agent="a")
    rt = MemoryRuntime(store)

    def write() -> Any:
        c = MemoryCandidate(cid, ns, "semantic", subject, content,
                            SourceRef(source_id, "user_message"))
        return rt.write(c)

    typed_or_ok(store, write)
    typed_or_ok(store, lambda: rt.forget(ns, "semantic", subject, reason=content))
    typed_or_ok(store, lambda: rt.recall(ns, content))


# ---------------------------------------------------------------------- damaged files
@pytest.mark.parametrize("seed", range(12))
def test_a_damaged_database_file_is_a_store_error(tmp_path: Path, seed: int) -> None:
    db = tmp_path / "memory.db"
    with Store(db) as s:
        for i in range(200):
            s.record(f"episode {i} with words enough to fill several pages", "observation")
    data = bytearray(db.read_bytes())
    rnd = random.Random(seed)
    page = 4096
    for _ in range(3):
        start = rnd.randrange(page, len(data) - 64)
        if seed % 2:
            start = start // page * page  # a whole page header
        for j in range(rnd.choice([16, 256, 4096])):
            if start + j < len(data):
                data[start + j] = rnd.randrange(256)
    db.write_bytes(bytes(data))
    for op in ("open", "record", "recall", "delete", "status", "export"):
        try:
            with Store(db) as s:
                if op == "record":
                    s.record("after the damage", "observation")
                elif op == "recall":
                    s.recall(keyword="episode words")
                elif op == "delete":
                    for e in s.recall(limit=3).episodes:
                        s.delete(e.id)
                elif op == "status":
                    s.status()
                elif op == "export":
                    s.export()
        except AnnealMemoryError as exc:
            assert isinstance(exc, StoreError) or "damaged" in str(exc) or op != "open", exc


def test_a_file_that_is_not_a_database_is_a_store_error(tmp_path: Path) -> None:
    p = tmp_path / "memory.db"
    p.write_bytes(b"SQLite format 3\x00" + os.urandom(8000))
    with pytest.raises(StoreError):
        with Store(p) as s:
            s.record("x", "observation")


# ---------------------------------------------------------------------- the CLI
def _cli(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "anneal_memory", *args], capture_output=True,
                          text=True, timeout=60, env=env, cwd=cwd)


def test_cli_bad_store_paths_are_refused_and_never_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.db"
    os.mkfifo(fifo)
    (tmp_path / "folder.db").mkdir()
    env = {**os.environ, "HOME": str(tmp_path / "home"), "ANNEAL_OPERATOR": "1"}
    env.pop("ANNEAL_MEMORY_DB", None)
    failures = []
    for db in (".", "", str(fifo), str(tmp_path / "folder.db"), "/dev/null"):
        for cmd in (["verify"], ["search", "x"], ["status"], ["record", "hello"],
                    ["audit"], ["audit", "head"], ["export"], ["audit-repair"]):
            p = _cli(["--db", db, *cmd], env, tmp_path)
            if p.returncode != 1 or "anneal-memory: error:" not in p.stderr \
                    or "internal error" in p.stderr or "Traceback" in p.stderr:
                failures.append((db, cmd, p.returncode, p.stderr[-200:]))
    assert failures == []


def test_cli_bad_values_are_refused(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path / "home"), "ANNEAL_OPERATOR": "1"}
    db = str(tmp_path / "m.db")
    assert _cli(["--db", db, "record", "a first episode"], env, tmp_path).returncode == 0
    before = Path(db).with_name("m.audit.jsonl").read_text()
    deep = tmp_path / "deep.json"
    deep.write_text('{"episodes": ' + "[" * 100_000 + "]" * 100_000 + "}")
    version = tmp_path / "version.json"
    version.write_text('{"format": "anneal-memory-export", "version": "abc", "episodes": []}')
    bad = [["search", "a\x01b", "--since", "99999999999d"],
           ["import", str(deep)], ["import", str(version)],
           ["record", "deep metadata", "--metadata", "[" * 50_000 + "]" * 50_000],
           ["record", "nan metadata", "--metadata", '{"a": NaN}'],
           ["set-schema", str(deep)],
           ["search", "x", "--limit", str(2**70)],
           ["audit", "--since", "0001-01-01T00:00:00+05:00"],
           ["verify", "--anchor", "not-a-hash-or-file"],
           ["import", "/dev/null"]]
    for cmd in bad:
        p = _cli(["--db", db, *cmd], env, tmp_path)
        assert p.returncode == 1 and "internal error" not in p.stderr, (cmd, p.stderr)
        assert "Traceback" not in p.stderr and "operator-only" not in p.stderr
    assert Path(db).with_name("m.audit.jsonl").read_text() == before


# ---------------------------------------------------------------------- MCP
@pytest.fixture(scope="module")
def tools(store: Store) -> Any:
    from anneal_memory.mcp.handlers import MemoryTools

    return MemoryTools(store)


def _mcp_args() -> st.SearchStrategy[tuple[str, dict[str, Any]]]:
    from anneal_memory.mcp.tools import BY_NAME

    def for_tool(name: str) -> st.SearchStrategy[tuple[str, dict[str, Any]]]:
        props = BY_NAME[name]["inputSchema"]["properties"]
        values = st.one_of(any_text, odd_number, st.lists(any_text | odd_number, max_size=3),
                           st.sampled_from(["observation", "task", "agent", "99999999999d",
                                            "0001-01-01T00:00:00+05:00", "hot"]))
        return st.dictionaries(st.sampled_from(sorted(props)) if props else st.nothing(),
                               values, max_size=len(props)).map(lambda a: (name, a))

    return st.sampled_from(sorted(BY_NAME)).flatmap(for_tool)


@settings(max_examples=400, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(call=_mcp_args())
@example(call=("record", {"content": "bad \ud800", "type": "observation"}))
@example(call=("recall", {"keyword": "a\x00b"}))
@example(call=("recall", {"since": "99999999999d"}))
@example(call=("recall", {"limit": 2**70}))
@example(call=("delete_episode", {"episode_id": "ab\ud800"}))
@example(call=("spore_add", {"type": "task", "text": "x\ud800"}))
def test_mcp_refusals_are_typed(store: Store, tools: Any, call: tuple[str, dict[str, Any]]) -> None:
    from anneal_memory.mcp.server import call_tool

    name, args = call
    if name in ("delete_episode", "wrap_cancel", "prepare_wrap", "save_continuity"):
        before = snapshot(store)
    text, is_error = call_tool(tools, name, args)
    assert "failed unexpectedly" not in text, (name, args, text)
    if is_error and name == "delete_episode":
        assert snapshot(store) == before
    if store.status().wrap_in_progress:
        store.wrap_cancelled()


def test_json_args_with_nan_and_huge_numbers_are_typed(tools: Any) -> None:
    from anneal_memory.mcp.server import call_tool

    for raw in ('{"limit": NaN}', '{"limit": 1e999}', '{"limit": 1180591620717411303424}',
                '{"keyword": "\\ud800"}'):
        text, is_error = call_tool(tools, "recall", json.loads(raw))
        assert is_error and "failed unexpectedly" not in text, (raw, text)


# ---------------------------------------------------------------------- the rest of the API
WRONG = ["x\ud800", "a\x00b", 2**70, math.nan, None, [], {}, True, -1, "", " "]


def _api_calls(s: Store, eid: str, db: Path) -> dict[str, Callable[[Any], Any]]:
    from anneal_memory import CrystalStore, SporeStore, validated_save_continuity
    from anneal_memory.worth import OutcomeLog

    def save(v: Any) -> Any:
        # the wrap is opened before the snapshot: a refused save leaves it open by design
        token = s.status().wrap_in_progress and repos_of(s).wraps.open_wrap().token
        text = (f"# C\n\n## State\n- {v}\n\n## Patterns\n- p | 1x\n\n## Decisions\n- d\n\n"
                f"## Context\n- c\n" if isinstance(v, str) else v)
        return validated_save_continuity(s, text, wrap_token=token)

    return {
        "save_continuity": save,
        "set_state_key": lambda v: s.set_state_key(eid, v),
        "clear_state_key": lambda v: s.clear_state_key(v),
        "set_trust": lambda v: s.set_trust(eid, v),
        "unsupersede": lambda v: s.unsupersede(old_id=v, new_id=eid),
        "add_drift_probe": lambda v: s.add_drift_probe(pattern=v),
        "crystallize": lambda v: CrystalStore(db).crystallize(
            v, text="some text", level=3, evidence=[(eid, "hello world")]),
        "crystal_text": lambda v: CrystalStore(db).crystallize(
            "n", text=v, level=3, evidence=[(eid, "hello world")]),
        "spore_add": lambda v: SporeStore(db).add(type="task", text="t", domain=v, pointer=v),
        "spore_text": lambda v: SporeStore(db).add(type="task", text=v),
        "outcome": lambda v: OutcomeLog(db).record(v, outcome="success"),
        "set_section_schema": lambda v: s.set_section_schema([{"heading": v,
                                                                "role": "live-state"}]),
        "wrap_cancelled": lambda v: s.wrap_cancelled(wrap_token=v),
        "record_many": lambda v: s.record_many([{"content": v, "episode_type": "observation"}]),
        "effective_trust_map": lambda v: s.effective_trust_map([v]),
        "get_many": lambda v: s.get_many([v]),
        "state_report": lambda v: s.state_report(v),
        "wrap_history": lambda v: s.wrap_history(v),
        "record_type": lambda v: s.record("typed", v),
        "recall_type": lambda v: s.recall(episode_type=v),
    }


API_CALLS = ["save_continuity", "set_state_key", "clear_state_key", "set_trust", "unsupersede",
             "add_drift_probe", "crystallize", "crystal_text", "spore_add", "spore_text",
             "outcome", "set_section_schema", "wrap_cancelled", "record_many",
             "effective_trust_map", "get_many", "state_report", "wrap_history", "record_type",
             "recall_type"]


@pytest.mark.parametrize("api", API_CALLS)
def test_public_calls_with_wrong_values_are_typed(tmp_path: Path, api: str) -> None:
    db = tmp_path / "memory.db"
    with Store(db) as s:
        eid = s.record("hello world content", "observation").id
        call = _api_calls(s, eid, db)[api]
        assert set(_api_calls(s, eid, db)) == set(API_CALLS)
        for value in WRONG:
            if api == "save_continuity":
                s.record("one more episode for the wrap", "observation")
                prepare_wrap(s)
            typed_or_ok(s, lambda v=value: call(v))
            if s.status().wrap_in_progress:
                s.wrap_cancelled()
