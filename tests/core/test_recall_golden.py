"""Recall's results do not change when its cost does (issue 54 goal 3): a store of a few
thousand varied episodes (six types, the root and two namespaces, conversations with
questions and replies, dates, irregular forms, possessives, accents, replaced episodes)
is asked phrases, words, whole questions and typed queries at limits 1, 10 and 50, and
every answer (ids in order, the count, how it matched, why each episode is there, and
``retrieve_relevant``'s ids and scores) must equal the golden file computed by the code
before the speed work (tests/core/data/recall_golden.json).

Regenerate only for an intended ranking change:
``python tests/core/test_recall_golden.py --write`` (with the package to record from).
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from anneal_memory import Store, retrieve_relevant

GOLDEN = Path(__file__).parent / "data" / "recall_golden.json"
SEED = 5413
EPISODES = 3000

_NAMES = ["Caroline", "Melanie", "Jon", "Gina", "Nate", "Joanna", "Audrey", "Andrew",
          "Zoë", "José"]
_COMMON = ("i you my your we our it the a an and to of in on at for with about that this "
           "was is are be been have had do did go went gone going just really so very "
           "like love think know feel felt make made get got take took see saw say said "
           "time day week weekend month year today yesterday last next ago lately").split()
_TOPICS = ("meteor shower camping trip painting pottery class guitar violin piano "
           "concert book novel library garden roses tomatoes dog puppy cat hiking trail "
           "mountain lake beach sunset marathon race bike pizza pasta bakery café recipe "
           "job interview promotion startup database migration server outage deadline "
           "budget tax filing dentist doctor yoga meditation museum exhibit photography "
           "camera festival parade adoption agency counseling workshop charity volunteer "
           "school kids children daughter son family parents sister brother friends "
           "support group identity journey transition pride courage naïve résumé "
           "sculpture mural canvas sketch poem poetry song album band drums").split()
_ADJ = ("amazing great awful happy sad proud excited nervous calm tired lovely "
        "beautiful huge tiny old new quiet loud bright").split()
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December"]
_TYPES = [("observation", 50), ("decision", 15), ("question", 10), ("outcome", 10),
          ("tension", 8), ("context", 7)]


def _pick(rng: random.Random, items: list[str], skew: float = 1.2) -> str:
    """An item, the first ones likelier (a Zipf-like draw from ``rng.random()`` only,
    whose sequence every Python version keeps)."""
    return items[min(len(items) - 1, int(len(items) * rng.random() ** (1 + skew)))]


def _weighted(rng: random.Random, pairs: list[tuple[str, int]]) -> str:
    x = rng.random() * sum(w for _v, w in pairs)
    for value, w in pairs:
        x -= w
        if x < 0:
            return value
    return pairs[-1][0]


def _sentence(rng: random.Random) -> str:
    n = 6 + int(rng.random() * 22)
    words: list[str] = []
    for _ in range(n):
        r = rng.random()
        if r < 0.55:
            words.append(_pick(rng, _COMMON))
        elif r < 0.8:
            words.append(_pick(rng, _TOPICS, 0.6))
        elif r < 0.9:
            words.append(_pick(rng, _ADJ))
        elif r < 0.96:
            name = _pick(rng, _NAMES, 0.5)
            words.append(name + ("'s" if rng.random() < 0.3 else ""))
        else:
            m = _pick(rng, _MONTHS, 0.2)
            words.append(f"in {m}" if rng.random() < 0.5
                         else f"on {1 + int(rng.random() * 28)} {m}, 2023")
    text = " ".join(words)
    text = text[0].upper() + text[1:]
    return text + ("?" if rng.random() < 0.18 else "!" if rng.random() < 0.1 else ".")


def corpus() -> list[dict[str, Any]]:
    """The episodes, in recording order: conversations of 3-30 turns a minute or two
    apart, hours to days between them, each episode in the root or one of two namespaces."""
    rng = random.Random(SEED)
    t = datetime(2023, 1, 3, 9, 0, tzinfo=timezone.utc)
    out: list[dict[str, Any]] = []
    while len(out) < EPISODES:
        turns = 3 + int(rng.random() * 28)
        space = _weighted(rng, [("", 3), ("alice", 2), ("bob", 1)])
        for _ in range(turns):
            t += timedelta(seconds=20 + int(rng.random() * 160))
            out.append({"content": _sentence(rng), "episode_type": _weighted(rng, _TYPES),
                        "timestamp": t.isoformat(), "space": space})
        t += timedelta(hours=2 + int(rng.random() * 70))
    return out[:EPISODES]


def queries(episodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The cases: phrases (spans of stored episodes), words of different episodes, whole
    questions, made-up words; each in a namespace, some typed, at limits 1/10/50."""
    rng = random.Random(SEED + 1)
    cases: list[dict[str, Any]] = []

    def words_of(i: int) -> list[str]:
        return [w.strip(".?!,") for w in episodes[i]["content"].split()]

    def any_ep() -> int:
        return int(rng.random() * len(episodes))

    for _n in range(60):
        ws = words_of(any_ep())
        k = 1 + int(rng.random() * 3)
        s = int(rng.random() * max(1, len(ws) - k))
        cases.append({"kind": "phrase", "q": " ".join(ws[s:s + k])})
    for _n in range(60):
        picked = []
        for _ in range(2 + int(rng.random() * 2)):
            ws = [w for w in words_of(any_ep()) if len(w) > 3]
            if ws:
                picked.append(ws[int(rng.random() * len(ws))])
        cases.append({"kind": "words", "q": " ".join(picked)})
    templates = ["What did {n} say about the {t}?", "When did {n} go to the {t}?",
                 "How did {n} feel about the {t} {t2}?", "Which {t} does {n} like?",
                 "What kind of {t} did {n} make last week?", "Did {n} enjoy the {t} in {m}?",
                 "What happened on {d} {m}, 2023 at the {t}?", "Why was {n}'s {t} {a}?",
                 "How long ago did {n} start {t}?", "What year did {n} visit the {t}?"]
    for n in range(70):
        tpl = templates[n % len(templates)]
        cases.append({"kind": "question", "q": tpl.format(
            n=_pick(rng, _NAMES, 0.3), t=_pick(rng, _TOPICS, 0.3), t2=_pick(rng, _TOPICS, 0.3),
            m=_pick(rng, _MONTHS, 0.1), d=1 + int(rng.random() * 28), a=_pick(rng, _ADJ))})
    cases += [{"kind": "none", "q": q} for q in ("zzqv plorth", "xylophagous quuxes")]
    out = []
    for i, c in enumerate(cases):
        c = dict(c)
        c["space"] = ("", "alice", "bob")[i % 3]
        c["limit"] = (10, 1, 50, 10)[i % 4]
        c["offset"] = 10 if i % 11 == 0 else 0
        if i % 5 == 1:
            c["type"] = "decision"
        elif i % 7 == 3:
            c["type"] = "observation"
        c["context"] = i % 13 != 6
        out.append(c)
    return out


