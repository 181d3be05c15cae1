"""On every backend the new continuity commits with the wrap's save, in its one
transaction: a save that does not commit changes neither, and no copy is left over."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from anneal_memory import Store, StoreError, prepare_wrap, validated_save_continuity
from anneal_memory.storage.roles import Meta
from anneal_memory.testing import backend_of

from wraphelp import doc, fail_commits, wrap


def test_the_continuity_commits_with_the_save(open_store: Callable[..., Store],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    s1, s2 = open_store(), open_store()
    s1.record("the first session chose a shared store", "decision")
    wrap(s1, doc(context="- old"))
    s1.record("the second session chose a pool", "decision")
    w = prepare_wrap(s1)
    fail_commits(s1, monkeypatch)
    with pytest.raises(StoreError):
        validated_save_continuity(s1, doc(context="- new"), wrap_token=w["wrap_token"])
    monkeypatch.undo()
    for s in (s1, s2):
        assert s.load_continuity() == doc(context="- old")
        assert s.status().wrap_in_progress is True
    validated_save_continuity(s1, doc(context="- new"), wrap_token=w["wrap_token"])
    for s in (s1, s2):
        assert s.load_continuity() == doc(context="- new")
        assert s.status().wrap_in_progress is False and s.status().total_wraps == 2
        assert Meta(backend_of(s)).get_meta("pending_blob:.continuity.md") is None
    with open_store() as s3:
        assert s3.load_continuity() == doc(context="- new")
