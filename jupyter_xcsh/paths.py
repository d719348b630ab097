"""Turn a caller's path into an API path that cannot leave the contents root (pure)."""

from __future__ import annotations

import os

from .errors import InvalidRequestError, RefusedError


def to_api_path(path: str, root_dir: str) -> str:
    """Return ``path`` as an API path relative to ``root_dir``.

    Accepts a path relative to the root, or an absolute path inside it (translated). Refuses
    ``..`` segments and absolute paths elsewhere with ``RefusedError`` before anything touches
    the file system.
    """
    if "\x00" in path:
        raise InvalidRequestError(f"Invalid path: {path!r}")
    relative = path
    if path.startswith("/") or os.path.isabs(path):
        inside = None
        for root in {os.path.abspath(root_dir), os.path.realpath(root_dir)}:
            candidate = os.path.abspath(path)
            if candidate == root or candidate.startswith(root.rstrip(os.sep) + os.sep):
                inside = os.path.relpath(candidate, root)
                break
        if inside is None:
            raise RefusedError(f"Path is outside the contents root: {path}")
        relative = inside.replace(os.sep, "/")
    parts = [part for part in relative.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise RefusedError(f"Path is outside the contents root: {path}")
    return "/".join(parts)


def escapes_root(os_path: str, root_dir: str) -> bool:
    """Whether ``os_path``, with every symlink resolved, lies outside ``root_dir``."""
    root = os.path.realpath(root_dir)
    real = os.path.realpath(os_path)
    return real != root and not real.startswith(root.rstrip(os.sep) + os.sep)
