"""The crystallized tier: crystallize, lifecycle, cue index, and recall on cue."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from test_spores import run_processes

from anneal_memory.crystal import (
    Crystal,
    CrystalDict,
    CrystalMapping,
    CrystalStore,
    cue_index,
    remove_lines,
    retrieve_patterns,
)
from anneal_memory.errors import EpisodeNotFoundError, SidecarError, ValidationError

DAY = date(2026, 5, 10)


@dataclass
class _Ep:
    id: str
    content: str
    superseded_by: str | None = None


@dataclass
class EpisodeBook:
    """The two store calls the crystal tier makes: ``get`` and ``audit_event``."""

    episodes: dict[str, _Ep] = field(default_factory=dict)
    audit: list[tuple[str, dict[str, Any], str]] = field(default_factory=list)

    def add(self, eid: str, content: str, superseded_by: str | None = None) -> None:
        self.episodes[eid] = _Ep(eid, content, superseded_by)

    def get(self, eid: str) -> _Ep:
        if eid not in self.episodes:
            raise EpisodeNotFoundError(eid)
        return self.episodes[eid]

    def audit_event(self, event: str, data: dict[str, Any], actor: str = "operator") -> None:
        self.audit.append((event, data, actor))


@dataclass
class _Line:
    name: str
    level: int
    date: str | None
    evidence: list[tuple[str, str]]
    line: str
    section: str = "Patterns"


@pytest.fixture
def cs(tmp_path: Path) -> CrystalStore:
    return CrystalStore(tmp_path / "memory.db")


def _seed(cs: CrystalStore) -> None:
    cs.crystallize("retry_with_backoff", text="Retry flaky network calls with exponential "
                   "backoff; never in a tight loop.", level=3,
                   evidence=[("ep-1", "the payment API timed out under load")], today=DAY)
    cs.crystallize("pin_dependencies", text="Pin every dependency in the lock file before "
                   "a release build.", level=2,
                   evidence=[("ep-2", "an upstream minor release broke the build")], today=DAY)
    cs.crystallize("small_pull_requests", text="Keep pull requests small so reviews "
                   "finish the same day.", level=4,
                   evidence=[("ep-3", "the big refactor review stalled for a week")], today=DAY)


def test_crystallize_get_list(cs: CrystalStore, tmp_path: Path) -> None:
    assert cs.path == tmp_path / "memory.crystal.json"
    _seed(cs)
    c = cs.get("retry_with_backoff")
    assert c is not None
    assert (c.level, c.status, c.crystallized_on, c.last_activated_on) == (
        3, "live", "2026-05-10", "2026-05-10")
    assert c.evidence == [{"id": "ep-1", "why": "the payment API timed out under load"}]
    assert [x.name for x in cs.list()] == [
        "small_pull_requests", "retry_with_backoff", "pin_dependencies"]
    assert cs.get("nope") is None
    assert json.loads(cs.path.read_text())["schema_version"] == 1


@pytest.mark.parametrize("kwargs, fragment", [
    ({"level": 1, "evidence": [("e", "x")]}, "Proven"),
    ({"level": True, "evidence": [("e", "x")]}, "Proven"),
    ({"level": 3, "evidence": [("", "x")]}, "episode id"),
    # an entry that is no id, pair or dict: a typed refusal (it was a TypeError or
    # IndexError), nothing written
    ({"level": 3, "evidence": [5]}, "episode id"),
    ({"level": 3, "evidence": [()]}, "episode id"),
])
def test_only_earned_patterns_crystallize(cs: CrystalStore, kwargs: dict, fragment: str) -> None:
    with pytest.raises(ValidationError, match=fragment):
        cs.crystallize("p", text="a claim", **kwargs)
    with pytest.raises(ValidationError, match="name"):
        cs.crystallize("  ", text="a claim", level=2, evidence=[("e", "x")])
    assert not cs.path.exists()


def test_library_crystallize_takes_1_0_2_arguments(cs: CrystalStore) -> None:
    """1.0.2's call: keyword name, explanation, bare evidence ids (or none)."""
    c = cs.crystallize(name="pool", level=3, explanation="the pool is the bottleneck",
                       evidence=["e1", "e2"], tags=["ops"])
    assert c["name"] == "pool" and c["explanation"] == c.text == "the pool is the bottleneck"
    assert c["evidence"] == ["e1", "e2"] and c["status"] == "crystallized" and c.status == "live"
    assert cs.crystallize(name="bare", level=2, explanation="no evidence given").evidence == []
    with pytest.raises(ValidationError, match="once"):
        cs.crystallize(name="x", level=2, text="a", explanation="b")
    with pytest.raises(ValidationError, match="permanence"):
        cs.crystallize(name="x", level=2, explanation="a", permanence="forever")


