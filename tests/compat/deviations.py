"""Differences from 1.0.2 that we keep on purpose: scenario -> {observation path: reason}.

Each reason ends with ``(migrating#section)``, the section of docs/migrating.md that tells
users about it. The differential test fails on a difference not listed here and on a listed
one that no longer differs.
"""

from __future__ import annotations

DEVIATIONS: dict[str, dict[str, str]] = {}
