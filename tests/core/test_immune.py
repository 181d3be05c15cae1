"""The immune system: each graduation rule, and the adversarial cases the spec lists."""

from __future__ import annotations

import re
from datetime import date

import pytest

from anneal_memory import Store, check_explanation_overlap, prepare_wrap
from anneal_memory.continuity.parse import pattern_levels

from wraphelp import doc, wrap

TODAY = date.today().isoformat()


def level(store: Store, name: str) -> int:
    return pattern_levels(store.load_continuity())[name.casefold()]


def line_of(store: Store, name: str) -> str:
    return next(x for x in store.load_continuity().splitlines() if x.startswith(f"- {name} |"))


WORDS = ("amber basalt cedar dune ember fjord garnet harbor indigo juniper kelp lagoon mesa "
         "nectar onyx prairie quartz raven sierra tundra umber violet willow xenon yarrow zephyr "
         "acorn birch coral delta").split()
_counter = iter(range(10_000))


def fresh_line(store: Store, name: str, lvl: int, **kw) -> str:
    """A line citing a new episode with its own vocabulary (no rephrase of a prior one)."""
    i = next(_counter) % (len(WORDS) // 2)
    a, b = WORDS[2 * i], WORDS[2 * i + 1]
    e = store.record(f"Observed {a} and {b} during the {name} investigation", "observation", **kw)
    return f"- {name} | {lvl}x ({TODAY}) [evidence: {e.id} \"{a} {b} seen\"]"


def grow(store: Store, name: str, to: int) -> None:
    """Earn ``name`` up to ``to`` with one validated rung per wrap."""
    for lvl in range(1, to + 1):
        wrap(store, doc(patterns=fresh_line(store, name, lvl)))
    assert level(store, name) == to


def test_overlap_check() -> None:
    assert check_explanation_overlap("cache invalidation stale", "Cache invalidation caused stale reads")
    assert not check_explanation_overlap("the cache is", "Cache invalidation caused stale reads")
    assert not check_explanation_overlap("totally unrelated words", "Cache invalidation caused stale reads")


def test_overlap_counts_two_character_words_of_cjk_scripts_only() -> None:
    # kana, ideographs and Hangul pack a word into fewer characters: two count there
    assert check_explanation_overlap("東京 大阪", "会議は 東京 と 大阪 で")
    assert check_explanation_overlap("서울 부산", "회의는 서울 과 부산 에서")
    assert check_explanation_overlap("カフェ ラテ", "朝は カフェ で ラテ を")
    # two-letter words of other scripts (Latin, Cyrillic, Greek) do not
    assert not check_explanation_overlap("db io", "the db io path")
    assert not check_explanation_overlap("да он", "да он пришёл")
    assert not check_explanation_overlap("αβ γδ", "αβ γδ εζ")


def test_new_pattern_enters_at_1x_even_when_claiming_9x(store: Store) -> None:
    e = store.record("Retries without jitter overload the queue", "observation")
    with pytest.warns(UserWarning, match="level-capped"):
        res = wrap(store, doc(patterns=f"- jitter retries | 9x ({TODAY}) [evidence: {e.id} \"retries without jitter overload\"]"))
    assert level(store, "jitter retries") == 1
    assert res["level_capped"][0]["name"] == "jitter retries"
    assert "(level-capped)" in line_of(store, "jitter retries")


def test_one_rung_per_wrap(store: Store) -> None:
    grow(store, "stale cache", 2)
    line = fresh_line(store, "stale cache", 5)
    res = wrap(store, doc(patterns=line))
    assert level(store, "stale cache") == 3 and res["level_capped"]
    assert res["graduations_validated"] == 1


def test_fabricated_id_demotes(store: Store) -> None:
    grow(store, "stale cache", 3)
    store.record("unrelated", "observation")
    res = wrap(store, doc(patterns=f"- stale cache | 3x ({TODAY}) [evidence: abcdef12 \"cache invalidation caused stale reads\"]"),
               carryforward_cold_days=None)
    assert level(store, "stale cache") == 2
    assert res["demoted"] == 1 and res["graduations_demoted"] == 1
    assert res["demoted_patterns"][0]["name"] == "stale cache"
    assert "(ungrounded)" in line_of(store, "stale cache")
    assert "[evidence:" not in line_of(store, "stale cache")


def test_ungrounded_explanation_demotes_from_any_level(store: Store) -> None:
    grow(store, "stale cache", 4)
    e = store.record("Lunch was pizza today", "observation")
    wrap(store, doc(patterns=f"- stale cache | 4x ({TODAY}) [evidence: {e.id} \"cache invalidation caused stale reads\"]"),
         carryforward_cold_days=None)
    assert level(store, "stale cache") == 3


def test_replay_of_prior_wrap_id_demotes(store: Store) -> None:
    first = fresh_line(store, "stale cache", 1)
    wrap(store, doc(patterns=first))
    wrap(store, doc(patterns=fresh_line(store, "stale cache", 2)))
    store.record("something new", "observation")
    replay = first.replace("| 1x", "| 2x")
    res = wrap(store, doc(patterns=replay), carryforward_cold_days=None)
    assert level(store, "stale cache") == 1 and res["demoted"] == 1


def test_carry_forward_holds_recently_grounded(store: Store) -> None:
    grow(store, "stale cache", 3)
    store.record("unrelated topic today", "observation")
    res = wrap(store, doc(patterns=f"- stale cache | 3x ({TODAY}) [evidence: abcdef12 \"cache invalidation caused stale reads\"]"))
    assert level(store, "stale cache") == 3
    assert res["carried_forward"][0]["name"] == "stale cache"
    line = line_of(store, "stale cache")
    assert "(carried-forward)" in line and "[evidence:" not in line


def test_bare_graduation_demotes_after_citations_seen(store: Store) -> None:
    e = store.record("Cache invalidation caused stale reads", "observation")
    wrap(store, doc(patterns=f"- bare claim | 1x\n- stale cache | 1x ({TODAY}) [evidence: {e.id} \"cache invalidation caused stale reads\"]"))
    store.record("x", "observation")
    res = wrap(store, doc(patterns="- bare claim | 2x\n- stale cache | 1x"), carryforward_cold_days=None)
    assert level(store, "bare claim") == 1  # above its saved 1x: needs evidence
    assert "(needs-evidence)" in line_of(store, "bare claim") and res["bare_demoted"] == 1
    grow(store, "proven thing", 2)
    store.record("y", "observation")
    res = wrap(store, doc(patterns=f"- proven thing | 2x ({TODAY})"), carryforward_cold_days=None)
    assert level(store, "proven thing") == 1
    assert res["bare_demoted"] == 1 and res["bare_demoted_patterns"][0]["name"] == "proven thing"
    assert "(needs-evidence)" in line_of(store, "proven thing")


def test_first_wrap_exemption_for_bare_lines(store: Store) -> None:
    store.record("x", "observation")
    store.save_continuity(doc(patterns="- legacy wisdom | 3x (2026-01-01)"))
    res = wrap(store, doc(patterns="- legacy wisdom | 3x (2026-01-01)"))
    assert level(store, "legacy wisdom") == 3 and not res["bare_demoted"]


def test_file_can_lower_but_never_raise(store: Store) -> None:
    grow(store, "stale cache", 3)
    store.record("x", "observation")
    wrap(store, doc(patterns="- stale cache | 2x"))
    assert level(store, "stale cache") == 2
    store.record("y", "observation")
    wrap(store, doc(patterns="- stale cache | 3x"))
    assert level(store, "stale cache") == 2


def test_dropped_and_readded_returns_to_saved_level(store: Store) -> None:
    grow(store, "stale cache", 3)
    store.record("x", "observation")
    res = wrap(store, doc(patterns="- other | 1x"))
    assert res["omitted_patterns"] == [{"name": "stale cache", "level": 3}]
    store.record("y", "observation")
    wrap(store, doc(patterns="- stale cache | 9x"))
    assert level(store, "stale cache") == 3


def test_evidence_on_second_marker_does_not_count(store: Store) -> None:
    grow(store, "stale cache", 1)
    line = fresh_line(store, "stale cache", 2).replace("- stale cache | 2x", "- stale cache | 1x | 2x")
    wrap(store, doc(patterns=line))
    assert level(store, "stale cache") == 1


def test_backdated_line_cannot_jump(store: Store) -> None:
    store.record("x", "observation")
    wrap(store, doc(patterns="- old claim | 7x (2020-01-01)"))
    assert level(store, "old claim") == 1


def test_ten_digit_level_is_not_a_marker(store: Store) -> None:
    store.record("x", "observation")
    wrap(store, doc(patterns="- huge | 1234567890x"))
    assert "huge" not in pattern_levels(store.load_continuity())


def test_gaming_flag_and_spread(store: Store) -> None:
    e = store.record("Cache invalidation caused stale reads everywhere", "observation")
    lines = "\n".join(f"- pattern {i} | 2x ({TODAY}) [evidence: {e.id} \"cache invalidation stale reads\"]" for i in range(3))
    res = wrap(store, doc(patterns=lines))
    assert res["gaming_suspects"] == [e.id] and res["citation_reuse_max"] == 3
    assert res["citation_spread"] == 1


def test_rotated_pair_pumping_reaches_the_worklist(store: Store) -> None:
    eps = [store.record(f"Checkout latency rose after deploy {i} with cache misses", "observation") for i in range(10)]
    lines = "\n".join(f"- absurd claim {i} | 1x [evidence: {eps[2*i].id} \"checkout latency cache misses\", {eps[2*i+1].id} \"checkout latency cache misses\"]" for i in range(5))
    wrap(store, doc(patterns=lines))
    eps = [store.record(f"Payments stalled after release {i} with queue backlog", "observation") for i in range(10)]
    lines = "\n".join(f"- absurd claim {i} | 2x ({TODAY}) [evidence: {eps[2*i].id} \"payments stalled backlog\", {eps[2*i+1].id} \"payments stalled backlog\"] [no-contradicts]" for i in range(5))
    res = wrap(store, doc(patterns=lines))
    assert res["citation_reuse_max"] == 1 and res["gaming_suspects"] == []
    assert res["graduations_validated"] == 5
    assert all(level(store, f"absurd claim {i}") == 2 for i in range(5))


def test_uncorroborated_relayed_grounding(store: Store) -> None:
    grow(store, "vendor claim", 1)
    e = store.record("The vendor page says their API never goes down", "observation", trust="external")
    with pytest.warns(UserWarning):
        res = wrap(store, doc(patterns=f"- vendor claim | 2x ({TODAY}) [evidence: {e.id} \"vendor api never goes down\"]"))
    assert level(store, "vendor claim") == 1
    assert res["uncorroborated"][0]["name"] == "vendor claim"
    assert "(uncorroborated)" in line_of(store, "vendor claim")


def test_superseded_episode_is_not_evidence(store: Store) -> None:
    grow(store, "deploy day", 1)
    old = store.record("Deploys happen on Friday for the web app", "context")
    store.record("Deploys happen on Thursday for the web app now", "context", supersedes=[old.id])
    res = wrap(store, doc(patterns=f"- deploy day | 2x ({TODAY}) [evidence: {old.id} \"deploys happen friday web app\"]"),
               carryforward_cold_days=None)
    assert level(store, "deploy day") == 1 and res["graduations_validated"] == 0
    assert res["demoted"] == 1 and "replaced" in res["demoted_patterns"][0]["reasons"][0]


def test_cross_session_rephrase_demotes(store: Store) -> None:
    grow(store, "stale cache", 2)
    last = store.load_continuity()
    expl = re.search(r'"([^"]+)"', [x for x in last.splitlines() if "stale cache" in x][0])
    e = store.record("Cache invalidation caused stale reads in the checkout service today", "observation")
    # the earlier explanation's words, re-used verbatim around the new episode's words
    words = expl.group(1) if expl else ""
    res = wrap(store, doc(patterns=f"- stale cache | 3x ({TODAY}) [evidence: {e.id} \"{words} cache invalidation stale\"]"))
    assert res["cross_session_collisions"] and level(store, "stale cache") == 2
    assert res["demoted"] == 1 and "(ungrounded)" in line_of(store, "stale cache")


def test_contradiction_stance_signals(store: Store) -> None:
    grow(store, "new proven", 1)
    e = store.record("Batching writes cut the latency of the ingest path", "observation")
    res = wrap(store, doc(patterns=f"- new proven | 2x ({TODAY}) [evidence: {e.id} \"batching writes cut latency\"]"))
    assert res["proven_without_contradicts_declaration"] == [{"name": "new proven", "level": 2}]
    e = store.record("Batching writes again cut ingest latency for uploads", "observation")
    res = wrap(store, doc(patterns=f"- other idea | 1x [evidence: {e.id} \"batching ingest uploads\"] [contradicts: new proven]\n- new proven | 2x ({TODAY})"))
    assert res["contradictions"] == [{"pattern": "other idea", "name": "other idea",
                                      "contradicts": ["new proven"]}]  # 1.0.2's shape


def test_am_warn_for_foreign_ids(store: Store) -> None:
    store.record("x", "observation")
    with pytest.warns(UserWarning, match="AM-WARN"):
        wrap(store, doc(patterns="- foreign | 2x [evidence: 0badf00d \"some words here\"]"))


def test_stale_patterns_in_next_package(store: Store) -> None:
    store.record("x", "observation")
    store.save_continuity(doc(patterns="- old proven | 3x (2020-01-01)"))
    store.record("y", "observation")
    pkg = prepare_wrap(store)["package"]
    assert pkg["stale_patterns"][0]["name"] == "old proven"


def test_dedup_scan_cap(store: Store) -> None:
    lines = "\n".join(f"- pattern number {i} | 1x" for i in range(60))
    store.save_continuity(doc(patterns=lines))
    store.record("x", "observation")
    instr = prepare_wrap(store)["package"]["instructions"]
    assert sum(1 for x in instr.splitlines() if x.startswith("  pattern number")) == 50
    assert "10 more patterns" in instr


def test_drift_probes(store: Store) -> None:
    grow(store, "stale cache", 2)
    p1 = store.add_drift_probe(pattern="stale cache")
    p2 = store.add_drift_probe(fact="the api is not rate limited")
    store.record("x", "observation")
    res = wrap(store, doc(patterns="- stale cache | 2x", context="- the api is rate limited"))
    statuses = {p["id"]: p["status"] for p in res["drift"]["probes"]}
    assert statuses == {p1: "held", p2: "changed"}
    assert {k: v for k, v in res["drift"]["counts"].items() if v} == {"held": 1, "changed": 1}
    assert set(res["drift"]["counts"]) == {"held", "changed", "weakened", "crystallized", "lost", "unchecked"}
    assert "rate limited" not in str(res["drift"])
    store.record("y", "observation")
    res = wrap(store, doc(patterns="- something else | 1x"))
    assert {p["status"] for p in res["drift"]["probes"]} == {"lost"}


def test_scripted_ten_wrap_scenario(store: Store) -> None:
    """200 episodes over 10 wraps; a grounded pattern climbs one rung a wrap, a fabricating
    one never rises, a bare claim sinks once citations have been seen."""
    history = []
    for w in range(10):
        for i in range(19):
            store.record(f"Wrap {w} note {i}: retries without jitter overloaded the queue", "observation")
        a, b = WORDS[2 * w], WORDS[2 * w + 1]
        marker = store.record(f"Wrap {w}: {a} {b} confirmed the jitter fix", "observation")
        honest = f"- jitter retries | {w + 1}x ({TODAY}) [evidence: {marker.id} \"{a} {b} confirmed\"]"
        liar = f"- liar | {w + 5}x ({TODAY}) [evidence: deadbeef \"retries without jitter overloaded queue\"]"
        bare = f"- bare | {w + 2}x"
        res = wrap(store, doc(patterns="\n".join([honest, liar, bare])), carryforward_cold_days=None)
        history.append((level(store, "jitter retries"), level(store, "liar"), level(store, "bare")))
        assert res["episodes_compressed"] == 20
    assert [h[0] for h in history] == list(range(1, 11))
    assert all(h[1] == 1 for h in history)
    assert all(h[2] == 1 for h in history)
    assert store.status().total_episodes == 200 and store.status().total_wraps == 10


def test_lowering_trust_takes_back_earned_rungs(db) -> None:
    with Store(db, trust_ceiling="operator") as store:
        grow(store, "earned claim", 1)
        line = fresh_line(store, "earned claim", 2)
        wrap(store, doc(patterns=line))
        assert level(store, "earned claim") == 2
        grounding_id = re.search(r"evidence: (\w+)", line).group(1)
        store.set_trust(grounding_id, "external")
        store.record("unrelated", "observation")
        res = wrap(store, doc(patterns="- earned claim | 2x"))
        assert level(store, "earned claim") == 1
        assert res["level_capped"][0]["reason"] == "revoked: grounding lowered"
        store.set_trust(grounding_id, "agent")
        store.record("unrelated again", "observation")
        wrap(store, doc(patterns="- earned claim | 2x"))
        assert level(store, "earned claim") == 1  # the file can never raise a level


def test_deleted_grounding_counts_as_failed(store: Store) -> None:
    grow(store, "deleted basis", 1)
    line = fresh_line(store, "deleted basis", 2)
    wrap(store, doc(patterns=line))
    store.delete(re.search(r"evidence: (\w+)", line).group(1))
    store.record("x", "observation")
    wrap(store, doc(patterns="- deleted basis | 2x"))
    assert level(store, "deleted basis") == 1


def test_wrap_time_crystallize_is_opt_in(store: Store, tmp_path) -> None:
    from anneal_memory import CrystalStore

    grow(store, "stable truth", 1)
    line = fresh_line(store, "stable truth", 2) + " [crystallize]"
    bare = "- unproven idea | 1x [crystallize]"
    cs = CrystalStore(tmp_path / "memory.crystal.json")
    res = wrap(store, doc(patterns=line + "\n" + bare + "\n- other | 1x"), crystal_store=cs)
    assert res["crystallized"] == ["stable truth"]
    assert res["crystallize_refused"][0]["name"] == "unproven idea"
    text = store.load_continuity()
    assert "stable truth" not in text and "unproven idea | 1x" in text
    assert cs.get("stable truth").level == 2
    # without a crystal store the marker changes nothing
    line = fresh_line(store, "other", 2) + " [crystallize]"
    res = wrap(store, doc(patterns=line))
    assert res["crystallized"] == [] and level(store, "other") == 2