def test_crystallizing_a_line_needs_its_evidence(cs: CrystalStore) -> None:
    text = "## State\nok\n\n## Patterns\n- bald claim | 3x (2026-05-01)\n\n## Context\nx\n"
    with pytest.raises(ValidationError, match="evidence"):
        cs.crystallize_out(text, "bald claim")


def test_crystallizing_a_name_again_merges(cs: CrystalStore) -> None:
    cs.crystallize("p", text="old wording", level=3, evidence=[("e1", "a")], today=DAY)
    c = cs.crystallize("p", text="new wording", level=2,
                       evidence=[("e1", "a"), ("e2", "b")], today=date(2026, 6, 1))
    assert (c.text, c.level, c.evidence_ids) == ("new wording", 3, ["e1", "e2"])
    assert (c.crystallized_on, c.last_activated_on) == ("2026-05-10", "2026-06-01")
    assert len(cs.list()) == 1


def test_retire_restore_touch(cs: CrystalStore) -> None:
    _seed(cs)
    book = EpisodeBook()
    r = cs.retire("pin_dependencies", kind="superseded", reason="lock files are automatic",
                  today=DAY, store=book)
    assert r.status == "retired" and r.retirement["kind"] == "superseded"
    assert "pin_dependencies" not in [c.name for c in cs.list()]
    assert [c.name for c in cs.list(status="retired")] == ["pin_dependencies"]
    assert len(cs.list(status="all")) == 3
    with pytest.raises(ValidationError, match="retired"):
        cs.retire("pin_dependencies")
    with pytest.raises(ValidationError, match="retired"):
        cs.touch("pin_dependencies")
    with pytest.raises(ValidationError, match="retire kind"):
        cs.retire("retry_with_backoff", kind="bored")
    assert cs.restore("pin_dependencies", store=book).status == "live"
    with pytest.raises(ValidationError, match="nothing to restore"):
        cs.restore("pin_dependencies")
    with pytest.raises(ValidationError, match="no crystal"):
        cs.touch("ghost")
    assert cs.touch("pin_dependencies", today=date(2026, 7, 1)).last_activated_on == "2026-07-01"
    assert [e for e, _, _ in book.audit] == ["crystal_retire", "crystal_restore"]


def test_crystallize_is_audited_without_content(cs: CrystalStore) -> None:
    book = EpisodeBook()
    cs.crystallize("secret_rule", text="the vault password rotates monthly", level=2,
                   evidence=[("ep-9", "rotation happened")], store=book, actor="agent")
    [(event, data, actor)] = book.audit
    assert (event, actor, data["level"], data["evidence"]) == ("crystallize", "agent", 2, ["ep-9"])
    flat = json.dumps(data)
    assert "vault" not in flat and "secret_rule" not in flat
    assert len(data["name_sha256"]) == 16


def test_cue_index_is_one_line_per_live_pattern(cs: CrystalStore) -> None:
    assert cs.cue_index() == ""
    _seed(cs)
    cs.retire("pin_dependencies")
    lines = cs.cue_index().splitlines()
    assert lines == [
        "retry_with_backoff — Retry flaky network calls with exponential backoff;",
        "small_pull_requests — Keep pull requests small so reviews finish the same day.",
    ]
    assert cue_index(cs.path) == cs.cue_index()


