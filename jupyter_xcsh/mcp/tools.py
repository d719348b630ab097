"""The MCP tools: one entry per tool, each forwarding to that tool's one call path (``tools/``).

Nothing here validates: the tool services do, as for REST. Authorization is asked as REST asks
it: first what the REST verb's ``@authorized`` asks, then the tool's own checks, so a call over
MCP and the same call over REST give the same result or the same refusal.

This is also the one place the MCP transport turns a tool's outcome into what a model sees
(``call_result``, ``error_result``): ``content`` is the tool's text (plus images and links to
artifacts), ``structuredContent`` the REST body unchanged, ``isError`` the result's own flag. A
domain error (bad arguments, a missing notebook, a refusal) becomes an error *result* carrying
the REST message and status, as REST answers it with a 4xx: the model reads it and corrects
itself; it is not a protocol fault.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import suppress
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType
from typing import Any

from ..errors import ConflictError, XcshError, status_for
from ..execution.kernel.control import CallControl
from ..execution.kernel.observer import ExecutionObserver
from ..services import XcshServices
from ..tools import Caller
from ..tools.runs import MAX_WAIT, FollowUp, RunInputTool
from .elicitation import DECLINED, PASSWORD, Elicit, accepted_answer
from .schemas import artifact_schema, load_spec, merge_actions, request_schema, single_typed

__all__ = [
    "NOTEBOOK_ACTIONS",
    "McpTool",
    "Operation",
    "ToolContext",
    "build_tools",
    "call_result",
    "default_tools",
    "error_result",
    "text_result",
]


@dataclass(frozen=True)
class ToolContext:
    """What one ``tools/call`` runs with: the services, who calls, progress and cancel."""

    services: XcshServices
    caller: Caller
    observer: ExecutionObserver | None
    control: CallControl
    elicit: Elicit | None = None


#: MCP's default for a run whose client hangs up: it goes on (up to its own timeout), to be
#: followed with ``run_id`` + ``wait``, since MCP clients give up on long calls (often after
#: 60-120 s) by closing the request. ``notifications/cancelled`` still interrupts it.
DETACH_BY_DEFAULT = True


def _with_mcp_defaults(context: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
    """A run's arguments with MCP's defaults, a follow-up's as they are.

    ``detach`` as ``DETACH_BY_DEFAULT``; stdin ``ask`` when the person can be asked
    (elicitation), so ``input()`` in the code reaches them.
    """
    if "run_id" in arguments:
        return arguments
    asks = {"stdin": "ask"} if context.elicit is not None else {}
    return {"detach": DETACH_BY_DEFAULT, **asks, **arguments}


async def _ask_prompts(
    context: ToolContext, result: dict[str, Any], runs: RunInputTool
) -> dict[str, Any]:
    """While the run waits for input, ask the person (elicitation) and follow it on."""
    while context.elicit is not None and isinstance(result.get("awaitingInput"), dict):
        waiting = result["awaitingInput"]
        run_id, follow = str(waiting["runId"]), (context.observer, context.control)
        if waiting.get("password"):
            result = await runs.refuse(run_id, PASSWORD, *follow)
            continue
        answer = accepted_answer(await context.elicit(str(waiting.get("prompt", ""))))
        with suppress(ConflictError):  # no longer waiting (input_timeout): follow it on
            if answer is None:
                result = await runs.refuse(run_id, DECLINED, *follow)
            else:
                result = await runs.follow_up(FollowUp(run_id, answer, 0), context.caller, *follow)
            continue
        result = await runs.follow_up(FollowUp(run_id, None, MAX_WAIT), context.caller, *follow)
    return result


ToolCall = Callable[[ToolContext, dict[str, Any]], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class Operation:
    """A REST operation a tool forwards to.

    ``path`` is its path in ``rest-api.yml`` (whose request gives the tool's arguments),
    ``authorized`` the ``(action, resource)`` its REST verb's ``@authorized`` asks, ``call``
    the tool's one call path.
    """

    path: str
    authorized: tuple[str, str]
    call: ToolCall

    async def run(self, context: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
        """Ask what the REST verb asks, then call the tool."""
        await context.caller.require(*self.authorized)
        return await self.call(context, arguments)


@dataclass(frozen=True)
class McpTool:
    """One tool as ``tools/list`` shows it, and how ``tools/call`` runs it."""

    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    annotations: dict[str, Any]
    call: ToolCall

    def listing(self) -> dict[str, Any]:
        """The tool's entry in ``tools/list``."""
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": self.input_schema,
            "annotations": {"title": self.title, **self.annotations},
        }


