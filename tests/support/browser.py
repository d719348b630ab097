"""The Debian Chromium every browser test drives (ui-tests/, deploy-tests/), and how it starts.

Never a browser downloaded by Playwright: ``XCSH_CHROMIUM``, else ``chromium`` on the PATH,
else ``/usr/bin/chromium``. The flags keep it headless-safe as root and off the network.
"""

from __future__ import annotations

import os
import shutil

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_executable() -> str:
    """The Chromium to launch."""
    return os.environ.get("XCSH_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