def test_crystallize_out_of_a_continuity_text(cs: CrystalStore) -> None:
    raw = ('- Prefer small migrations | 3x (2026-05-01) [evidence: ep-7 "the big schema '
           'migration locked the table"]')
    text = f"## State\nok\n\n## Patterns\n{raw}\n- other thing | 1x (2026-05-01)\n\n## Context\nx\n"
    with pytest.raises(ValidationError, match="no pattern named"):
        cs.crystallize_out(text, "missing pattern")
    with pytest.raises(ValidationError, match="Proven"):
        cs.crystallize_out(text, "other thing")
    res = cs.crystallize_out(text, "prefer  SMALL migrations", today=DAY)
    assert res.removed_lines == [raw]
    assert raw not in res.continuity and "- other thing | 1x" in res.continuity
    assert (res.crystal.name, res.crystal.level, res.crystal.evidence_ids) == (
        "Prefer small migrations", 3, ["ep-7"])
    assert cs.cue_index() == "Prefer small migrations"


def test_crystallize_line_and_remove_it_from_the_continuity(cs: CrystalStore) -> None:
    raw = ('- prefer small migrations | 3x (2026-05-01) [evidence: ep-7 "the big schema '
           'migration locked the table"]')
    continuity = f"## Patterns\n{raw}\n- other thing | 1x (2026-05-01)\n\n## Context\nx\n"
    c = cs.crystallize_line(_Line("prefer small migrations", 3, "2026-05-01",
                                  [("ep-7", "the big schema migration locked the table")], raw),
                            today=DAY)
    assert (c.text, c.graduated_on, c.section) == (
        "prefer small migrations", "2026-05-01", "Patterns")
    left = remove_lines(continuity, [raw])
    assert raw not in left and "- other thing | 1x" in left and "## Context" in left


def test_recall_by_keyword_weights_rare_words(cs: CrystalStore) -> None:
    _seed(cs)
    cs.crystallize("release_notes", text="Write release notes for every release build.",
                   level=2, evidence=[("ep-4", "users missed a breaking change")], today=DAY)
    hits = retrieve_patterns(cs, "the release build failed after a dependency bump")
    # Both share "release build"; only one also has the rarer "dependency".
    assert [h.name for h in hits] == ["pin_dependencies", "release_notes"]
    assert hits[0].matched_words == ["build", "dependency", "release"]
    assert hits[0].score > hits[1].score and hits[0].via == ("keyword",)


def test_strict_mode_needs_more_than_one_common_word(cs: CrystalStore) -> None:
    _seed(cs)
    for i in range(4):
        cs.crystallize(f"ops_{i}", text=f"Deploy step {i} runs the release checklist.",
                       level=2, evidence=[(f"ep-o{i}", "x")], today=DAY)
    # "release" is in over half the crystals: boilerplate in a prompt.
    assert retrieve_patterns(cs, "any news on the release?") == []
    assert retrieve_patterns(cs, "release", mode="query", max_patterns=10)
    # One distinctive word from the name is enough even when strict.
    assert [m.name for m in retrieve_patterns(cs, "tell me about backoff")] == [
        "retry_with_backoff"]
    assert retrieve_patterns(cs, "tell me about exponential") == []
    assert [m.name for m in retrieve_patterns(cs, "exponential", mode="query")] == [
        "retry_with_backoff"]


def test_recall_follows_the_citation_edge(cs: CrystalStore) -> None:
    _seed(cs)
    book = EpisodeBook()
    book.add("ep-1", "The payment gateway timed out three times during the Friday sale.")
    book.add("ep-2", "Upstream yaml parser 6.1 changed its defaults.")
    book.add("ep-3", "Refactor review stalled.")
    query = "what happened with the payment gateway during the sale?"
    assert retrieve_patterns(cs, query) == []
    [hit] = retrieve_patterns(cs, query, store=book)
    assert (hit.name, hit.via, hit.via_episodes) == ("retry_with_backoff", ("citation",), ["ep-1"])
    assert {"payment", "gateway", "sale"} <= set(hit.matched_words)


def test_citation_edge_skips_replaced_and_deleted_episodes(cs: CrystalStore) -> None:
    _seed(cs)
    book = EpisodeBook()
    book.add("ep-1", "The payment gateway timed out during the sale.", superseded_by="ep-99")
    assert retrieve_patterns(cs, "payment gateway sale", store=book) == []
    book.episodes.clear()
    assert retrieve_patterns(cs, "payment gateway sale", store=book) == []


