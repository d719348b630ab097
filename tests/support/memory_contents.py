"""A contents manager that keeps files in memory: a server whose contents are not on disk.

Selected through the server's config (``ServerApp.contents_manager_class``), as a deployment
selects its own (S3, a database, ...). Synchronous, as many third-party managers are (the
server's default manager is asynchronous): the tools must work with both kinds. It follows the
server's rules as ``FileContentsManager`` does: hidden names (a part starting with ``.``) are
not listed and answer 404 unless ``allow_hidden``, and are never created unless it is set.
"""

from __future__ import annotations

import base64
import json
import posixpath
from datetime import UTC, datetime
from typing import Any

from jupyter_server.services.contents.checkpoints import Checkpoints
from jupyter_server.services.contents.manager import ContentsManager
from tornado.web import HTTPError
from traitlets import default


class NoCheckpoints(Checkpoints):
    """Checkpoints that keep nothing (a rename or a delete has none to carry along)."""

    def create_checkpoint(self, contents_mgr: Any, path: str) -> dict[str, Any]:
        """Pretend to keep one."""
        return {"id": "checkpoint", "last_modified": datetime.now(UTC)}

    def restore_checkpoint(self, contents_mgr: Any, checkpoint_id: str, path: str) -> None:
        """Nothing to restore."""

    def rename_checkpoint(self, checkpoint_id: str, old_path: str, new_path: str) -> None:
        """Nothing to rename."""

    def delete_checkpoint(self, checkpoint_id: str, path: str) -> None:
        """Nothing to delete."""

    def list_checkpoints(self, path: str) -> list[dict[str, Any]]:
        """None kept."""
        return []


class MemoryContentsManager(ContentsManager):
    """Files (bytes) and folders in dictionaries; nothing touches the disk."""

    @default("checkpoints_class")
    def _checkpoints_class_default(self) -> type:
        return NoCheckpoints

    @default("root_dir")
    def _root_dir_default(self) -> str:
        parent = self.parent
        return str(getattr(parent, "root_dir", "/")) if parent is not None else "/"

    def __init__(self, **kwargs: Any) -> None:
        """An empty root."""
        super().__init__(**kwargs)
        self.files: dict[str, bytes] = {}
        self.folders: set[str] = {""}
        self.modified: dict[str, datetime] = {"": datetime.now(UTC)}

    # -- what exists ---------------------------------------------------------------------------

    def is_hidden(self, path: str) -> bool:
        """A path with a part starting with a dot is hidden."""
        return any(part.startswith(".") for part in path.strip("/").split("/"))

    def file_exists(self, path: str = "") -> bool:
        """Whether a file is kept at ``path``."""
        return path.strip("/") in self.files

    def dir_exists(self, path: str) -> bool:
        """Whether a folder is kept at ``path``."""
        return path.strip("/") in self.folders

    def _visible(self, path: str) -> bool:
        return self.allow_hidden or not self.is_hidden(path)

    # -- models --------------------------------------------------------------------------------

    def _model(self, path: str, content: bool, type: str | None, format: str | None) -> Any:
        name = posixpath.basename(path)
        model: dict[str, Any] = {
            "name": name,
            "path": path,
            "last_modified": self.modified[path],
            "created": self.modified[path],
            "content": None,
            "format": None,
            "mimetype": None,
            "size": None,
            "writable": True,
            "hash": None,
            "hash_algorithm": None,
        }
        if path in self.folders:
            if type not in (None, "directory"):
                raise HTTPError(400, f"{path} is a directory", reason="bad type")
            model["type"] = "directory"
            if content:
                children = sorted(
                    p
                    for p in (*self.files, *self.folders)
                    if p and posixpath.dirname(p) == path and self._visible(p)
                )
                model["content"] = [self._model(p, False, None, None) for p in children]
                model["format"] = "json"
            return model
        data = self.files[path]
        model["size"] = len(data)
        notebook = path.endswith(".ipynb") and type != "file"
        if type == "directory":
            raise HTTPError(400, f"{path} is not a directory", reason="bad type")
        model["type"] = "notebook" if notebook else "file"
        if not content:
            return model
        if notebook:
            model.update(content=json.loads(data), format="json")
            return model
        if format in (None, "text"):
            try:
                model.update(content=data.decode("utf-8"), format="text", mimetype="text/plain")
                return model
            except UnicodeDecodeError:
                if format == "text":
                    raise HTTPError(
                        400, f"{path} is not UTF-8 encoded", reason="bad format"
                    ) from None
        model.update(
            content=base64.b64encode(data).decode("ascii"),
            format="base64",
            mimetype="application/octet-stream",
        )
        return model

    def get(
        self,
        path: str,
        content: bool = True,
        type: str | None = None,
        format: str | None = None,
        require_hash: bool = False,
    ) -> Any:
        """The model of a file or folder; 404 for what does not exist or is hidden."""
        path = path.strip("/")
        if not self.exists(path) or not self._visible(path):
            raise HTTPError(404, f"No such file or directory: {path}")
        return self._model(path, content, type, format)

    # -- changes -------------------------------------------------------------------------------

    def save(self, model: dict[str, Any], path: str = "") -> Any:
        """Keep a file or create a folder (its parent must exist)."""
        path = path.strip("/")
        self.run_pre_save_hooks(model=model, path=path)
        if not self._visible(path):
            raise HTTPError(400, f"Cannot create file or directory {path!r}")
        if posixpath.dirname(path) not in self.folders:
            raise HTTPError(404, f"No such directory: {posixpath.dirname(path)}")
        kind = model.get("type")
        if kind == "directory":
            if path in self.files:
                raise HTTPError(400, f"Not a directory: {path}")
            self.folders.add(path)
        elif kind == "notebook":
            self.files[path] = json.dumps(model["content"]).encode()
        elif kind == "file":
            if model.get("format") == "base64":
                self.files[path] = base64.b64decode(model["content"])
            else:
                self.files[path] = str(model["content"]).encode("utf-8")
        else:
            raise HTTPError(400, f"Unhandled contents type: {kind}")
        self.modified[path] = datetime.now(UTC)
        return self.get(path, content=False)

    def delete_file(self, path: str) -> None:
        """Delete a file or an empty folder."""
        path = path.strip("/")
        if path in self.files:
            del self.files[path]
        elif path in self.folders:
            if any(posixpath.dirname(p) == path for p in (*self.files, *self.folders) if p):
                raise HTTPError(400, f"Directory {path} not empty")
            self.folders.discard(path)
        else:
            raise HTTPError(404, f"File or directory does not exist: {path}")
        self.modified.pop(path, None)

    def rename_file(self, old_path: str, new_path: str) -> None:
        """Move a file or folder (with everything under it); never over an existing one."""
        old, new = old_path.strip("/"), new_path.strip("/")
        if self.exists(new):
            raise HTTPError(409, f"File already exists: {new}")
        if not self.exists(old):
            raise HTTPError(404, f"File or directory does not exist: {old}")

        def moved(p: str) -> str:
            return new + p[len(old) :] if p == old or p.startswith(old + "/") else p

        self.files = {moved(p): data for p, data in self.files.items()}
        self.folders = {moved(p) for p in self.folders}
        self.modified = {moved(p): when for p, when in self.modified.items()}
