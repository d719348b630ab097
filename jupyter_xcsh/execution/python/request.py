"""The python tool's request: parsed and validated from a JSON body (no HTTP here)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from jupyter_xcsh.errors import InvalidRequestError, RefusedError
from jupyter_xcsh.execution.kernel.cell import DEFAULT_TIMEOUT, parse_timeout
from jupyter_xcsh.execution.kernel.stdin import StdinSpec, parse_stdin
from jupyter_xcsh.fields import unknown_fields
from jupyter_xcsh.paths import check_path, real_path

__all__ = ["DEFAULT_TIMEOUT", "CellSpec", "PythonRequest", "parse_python_request"]

_FIELDS = {
    "cells",
    "timeout",
    "cwd",
    "reset",
    "session",
    "mode",
    "kernel_name",
    "stdin",
    "notebook_path",
}
#: What a call on a notebook's kernel (``notebook_path``) cannot be combined with.
_NOT_WITH_NOTEBOOK = ("session", "mode", "reset", "cwd", "kernel_name")
#: What an agent sending these meant: the code goes in a cell (as other tools' ``code``).
_HINTS = dict.fromkeys(("code", "source", "title", "content"), 'cells: [{"code": ...}]')

#: A session name: 1..200 characters, not only dots (``.`` and ``..`` cannot be addressed in a
#: URL), no ``/`` and no control characters. rest-api.yml states the same pattern.
SESSION_NAME = re.compile(r"[^/\x00-\x1f\x7f]*[^./\x00-\x1f\x7f][^/\x00-\x1f\x7f]*")
SESSION_NAME_MAX = 200


@dataclass(frozen=True)
class CellSpec:
    """One cell to run."""

    code: str
    title: str


@dataclass(frozen=True)
class PythonRequest:
    """A validated python tool call; ``cwd`` is an API path, ``os_cwd`` its directory."""

    cells: tuple[CellSpec, ...]
    timeout: float
    cwd: str
    os_cwd: str
    reset: bool
    session: str
    mode: str
    kernel_name: str | None
    stdin: StdinSpec = field(default_factory=StdinSpec)
    #: Run on this notebook's kernel (the one its runs in place use) instead of a session.
    notebook_path: str | None = None


def _resolve_cwd(raw: str, root_dir: str) -> tuple[str, str]:
    check_path(raw, root_dir, "Working directory")
    root = real_path(root_dir)
    candidate = raw if os.path.isabs(raw) else os.path.join(root, raw.lstrip("/"))
    os_path = root if raw == "" else real_path(candidate)  # the root is real already
    # Both paths are real already: no need for escapes_root's own realpaths.
    if os_path != root and not os_path.startswith(root.rstrip(os.sep) + os.sep):
        raise RefusedError(f"Working directory is outside the server root: {raw}")
    if not os.path.isdir(os_path):
        if not os.path.exists(os_path):
            raise InvalidRequestError(f"Working directory does not exist: {raw}")
        raise InvalidRequestError(f"Working directory is not a directory: {raw}")
    if os_path == root:
        return "", os_path
    api_path = os.path.relpath(os_path, root).replace(os.sep, "/")
    return ("" if api_path == "." else api_path), os_path


def parse_python_request(
    body: dict[str, Any], *, root_dir: str, default_mode: str, allow_hidden: bool = True
) -> PythonRequest:
    """Validate a request body; raise ``InvalidRequestError`` saying what is wrong.

    ``allow_hidden`` is the server's hidden-file policy: when false, a hidden working
    directory is answered as the server answers hidden files, as if it did not exist.
    """
    unknown = sorted(set(body) - _FIELDS)
    if unknown:
        raise InvalidRequestError(
            unknown_fields(unknown, sorted(_FIELDS), prefix="Unknown field(s)", hints=_HINTS)
        )
    notebook_path = body.get("notebook_path")
    if notebook_path is not None:
        if not isinstance(notebook_path, str) or not notebook_path:
            raise InvalidRequestError("notebook_path must be a non-empty string")
        given = [name for name in _NOT_WITH_NOTEBOOK if body.get(name) is not None]
        if given:
            raise InvalidRequestError(
                f"notebook_path runs the cells on the notebook's own kernel: not with "
                f"{', '.join(given)}"
            )
    if "cells" not in body:
        raise InvalidRequestError("cells is required")
    raw_cells = body["cells"]
    if not isinstance(raw_cells, list):
        raise InvalidRequestError("cells must be an array of {code, title?} objects")
    cells = []
    for i, raw in enumerate(raw_cells):
        if not isinstance(raw, dict) or not isinstance(raw.get("code"), str):
            raise InvalidRequestError(f"cells[{i}].code must be a string")
        title = raw.get("title", "")
        if not isinstance(title, str):
            raise InvalidRequestError(f"cells[{i}].title must be a string")
        extra = sorted(set(raw) - {"code", "title"})
        if extra:
            raise InvalidRequestError(f"cells[{i}] has unknown field(s): {', '.join(extra)}")
        cells.append(CellSpec(code=raw["code"], title=title))

    timeout = parse_timeout(body)

    cwd = body.get("cwd", "")
    if not isinstance(cwd, str):
        raise InvalidRequestError("cwd must be a string")
    api_cwd, os_cwd = _resolve_cwd(cwd, root_dir)
    if not allow_hidden and any(part.startswith(".") for part in api_cwd.split("/")):
        raise InvalidRequestError(f"Working directory does not exist: {cwd}")

    reset = body.get("reset", False)
    if not isinstance(reset, bool):
        raise InvalidRequestError("reset must be a boolean")
    session = body.get("session", "default")
    if (
        not isinstance(session, str)
        or len(session) > SESSION_NAME_MAX
        or not SESSION_NAME.fullmatch(session)
    ):
        raise InvalidRequestError(
            f"session must be 1 to {SESSION_NAME_MAX} characters, not only dots, "
            "without '/' or control characters"
        )
    mode = body.get("mode", default_mode)
    if mode not in ("session", "per-call"):
        raise InvalidRequestError(f"mode must be 'session' or 'per-call', not {mode!r}")
    kernel_name = body.get("kernel_name")
    if kernel_name is not None and (not isinstance(kernel_name, str) or not kernel_name):
        raise InvalidRequestError("kernel_name must be a non-empty string")
    return PythonRequest(
        cells=tuple(cells),
        timeout=timeout,
        cwd=api_cwd,
        os_cwd=os_cwd,
        reset=reset,
        session=session,
        mode=mode,
        kernel_name=kernel_name,
        stdin=parse_stdin(body.get("stdin", "notice")),
        notebook_path=notebook_path,
    )
