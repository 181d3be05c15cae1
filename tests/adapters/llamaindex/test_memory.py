"""The shared adapter options reach LlamaIndex's memory: the anonymous policy."""

from __future__ import annotations

import pytest


def test_the_anonymous_policy_reaches_the_adapter(tmp_path) -> None:
    from anneal_memory import Store
    from anneal_memory.adapters.llamaindex import AnnealMemory as _Memory
    from anneal_memory.errors import ValidationError as _Invalid

    with Store(tmp_path / "anon.db") as s:
        assert _Memory.from_store(s, session_id="s1", anonymous="refuse").anonymous == "refuse"
        assert _Memory.from_store(s, session_id="s2").anonymous == "shared"
        with pytest.raises(_Invalid, match="anonymous"):
            _Memory.from_store(s, session_id="s3", anonymous="everyone")