async def _notebook_call(context: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
    return await context.services.notebook.call(arguments, context.caller)


async def _python_call(context: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
    tool = context.services.python
    arguments = _with_mcp_defaults(context, arguments)
    result = await tool.call(arguments, context.caller, context.observer, context.control)
    return await _ask_prompts(context, result, tool.follow_ups)


async def _artifact_call(context: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
    return await context.services.artifacts.call(arguments, context.caller)


async def _run_call(context: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
    tool = context.services.run
    arguments = _with_mcp_defaults(context, arguments)
    result = await tool.call(arguments, context.caller, context.observer, context.control)
    return await _ask_prompts(context, result, tool.follow_ups)


async def _files_call(context: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
    return await context.services.files.call(arguments, context.caller)


NOTEBOOK = Operation("/api/xcsh/notebook", ("read", "contents"), _notebook_call)
PYTHON = Operation("/api/xcsh/python", ("execute", "kernels"), _python_call)
ARTIFACT = Operation("/api/xcsh/artifacts/{artifact_id}", ("read", "contents"), _artifact_call)
RUN = Operation("/api/xcsh/notebook/run", ("write", "contents"), _run_call)
FILES = Operation("/api/xcsh/files", ("read", "contents"), _files_call)


async def _kernel_call(context: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
    return await context.services.kernel.call(arguments, context.caller)


KERNEL = Operation("/api/xcsh/kernel", ("read", "kernels"), _kernel_call)


async def _notebook(context: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
    operation = NOTEBOOK_ACTIONS.get(str(arguments.get("action")))
    if operation is None:
        return await NOTEBOOK.run(context, arguments)
    body = {key: value for key, value in arguments.items() if key != "action"}
    return await operation.run(context, body)


#: Actions of the ``notebook`` tool served by another operation than ``POST
#: /api/xcsh/notebook``, by action name. The operation's request body (without ``action``,
#: which its path implies) is what it is called with, and its request schema joins the tool's
#: input schema. Adding such an action is one entry here.
NOTEBOOK_ACTIONS: dict[str, Operation] = {"run": RUN}


NOTEBOOK_DESCRIPTION = """\
Read or change cells of a Jupyter notebook (.ipynb) in the server's contents root, saved \
through the server (a notebook open in JupyterLab shows the change live).
- read: an agent-friendly view of the cells (index, id, type, source, output summaries), \
from cell_index (default 0) to end_index, bounded by max_chars with a "continue at" notice.
- find: the cells whose source contains pattern (regex: true for a Python regex; cell_type to \
search one type), with each matching line and its number; bounded like read.
- edit: replace the source of cell_index (or cell_id); type, outputs and id are kept; a \
different cell_type converts the cell.
- insert: a new cell at cell_index (0..N), or after_cell_id / before_cell_id (ids stay right \
while people edit), code unless cell_type says otherwise.
- delete: remove a cell; its source is returned.
- move: move a cell to to_index, or to_after_cell_id / to_before_cell_id.
- changes: what changed since since_revision (a revision of an earlier answer): the cells \
added, removed, moved and edited, each with who (you, another agent, a person in the room, a \
save of the file); a 409 when that revision is too old: read again.
- several changes at once: no action, changes: [{action, ...}, ...] applied in order as one \
atomic change (all or nothing; later indices see the earlier changes).
- run: run code cells in the notebook's own kernel (the one its JupyterLab tab uses, else a \
new session) and write their outputs into the notebook: one cell (cell_id or cell_index), \
cell_ids, cell_index to end_index, or all. Returns what the cells printed, as the python tool \
does; timeout (default 30 s) is one deadline for the whole run.
content is the whole new source ("" allowed). notebook_path is relative to the root. A change \
or run may carry expected_revision / expected_source_hash from an earlier answer: if the \
notebook or cell changed since, nothing happens and the answer shows it as it is now."""

PYTHON_DESCRIPTION = """\
Run Python code in a Jupyter kernel of the server. Each call runs one or more cells in order \
in a persistent session (variables, imports and the working directory survive between calls \
of the same session; mode "per-call" uses a fresh kernel). A failing cell stops the call; \
later cells do not run. Output is bounded: past the limit the text keeps its tail and names an \
artifact://<id> holding everything (read it with the artifact tool). timeout is one deadline \
in seconds for the whole call (default 30, at most 600); reset restarts the kernel first. \
Images are returned as image content. status(op, **data) in the code reports progress."""

FILES_DESCRIPTION = """\
Work with the files and folders of the Jupyter server's contents root (through the server, so \
it works on remote hosts and JupyterHub without a shell). path is relative to the root.
- list: a folder's entries (name, path, type, size, last modified), glob to filter names, \
bounded by limit with how many were left off.
- read: a UTF-8 text file, start_line..end_line (from 1), bounded by max_chars with a \
"continue with start_line" notice; its hash guards a later write or delete. Binary files are \
refused with their size and type.
- write: create a text file with content (refused when it exists), or replace one with \
expected_hash (from read), or replace the one occurrence of old_content by content; if the file \
changed since, nothing is written and the answer shows it as it is now.
- mkdir: create a folder (and its parents). rename: move path to new_path (never over an \
existing file). delete: a file with its expected_hash, or an empty folder.
- search: the lines of the text files under path matching pattern (literal, or a Python regex \
with regex: true), glob to filter file names; bounded by limit, max_files and max_chars."""

ARTIFACT_DESCRIPTION = """\
Read the full output of an earlier python call that was cut (the text names \
artifact://<id>): lines offset..offset+limit-1, 1-based, at most 256 KiB per call with a \
"continue with offset" notice."""

KERNEL_DESCRIPTION = """\
Look into and control a kernel: a python tool session's (session, with cwd when several share \
the name) or a notebook's (notebook_path: the kernel its JupyterLab tab uses).
- variables: the names defined in the kernel, with type, shape/dtype/columns of numpy, pandas, \
polars and torch objects, and a short repr. Runs silently: no execution count, nothing added \
to the notebook; never while a cell runs (waits up to timeout, then says busy).
- inspect: one variable (name) at length: repr, head of a data frame, signature and doc.
- status: idle or busy, the running cell when known, the execution count.
- interrupt: stop the running cell.
- restart (a notebook's kernel): refused while a cell runs unless force: true; its variables \
are lost (stateLost).
- change (a notebook's kernel): a new kernel of kernel_name (another kernel spec) for the \
notebook; same rule as restart.
- sessions: the python tool's sessions."""


@cache
def default_tools() -> Mapping[str, McpTool]:
    """The tools of the package's own ``rest-api.yml``, built once per process (read-only).

    Deriving their schemas walks the whole description (~0.1 s): paid by every server started
    in a process (a test suite starts hundreds), for the same frozen tools each time.
    """
    return MappingProxyType(build_tools())


def build_tools(spec: Mapping[str, Any] | None = None) -> dict[str, McpTool]:
    """The tools by name, their input schemas derived from ``spec`` (default ``rest-api.yml``)."""
    spec = spec if spec is not None else load_spec()
    notebook_schema = merge_actions(
        request_schema(spec, NOTEBOOK.path),
        {action: request_schema(spec, op.path) for action, op in NOTEBOOK_ACTIONS.items()},
    )

    tools = [
        McpTool(
            "notebook",
            "Jupyter notebook cells",
            NOTEBOOK_DESCRIPTION,
            single_typed(notebook_schema),
            {"readOnlyHint": False, "destructiveHint": True, "openWorldHint": False},
            _notebook,
        ),
        McpTool(
            "python",
            "Run Python in a Jupyter kernel",
            PYTHON_DESCRIPTION,
            single_typed(request_schema(spec, PYTHON.path)),
            {"readOnlyHint": False, "destructiveHint": True, "openWorldHint": True},
            PYTHON.run,
        ),
        McpTool(
            "artifact",
            "Read a tool output artifact",
            ARTIFACT_DESCRIPTION,
            single_typed(artifact_schema(spec, ARTIFACT.path)),
            {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False},
            ARTIFACT.run,
        ),
        McpTool(
            "files",
            "Files of the Jupyter server",
            FILES_DESCRIPTION,
            single_typed(request_schema(spec, FILES.path)),
            {"readOnlyHint": False, "destructiveHint": True, "openWorldHint": False},
            FILES.run,
        ),
        McpTool(
            "kernel",
            "Inspect and control kernels",
            KERNEL_DESCRIPTION,
            single_typed(request_schema(spec, KERNEL.path)),
            {"readOnlyHint": False, "destructiveHint": True, "openWorldHint": False},
            KERNEL.run,
        ),
    ]
    return {tool.name: tool for tool in tools}


#: Versions that know ``structuredContent`` and ``resource_link`` content (from 2025-06-18).
_STRUCTURED = ("2025-06-18", "2025-11-25")


def call_result(body: dict[str, Any], version: str) -> dict[str, Any]:
    """The ``tools/call`` result for a tool's REST ``body``."""
    content: list[dict[str, Any]] = [{"type": "text", "text": str(body.get("text", ""))}]
    for image in body.get("images", []):
        if isinstance(image, dict) and image.get("data") and not image.get("omitted"):
            content.append(
                {"type": "image", "data": image["data"], "mimeType": image.get("mimeType")}
            )
    structured = version in _STRUCTURED
    if structured:
        content.extend(_artifact_links(body))
    result: dict[str, Any] = {"content": content, "isError": bool(body.get("isError", False))}
    if structured:
        result["structuredContent"] = body
    return result


def error_result(error: XcshError, version: str) -> dict[str, Any]:
    """The error result of a call the tool refused: the REST message, body and status."""
    body = {**error.body(), "status": status_for(error)}
    return text_result(error.message, version, structured=body)


def text_result(
    text: str, version: str, *, structured: dict[str, Any] | None = None
) -> dict[str, Any]:
    """An error result made of one text (an unknown tool, arguments that are not an object)."""
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": True}
    if version in _STRUCTURED:
        result["structuredContent"] = structured if structured is not None else {"message": text}
    return result


def _artifact_links(body: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """A ``resource_link`` per artifact the body names (full output, per cell, images)."""
    seen: set[str] = set()
    text = "; read it with the artifact tool"
    candidates: list[tuple[Any, str, str]] = [
        (body.get("artifactId"), "text/plain", "Full output of the call" + text)
    ]
    for cell in body.get("cells", []):
        if isinstance(cell, dict):
            title = cell.get("title") or f"cell {cell.get('index', 0) + 1}"
            candidates.append(
                (cell.get("artifactId"), "text/plain", f"Full output of {title}{text}")
            )
    for k, image in enumerate(body.get("images", []), 1):
        if isinstance(image, dict):
            mime = str(image.get("mimeType") or "application/octet-stream")
            candidates.append((image.get("artifactId"), mime, f"Image {k}, full size"))
    for artifact_id, mime, description in candidates:
        if isinstance(artifact_id, str) and artifact_id not in seen:
            seen.add(artifact_id)
            yield {
                "type": "resource_link",
                "uri": f"artifact://{artifact_id}",
                "name": artifact_id,
                "mimeType": mime,
                "description": description,
            }
