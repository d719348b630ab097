"""Server configuration of jupyter-collaboration for tests (its databases outside the root)."""

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
