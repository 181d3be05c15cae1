"""The ``continuity_saved`` event handed to ``Store(on_audit_event=...)`` carries the
dropped durable line's text, as 1.0.2 handed it (issue 51 item 5); what is written to the
audit files and the database's copy stays a salted hash, and the trail verifies."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from anneal_memory import AuditTrail, Store, StoreError, prepare_wrap, validated_save_continuity

from wraphelp import doc, fail_commits, wrap

FACT = "- tree nut allergy, keep restaurants aware"
KEPT = "- works night shifts on weekends"


def _two_wraps(s: Store) -> None:
    s.record("the user mentioned a tree nut allergy", "observation")
    wrap(s, doc(durable=f"{FACT}\n{KEPT}"))
    s.record("the user works night shifts", "observation")
    with pytest.warns(UserWarning, match="dropped by marker"):
        wrap(s, doc(durable=f"{KEPT}\n[drop-durable: {FACT[2:]}]"))


def test_the_callback_gets_the_text_the_trail_keeps_hashed(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    db = tmp_path / "m.db"
    with Store(db, on_audit_event=seen.append) as s:
        _two_wraps(s)
        stored = [e for e in s.audit_trail.entries() if e["event"] == "continuity_saved"]
        hashed = s.audit_trail.hash_content(FACT)
    saved = [e for e in seen if e["event"] == "continuity_saved"]
    assert [e["data"].get("durable_dropped") for e in saved] == [None, [FACT]]
    # the database's copy and the files: the hash only, never the text
    assert [e["data"].get("durable_dropped") for e in stored] == [None, [hashed]]
    files = (tmp_path / "m.audit.jsonl").read_text("utf-8")
    assert "tree nut" not in files and hashed in files
    assert "tree nut" not in json.dumps(stored)
    # the callback's copy is the stored entry otherwise (same seq and hash) ...
    assert saved[1]["seq"] == stored[1]["seq"] and saved[1]["hash"] == stored[1]["hash"]
    assert {k: v for k, v in saved[1]["data"].items() if k != "durable_dropped"} == {
        k: v for k, v in stored[1]["data"].items() if k != "durable_dropped"}
    # ... and the chain as written verifies
    assert AuditTrail.verify(str(db)).valid


def test_a_scoped_view_hands_it_over_too(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    with Store(tmp_path / "m.db", on_audit_event=seen.append) as s:
        _two_wraps(s.scoped({"user": "alice"}))
    saved = [e for e in seen if e["event"] == "continuity_saved"]
    assert saved[-1]["data"]["durable_dropped"] == [FACT]


def test_a_save_that_rolls_back_hands_nothing_over(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[dict[str, Any]] = []
    with Store(tmp_path / "m.db", on_audit_event=seen.append) as s:
        s.record("the user mentioned a tree nut allergy", "observation")
        wrap(s, doc(durable=f"{FACT}\n{KEPT}"))
        s.record("the user works night shifts", "observation")
        token = prepare_wrap(s)["wrap_token"]
        with monkeypatch.context() as m:
            fail_commits(s, m)
            with pytest.raises(StoreError):
                validated_save_continuity(s, doc(durable=f"{KEPT}\n[drop-durable: {FACT[2:]}]"),
                                          wrap_token=token)
        n = len(seen)
        # the retry keeps the line: its entries take the rolled-back seqs, none its text
        validated_save_continuity(s, doc(durable=f"{FACT}\n{KEPT}"), wrap_token=token)
        assert "continuity_saved" in [e["event"] for e in seen[n:]]
        assert not any(e["data"].get("durable_dropped") for e in seen)
