"""LoCoMo retrieval quality through the public API: recall@5, recall@10, hit@10.

Each turn is one episode; each question with evidence is asked as it is written,
once through ``store.recall(keyword=question)`` (what an adapter passes) and once
through ``retrieve_relevant``. A question scores the share of its evidence turns that
come back in the top k. Nothing here looks at individual questions.
"""

from __future__ import annotations

import datetime as dt
import inspect
import json
import os
import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop",
              5: "adversarial"}
_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")
_SESSION = re.compile(r"session_(\d+)")


@dataclass
class Turn:
    dia_id: str
    content: str
    timestamp: str | None
    speaker: str = ""


@dataclass
class Question:
    text: str
    category: int
    evidence: frozenset[str]


@dataclass
class Conversation:
    name: str
    turns: list[Turn] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)


def parse_evidence(items: list[str]) -> frozenset[str]:
    """Normalise evidence ids; the data has a few malformed ones (``D:11:26``, ``D8:6; D9:17``)."""
    found: set[str] = set()
    for item in items:
        for session, turn in _EVIDENCE.findall(str(item)):
            found.add(f"D{int(session)}:{int(turn)}")
    return frozenset(found)


def parse_session_time(text: str) -> dt.datetime | None:
    """``'1:56 pm on 8 May, 2023'`` -> a UTC datetime, or None when unparseable."""
    try:
        return dt.datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(
            tzinfo=dt.timezone.utc)
    except ValueError:
        return None


