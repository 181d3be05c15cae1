"""``BaseKeyValueStorage`` over an anneal store: the seam CAMEL's own memory integrations
plug into (``JsonStorage``, ``RedisStorage``, ``Mem0Storage``), for
``ChatHistoryMemory(context_creator, storage=AnnealKeyValueStorage(store, ...))``.

The records live in an item collection of the store, per namespace: framework state (the
chat window as CAMEL keeps it), not memory episodes, so they are not recalled or wrapped.
"""

from __future__ import annotations

import json
import os
from typing import Any

from camel.storages.key_value_storages import BaseKeyValueStorage
from camel.storages.key_value_storages.json import CamelJSONEncoder

from anneal_memory import Store
from anneal_memory.adapters import MemoryAdapter, from_item_value, item_value
from anneal_memory.errors import ValidationError
from anneal_memory.session import MemorySession

from ._memory import LOGGER_NAME

#: the item collection the records are kept in
COLLECTION = "camel_chat_history"


class AnnealKeyValueStorage(MemoryAdapter, BaseKeyValueStorage):
    """CAMEL's key-value storage interface on an anneal store: ``save`` appends records in
    order, ``load`` returns them in that order (JSON values, as CAMEL gives them), ``clear``
    removes this namespace's records only. ``namespace`` is a mapping or a
    ``MemoryNamespace``; ``collection`` names the item collection."""

    framework = "camel"
    extra = "camel"
    logger_name = LOGGER_NAME

    def __init__(self, store: Store | MemorySession | str | os.PathLike[str], *,
                 namespace: Any = None, collection: str = COLLECTION) -> None:
        if callable(namespace):
            raise ValidationError("AnnealKeyValueStorage takes a fixed namespace (a mapping or "
                                  "a MemoryNamespace): a storage belongs to one memory")
        self._init_memory(store, namespace=namespace)
        self.items = self.session_for(None).store.items(collection)

    def save(self, records: list[dict[str, Any]]) -> None:
        for record in records:
            # CAMEL's enums and models as JsonStorage writes them; NaN / ±Infinity (a
            # tool's result, a score) kept as JsonStorage keeps them
            self.items.append(item_value(json.loads(json.dumps(record, cls=CamelJSONEncoder))))

    def load(self) -> list[dict[str, Any]]:
        return [json.loads(json.dumps(from_item_value(item.value, f"record {item.key!r}")),
                           object_hook=_camel_types)
                for item in self.items.list(order="asc")]

    def clear(self) -> None:
        self.items.clear()


def _camel_types(value: dict[str, Any]) -> Any:
    """A CAMEL enum JsonStorage wrote as ``{"__enum__": "Name.MEMBER"}``, back as the enum."""
    if "__enum__" in value:
        name, member = value["__enum__"].split(".")
        return getattr(CamelJSONEncoder.CAMEL_ENUMS[name], member)
    return value

