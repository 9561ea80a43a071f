"""Headless Chromium for the tests that look at pages in a real browser: Debian's ``chromium``
driven by Playwright, so that no browser is downloaded. What the tests see is saved as
screenshots under ``test-artifacts/``."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

ARTIFACTS = Path(__file__).parent.parent / "test-artifacts"
CHROMIUM = os.environ.get("RAGMETER_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
INSTALL_CHROMIUM = (
    "the browser tests need Chromium: on Debian/Ubuntu 'sudo apt-get install -y chromium' "
    "(or set RAGMETER_CHROMIUM to a Chromium binary); Playwright drives it, no download needed"
)


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium; the test fails, saying what to install, where there is none."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("the browser tests need Playwright: pip install -e '.[dev]'")
    if not Path(CHROMIUM).is_file():
        pytest.fail(f"no Chromium at {CHROMIUM}: {INSTALL_CHROMIUM}")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()