def load(path: str | os.PathLike[str]) -> Conversation:
    """One LoCoMo file as turns (in session order) and questions with evidence."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    conv_data = data.get("conversation", data)
    conv = Conversation(name=Path(path).stem)
    sessions = sorted(
        (int(m.group(1)), key) for key in conv_data
        if (m := _SESSION.fullmatch(key)) and isinstance(conv_data[key], list))
    for number, key in sessions:
        start = parse_session_time(str(conv_data.get(f"session_{number}_date_time", "")))
        for i, turn in enumerate(conv_data[key]):
            content = str(turn.get("text", ""))
            if turn.get("blip_caption"):
                content = f"{content} [shared an image: {turn['blip_caption']}]"
            # One second per turn keeps the order within a session.
            stamp = (start + dt.timedelta(seconds=i)).strftime("%Y-%m-%dT%H:%M:%SZ") \
                if start else None
            conv.turns.append(Turn(str(turn["dia_id"]), content, stamp,
                                   str(turn.get("speaker", ""))))
    for qa in data.get("qa", []):
        evidence = parse_evidence(qa.get("evidence") or [])
        if evidence:
            conv.questions.append(Question(str(qa["question"]), int(qa["category"]), evidence))
    return conv


def score(ranked: list[str], evidence: frozenset[str]) -> dict[str, float]:
    """recall@5, recall@10 and hit@10 of one ranked list of dia_ids."""
    top5, top10 = set(ranked[:5]), set(ranked[:10])
    return {
        "recall@5": len(evidence & top5) / len(evidence),
        "recall@10": len(evidence & top10) / len(evidence),
        "hit@10": 1.0 if evidence & top10 else 0.0,
    }


def aggregate(rows: list[tuple[int, dict[str, float]]]) -> dict[str, Any]:
    """Mean of each metric overall and per category, with question counts."""
    def mean(group: list[dict[str, float]]) -> dict[str, float]:
        out: dict[str, float] = {"questions": float(len(group))}
        for metric in ("recall@5", "recall@10", "hit@10"):
            out[metric] = sum(r[metric] for r in group) / len(group) if group else 0.0
        return out

    per_cat = {}
    for cat, name in CATEGORIES.items():
        group = [r for c, r in rows if c == cat]
        if group:
            per_cat[f"{cat} {name}"] = mean(group)
    return {"overall": mean([r for _, r in rows]), "by_category": per_cat}


_WORD = re.compile(r"[^\W_]+")
#: words too common to say two texts share a topic (the benchmark's own list, so the
#: same count applies to every package measured)
_COMMON = frozenset("""a an the and or but if of to in on at by for with from as is are was
were be been being do does did have has had i you he she it we they me him her us them my
your his its our their this that these those what which who whom when where why how not no
so than then there here just about into over after before up down out off again very can
will would should could may might must shall also too any some such own same other more most
all each few both only s t don""".split())


def shares_no_word(question: str, content: str) -> bool:
    """Whether a returned text has none of the question's words (case-folded, the
    commonest English words left out): noise, for a question whose phrase is absent."""
    q = {w for w in (x.casefold() for x in _WORD.findall(question)) if w not in _COMMON}
    c = {x.casefold() for x in _WORD.findall(content)}
    return not (q & c)


def _methods(am: Any) -> dict[str, Callable[[Any, str], list[str]]]:
    """Retrieval calls under test, each returning ranked episode ids."""
    def keyword(store: Any, q: str) -> list[str]:
        return [e.id for e in store.recall(keyword=q, limit=10).episodes]

    def scored(store: Any, q: str) -> list[str]:
        return [e.id for e in am.retrieve_relevant(store, None, q, max_episodes=10).episodes]

    methods = {"recall(keyword=question)": keyword, "retrieve_relevant": scored}
    # The published package also has an explicit-question mode; ours may not. Reported
    # as an extra row so the comparison with the default call stays like for like.
    if "mode" in inspect.signature(am.retrieve_relevant).parameters:
        def scored_query(store: Any, q: str) -> list[str]:
            return [e.id for e in am.retrieve_relevant(
                store, None, q, max_episodes=10, mode="query").episodes]
        methods["retrieve_relevant(mode='query')"] = scored_query
    return methods


def run(am: Any, locomo_dir: str, workdir: str | None = None) -> dict[str, Any]:
    """Record every conversation in its own store and score every method."""
    files = sorted(Path(locomo_dir).glob("*.json"))
    if not files:
        raise FileNotFoundError(f"no LoCoMo JSON files in {locomo_dir}")
    methods = _methods(am)
    rows: dict[str, list[tuple[int, dict[str, float]]]] = {m: [] for m in methods}
    seconds: dict[str, float] = {m: 0.0 for m in methods}
    returned: dict[str, int] = {m: 0 for m in methods}
    unrelated: dict[str, int] = {m: 0 for m in methods}
    turns = 0
    for path in files:
        conv = load(path)
        with tempfile.TemporaryDirectory(dir=workdir) as tmp:
            store = am.Store(os.path.join(tmp, "locomo.db"), project_name="locomo")
            try:
                to_dia: dict[str, str] = {}
                text_of: dict[str, str] = {}
                for t in conv.turns:
                    ep = store.record(t.content, "observation", source="conversation",
                                      metadata={"dia_id": t.dia_id, "conversation": conv.name},
                                      timestamp=t.timestamp)
                    to_dia[ep.id] = t.dia_id
                    text_of[ep.id] = t.content
                turns += len(conv.turns)
                for q in conv.questions:
                    for name, call in methods.items():
                        t0 = time.perf_counter()
                        ids = call(store, q.text)
                        seconds[name] += time.perf_counter() - t0
                        returned[name] += len(ids)
                        unrelated[name] += sum(shares_no_word(q.text, text_of.get(i, ""))
                                               for i in ids)
                        ranked = [to_dia.get(i, i) for i in ids]
                        rows[name].append((q.category, score(ranked, q.evidence)))
            finally:
                store.close()
    out: dict[str, Any] = {"conversations": [p.stem for p in files], "turns": turns,
                           "methods": {}}
    for name in methods:
        n = len(rows[name])
        res = aggregate(rows[name])
        res["mean_returned"] = returned[name] / n if n else 0.0
        # the questions' phrases are absent from the store: what comes back sharing no
        # word with the question is noise (or context that outranked a match)
        res["mean_sharing_no_word"] = unrelated[name] / n if n else 0.0
        res["mean_ms"] = 1000.0 * seconds[name] / n if n else 0.0
        out["methods"][name] = res
    return out
