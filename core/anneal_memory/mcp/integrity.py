"""Tool-description integrity: SHA-256 of every tool's description and input schema.

A manifest (``tool-integrity.json``) ships in the package and is checked when the
server starts, so a description edited after install (description poisoning) stops the
server instead of steering the model. The same manifest is served as the resource
``anneal://integrity/manifest`` so a host can compare what ``tools/list`` delivered.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TypedDict

from .._fileio import atomic_write_text
from ..errors import AnnealMemoryError
from .tools import TOOLS, Tool

MANIFEST_PATH = Path(__file__).with_name("tool-integrity.json")
MANIFEST_VERSION = 1


class IntegrityError(AnnealMemoryError):
    """The tool descriptions do not match the shipped manifest."""


class ToolDigest(TypedDict):
    """The SHA-256 of one tool's description and of its canonical input schema."""

    description: str
    input_schema: str


class Manifest(TypedDict):
    """``tool-integrity.json``, as ``compute_manifest`` makes it."""

    version: int
    algorithm: str
    covers: str
    tools: dict[str, ToolDigest]


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def canonical_json(value: object) -> str:
    """One spelling of a JSON value, so its hash does not depend on key order."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def compute_manifest(tools: Sequence[Tool] = TOOLS) -> Manifest:
    """The manifest the given tool definitions should have."""
    return {
        "version": MANIFEST_VERSION,
        "algorithm": "sha256",
        "covers": "each tool's description and canonical JSON input schema",
        "tools": {t["name"]: {"description": sha256(t["description"]),
                              "input_schema": sha256(canonical_json(t["inputSchema"]))}
                  for t in tools},
    }


def read_manifest(path: Path | None = None) -> dict[str, object]:
    """The manifest file as read: a JSON object with a ``tools`` object (else
    IntegrityError)."""
    p = path or MANIFEST_PATH
    try:
        data = json.loads(p.read_text("utf-8"))
    except FileNotFoundError:
        raise IntegrityError(f"the tool integrity manifest {str(p)!r} is missing: reinstall "
                             "anneal-memory, or regenerate it with --generate-integrity") from None
    except (OSError, ValueError) as exc:
        raise IntegrityError(f"the tool integrity manifest {str(p)!r} is unreadable ({exc}): "
                             "reinstall anneal-memory or run --generate-integrity") from None
    if not isinstance(data, dict) or not isinstance(data.get("tools"), dict):
        raise IntegrityError(f"the tool integrity manifest {str(p)!r} is malformed: reinstall "
                             "anneal-memory or run --generate-integrity")
    return data


def mismatches(manifest: Mapping[str, object], tools: Sequence[Tool] = TOOLS) -> list[str]:
    """Names of tools whose description or schema differ from the manifest (also tools
    missing from it and manifest entries with no tool)."""
    want: Mapping[str, object] = compute_manifest(tools)["tools"]
    listed = manifest.get("tools", {})
    have: Mapping[str, object] = listed if isinstance(listed, dict) else {}
    return sorted(n for n in set(want) | set(have) if want.get(n) != have.get(n))


def verify(path: Path | None = None, tools: Sequence[Tool] = TOOLS) -> None:
    """Raise IntegrityError (one line) unless every tool matches the manifest."""
    bad = mismatches(read_manifest(path), tools)
    if bad:
        raise IntegrityError(
            f"tool descriptions do not match the integrity manifest ({', '.join(bad)}): if "
            "you changed them on purpose run 'anneal-memory --generate-integrity', otherwise "
            "reinstall anneal-memory (use --skip-integrity only for development)")


def generate(path: Path | None = None, tools: Sequence[Tool] = TOOLS) -> Path:
    """Write the manifest for the current tool definitions; returns its path."""
    p = path or MANIFEST_PATH
    atomic_write_text(p, json.dumps(compute_manifest(tools), indent=2, sort_keys=True) + "\n")
    return p
