"""The operator console: ``anneal-memory ui --db STORE`` serves the memory to a browser.

Server-rendered HTML from the standard library (``http.server``), no JavaScript: the
continuity with each pattern's level, marks and cited episodes; each pattern's level
across wraps (inline SVG); the review worklist and drift verdicts per wrap; episode
search with filters, supersession chains and trust; the audit chain's verify status and
event stream; the namespaces in the store; the governed review queue. Actions are POSTs
through the same library calls as the CLI. Modules: ``security`` (Host check, login,
sessions, CSRF, headers), ``server`` (HTTP), ``pages`` and ``actions`` (what each URL
does), ``render`` and ``chart`` (HTML and SVG).
"""

from __future__ import annotations

from .server import DEFAULT_HOST, DEFAULT_PORT, Console, serve

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "Console", "serve"]
