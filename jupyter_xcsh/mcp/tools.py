"""The MCP tools: one entry per tool, each forwarding to that tool's one call path (``tools/``).

Nothing here validates: the tool services do, as for REST. Authorization is asked as REST asks
it: first what the REST verb's ``@authorized`` asks, then the tool's own checks, so a call over
MCP and the same call over REST give the same result or the same refusal.

This is also the one place the MCP transport turns a tool's outcome into what a model sees
(``call_result``, ``error_result``): ``content`` is the tool's text (plus each image once and
links to artifacts), ``structuredContent`` the REST body's bounded summary (``summary.py``;
the body itself when the caller asks), ``isError`` the result's own flag. A domain error (bad
arguments, a missing notebook, a refusal) becomes an error *result* carrying the REST message
and status, as REST answers it with a 4xx: the model reads it and corrects itself; it is not a
protocol fault.

And what ``tools/list`` shows of each tool: a short description with a line per action (the
arguments' own come from rest-api.yml, ``schemas.py``), and its ``outputSchema``.
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import suppress
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType
from typing import Any

from jupyter_xcsh.calls.control import CallControl
from jupyter_xcsh.calls.observer import ExecutionObserver
from jupyter_xcsh.errors import ConflictError, XcshError, status_for
from jupyter_xcsh.fields import InvalidActionError
from jupyter_xcsh.mcp.elicitation import DECLINED, PASSWORD, Elicit, accepted_answer, form
from jupyter_xcsh.mcp.schemas import (
    artifact_schema,
    listed,
    load_spec,
    merge_actions,
    request_schema,
    single_typed,
)
from jupyter_xcsh.mcp.summary import OUTPUT_SCHEMAS, summarize
from jupyter_xcsh.outputs.images import ImageLimits
from jupyter_xcsh.runs.registry import MAX_WAIT, FollowUp, RunInputTool
from jupyter_xcsh.services import XcshServices
from jupyter_xcsh.tools import Caller
from jupyter_xcsh.tools.artifact.tool import ArtifactTool
from jupyter_xcsh.tools.base import Tool
from jupyter_xcsh.tools.files.tool import FilesTool
from jupyter_xcsh.tools.inplace.tool import InPlaceTool
from jupyter_xcsh.tools.kernel.tool import KernelTool
from jupyter_xcsh.tools.notebook.tool import NotebookTool
from jupyter_xcsh.tools.python.tool import PythonTool

__all__ = [
    "NOTEBOOK_ACTIONS",
    "InputRequired",
    "InputRounds",
    "McpTool",
    "Operation",
    "ToolContext",
    "build_tools",
    "call_result",
    "default_tools",
    "error_result",
    "resume",
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
    #: 2026-07-28: prompts asked as ``input_required`` results, answered by the client's retry.
    rounds: InputRounds | None = None
    #: 2026-07-28 with the Tasks extension: a run that goes on may become a task.
    as_task: bool = False


class InputRounds:
    """A 2026-07-28 call's multi-round-trip input: what the client's retry answered.

    The server asks nothing on the call's stream in this era: a run waiting for input ends
    the request with an ``input_required`` result naming the run (``InputRequired``), the run
    waiting on; the client retries the call with ``inputResponses`` and that ``requestState``,
    and the retry follows the run on from its prompt with the answer (``ROUND_KEY``).
    """

    def __init__(self, run_id: str | None = None, response: Any = None) -> None:
        self.run_id = run_id
        self._response = response if isinstance(response, dict) else None

    def take(self, run_id: str) -> dict[str, Any] | None:
        """The client's answer to the prompt of ``run_id`` (once), None when it has none."""
        if run_id != self.run_id or self._response is None:
            return None
        response, self._response = self._response, None
        return response


class InputRequired(Exception):
    """A run waits for input the client is asked for with an ``input_required`` result."""

    def __init__(self, run_id: str, prompt: str) -> None:
        super().__init__(run_id)
        self.run_id = run_id
        self.prompt = prompt

    def result(self) -> dict[str, Any]:
        """The ``input_required`` result: one form question, and the run in ``requestState``."""
        return {
            "resultType": "input_required",
            "inputRequests": {
                ROUND_KEY: {"method": "elicitation/create", "params": form(self.prompt)}
            },
            "requestState": REQUEST_STATE + self.run_id,
        }