def build(path: Path) -> dict[str, str]:
    """The store at ``path`` with the corpus recorded (a few replaced by later
    episodes); returns each episode id's label (its place in recording order)."""
    episodes = corpus()
    labels: dict[str, str] = {}
    store = Store(path, project_name="golden")
    try:
        views: dict[str, Any] = {"": store, "alice": store.scoped({"user": "alice"}),
                                 "bob": store.scoped({"user": "bob"})}
        for start in range(0, len(episodes), 500):
            chunk = episodes[start:start + 500]
            by_space: dict[str, list[tuple[int, dict[str, Any]]]] = {}
            for j, e in enumerate(chunk, start):
                by_space.setdefault(e["space"], []).append((j, e))
            # one record_many per namespace, in order within it (ids follow their rows)
            for space, items in by_space.items():
                got = views[space].record_many(
                    [{k: v for k, v in e.items() if k != "space"} for _j, e in items])
                labels.update({ep.id: f"e{j}" for (j, _e), ep in zip(items, got)})
        # replaced episodes: retrieve_relevant swaps a hit for its replacement
        rng = random.Random(SEED + 2)
        ids = list(labels)
        for n in range(40):
            old = ids[int(rng.random() * len(ids))]
            if labels[old] in {labels[i] for i in ids[-n:]}:
                continue
            space = episodes[int(labels[old][1:])]["space"]
            new = views[space].record(f"Update {n}: " + episodes[int(labels[old][1:])]["content"],
                                      "decision", supersedes=[old],
                                      timestamp=datetime(2024, 6, 1, 12, n, tzinfo=timezone.utc))
            labels[new.id] = f"r{n}"
    finally:
        store.close()
    return labels


