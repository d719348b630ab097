"""jupyter-xcsh: agent notebook and python tools inside a running Jupyter Server."""

from __future__ import annotations

from typing import Any

from jupyter_xcsh.version import __version__

__all__ = ["__version__"]


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    """Tell Jupyter Server where the extension app lives."""
    from jupyter_xcsh.app import XcshApp

    return [{"module": "jupyter_xcsh", "app": XcshApp}]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """Tell JupyterLab where the prebuilt lab extension lives."""
    return [{"src": "labextension", "dest": "jupyter-xcsh"}]
