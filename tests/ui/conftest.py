"""The console in a real browser: Debian's chromium, headless. The ``ui`` nox session
installs it when it is missing; without it these tests fail (they never skip)."""

from __future__ import annotations

import os
import sys

# the seeded store and client of the core console tests
sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "core"))