#: The key of a run's question in ``inputRequests`` (and of its answer in ``inputResponses``).
ROUND_KEY = "stdin"
#: ``requestState`` of a call whose run waits for input: this prefix and the run's id. Opaque to
#: the client; the retry still follows the run only as its caller may (``RunInputTool``).
REQUEST_STATE = "xcsh-run:"


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
    # A run that may become a task runs in a task of its own (stdin ask), its request only
    # following it: one that can stop following it and answer.
    asks = {"stdin": "ask"} if context.elicit or context.rounds or context.as_task else {}
    return {"detach": DETACH_BY_DEFAULT, **asks, **arguments}


async def _ask_prompts(
    context: ToolContext, result: dict[str, Any], runs: RunInputTool
) -> dict[str, Any]:
    """While the run waits for input, ask the person (elicitation) and follow it on.

    2025: an ``elicitation/create`` on the call's stream; 2026: ``InputRequired``, the client's
    retry bringing the answer (``context.rounds``).
    """
    asks = context.elicit is not None or context.rounds is not None
    while asks and isinstance(result.get("awaitingInput"), dict):
        waiting = result["awaitingInput"]
        run_id, follow = str(waiting["runId"]), (context.observer, context.control)
        if waiting.get("password"):
            result = await runs.refuse(run_id, PASSWORD, *follow)
            continue
        prompt = str(waiting.get("prompt", ""))
        if context.rounds is not None:
            response = context.rounds.take(run_id)
            if response is None:
                raise InputRequired(run_id, prompt)
            answer = accepted_answer(response)
        else:
            assert context.elicit is not None
            answer = accepted_answer(await context.elicit(prompt))
        with suppress(ConflictError):  # no longer waiting (input_timeout): follow it on
            if answer is None:
                result = await runs.refuse(run_id, DECLINED, *follow)
            else:
                result = await runs.follow_up(FollowUp(run_id, answer, 0), context.caller, *follow)
            continue
        result = await runs.follow_up(FollowUp(run_id, None, MAX_WAIT), context.caller, *follow)
    return result


async def resume(context: ToolContext) -> dict[str, Any]:
    """A 2026 retry of a call whose run waited for input: the run followed on with its answer.

    The retry repeats the call's arguments; the run is not started again: its prompt is
    answered (``context.rounds``) and it is followed to its next stop, as ``run_id`` +
    ``answer`` would.
    """
    assert context.rounds is not None and context.rounds.run_id is not None
    runs = context.services.python.follow_ups
    follow = (context.observer, context.control)
    result = await runs.follow_up(FollowUp(context.rounds.run_id, None, 0), context.caller, *follow)
    return await _ask_prompts(context, result, runs)


