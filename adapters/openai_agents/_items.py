"""Reading text out of the SDK's input items (plain dicts in the Responses shape)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        texts = []
        for part in content:
            text = part.get("text") if isinstance(part, dict) else getattr(part, "text", None)
            if isinstance(text, str):
                texts.append(text)
        return "\n".join(texts)
    return ""


def item_text(item: Any) -> str:
    """The readable text of one input item: a message's text, a tool call or its output."""
    if not isinstance(item, dict):
        item = item.model_dump() if hasattr(item, "model_dump") else {}
    kind = item.get("type")
    if kind == "function_call":
        return f"called {item.get('name')}({item.get('arguments', '')})"
    if kind == "function_call_output":
        output = item.get("output")
        return output if isinstance(output, str) else json.dumps(output, default=str)
    if "content" in item:
        return _content_text(item["content"])
    return ""


def latest_user_text(items: Sequence[Any] | str | None) -> str:
    """The text of the last user message in a turn's input (the recall query)."""
    if isinstance(items, str):
        return items
    for item in reversed(list(items or [])):
        if isinstance(item, dict) and item.get("role") == "user":
            return item_text(item)
    return ""
