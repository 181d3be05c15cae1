"""Load the console's pages of a seeded store in headless chromium: the DOM holds what
the operator judges, the hostile episode is text, and no injected script ran. Main pages
are screenshotted (``ANNEAL_UI_SCREENSHOTS=docs/img`` refreshes the documentation's)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from anneal_memory.ui import Console

from uihelp import EVIL_NAME, HOSTILE, SCRIPT, seed

#: the page, the file its screenshot goes to, and text its DOM must hold
SHOTS = [
    ("/continuity?open=1", "ui-continuity.png", ["cache misses", "ungrounded", "Cache misses doubled"]),
    ("/worklist", "ui-worklist.png", ["declared: contradicts nothing", "Cited episodes"]),
    ("/patterns", "ui-patterns.png", ["Pattern history", "a new pattern enters at 1x"]),
    ("/episodes", "ui-episodes.png", ["data, not instructions", "14 matching"]),
    ("/audit", "ui-audit.png", ["chain valid", "Event stream"]),
    ("/governed", "ui-governed.png", ["model_inferred_needs_review", "Approve"]),
]


def chromium() -> str:
    given = os.environ.get("ANNEAL_CHROMIUM")  # the ui session passes the one it found
    found = shutil.which(given) if given else (shutil.which("chromium")
                                               or shutil.which("chromium-browser"))
    if found is None:
        pytest.fail("chromium is not installed: install it (Debian: apt-get install "
                    "chromium) or name one with ANNEAL_CHROMIUM=/path; 'nox -s ui' says how")
    return found


def browse(url: str, workdir: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """One headless chromium run on ``url`` with its own empty profile."""
    profile = workdir / f"profile-{len(list(workdir.glob('profile-*')))}"
    cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
           "--hide-scrollbars",
           "--no-first-run", "--disable-extensions", "--disable-background-networking",
           f"--user-data-dir={profile}", "--virtual-time-budget=3000", *extra, url]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "HOME": str(workdir)})


class Dom(HTMLParser):
    """The elements, attributes and visible text of a dumped DOM."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, Any]]] = []
        self.text: list[str] = []
        self._title = False
        self.title = ""
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        # the document's title: the first <title> (SVG points carry their own)
        self._title = tag == "title" and not any(t == "title" for t, _a in self.tags[:-1])

    def handle_endtag(self, tag: str) -> None:
        self._title = False

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._title:
            self.title += data

    @property
    def visible(self) -> str:
        return " ".join(" ".join(self.text).split())


def no_script_ran(dom: Dom) -> None:
    assert "PWNED" not in dom.title, "an injected script or handler changed the title"
    assert not [t for t, _a in dom.tags if t in ("script", "img", "iframe", "object")]
    for tag, attrs in dom.tags:
        assert not any(k.startswith("on") for k in attrs), (tag, attrs)
        for k in ("href", "src", "action"):
            assert not str(attrs.get(k) or "/").lower().startswith("javascript:"), (tag, attrs)


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Console, dict[str, Any]]]:
    db = tmp_path_factory.mktemp("store") / "memory.db"
    ids = seed(db)
    with Console(db, port=0) as c:
        yield c, ids


def test_the_check_sees_a_script_that_runs(tmp_path: Path) -> None:
    # the hostile text served raw (no console, no escaping): chromium runs it and the
    # checks below catch it, so a pass on the console's pages means something
    raw = tmp_path / "raw.html"
    raw.write_text(f"<html><head><title>raw</title></head><body>{HOSTILE}</body></html>",
                   "utf-8")
    out = browse(raw.as_uri(), tmp_path, "--dump-dom")
    assert out.returncode == 0, out.stderr
    dom = Dom(out.stdout)
    with pytest.raises(AssertionError):
        no_script_ran(dom)
    assert dom.title == "PWNED"


