"""The MCP methods of a stateless server, both eras: tools, resources, tasks, cancellation.

2025's ``initialize`` and 2026's ``server/discover``. Nothing is kept between HTTP requests but
the calls running now (and, in the 2025 era, each session's subscriptions and client name), so
a ``notifications/cancelled`` (which arrives on another request) finds the call it names, by
the caller (their credential, see ``handlers/mcp.py``) and the request id. Two clients sharing
one credential and using the same request id at the same moment are indistinguishable: a cancel
from one reaches both calls.
"""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from jupyter_xcsh.calls.control import CallControl
from jupyter_xcsh.errors import NotFoundError, RefusedError, XcshError
from jupyter_xcsh.events.origin import call_origin, valid_traceparent
from jupyter_xcsh.mcp.elicitation import Elicit, Elicitations
from jupyter_xcsh.mcp.progress import ProgressNotifier
from jupyter_xcsh.mcp.protocol import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    MODERN_VERSIONS,
    PROTOCOL_VERSIONS,
    RESOURCE_NOT_FOUND,
    SERVER_INFO_META,
    Envelope,
    Message,
    ProtocolError,
    RequestId,
    client_name,
    error_response,
    negotiate,
    result_response,
)
from jupyter_xcsh.mcp.resources import (
    MAX_PER_CLIENT,
    NOTEBOOK_TEMPLATE,
    PAGE_SIZE,
    RUN_TEMPLATE,
    Subscriptions,
    list_notebooks,
    notebook_path,
    notebook_uri,
    run_id,
)
from jupyter_xcsh.mcp.summary import BODY, STRUCTURED_META
from jupyter_xcsh.mcp.tasks import EXTENSION as TASKS_EXTENSION
from jupyter_xcsh.mcp.tasks import Tasks, TaskWatch, offers_tasks
from jupyter_xcsh.mcp.tools import (
    REQUEST_STATE,
    ROUND_KEY,
    InputRequired,
    InputRounds,
    McpTool,
    ToolContext,
    call_result,
    default_tools,
    error_result,
    resume,
)
from jupyter_xcsh.runs.registry import FollowUp, RunInputTool
from jupyter_xcsh.services import XcshServices
from jupyter_xcsh.tools import Caller
from jupyter_xcsh.version import __version__

__all__ = ["McpServer", "RequestContext", "RunningRequests", "progress_token"]

INSTRUCTIONS = """\
Tools of a running Jupyter Server, in its contents root, with the token's user's permissions:
- notebook: read, find, edit, insert, delete, move and run the cells of a .ipynb (people see \
the changes live in JupyterLab).
- python: run code in a persistent Jupyter kernel session.
- artifact: read the whole output of a run whose text was cut (artifact://<id>).
- files: list, read, write, rename, delete and search the files of the root.
- kernel: a kernel's variables and state; interrupt, restart or change it.
To start: files {"action": "list"} shows the root; notebook {"action": "read", \
"notebook_path": ...} shows a notebook; python {"cells": [{"code": ...}]} runs code."""

ARTIFACT_TEMPLATE = {
    "uriTemplate": "artifact://{id}",
    "name": "artifact",
    "title": "Tool output artifact",
    "description": "The full output of a python call, kept as a file in the contents root.",
    "mimeType": "text/plain",
}


@dataclass(frozen=True)
class RequestContext:
    """One request's surroundings: who sends it, from which client, under which version.

    ``control`` is the request's own: the runs it starts are registered as its (their
    ``owner``), so a cancel of the request finds them in the run registry, detached or not.
    """

    caller: Caller
    client: str
    version: str
    control: CallControl
    progress: ProgressNotifier | None = None
    #: Asks the person a prompt (elicitation), when the client offers it on this call's stream.
    elicit: Elicit | None = None
    #: The client's ``Mcp-Session-Id`` ("" without one): with ``client``, whose subscriptions.
    session: str = ""
    #: A 2026-07-28 request's own version, client info and capabilities (None: 2025 era).
    envelope: Envelope | None = None
    #: Ends the request's answer unanswered (a cancelled request gets no response).
    give_up: Callable[[], None] | None = None
    #: The request's ``traceparent`` header (W3C trace context), "" without one.
    trace: str = ""

    @property
    def modern(self) -> bool:
        """Whether the request is of the 2026 era (no handshake, no session)."""
        return self.envelope is not None

    @property
    def subscriber(self) -> str:
        """The key of this client's resource subscriptions and notification stream."""
        return f"{self.client} {self.session}"