def test_recall_skips_retired_and_changes_nothing(cs: CrystalStore) -> None:
    _seed(cs)
    before = cs.path.read_bytes()
    assert [m.name for m in retrieve_patterns(cs, "backoff")] == ["retry_with_backoff"]
    assert cs.path.read_bytes() == before
    cs.retire("retry_with_backoff")
    assert retrieve_patterns(cs, "backoff", mode="query") == []


def test_recall_arguments(cs: CrystalStore) -> None:
    _seed(cs)
    with pytest.raises(ValidationError, match="recall mode"):
        retrieve_patterns(cs, "backoff", mode="fuzzy")
    assert retrieve_patterns(cs, "") == []
    assert retrieve_patterns(cs, "the and of") == []
    assert retrieve_patterns(cs, "backoff", max_patterns=0) == []
    assert len(retrieve_patterns(cs, "pull requests small reviews backoff retry network",
                                 mode="prompt", max_patterns=1)) == 1
    assert retrieve_patterns(cs, "backoff")[0].to_dict()["via"] == ["keyword"]


def test_corrupt_crystal_file_is_refused(cs: CrystalStore) -> None:
    cs.path.write_text("[]")
    with pytest.raises(SidecarError, match="JSON object"):
        cs.list()
    cs.path.write_text('{"schema_version": 1, "crystals": [1, 2]}')
    with pytest.raises(SidecarError, match="crystals"):
        cs.crystallize("p", text="x", level=2, evidence=[("e", "x")])


def _crystallize_many(path: str, tag: str) -> None:
    store = CrystalStore(path)
    for i in range(25):
        store.crystallize(f"{tag}_{i}", text=f"pattern {tag} {i}", level=2,
                          evidence=[(f"{tag}-ep-{i}", "why")], today=DAY)


@pytest.mark.slow
def test_concurrent_crystallizers_lose_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / "m.db")
    run_processes(_crystallize_many, (path, "a"), (path, "b"))
    assert len(CrystalStore(path).list()) == 50


# --------------------------------------------------------------------------- real store


def test_citation_edge_and_audit_with_the_real_store(tmp_path: Path) -> None:
    from anneal_memory.audit import AuditTrail
    from anneal_memory.store import Store

    with Store(tmp_path / "memory.db") as store:
        gw = store.record("The payment gateway timed out three times during the Friday sale.",
                          "observation")
        other = store.record("Upstream yaml parser changed its defaults.", "observation")
        cs = CrystalStore(store.path)
        cs.crystallize("retry_with_backoff", text="Retry flaky network calls with backoff.",
                       level=3, evidence=[(gw.id, "it timed out three times")], store=store)
        cs.crystallize("pin_dependencies", text="Pin dependencies before a release.", level=2,
                       evidence=[(other.id, "upstream parser changed")], store=store)
        query = "what went wrong with the payment gateway in the sale?"
        [hit] = retrieve_patterns(cs, query, store=store)
        assert (hit.name, hit.via, hit.via_episodes) == ("retry_with_backoff", ("citation",),
                                                         [gw.id])
        # Once the episode is replaced, the edge through it is gone.
        store.record("The payment gateway timed out during the Friday sale, then recovered "
                     "after the provider fix.", "observation", supersedes=[gw.id])
        assert retrieve_patterns(cs, query, store=store) == []
        events = [e for _, e in AuditTrail.iter_entries(store.path)]
        crystal_events = [e for e in events if e["event"] == "crystallize"]
        assert len(crystal_events) == 2
        assert "payment" not in json.dumps(crystal_events)
        assert AuditTrail.verify(store.path).valid


def _continuity(day: str, pattern: str) -> str:
    return (f"## State\nShipping the checkout rewrite ({day}).\n\n## Patterns\n{pattern}\n\n"
            "## Decisions\n- keep the old checkout behind a flag\n\n"
            "## Context\nThe checkout talks to three flaky upstream services.\n")