def answers(path: Path, labels: dict[str, str]) -> Iterator[dict[str, Any]]:
    """Every case's answers, ids as labels."""
    episodes = corpus()
    store = Store(path, project_name="golden")
    try:
        views: dict[str, Any] = {"": store, "alice": store.scoped({"user": "alice"}),
                                 "bob": store.scoped({"user": "bob"})}
        lab: Callable[[str], str] = lambda i: labels.get(i, "?")  # noqa: E731
        for c in queries(episodes):
            view = views[c["space"]]
            r = view.recall(keyword=c["q"], limit=c["limit"], offset=c["offset"],
                            episode_type=c.get("type"), context=c["context"])
            why = {lab(k): (v if not v.startswith("next to ") else "next to " + lab(v[8:]))
                   for k, v in (r.query_params.get("why") or {}).items()}
            got = {"case": c, "ids": [lab(e.id) for e in r.episodes],
                   "total": r.total_matching, "match": r.query_params.get("match"),
                   "why": why, "word_matches": r.query_params.get("word_matches"),
                   "context_ranked": r.query_params.get("context_ranked")}
            if c["kind"] in ("question", "words") and c["offset"] == 0:
                rel = retrieve_relevant(view, None, c["q"], max_episodes=min(c["limit"], 10),
                                        episode_type=c.get("type"), context=c["context"])
                got["relevant"] = [[lab(e.id), e.score, [lab(x.id) for x in e.replaces]]
                                   for e in rel.episodes]
            yield got
    finally:
        store.close()


def compute(tmp: Path) -> list[dict[str, Any]]:
    db = tmp / "golden.db"
    return list(answers(db, build(db)))


def test_recall_answers_equal_the_golden_file(tmp_path: Path) -> None:
    want = json.loads(GOLDEN.read_text(encoding="utf-8"))
    got = compute(tmp_path)
    assert len(got) == len(want)
    diffs = []
    for g, w in zip(got, want):
        g_rel, w_rel = g.pop("relevant", []), w.pop("relevant", [])
        if g != w or [[i, r] for i, _s, r in g_rel] != [[i, r] for i, _s, r in w_rel]:
            diffs.append((g["case"], g, w, g_rel, w_rel))
        elif any(abs(a[1] - b[1]) > 1e-5 * max(1.0, abs(b[1])) for a, b in zip(g_rel, w_rel)):
            diffs.append((g["case"], g_rel, w_rel))
    assert not diffs, f"{len(diffs)} of {len(want)} answers changed; first: {diffs[0]}"


def test_the_golden_cases_cover_every_path() -> None:
    """The file exercises what it guards: phrase and word answers, context, typed and
    namespaced queries, pages of 1 and 50, replaced hits swapped in."""
    want = json.loads(GOLDEN.read_text(encoding="utf-8"))
    matches = {w["match"] for w in want}
    assert {"phrase", "words"} <= matches
    assert any(w["context_ranked"] for w in want)
    assert any(len(w["ids"]) == 50 for w in want) and any(len(w["ids"]) == 1 for w in want)
    assert any("next to" in v for w in want for v in w["why"].values())
    assert any(r for w in want for _i, _s, r in w.get("relevant", []))
    assert {w["case"]["space"] for w in want if w["ids"]} == {"", "alice", "bob"}
    assert any(w["case"].get("type") and w["ids"] for w in want)


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: test_recall_golden.py --write")
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        data = compute(Path(d))
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(json.dumps(data, indent=0, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {len(data)} answers to {GOLDEN}")
