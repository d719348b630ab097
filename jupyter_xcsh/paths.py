"""Turn a caller's path into an API path that cannot leave the contents root (pure)."""

from __future__ import annotations

import os
import posixpath
import re
import stat
from collections.abc import Iterable

from jupyter_xcsh.errors import InvalidRequestError, RefusedError

#: Longest file name, in bytes, of the file systems a server runs on (Linux, macOS, Windows).
NAME_MAX = 255
#: Longest path, in bytes, Linux takes in one system call (``PATH_MAX``, the NUL included).
PATH_MAX = 4096


def check_path(path: str, root_dir: str, label: str = "Path") -> None:
    """Refuse, with ``InvalidRequestError``, a path no file system call could take.

    A NUL character, text that is not Unicode (a lone surrogate), a name over ``NAME_MAX``
    bytes or a path over ``PATH_MAX`` bytes would each make the operating system (or Python's
    encoding of the name) fail mid-request; they are the caller's mistake and said so here.
    A relative path is measured as the server will use it, joined to ``root_dir``. ``label``
    names the field in the message (``Path``, ``Working directory``).
    """
    if "\x00" in path:
        raise InvalidRequestError(f"{label} contains a NUL character: {path!r}")
    try:
        encoded = path.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidRequestError(f"{label} is not valid Unicode: {path!r}") from None
    joined = encoded if os.path.isabs(path) else os.fsencode(root_dir) + b"/" + encoded
    if len(joined) >= PATH_MAX:
        raise InvalidRequestError(f"{label} is too long: {path}")
    if any(len(name) > NAME_MAX for name in encoded.split(b"/")):
        raise InvalidRequestError(f"{label} has a name longer than {NAME_MAX} bytes: {path}")


def real_path(path: str) -> str:
    """``os.path.realpath(path)``, for less where no part of ``path`` is a symbolic link.

    An absolute, normalised POSIX path (no ``.``, ``..`` or doubled separators; trailing ones
    are ignored, as ``realpath`` ignores them) is checked one prefix at a time with
    ``os.lstat``, as ``realpath`` does, and is its own real path when no prefix is a link: what
    ``realpath`` would answer, without its Python bookkeeping (~85,000 instructions for a path
    of five names, two a python call). Any link, or any other path, goes to ``realpath``
    itself, so the answer is always ``realpath``'s (a link made later is seen).
    """
    trimmed = path.rstrip("/") or "/"
    if (
        os.path is not posixpath
        or not trimmed.startswith("/")
        or trimmed.startswith("//")  # kept by normpath; realpath makes it one
        or posixpath.normpath(trimmed) != trimmed
    ):
        return os.path.realpath(path)
    end = 0
    while end >= 0:
        end = trimmed.find("/", end + 1)
        prefix = trimmed if end < 0 else trimmed[:end]
        try:
            mode = os.lstat(prefix).st_mode
        except OSError:
            continue  # realpath (not strict) takes a name it cannot stat as it is
        if stat.S_ISLNK(mode):
            return os.path.realpath(path)
    return trimmed


def hide_root(message: str, root_dirs: Iterable[str]) -> str:
    """Return ``message`` with the server's root directory taken out of the paths it names.

    ``/srv/root/dir/a.ipynb`` becomes ``dir/a.ipynb`` (the API path) and the root itself
    ``/``, for every spelling of each root given (as configured and with symlinks resolved).
    """
    spellings = set()
    for root in root_dirs:
        for spelling in (os.path.abspath(root), os.path.realpath(root)):
            spellings.add(spelling.rstrip(os.sep) or os.sep)
    for root in sorted(spellings, key=len, reverse=True):
        if root == os.sep:
            continue  # a server rooted at / has no prefix worth hiding
        message = message.replace(root + os.sep, "")
        # The root itself, not a longer name that starts with it (``/srv/nb2``).
        message = re.sub(re.escape(root) + r"(?![^\s'\",:;)\]])", "/", message)
    return message


def to_api_path(path: str, root_dir: str) -> str:
    """Return ``path`` as an API path relative to ``root_dir``.

    Accepts a path relative to the root, or an absolute path inside it (translated). A ``..``
    segment takes back the name before it (``dir/../a.ipynb`` is ``a.ipynb``, as Jupyter
    Server's own contents API resolves it); one that would climb above the root, and an
    absolute path elsewhere, are refused with ``RefusedError`` before anything touches the file
    system. (Symlinks are checked later, on the file system: ``escapes_root``.)
    """
    check_path(path, root_dir)
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
    parts: list[str] = []
    for part in relative.split("/"):
        if part == "..":
            if not parts:
                raise RefusedError(
                    f"Path is outside the contents root: {path} (its .. climbs above the root)"
                )
            parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    return "/".join(parts)


def escapes_root(os_path: str, root_dir: str) -> bool:
    """Whether ``os_path``, with every symlink resolved, lies outside ``root_dir``."""
    root = os.path.realpath(root_dir)
    real = os.path.realpath(os_path)
    return real != root and not real.startswith(root.rstrip(os.sep) + os.sep)
