"""The offline example runs and shows memory at work, for the right user only."""

from __future__ import annotations

from pathlib import Path

from contract import RECALL_OFF, run_example_and_check

# ADK's recall reaches the model through the memory service's search (PreloadMemoryTool)
ADK_RECALL_OFF = RECALL_OFF + """
from google.adk.memory.base_memory_service import SearchMemoryResponse
from anneal_memory.adapters.google_adk import AnnealMemoryService

async def _nothing(self, **kwargs):
    return SearchMemoryResponse(memories=[])
AnnealMemoryService.search_memory = _nothing
"""


def test_example_runs_offline(tmp_path: Path) -> None:
    run_example_and_check("google_adk", tmp_path, "recalled memory in the model's input: True",
                          "alice's memory in bob's model input: False", "wrap: saved",
                          "trust=tool", "alice's sessions in the store: 2",
                          recall_off=ADK_RECALL_OFF)