def test_scenario_graduate_crystallize_and_recall_on_cue(tmp_path: Path) -> None:
    """A pattern earns 3x over three wraps, crystallizes out of the continuity, and a
    question that only matches one of its evidence episodes brings it back."""
    from anneal_memory import Store, prepare_wrap, validated_save_continuity
    from anneal_memory.continuity.parse import pattern_levels

    name = "retry flaky upstream calls with backoff"
    sessions = [
        ("2026-05-01", "The payment gateway timed out three times during the Friday sale.",
         "payment gateway timed out"),
        ("2026-05-02", "The shipping label service returned 503 errors for an hour on Tuesday.",
         "the label service kept failing"),
        ("2026-05-03", "The inventory sync hit a rate limit and dropped updates overnight.",
         "inventory sync rate limit"),
    ]
    with Store(tmp_path / "memory.db") as store:
        cs = CrystalStore(store.path)
        cited = []
        for n, (day, content, why) in enumerate(sessions, start=1):
            ep = store.record(content, "observation")
            cited.append(ep.id)
            pkg = prepare_wrap(store, crystal_store=cs)
            assert pkg["status"] == "ready"
            line = f'- {name} | {n}x ({day}) [evidence: {ep.id} "{why}"] [no-contradicts]'
            validated_save_continuity(store, _continuity(day, line), today=day,
                                      wrap_token=pkg["wrap_token"], crystal_store=cs)
            assert pattern_levels(store.load_continuity())[name] == n

        res = cs.crystallize_from_store(store, name, today="2026-05-04")
        assert res.crystal.level == 3
        # Every rung's grounding episode stays with it, not just this wrap's citation.
        assert res.crystal.evidence_ids == cited
        assert res.crystal.evidence[2]["why"] == "inventory sync rate limit"
        assert name not in (store.load_continuity() or "")
        assert cs.cue_index() == name

        # Recalled on cue: the question shares no word with the pattern, only with the
        # episode behind its second rung.
        question = "anything about those 503 errors on Tuesday?"
        [hit] = retrieve_patterns(cs, question, store=store)
        assert (hit.name, hit.level, hit.via, hit.via_episodes) == (
            name, 3, ("citation",), [cited[1]])
        assert retrieve_patterns(cs, question) == []

        # The next wrap does not treat the crystallized pattern as dropped.
        store.record("Checkout rewrite passed the load test.", "outcome")
        pkg = prepare_wrap(store, crystal_store=cs)
        assert name in pkg["package"]["crystal_index"]
        saved = validated_save_continuity(store, _continuity("2026-05-05", ""), today="2026-05-05",
                                          wrap_token=pkg["wrap_token"], crystal_store=cs)
        assert name not in [o["name"] for o in saved["omitted_patterns"]]


def test_crystallize_from_store_refuses_an_open_wrap_or_no_continuity(tmp_path: Path) -> None:
    from anneal_memory import Store, WrapInProgressError, prepare_wrap

    with Store(tmp_path / "memory.db") as store:
        cs = CrystalStore(store.path)
        with pytest.raises(ValidationError, match="no continuity"):
            cs.crystallize_from_store(store, "anything")
        store.record("The cache warmed in two minutes.", "observation")
        prepare_wrap(store)
        with pytest.raises(WrapInProgressError, match="wrap is open"):
            cs.crystallize_from_store(store, "anything")
    assert not cs.path.exists()


def test_the_crystal_dicts_name_the_crystals_fields(cs: CrystalStore) -> None:
    """CrystalDict and CrystalMapping type asdict's output: a field added to Crystal must
    be named in both."""
    from dataclasses import fields

    def keys(typed: type) -> set[str]:
        return set(typed.__required_keys__) | set(typed.__optional_keys__)  # type: ignore[attr-defined]

    names = [f.name for f in fields(Crystal)]
    assert keys(CrystalDict) == set(names)
    _seed(cs)
    c = cs.get("retry_with_backoff")
    assert c is not None and list(c.to_dict()) == names
    assert set(c.as_mapping()) == keys(CrystalMapping) == set(names) | {"explanation",
                                                                         "evidence_notes"}