ToolCall = Callable[[ToolContext, dict[str, Any]], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class Operation:
    """A tool an MCP tool (or one of its actions) forwards to.

    ``tool`` declares its REST path (``route``, whose request in ``rest-api.yml`` gives the
    MCP tool's arguments) and the permission its REST verb asks first (``permission``);
    ``call`` is how MCP calls it.
    """

    tool: type[Tool]
    call: ToolCall

    @property
    def path(self) -> str:
        """The tool's path in ``rest-api.yml``."""
        return self.tool.route

    async def run(self, context: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
        """Ask what the REST verb asks, then call the tool."""
        await context.caller.require(*self.tool.permission)
        return await self.call(context, arguments)


@dataclass(frozen=True)
class McpTool:
    """One tool as ``tools/list`` shows it, and how ``tools/call`` runs it.

    ``annotations`` hold only the hints that differ from MCP's defaults (a tool may change
    things, destructively), which clients assume when a hint is absent; ``openWorldHint``, a
    hint few clients use, is not worth its place in every conversation.
    """

    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    annotations: dict[str, Any]
    call: ToolCall

    def listing(self, version: str = "2025-11-25") -> dict[str, Any]:
        """The tool's entry in ``tools/list`` (its ``outputSchema`` for versions that know it)."""
        entry = {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": self.input_schema,
        }
        if version in _STRUCTURED:
            entry["outputSchema"] = OUTPUT_SCHEMAS[self.name]
        if self.annotations:
            entry["annotations"] = self.annotations
        return entry


async def _notebook_call(context: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
    tool = context.services.notebook
    if arguments.get("run") is not True:
        return await tool.call(arguments, context.caller)
    # A change that runs its cell: a run, with MCP's defaults and prompts as action "run".
    arguments = _with_mcp_defaults(context, arguments)
    result = await tool.call(arguments, context.caller, context.observer, context.control)
    return await _ask_prompts(context, result, tool.follow_ups)


async def _python_call(context: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
    tool = context.services.python
    arguments = _with_mcp_defaults(context, arguments)
    result = await tool.call(arguments, context.caller, context.observer, context.control)
    return await _ask_prompts(context, result, tool.follow_ups)


async def _artifact_call(context: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
    """Lines of a text artifact; an image artifact is shown as an image when it fits.

    Within the python tool's limits for one inlined image (``ImageLimits``; never an SVG), else
    the text says to read it as the resource ``artifact://<id>`` (whole, where a client offers
    resources).
    """
    tool = context.services.artifacts
    body = await tool.call(arguments, context.caller)
    details = body.get("details", {})
    mime, width, height = details.get("mimeType"), details.get("width"), details.get("height")
    if not isinstance(mime, str) or not mime.startswith("image/"):
        return body
    shown = None
    limits = ImageLimits()
    fits = isinstance(width, int) and isinstance(height, int)
    if fits and mime != "image/svg+xml" and limits.fits(width, height, details["bytes"]):
        shown = await tool.read_image(str(details["artifactId"]), context.caller)
    if shown is None:
        uri = f"artifact://{details['artifactId']}"
        return {**body, "text": f"{body['text']}; read it whole as the resource {uri}"}
    image = {**details, "data": base64.b64encode(shown[1]).decode("ascii"), "omitted": False}
    return {**body, "text": f"{body['text']}; shown below", "images": [image]}


async def _run_call(context: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
    tool = context.services.run
    arguments = _with_mcp_defaults(context, arguments)
    result = await tool.call(arguments, context.caller, context.observer, context.control)
    return await _ask_prompts(context, result, tool.follow_ups)


async def _files_call(context: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
    return await context.services.files.call(arguments, context.caller)


NOTEBOOK = Operation(NotebookTool, _notebook_call)
PYTHON = Operation(PythonTool, _python_call)
ARTIFACT = Operation(ArtifactTool, _artifact_call)
RUN = Operation(InPlaceTool, _run_call)
FILES = Operation(FilesTool, _files_call)


async def _kernel_call(context: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
    return await context.services.kernel.call(arguments, context.caller)


KERNEL = Operation(KernelTool, _kernel_call)


async def _notebook(context: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
    action = arguments.get("action")
    if action is None and "run_id" in arguments:
        action = "run"  # a follow-up of any run the tool started (its text says so)
    operation = NOTEBOOK_ACTIONS.get(str(action))
    if operation is None:
        try:
            return await NOTEBOOK.run(context, arguments)
        except InvalidActionError as e:  # the tool's actions over MCP: run too
            raise e.widened(NOTEBOOK_ACTIONS) from None
    body = {key: value for key, value in arguments.items() if key != "action"}
    return await operation.run(context, body)


#: Actions of the ``notebook`` tool served by another operation than ``POST
#: /api/xcsh/notebook``, by action name. The operation's request body (without ``action``,
#: which its path implies) is what it is called with, and its request schema joins the tool's
#: input schema. Adding such an action is one entry here.
NOTEBOOK_ACTIONS: dict[str, Operation] = {RUN.tool.name: RUN}


# The tools' descriptions: what an agent needs to call each action right, in a line per action
# (its fields; [optional ones]), in the words of the MCP arguments. Listed in every conversation:
# short. The arguments' own descriptions come from rest-api.yml (``x-mcp-description``).

NOTEBOOK_DESCRIPTION = """\
Cells of the .ipynb at notebook_path (under the server's root), live in JupyterLab; a cell \
is cell_index (from 0) or cell_id.
- create [kernel_name]: a new empty notebook (never over a file).
- read [cell_index, end_index, max_chars, images]: sources, ids, outputs in short (images: \
true returns the cells' images).
- find pattern [regex, cell_type]: matching lines.
- edit cell_index|cell_id, content [cell_type]; old_content: replace only that unique snippet.
- insert content at cell_index|after_cell_id|before_cell_id [cell_type].
edit and insert with run: true then run the cell, in one call (the answer is the run's).
- delete cell_index|cell_id.
- move cell_index|cell_id to to_index|to_after_cell_id|to_before_cell_id.
- run cell_id|cell_index [end_index]|cell_ids|all|stale: in the notebook's kernel, outputs \
saved (timeout, stdin, run_id, answer, wait as in python).
- changes since_revision: what changed since, by whom.
- no action, changes: [{action, ...}]: an atomic batch of edits, inserts, deletes, moves.
expected_revision, expected_source_hash (from an answer): refused (409) if changed since."""

PYTHON_DESCRIPTION = """\
Run Python in a Jupyter kernel of the server: cells [{"code": ...}] in order, in a persistent \
session (mode per-call: a fresh kernel); a failing cell stops the rest. Output past the limit \
is cut: the text names artifact://<id> holding all of it (artifact tool). notebook_path: \
run on that notebook's own kernel (its variables), adding no cell."""

FILES_DESCRIPTION = """\
Files and folders under the server's root (path relative to it).
- list [path, glob, limit]: entries.
- read path [start_line, end_line, max_chars]: lines and hash.
- write path, content: a new file; a whole file with expected_hash (from read); or \
old_content (a unique snippet) replaced by content.
- mkdir path.
- rename path, new_path.
- delete path: a file with expected_hash, or an empty folder.
- search pattern [path, regex, glob, limit, max_files, max_chars]: matching lines.
A stale expected_hash changes nothing (409)."""

ARTIFACT_DESCRIPTION = """\
Read the full output of a cut run: id (artifact://<id> from its text), lines offset (from 1) \
to offset+limit-1, at most 256 KiB per call."""

KERNEL_DESCRIPTION = """\
A python session's kernel (session [cwd]) or a notebook's (notebook_path).
- variables [max_variables, max_chars]: names, types, shapes, short reprs.
- inspect name: one variable at length.
- status: idle or busy.
- interrupt: the running cell.
- restart, change [kernel_name]: a notebook's kernel; force while a cell runs; variables lost.
- sessions: the python tool's sessions.
A busy kernel: waits up to timeout (default 10 s)."""


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
            NOTEBOOK.tool.name,
            "Notebook",
            NOTEBOOK_DESCRIPTION,
            listed(single_typed(notebook_schema)),
            {},
            _notebook,
        ),
        McpTool(
            PYTHON.tool.name,
            "Run Python",
            PYTHON_DESCRIPTION,
            listed(single_typed(request_schema(spec, PYTHON.path))),
            {},
            PYTHON.run,
        ),
        McpTool(
            ARTIFACT.tool.name,
            "Artifact",
            ARTIFACT_DESCRIPTION,
            listed(single_typed(artifact_schema(spec, ARTIFACT.path))),
            {"readOnlyHint": True},
            ARTIFACT.run,
        ),
        McpTool(
            FILES.tool.name,
            "Files",
            FILES_DESCRIPTION,
            listed(single_typed(request_schema(spec, FILES.path))),
            {},
            FILES.run,
        ),
        McpTool(
            KERNEL.tool.name,
            "Kernels",
            KERNEL_DESCRIPTION,
            listed(single_typed(request_schema(spec, KERNEL.path))),
            {},
            KERNEL.run,
        ),
    ]
    return {tool.name: tool for tool in tools}


#: Versions that know ``structuredContent`` and ``resource_link`` content (from 2025-06-18).
_STRUCTURED = ("2025-06-18", "2025-11-25", "2026-07-28")


def call_result(body: dict[str, Any], version: str, *, whole: bool = False) -> dict[str, Any]:
    """The ``tools/call`` result for a tool's REST ``body``.

    ``structuredContent`` is the body's summary (``mcp/summary.py``), or with ``whole`` (the
    caller asked for it) the body itself.
    """
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
        result["structuredContent"] = body if whole else summarize(body)
    return result


def error_result(error: XcshError, version: str, *, whole: bool = False) -> dict[str, Any]:
    """The error result of a call the tool refused: the REST message, and its status.

    ``structuredContent`` is ``{status, reason, details}`` summarized (the message is the
    text), or with ``whole`` the REST error body with its ``status``.
    """
    body = {**error.body(), "status": status_for(error)}
    return text_result(error.message, version, structured=body if whole else summarize(body))


def text_result(
    text: str, version: str, *, structured: dict[str, Any] | None = None
) -> dict[str, Any]:
    """An error result made of one text (an unknown tool, arguments that are not an object)."""
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": True}
    if version in _STRUCTURED:
        result["structuredContent"] = structured if structured is not None else {}
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
