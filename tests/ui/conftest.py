"""The console in a real browser: chromium, headless (``ANNEAL_CHROMIUM`` names one). The
``ui`` nox session finds it and installs nothing unless asked (``ANNEAL_INSTALL_CHROMIUM=1``);
run directly without a browser, these tests fail (they never skip)."""

from __future__ import annotations

import os
import sys

# the seeded store and client of the core console tests
sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "core"))