@pytest.mark.parametrize(("path", "_png", "expected"), SHOTS, ids=[s[0] for s in SHOTS])
def test_page_dom_holds_its_content_and_no_script_ran(console: tuple[Console, dict], path: str,
                                                      _png: str, expected: list[str],
                                                      tmp_path: Path) -> None:
    c, _ids = console
    out = browse(c.login_url(path), tmp_path, "--dump-dom")
    assert out.returncode == 0, out.stderr
    dom = Dom(out.stdout)
    assert dom.title.endswith("· anneal-memory"), dom.title
    for text in expected:
        assert text in dom.visible, (path, text)
    no_script_ran(dom)


def test_hostile_episode_renders_as_text(console: tuple[Console, dict], tmp_path: Path) -> None:
    c, ids = console
    out = browse(c.login_url("/episode") + f"&id={ids['hostile']}", tmp_path, "--dump-dom")
    dom = Dom(out.stdout)
    assert SCRIPT in dom.visible and "[click me](javascript:alert(document.cookie))" in dom.visible
    assert "Relayed content (recorded from an external source): data, not instructions" in dom.visible
    no_script_ran(dom)
    cont = Dom(browse(c.login_url("/continuity"), tmp_path, "--dump-dom").stdout)
    assert EVIL_NAME in cont.visible and not [t for t, _a in cont.tags if t == "b"]


def test_a_used_login_link_gets_no_page(console: tuple[Console, dict], tmp_path: Path) -> None:
    c, _ids = console
    url = c.login_url("/continuity")
    first = Dom(browse(url, tmp_path, "--dump-dom").stdout)
    assert "cache misses" in first.visible
    second = Dom(browse(url, tmp_path, "--dump-dom").stdout)
    assert "already used" in second.visible and "cache misses" not in second.visible


def test_screenshots_of_the_main_pages(console: tuple[Console, dict], tmp_path: Path) -> None:
    c, _ids = console
    target = Path(os.environ.get("ANNEAL_UI_SCREENSHOTS") or tmp_path)
    target.mkdir(parents=True, exist_ok=True)
    for path, png, _expected in SHOTS:
        out = browse(c.login_url(path), tmp_path, f"--screenshot={target / png}",
                     "--window-size=1100,760")
        assert out.returncode == 0, out.stderr
        data = (target / png).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000, png
        assert re.search(rb"IHDR\x00\x00\x04L\x00\x00\x02\xf8", data[:40]), "1100x760"


def test_hostile_namespace_pages_in_the_browser(tmp_path: Path) -> None:
    """Issue 34: the pages a namespace reaches (its Overview with the activity chart and
    the operator's Erase form, the Namespaces list, the audit page's namespace column),
    for a user id that is a script, render it as text and run nothing."""
    from anneal_memory import Store
    from anneal_memory.governance import MemoryNamespace
    from anneal_memory.ui.pages import ns_token

    db = tmp_path / "memory.db"
    with Store(db) as s:
        view = s.scoped({"user": SCRIPT})
        for i in range(3):
            view.record(f"note {i} of a hostile user", "observation")
        s.scoped({"user": "fred"}).record("fred's note", "observation")
    ns = MemoryNamespace("default", SCRIPT, "default")
    with Console(db, port=0, operator_via="env") as c:
        pages = {
            "overview": c.login_url("/") + "&ns=" + ns_token(ns),
            "namespaces": c.login_url("/namespaces"),
            "audit": c.login_url("/audit"),
        }
        doms = {k: Dom(browse(url, tmp_path, "--dump-dom").stdout) for k, url in pages.items()}
    for name, dom in doms.items():
        assert ns.label() in dom.visible, name
        no_script_ran(dom)
    overview = doms["overview"]
    assert any(t == "svg" and a.get("id") == "activity" for t, a in overview.tags)
    assert any(t == "form" and a.get("action") == "/act/erase" for t, a in overview.tags)
    assert "3 episode(s), 0 wrap(s)" in " ".join(overview.text)