def progress_token(params: Mapping[str, Any]) -> str | int | None:
    """The request's ``_meta.progressToken``, when it asks for progress."""
    meta = params.get("_meta")
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    if isinstance(token, str) or (isinstance(token, int) and not isinstance(token, bool)):
        return token
    return None


class RunningRequests:
    """The requests being answered now, by client and request id."""

    def __init__(self) -> None:
        self._running: dict[tuple[str, RequestId], list[RequestContext]] = {}

    @contextmanager
    def track(self, client: str, request_id: RequestId, context: RequestContext) -> Iterator[None]:
        """Let ``cancel(client, request_id)`` reach ``context`` for the duration of the block."""
        key = (client, request_id)
        self._running.setdefault(key, []).append(context)
        try:
            yield
        finally:
            contexts = self._running[key]
            contexts.remove(context)
            if not contexts:
                del self._running[key]

    def cancel(self, client: str, request_id: object) -> list[RequestContext]:
        """Stop the client's running request ``request_id`` as a hang-up would; what it found.

        A client cancels a request when it stops waiting for it, a timeout of its own as
        often as a person's choice: nothing is lost. A run it started goes on when detached
        (MCP's default; its result, or its result so far, stays readable by its run id), and
        is interrupted otherwise, its result kept for its run id as well.
        """
        if not isinstance(request_id, (str, int)) or isinstance(request_id, bool):
            return []
        contexts = list(self._running.get((client, request_id), []))
        for context in contexts:
            context.control.cancel()
            if context.give_up is not None:
                context.give_up()  # JSON-RPC: a cancelled request is not answered
        return contexts

    def __len__(self) -> int:
        return sum(len(contexts) for contexts in self._running.values())


SERVER_INFO = {"name": "jupyter-xcsh", "title": "Jupyter (xcsh)", "version": __version__}

#: Methods of the 2025 era that the 2026 era removed.
MODERN_REMOVED = frozenset(
    {"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"}
)
#: Methods whose 2026-07-28 results carry ``ttlMs`` and ``cacheScope``.
CACHEABLE = frozenset(
    {
        "server/discover",
        "tools/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
    }
)

#: MCP's log levels (RFC 5424's), least severe first.
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")

#: Clients whose log level is remembered, at most.
MAX_LOG_CLIENTS = 1000

Method = Callable[[dict[str, Any], RequestContext], Awaitable[dict[str, Any]]]


