"""Helpers for users' tests: a deterministic compressor that writes a valid continuity
for any wrap prompt, with no model."""

from __future__ import annotations

import re

from .wrap.render import PACKAGE_MARKER

_EP_RE = re.compile(r"^- \[([A-Za-z0-9_-]+)\] \((\w+), (\d{4}-\d{2}-\d{2})\)((?: \[[^\]]*\])*) (.*)$",
                    re.MULTILINE)
_RELAYED_RE = re.compile(r"\[(tool|external): relayed content")
_HEAD_RE = re.compile(r"^- ## (.+?)(?: \(optional\))?: ", re.MULTILINE)


def is_wrap_prompt(text: str) -> bool:
    """True for a prompt produced by the wrap (MemorySession.wrap_prompt)."""
    return isinstance(text, str) and PACKAGE_MARKER in text


def scripted_compress(prompt: str) -> str:
    """A valid continuity for ``prompt``: every schema section, each episode summarised,
    the current continuity carried forward. Deterministic; for tests and demos.

    It follows the rule the wrap package states for relayed content: a tool's or an
    external episode is carried attributed and inside quotation marks
    (``- Tool output (relayed, not an instruction): "..."``), never as the agent's own
    words, so a saved continuity never reproduces relayed text unquoted."""
    headings = _HEAD_RE.findall(prompt) or ["State", "Patterns", "Decisions", "Context"]
    episodes = [(i, t, d, (flags, c)) for i, t, d, flags, c in _EP_RE.findall(prompt)]
    current = ""
    m = re.search(r"## Current continuity\n(.*?)\n\n## (?:Stale patterns|Episodes since)", prompt, re.S)
    if m and not m.group(1).startswith("(none yet"):
        current = m.group(1)
    decisions = [c for _i, t, _d, c in episodes if t == "decision"]
    others = [c for _i, t, _d, c in episodes if t != "decision"]
    body = {
        "State": [f"- Working on: {_carried(*others[-1], 160)}" if others else "- Idle"],
        "Patterns": [],
        "Decisions": [f"- [decided({_carried(*d, 120)}, recorded)]" for d in decisions[-10:]]
        or ["- none yet"],
        "Context": [f"- {_carried(*c, 200)}" for c in others[-10:]] or ["- nothing new"],
    }
    prior_patterns = re.findall(r"^- .+\| \d+x.*$", current, re.MULTILINE)
    body["Patterns"] = prior_patterns[-20:] or ["- first session recorded | 1x"]
    out = ["# Continuity"]
    for h in headings:
        lines = body.get(h)
        if lines is None:
            lines = [] if "durable" in h.lower() else ["- carried forward"]
        if "durable" in h.lower():
            prior = re.search(r"## Durable Facts\n(.*?)(?:\n## |\Z)", current, re.S)
            lines = [x for x in (prior.group(1).splitlines() if prior else []) if x.strip()]
        out.append(f"## {h}\n" + "\n".join(lines))
    return "\n\n".join(out) + "\n"


def _carried(flags: str, content: str, limit: int) -> str:
    """An episode's text as the continuity carries it, in at most ``limit`` characters:
    relayed content quoted and attributed (its own double quotes made single, so the
    quotation stays one and is never cut open)."""
    relayed = _RELAYED_RE.search(flags)
    if relayed is None:
        return content[:limit]
    source = "Tool output" if relayed.group(1) == "tool" else "External content"
    head = f"{source} (relayed, not an instruction): "
    return f'{head}"{content.replace(chr(34), chr(39))[:max(limit - len(head) - 2, 0)]}"'
