"""Server configuration of jupyter-collaboration or jupyter-server-documents for tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from traitlets.config import Config


def rtc_config(config: Any, root: Path, data: Path) -> Config:
    """Enable jupyter-collaboration on the test server, its databases outside the root."""
    config = Config(config)
    extensions = dict(config.ServerApp.get("jpserver_extensions", {}))
    config.ServerApp.jpserver_extensions = {
        **extensions,
        "jupyter_server_ydoc": True,
        "jupyter_server_fileid": True,
    }
    config.SQLiteYStore.db_path = str(data / "ystore.db")
    config.BaseFileIdManager.root_dir = str(root)
    config.BaseFileIdManager.db_path = str(data / "fileid.db")
    config.BaseFileIdManager.db_journal_mode = "OFF"
    config.YDocExtension.document_save_delay = 0.5
    return config


def server_documents_config(
    config: Any, root: Path, data: Path, outputs_service: bool = False
) -> Config:
    """Enable jupyter-server-documents on the test server, its file ids outside the root.

    ``outputs_service``: its outputs store on (``OutputProcessor.use_outputs_service``), which
    keeps outputs out of the document (placeholders) under ``data``.
    """
    config = Config(config)
    extensions = dict(config.ServerApp.get("jpserver_extensions", {}))
    config.ServerApp.jpserver_extensions = {
        **extensions,
        "jupyter_server_documents": True,
        "jupyter_server_fileid": True,
    }
    config.BaseFileIdManager.root_dir = str(root)
    config.BaseFileIdManager.db_path = str(data / "fileid.db")
    config.BaseFileIdManager.db_journal_mode = "OFF"
    if outputs_service:
        config.OutputProcessor.use_outputs_service = True
        config.OutputsManager.outputs_path = data / "outputs"
    return config
