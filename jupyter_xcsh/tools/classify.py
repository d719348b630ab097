"""What each agent tool call does, as a policy judges it: its class, path and summary. Pure.

Every tool turns its parsed request into an ``AgentAction`` here and asks ``Caller.permit``
with it in its one call path, so the classes are decided in one file (docs/users/policies.md):

- ``read``: notebook read, find, changes; files list, read, search; kernel variables,
  inspect, status, sessions; artifacts.
- ``edit``: notebook edit, insert, move, create, batches without a delete; files write of a
  new file or an ``old_content`` edit, mkdir.
- ``run``: runs in place, python with ``notebook_path``, kernel interrupt.
- ``python``: the python tool on its own kernels (matched against its ``cwd``).
- ``destructive``: notebook delete (and batches with one); files delete, rename, a write that
  replaces a whole file (``expected_hash``); kernel restart and change.
"""

from __future__ import annotations

import difflib

from jupyter_xcsh.execution.inplace.request import RunRequest
from jupyter_xcsh.notebook.edit.batch import NotebookBatch
from jupyter_xcsh.notebook.edit.cells import NotebookRequest
from jupyter_xcsh.policy.gate import AgentAction
from jupyter_xcsh.tools.files.request import FilesRequest
from jupyter_xcsh.tools.kernel.request import KernelRequest

__all__ = [
    "batch_action",
    "files_action",
    "kernel_action",
    "notebook_action",
    "python_action",
    "run_action",
]


def _cell(request: NotebookRequest | RunRequest) -> str:
    """How a request names its cell: ``cell 3 (id ab12)``, ``cell ab12``, ``cell 3``."""
    if request.cell_id is not None and request.cell_index is not None:
        return f"cell {request.cell_index} (id {request.cell_id})"
    if request.cell_id is not None:
        return f"cell {request.cell_id}"
    if request.execution_count is not None:
        return f"the cell executed as [{request.execution_count}]"
    return f"cell {request.cell_index}"


def _diff(old: str, new: str) -> str:
    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), "before", "after", lineterm="")
    return "\n".join(lines)


def notebook_action(request: NotebookRequest) -> AgentAction:
    """A single notebook tool request (``create`` included)."""
    path, action = request.notebook_path, request.action
    ids = (request.cell_id,) if request.cell_id else ()
    if not request.changes:
        return AgentAction("notebook", "read", path, f"{action} in {path}", ids)
    if action == "create":
        return AgentAction("notebook", "edit", path, f"create the notebook {path}")
    if action == "delete":
        return AgentAction(
            "notebook", "destructive", path, f"delete {_cell(request)} of {path}", ids
        )
    detail: dict[str, str] = {}
    if request.cell is not None:
        source = request.cell.get("source", "")
        detail["code"] = source if isinstance(source, str) else "".join(map(str, source))
    elif request.old_content is not None:
        detail["diff"] = _diff(request.old_content, request.content or "")
    elif request.content is not None:
        detail["code"] = request.content
    if action == "insert":
        summary = f"insert a {request.cell_type or 'code'} cell into {path}"
    elif action == "move":
        summary = f"move {_cell(request)} of {path}"
    else:
        summary = f"edit {_cell(request)} of {path}"
    return AgentAction("notebook", "edit", path, summary, ids, detail)


def batch_action(batch: NotebookBatch) -> AgentAction:
    """A batch of notebook changes: destructive when one of them deletes a cell."""
    path = batch.notebook_path
    deletes = any(change.action == "delete" for change in batch.changes)
    ids = tuple(c.cell_id for c in batch.changes if c.cell_id)
    summary = f"apply {len(batch.changes)} change(s) to {path}"
    code = "\n\n".join(
        f"# {c.action} {_cell(c) if c.action != 'insert' else 'a new cell'}\n{c.content or ''}"
        for c in batch.changes
    )
    return AgentAction(
        "notebook", "destructive" if deletes else "edit", path, summary, ids, {"diff": code}
    )


def run_action(
    request: RunRequest, tool: str, cells: list[tuple[int, str | None, str]] | None = None
) -> AgentAction:
    """A run in place; ``cells``: the ``(index, id, source)`` of the cells it will run."""
    path = request.notebook_path
    if cells is not None and len(cells) == 1:
        index, cell_id, _ = cells[0]
        what = f"cell {index}" + (f" (id {cell_id})" if cell_id else "")
        summary = f"run {what} of {path}"
    elif cells is not None:
        summary = f"run {len(cells)} cells of {path}"
    elif request.all:
        summary = f"run every cell of {path}"
    else:
        summary = f"run {_cell(request)} of {path}"
    code = "\n\n".join(source for _, _, source in cells or ())
    ids = tuple(cell_id for _, cell_id, _ in cells or () if cell_id)
    return AgentAction(
        tool, "run", path, summary, ids, {"code": code} if code else {}, request.timeout
    )


def python_action(
    codes: list[str], cwd: str, notebook_path: str | None, timeout: float
) -> AgentAction:
    """A python tool call: ``run`` on a notebook's kernel, else ``python`` in its ``cwd``."""
    code = "\n\n".join(codes)
    if notebook_path is not None:
        summary = f"run code on the kernel of {notebook_path}"
        return AgentAction("python", "run", notebook_path, summary, (), {"code": code}, timeout)
    where = cwd or "the root folder"
    summary = f"run code on a python session kernel (in {where})"
    return AgentAction("python", "python", cwd, summary, (), {"code": code}, timeout)


def files_action(request: FilesRequest) -> AgentAction:
    """A files tool request (a ``write`` with ``expected_hash`` replaces a whole file)."""
    path, action = request.path, request.action
    if not request.changes:
        return AgentAction("files", "read", path, f"{action} {path or 'the root folder'}")
    if action in ("delete", "rename"):
        if action == "delete":
            return AgentAction("files", "destructive", path, f"delete {path}")
        new = request.new_path or ""
        summary = f"rename {path} to {new}"
        return AgentAction("files", "destructive", path, summary, others=(new,))
    if action == "mkdir":
        return AgentAction("files", "edit", path, f"create the folder {path}")
    content = request.content or ""
    if request.old_content is not None:
        return AgentAction(
            "files", "edit", path, f"edit {path}", (), {"diff": _diff(request.old_content, content)}
        )
    if request.expected_hash is not None:
        return AgentAction("files", "destructive", path, f"overwrite {path}", (), {"file": content})
    return AgentAction("files", "edit", path, f"create the file {path}", (), {"file": content})


def kernel_action(request: KernelRequest) -> AgentAction:
    """A kernel tool request, against its notebook (or its session's ``cwd``)."""
    path = request.notebook_path if request.notebook_path is not None else request.cwd or ""
    whose = (
        f"the kernel of {request.notebook_path}"
        if request.notebook_path is not None
        else f"the session {request.session or 'default'}'s kernel"
    )
    action = request.action
    if action in ("restart", "change"):
        verb = "restart" if action == "restart" else f"change to {request.kernel_name}"
        return AgentAction(
            "kernel", "destructive", path, f"{verb} {whose}", (), {}, request.timeout
        )
    if action == "interrupt":
        return AgentAction("kernel", "run", path, f"interrupt {whose}")
    return AgentAction("kernel", "read", path, f"{action} of {whose}")
