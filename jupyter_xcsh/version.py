"""The package's version, as the build wrote it (``_version.py``), with a source tree's fallback."""

from __future__ import annotations

try:
    from jupyter_xcsh._version import __version__
except ImportError:  # pragma: no cover - only in a source tree that was never built
    __version__ = "0.0.0.dev0"

__all__ = ["__version__"]