class McpServer:
    """Answer MCP requests and notifications with the extension's tools."""

    def __init__(
        self,
        services: XcshServices,
        tools: Mapping[str, McpTool] | None = None,
        log: logging.Logger | None = None,
    ) -> None:
        self.services = services
        self.tools = dict(tools if tools is not None else default_tools())
        self.log = log or logging.getLogger(__name__)
        self.running = RunningRequests()
        self.elicitations = Elicitations()
        self.subscriptions = Subscriptions(services.notebook_store, services.runs)
        self.methods: dict[str, Method] = {
            "initialize": self._initialize,
            "ping": self._ping,
            "tools/list": self._list_tools,
            "tools/call": self._call_tool,
            "resources/list": self._list_resources,
            "resources/templates/list": self._list_resource_templates,
            "resources/read": self._read_resource,
            "resources/subscribe": self._subscribe,
            "resources/unsubscribe": self._unsubscribe,
            "logging/setLevel": self._set_log_level,
        }
        #: The methods of the 2026 era: no handshake (``server/discover`` says what
        #: ``initialize`` said), no ``ping``, no log level, and no ``resources/subscribe``.
        self.tasks = Tasks(services)
        self.modern_methods: dict[str, Method] = {
            "server/discover": self._discover,
            "tasks/get": self._get_task,
            "tasks/update": self._update_task,
            "tasks/cancel": self._cancel_task,
            **{name: method for name, method in self.methods.items() if name not in MODERN_REMOVED},
        }
        #: The least severe log level each client asked for (``logging/setLevel``).
        self.log_levels: dict[str, str] = {}
        #: Each client's ``clientInfo.name`` from its ``initialize`` (by ``subscriber``), the
        #: agent's name shown in collaboration rooms; at most ``MAX_LOG_CLIENTS``.
        self.client_names: dict[str, str] = {}

    def notification(self, message: Message, client: str) -> None:
        """Act on a notification: only a cancel needs anything of a stateless server."""
        if message.method == "notifications/cancelled":
            request_id = message.params.get("requestId")
            found = self.running.cancel(client, request_id)
            self.log.debug("MCP cancel of %r reached %d call(s)", message.params, len(found))

    def forget(self, subscriber: str) -> None:
        """Forget a 2025 session that ended (``DELETE``): its subscriptions and name."""
        self.client_names.pop(subscriber, None)
        for uri in self.subscriptions.subscribed(subscriber):
            self.subscriptions.unsubscribe(subscriber, uri)

    def response(self, message: Message, client: str) -> None:
        """Hand a client's response (to an elicitation) to the call waiting for it."""
        if not self.elicitations.respond(client, message.id, message.params):
            self.log.debug("MCP response %r matched no request", message.id)

    async def request(self, message: Message, context: RequestContext) -> dict[str, Any]:
        """Answer one request: its JSON-RPC response, success or error."""
        assert message.id is not None
        context = self._named(message, context)
        method = (self.modern_methods if context.modern else self.methods).get(message.method)
        if method is None:
            era = f" at protocol version {context.version}" if context.modern else ""
            return error_response(
                message.id, METHOD_NOT_FOUND, f"Method not found: {message.method}{era}"
            )
        meta = message.params.get("_meta")
        trace = valid_traceparent(meta.get("traceparent") if isinstance(meta, dict) else None)
        origin = call_origin(context.caller.name, trace or valid_traceparent(context.trace))
        with self.running.track(context.client, message.id, context), origin:
            try:
                result = await method(message.params, context)
                if context.modern:
                    result = self._modern_result(message.method, result)
                return result_response(message.id, result)
            except ProtocolError as e:
                return error_response(message.id, e.code, e.message, e.data)
            except Exception:
                # A bug, not the client's fault: logged whole, answered without internals.
                self.log.exception("MCP %s failed", message.method)
                return error_response(message.id, INTERNAL_ERROR, "Internal error")

    def _modern_result(self, method: str, result: dict[str, Any]) -> dict[str, Any]:
        """A 2026-07-28 result: its ``resultType``, the server named, and lists' cache hints.

        The lists are the same for every request of a server process but follow the caller's
        permissions and the root's files: cached by the client only, and only while it asks
        again at once (``ttlMs`` 0: it re-lists when it wants the news).
        """
        result.setdefault("resultType", "complete")
        meta = result.get("_meta")
        result["_meta"] = {
            **(meta if isinstance(meta, dict) else {}),
            SERVER_INFO_META: SERVER_INFO,
        }
        if method in CACHEABLE:
            result.setdefault("ttlMs", 0)
            result.setdefault("cacheScope", "private")
        return result

    def _named(self, message: Message, context: RequestContext) -> RequestContext:
        """The context with the caller named as the client said (``initialize``, ``_meta``)."""
        if context.envelope is not None:
            said = context.envelope.client_name
            if not said or context.caller.persona:  # a Jupyter AI persona keeps its own name
                return context
            return replace(context, caller=replace(context.caller, name=said))
        if message.method == "initialize":
            info = message.params.get("clientInfo")
            given = client_name(info.get("name")) if isinstance(info, dict) else ""
            if given:
                self.client_names.pop(context.subscriber, None)
                self.client_names[context.subscriber] = given
                while len(self.client_names) > MAX_LOG_CLIENTS:
                    del self.client_names[next(iter(self.client_names))]
        name = self.client_names.get(context.subscriber)
        if name is None or context.caller.persona:  # a Jupyter AI persona keeps its own name
            return context
        return replace(context, caller=replace(context.caller, name=name))

    async def _initialize(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        return {
            "protocolVersion": negotiate(params.get("protocolVersion")),
            "capabilities": {
                "tools": {"listChanged": False},
                "resources": {"subscribe": True, "listChanged": False},
                "logging": {},
            },
            "serverInfo": SERVER_INFO,
            "instructions": INSTRUCTIONS,
        }

    async def _discover(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """``server/discover``: what ``initialize`` says, for a client of the 2026 era."""
        return {
            "supportedVersions": [*PROTOCOL_VERSIONS, *MODERN_VERSIONS],
            "capabilities": {
                "tools": {"listChanged": False},
                "resources": {"subscribe": False, "listChanged": False},
                "extensions": {TASKS_EXTENSION: {}},
            },
            "instructions": INSTRUCTIONS,
        }

    async def _get_task(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        _needs_tasks(context)
        return await self._as_protocol(self.tasks.get(params, context.caller, context.version))

    async def _update_task(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        _needs_tasks(context)
        return await self._as_protocol(self.tasks.update(params, context.caller))

    async def _cancel_task(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        _needs_tasks(context)
        return await self._as_protocol(self.tasks.cancel(params, context.caller))

    @staticmethod
    async def _as_protocol(answer: Awaitable[dict[str, Any]]) -> dict[str, Any]:
        """A method's answer; a domain error as the JSON-RPC error of its kind, never -32603.

        A refusal (the authorizer's) is an invalid request, anything else the caller's params'
        fault (an unknown run, a run that cannot take what was asked), its message kept.
        """
        try:
            return await answer
        except RefusedError as e:
            raise ProtocolError(INVALID_REQUEST, e.message) from None
        except XcshError as e:
            raise ProtocolError(INVALID_PARAMS, e.message) from None

    async def _ping(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        return {}

    async def _set_log_level(
        self, params: dict[str, Any], context: RequestContext
    ) -> dict[str, Any]:
        """``logging/setLevel``: remembered for the client; a level MCP does not name is refused.

        The server sends no ``notifications/message`` today (a call's notices are in its
        result), so the level changes nothing yet; declaring ``logging`` lets clients that
        set a level on connecting do so without an error.
        """
        level = params.get("level")
        if level not in LOG_LEVELS:
            raise ProtocolError(
                INVALID_PARAMS, f"level must be one of {', '.join(LOG_LEVELS)}, got {level!r}"
            )
        self.log_levels.pop(context.client, None)
        self.log_levels[context.client] = level
        while len(self.log_levels) > MAX_LOG_CLIENTS:  # the longest unset first
            del self.log_levels[next(iter(self.log_levels))]
        return {}

    async def _list_tools(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        return {"tools": [tool.listing(context.version) for tool in self.tools.values()]}

    async def _call_tool(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        name = params.get("name")
        if not isinstance(name, str):
            raise ProtocolError(INVALID_PARAMS, "Invalid params: name must be a string")
        # The MCP specification lists an unknown tool and arguments of the wrong shape among the
        # protocol errors (-32602); a tool's own refusal of a value stays a tool result.
        tool = self.tools.get(name)
        if tool is None:
            known = ", ".join(self.tools)
            raise ProtocolError(INVALID_PARAMS, f"Unknown tool: {name} (tools: {known})")
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise ProtocolError(INVALID_PARAMS, "Invalid params: arguments must be a JSON object")
        # The listed schemas have no null (mcp/schemas.py), yet agents send null for what they
        # leave unset: it means "not given", as REST's nullable fields do.
        arguments = {key: value for key, value in arguments.items() if value is not None}
        rounds = _input_rounds(params, context)
        as_task = offers_tasks(context.envelope) and _runs(name, arguments)
        if as_task and "run_id" not in arguments:
            # A call that may become a task is detached: when it does, its request stops
            # following it and the task is the run (tasks/cancel stops it), whatever it said.
            arguments = {**arguments, "detach": True}
        call = ToolContext(
            self.services,
            context.caller,
            context.progress,
            context.control,
            context.elicit,
            rounds,
            as_task=as_task,
        )
        # A run still going mcp_task_after seconds on becomes a task: its request stops
        # following it (as when its client hangs up, the run going on), and answers the task.
        task_after = self.services.settings.mcp_task_after
        timer = (
            asyncio.get_running_loop().call_later(task_after, context.control.cancel)
            if as_task
            else None
        )
        # structuredContent is the body's summary unless the caller asks for the body itself.
        meta = params.get("_meta")
        whole = isinstance(meta, dict) and meta.get(STRUCTURED_META) == BODY
        try:
            if rounds is not None and rounds.run_id is not None:
                body = await resume(call)  # the retry of a call whose run asked for input
            else:
                body = await tool.call(call, arguments)
        except InputRequired as asked:
            return asked.result()
        except XcshError as e:
            return error_result(e, context.version, whole=whole)
        finally:
            if timer is not None:
                timer.cancel()
        if as_task and body.get("running") is True and isinstance(body.get("callId"), str):
            return self.tasks.created(body["callId"])
        return call_result(body, context.version, whole=whole)

    async def _list_resources(
        self, params: dict[str, Any], context: RequestContext
    ) -> dict[str, Any]:
        # The notebooks of the root, in pages. Artifacts are many and short-lived: they are
        # reached by the links results carry (resources/templates/list).
        try:
            await context.caller.require("read", "contents")
        except RefusedError as e:
            raise ProtocolError(INVALID_REQUEST, e.message) from None
        cursor = params.get("cursor")
        start = 0
        if cursor is not None:
            if not (isinstance(cursor, str) and cursor.isascii() and cursor.isdigit()):
                raise ProtocolError(INVALID_PARAMS, f"Invalid params: unknown cursor {cursor!r}")
            start = int(cursor)
        paths = await list_notebooks(self.services.notebook_store.contents_manager)
        page = paths[start : start + PAGE_SIZE]
        resources = [
            {
                "uri": notebook_uri(path),
                "name": path,
                "title": path.rsplit("/", 1)[-1],
                "mimeType": "text/plain",
            }
            for path in page
        ]
        answer: dict[str, Any] = {"resources": resources}
        if start + PAGE_SIZE < len(paths):
            answer["nextCursor"] = str(start + PAGE_SIZE)
        return answer

    async def _list_resource_templates(
        self, params: dict[str, Any], context: RequestContext
    ) -> dict[str, Any]:
        return {"resourceTemplates": [ARTIFACT_TEMPLATE, NOTEBOOK_TEMPLATE, RUN_TEMPLATE]}

    async def _read_resource(
        self, params: dict[str, Any], context: RequestContext
    ) -> dict[str, Any]:
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise ProtocolError(INVALID_PARAMS, "Invalid params: uri must be a string")
        path = notebook_path(uri)
        if path is not None:
            body = await self._notebook(uri, path, context)
            return {"contents": [{"uri": uri, "mimeType": "text/plain", "text": body["text"]}]}
        run = run_id(uri)
        if run is not None:
            text = await self._run_text(uri, run, context)
            return {"contents": [{"uri": uri, "mimeType": "text/plain", "text": text}]}
        if not uri.startswith("artifact://"):
            message = f"Resource not found: {uri}"
            raise ProtocolError(_not_found(context), message, data={"uri": uri})
        try:
            body = await self.services.artifacts.call({"id": uri}, context.caller)
            # An image artifact is read as what it is (up to a size), not as its description.
            image = None
            if str(body["details"].get("mimeType", "")).startswith("image/"):
                image = await self.services.artifacts.read_image(uri, context.caller)
        except NotFoundError as e:
            raise ProtocolError(_not_found(context), e.message, data={"uri": uri}) from None
        except RefusedError as e:
            raise ProtocolError(INVALID_REQUEST, e.message, data={"uri": uri}) from None
        except XcshError as e:
            raise ProtocolError(INVALID_PARAMS, e.message, data={"uri": uri}) from None
        if image is not None:
            blob = base64.b64encode(image[1]).decode("ascii")
            return {"contents": [{"uri": uri, "mimeType": image[0], "blob": blob}]}
        return {"contents": [{"uri": uri, "mimeType": "text/plain", "text": body["text"]}]}

    async def _notebook(self, uri: str, path: str, context: RequestContext) -> dict[str, Any]:
        """The notebook tool's ``read`` of ``path``, asked as REST asks it (a protocol error)."""
        try:
            await context.caller.require("read", "contents")
            body = {"action": "read", "notebook_path": path}
            return await self.services.notebook.call(body, context.caller)
        except NotFoundError as e:
            raise ProtocolError(_not_found(context), e.message, data={"uri": uri}) from None
        except RefusedError as e:
            raise ProtocolError(INVALID_REQUEST, e.message, data={"uri": uri}) from None
        except XcshError as e:
            raise ProtocolError(INVALID_PARAMS, e.message, data={"uri": uri}) from None

    async def _run_text(self, uri: str, run: str, context: RequestContext) -> str:
        """A run read as ``run_id`` + ``wait: 0`` answers it: its result, or its output so far.

        Never changes the run: following it does not answer or end anything.
        """
        try:
            await self._run_of(uri, run, context)
            body = await self.services.run_inputs.follow_up(FollowUp(run, None, 0), context.caller)
        except XcshError as e:  # its call ended refused: what the tool call answered
            return e.message
        return str(body.get("text", ""))

    async def _run_of(self, uri: str, run: str, context: RequestContext) -> None:
        """Check that the run exists and that the caller may follow it (protocol errors)."""
        try:
            await context.caller.require(*RunInputTool.permission)
            self.services.runs.get(run)
        except NotFoundError as e:
            raise ProtocolError(_not_found(context), e.message, data={"uri": uri}) from None
        except RefusedError as e:
            raise ProtocolError(INVALID_REQUEST, e.message, data={"uri": uri}) from None

    async def _subscribe(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise ProtocolError(INVALID_PARAMS, "Invalid params: uri must be a string")
        await self._subscribe_to(uri, context, context.subscriber)
        return {}

    async def listen(self, uris: object, context: RequestContext, subscriber: str) -> list[str]:
        """Subscribe a ``subscriptions/listen`` stream to ``uris``; the ones honored.

        A URI that is no notebook of the root, or one the caller may not read, is left out of
        the acknowledgment (and never fires), as the 2026 spec lets a server honor a subset.
        """
        honored: list[str] = []
        # At most MAX_PER_CLIENT are looked at: a longer list would only make the server read
        # notebooks it then cannot subscribe to.
        for uri in uris[:MAX_PER_CLIENT] if isinstance(uris, list) else []:
            if not isinstance(uri, str) or uri in honored:
                continue
            try:
                await self._subscribe_to(uri, context, subscriber)
            except ProtocolError:
                continue
            honored.append(uri)
        return honored

    async def watch_tasks(
        self, task_ids: object, context: RequestContext
    ) -> tuple[TaskWatch | None, list[str]]:
        """Follow a ``subscriptions/listen`` stream's ``taskIds``: the watch, the ids honored.

        Only for a client declaring the Tasks extension; an unknown task, or one the caller
        may not follow, is left out of the acknowledgment.
        """
        if not offers_tasks(context.envelope):
            return None, []
        watch = TaskWatch(self.tasks, context.version)
        honored = await watch.follow(task_ids, context.caller)
        return (watch if honored else None), honored

    async def _subscribe_to(self, uri: str, context: RequestContext, subscriber: str) -> None:
        path = notebook_path(uri)
        run = run_id(uri)
        if path is None and run is None:
            raise ProtocolError(
                _not_found(context),
                f"Resource not found: {uri} (only notebook:/// and run:// resources can be "
                f"subscribed to)",
                data={"uri": uri},
            )
        if run is not None:
            await self._run_of(uri, run, context)  # exists, and the caller may follow it
        else:
            assert path is not None
            await self._notebook(uri, path, context)  # exists, and the caller may read it
        try:
            if path is not None:
                target, _ = await self.services.notebook_store.resolve(path)
            else:
                assert run is not None
                target = run
            await self.subscriptions.subscribe(subscriber, uri, target)
        except NotFoundError as e:  # deleted since it was read
            raise ProtocolError(_not_found(context), e.message, data={"uri": uri}) from None
        except XcshError as e:  # outside the root, past the bounds
            raise ProtocolError(INVALID_REQUEST, e.message, data={"uri": uri}) from None

    async def _unsubscribe(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise ProtocolError(INVALID_PARAMS, "Invalid params: uri must be a string")
        self.subscriptions.unsubscribe(context.subscriber, uri)
        return {}


def _needs_tasks(context: RequestContext) -> None:
    """Refuse a ``tasks/*`` request whose client did not declare the extension (``-32021``)."""
    if not offers_tasks(context.envelope):
        raise ProtocolError(
            MISSING_REQUIRED_CLIENT_CAPABILITY,
            f"Missing required client capability: extension {TASKS_EXTENSION}",
            data={"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
        )


def _runs(name: str, arguments: Mapping[str, Any]) -> bool:
    """Whether a call of tool ``name`` starts or follows a run (which may become a task)."""
    if name == "python":
        return True
    return name == "notebook" and (
        arguments.get("action") == "run" or arguments.get("run") is True or "run_id" in arguments
    )


def _input_rounds(params: Mapping[str, Any], context: RequestContext) -> InputRounds | None:
    """A 2026 call's input round trips, when its client can be asked (it offers elicitation).

    A retry names its run in ``requestState`` (as the ``input_required`` result gave it) and
    brings the answer in ``inputResponses``.
    """
    envelope = context.envelope
    if envelope is None or not isinstance(envelope.capabilities.get("elicitation"), dict):
        return None
    state = params.get("requestState")
    if not (isinstance(state, str) and state.startswith(REQUEST_STATE)):
        return InputRounds()
    responses = params.get("inputResponses")
    response = responses.get(ROUND_KEY) if isinstance(responses, dict) else None
    return InputRounds(state.removeprefix(REQUEST_STATE), response)


def _not_found(context: RequestContext) -> int:
    """The error code of a resource that does not exist, as each revision specifies.

    -32602 (invalid params) from 2026-07-28 on (SEP-2164), -32002 in the 2025 revisions.
    """
    return INVALID_PARAMS if context.modern else RESOURCE_NOT_FOUND
