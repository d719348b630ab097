"""``POST /api/xcsh/mcp``: the Model Context Protocol over streamable HTTP, on the server's port.

Authentication, authorization and origin checks are the server's own (``@web.authenticated``,
``@authorized``, the tools asking the authorizer per call as REST does). The protocol itself
lives in ``jupyter_xcsh.mcp``; this handler only moves messages: it parses the body, answers
notifications with 202, and answers requests as one JSON body, or as a ``text/event-stream``
when a ``tools/call`` client accepts one (progress notifications, then the result). A client
that goes away interrupts its call. ``GET`` (``Accept: text/event-stream``) opens the client's
stream of notifications: ``notifications/resources/updated`` for its subscriptions.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import json
import uuid
from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web
from tornado.iostream import StreamClosedError

from jupyter_xcsh.calls.control import CallControl
from jupyter_xcsh.handlers.base import XcshAPIHandler, check_body
from jupyter_xcsh.mcp.elicitation import offers_elicitation, session_id_for
from jupyter_xcsh.mcp.progress import ProgressNotifier
from jupyter_xcsh.mcp.protocol import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    Envelope,
    Message,
    ProtocolError,
    body_id,
    decode,
    http_status,
    is_modern,
    modern_envelope,
    parse_messages,
    request_version,
)
from jupyter_xcsh.mcp.resources import POLL_INTERVAL, new_session_id, updated
from jupyter_xcsh.mcp.server import McpServer, RequestContext, progress_token
from jupyter_xcsh.mcp.tasks import TaskWatch
from jupyter_xcsh.notebook.rooms.presence import DEFAULT_NAME as DEFAULT_AGENT_NAME
from jupyter_xcsh.services import XcshServices

#: Seconds between two progress notifications (or keep-alive comments) of a streamed call.
PROGRESS_INTERVAL = 2.0
#: The ``_meta`` key naming the ``subscriptions/listen`` request each of its frames belongs to.
SUBSCRIPTION_ID_META = "io.modelcontextprotocol/subscriptionId"
#: Seconds between two keep-alive comments of a notification stream (GET).
KEEP_ALIVE = 15.0

SSE = "text/event-stream"

#: The answer to a request with neither a valid token nor a browser's login (403).
NO_TOKEN = (
    "Missing or invalid token: send the server's token in the header "
    "'Authorization: token <token>' (or 'Bearer <token>'); "
    "'jupyter xcsh mcp-config' prints a client configuration with it filled in"
)


class McpHandler(XcshAPIHandler):
    """Serve MCP, stateless, in both eras (docs/developers/contract.md §9).

    2026-07-28, and 2025-03-26 to 2025-11-25: the era chosen per request by its
    ``MCP-Protocol-Version`` header.

    ``POST``: one JSON-RPC message (or a 2025-03-26 batch); 2026: one request, its envelope
    and routing headers checked first (``_post_modern``). 200 with the JSON-RPC answer as
    ``application/json``, or as ``text/event-stream`` for a ``tools/call`` whose client accepts
    it; 202 for notifications and responses only; 400 (a JSON-RPC error body) for a body that
    is not JSON-RPC or an unsupported ``MCP-Protocol-Version``; 403 for a caller who may not
    read the API, or a foreign ``Origin`` (checked for every request, token or not, as MCP
    asks against DNS rebinding). ``GET`` with ``Accept: text/event-stream``: the client's
    notification stream (its resource subscriptions' updates), kept open until it leaves;
    without that ``Accept``, or any other method, a 405 listing ``Allow``. ``DELETE`` with a
    2025 ``Mcp-Session-Id``: 204, its subscriptions and name forgotten.
    """

    auth_resource = "api"
    mcp: McpServer
    gone = False
    _streaming = False  # an event was flushed: the response has begun
    _issued_session: str | None = None  # the Mcp-Session-Id this initialize hands out
    _ticker: asyncio.TimerHandle

    def initialize(self, services: XcshServices, mcp: McpServer) -> None:  # type: ignore[override]
        """Keep the services and the MCP server built once for every request."""
        super().initialize(services)
        self.mcp = mcp
        self.controls: list[CallControl] = []

    def skip_check_origin(self) -> bool:
        """Check the Origin of token-authenticated requests too (only preflights skip it)."""
        return self.request.method == "OPTIONS"

    def check_xsrf_cookie(self) -> None:
        """Tell a caller without credentials that the token is missing.

        jupyter_server asks a request that is not token-authenticated for the browser's
        ``_xsrf`` cookie, and its 403 says ``'_xsrf' argument missing from POST``: what an MCP
        client lacks is the token.
        """
        try:
            super().check_xsrf_cookie()
        except web.HTTPError as e:
            if e.status_code == 403 and self.current_user is None:
                raise web.HTTPError(403, NO_TOKEN) from e
            raise

    async def prepare(self) -> None:  # type: ignore[override]
        """Refuse a foreign ``Origin`` with 403 before anything else."""
        if not self.check_origin():
            origin = self.request.headers.get("Origin")
            raise web.HTTPError(403, f"Origin not allowed: {origin}")
        await super().prepare()

    @web.authenticated
    @authorized("read")
    async def post(self) -> None:
        """Answer one JSON-RPC message or batch (2025 era), or one request (2026 era)."""
        if is_modern(self.request.headers.get("MCP-Protocol-Version")):
            await self._post_modern()
            return
        try:
            try:
                version = request_version(self.request.headers.get("MCP-Protocol-Version"))
            except ProtocolError as e:
                e.request_id = body_id(self.request.body)  # the client can match the error
                raise
            body = decode(self.request.body)
            problem = check_body(body)  # REST's limits: depth, lone surrogates
            if problem is not None:
                raise ProtocolError(INVALID_REQUEST, f"Invalid Request: {problem}")
            messages, batch = parse_messages(body, version)
        except ProtocolError as e:
            self._write_json(e.response(), 400)
            return
        client = self._client_key()
        requests = [m for m in messages if isinstance(m, ProtocolError) or m.kind == "request"]
        for message in messages:
            if isinstance(message, Message) and message.kind == "notification":
                self.mcp.notification(message, client)
            elif isinstance(message, Message) and message.kind == "response":
                self.mcp.response(message, client)
            elif isinstance(message, Message) and message.method == "initialize" and not batch:
                # A client that can be asked is told apart on later requests by this id; its
                # name (clientInfo) is kept under it, as its later requests will send it.
                capabilities = message.params.get("capabilities")
                self._issued_session = session_id_for(capabilities) or new_session_id()
                self.set_header("Mcp-Session-Id", self._issued_session)
        if not requests:
            self.set_status(202)
            self.finish()
        elif not batch and self._streams(requests[0]):
            assert isinstance(requests[0], Message)
            await self._stream(requests[0], self._context(client, version, requests[0]))
        else:
            answers = [await self._answer(message, client, version) for message in requests]
            if not self.gone:
                self._write_json(answers if batch else answers[0], 200)

    async def _post_modern(self) -> None:
        """Answer one 2026-07-28 request: its envelope and routing headers checked first.

        No session: nothing is kept between requests but the calls running now. A notification
        is acknowledged (202) and dropped: this era has none from client to server, a client
        cancels by closing its request (what a hang-up does, ``on_connection_close``).
        """
        try:
            body = decode(self.request.body)
            problem = check_body(body)
            if problem is not None:
                raise ProtocolError(INVALID_REQUEST, f"Invalid Request: {problem}")
            if not isinstance(body, dict):
                raise ProtocolError(
                    INVALID_REQUEST, "Invalid Request: one JSON-RPC request or notification"
                )
            messages, _ = parse_messages(body, "")
            message = messages[0]
            assert isinstance(message, Message)  # parse_messages raised for a bad single one
            if message.kind == "response":
                raise ProtocolError(
                    INVALID_REQUEST, "Invalid Request: one JSON-RPC request or notification"
                )
            if message.kind == "notification":
                self.set_status(202)
                self.finish()
                return
            headers = {
                name.lower(): self.request.headers.get_list(name)
                for name in ("MCP-Protocol-Version", "Mcp-Method", "Mcp-Name")
            }
            envelope = modern_envelope(message, headers)
        except ProtocolError as e:
            response = e.response()
            self._write_json(response, http_status(response))
            return
        if message.method == "subscriptions/listen":
            await self._listen(message, envelope)
            return
        context = self._context(self._client_key(), envelope.version, message, envelope)
        if self._streams(message):
            await self._stream(message, context)
            return
        response = await self.mcp.request(message, context)
        if not self.gone:
            self._write_json(response, http_status(response))

    @web.authenticated
    @authorized("read")
    async def delete(self) -> None:
        """End a 2025 session: its subscriptions and name are forgotten (204).

        The 2026 era has no sessions: a ``DELETE`` of that era is a 405, as one without an
        ``Mcp-Session-Id`` is.
        """
        session = self.request.headers.get("Mcp-Session-Id")
        if not session or is_modern(self.request.headers.get("MCP-Protocol-Version")):
            raise web.HTTPError(405)
        self.mcp.forget(f"{self._client_key()} {session}")
        self.set_status(204)
        self.finish()

    @web.authenticated
    @authorized("read")
    async def get(self) -> None:
        """The client's notification stream, open until the client leaves."""
        if SSE not in self.request.headers.get("Accept", ""):
            raise web.HTTPError(405)
        self.set_header("Content-Type", SSE)
        self.set_header("Cache-Control", "no-cache")
        self.set_header("X-Accel-Buffering", "no")
        subscriber = self._context(self._client_key(), "").subscriber
        self._write_event(b": stream of notifications\n\n")  # headers out at once
        await self._notify_changes(subscriber, {})
        self._finish_quietly()

    async def _notify_changes(
        self, subscriber: str, meta: dict[str, Any], tasks: TaskWatch | None = None
    ) -> None:
        """Send ``notifications/resources/updated`` for the subscriber's changes until it leaves.

        And ``notifications/tasks`` for the tasks ``tasks`` follows (2026). This request looks
        for its client's changes itself: nothing outlives it.
        """
        self._closed = asyncio.Event()
        subscriptions = self.mcp.subscriptions
        with subscriptions.streaming(subscriber):
            quiet = 0.0
            while not self.gone:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._closed.wait(), POLL_INTERVAL)
                events = [updated(uri) for uri in await subscriptions.changed(subscriber)]
                if tasks is not None:
                    events += await tasks.changed()
                for event in events:
                    if meta:
                        event["params"]["_meta"] = meta
                    self._send_event(event)
                quiet += POLL_INTERVAL
                if quiet >= KEEP_ALIVE:
                    quiet = 0.0
                    self._write_event(b": keep-alive\n\n")  # finds a client gone quietly

    async def _listen(self, message: Message, envelope: Envelope) -> None:
        """``subscriptions/listen`` (2026): acknowledge the honored filter, then stream changes.

        The notebooks named in ``resourceSubscriptions`` that the caller may read are watched
        as a 2025 subscription is; the list-changed kinds are honored and never fire (the
        tools and the resource templates do not change while the server runs). The stream is
        the request's response: it ends when the client leaves, its subscriptions with it.
        """
        if SSE not in self.request.headers.get("Accept", ""):
            raise web.HTTPError(406, "subscriptions/listen answers as text/event-stream")
        wanted = message.params.get("notifications")
        if not isinstance(wanted, dict):
            error = ProtocolError(
                INVALID_PARAMS,
                "Invalid params: notifications must be an object",
                request_id=message.id,
            ).response()
            self._write_json(error, http_status(error))
            return
        client = self._client_key()
        context = self._context(client, envelope.version, None, envelope)
        subscriber = f"{client} listen:{uuid.uuid4().hex}"
        try:
            uris = await self.mcp.listen(wanted.get("resourceSubscriptions"), context, subscriber)
            tasks, task_ids = await self.mcp.watch_tasks(wanted.get("taskIds"), context)
            honored: dict[str, Any] = {
                kind: True
                for kind in ("toolsListChanged", "promptsListChanged", "resourcesListChanged")
                if wanted.get(kind) is True
            }
            if uris:
                honored["resourceSubscriptions"] = uris
            if task_ids:
                honored["taskIds"] = task_ids
            meta = {SUBSCRIPTION_ID_META: message.id}
            self.set_header("Content-Type", SSE)
            self.set_header("Cache-Control", "no-cache")
            self.set_header("X-Accel-Buffering", "no")
            acknowledged = {"notifications": honored, "_meta": meta}
            self._send_event(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/subscriptions/acknowledged",
                    "params": acknowledged,
                }
            )
            await self._notify_changes(subscriber, meta, tasks)
        finally:
            self.mcp.forget(subscriber)
        self._finish_quietly()

    def _finish_quietly(self) -> None:
        with contextlib.suppress(Exception):
            self.finish()

    def on_connection_close(self) -> None:
        """Interrupt the calls of a client that went away."""
        self.gone = True
        for control in self.controls:
            control.cancel()
        closed = getattr(self, "_closed", None)
        if closed is not None:
            closed.set()

    def _streams(self, message: Message | ProtocolError) -> bool:
        # Only a tool call can take long; everything else answers at once, as JSON.
        accepted = SSE in self.request.headers.get("Accept", "")
        return accepted and isinstance(message, Message) and message.method == "tools/call"

    async def _answer(
        self, message: Message | ProtocolError, client: str, version: str
    ) -> dict[str, Any]:
        if isinstance(message, ProtocolError):
            return message.response()
        return await self.mcp.request(message, self._context(client, version, message))

    def _client_key(self) -> str:
        # Who may cancel a call by its request id: the credential, else the user.
        return self.agent_key()

    def _context(
        self,
        client: str,
        version: str,
        message: Message | None = None,
        envelope: Envelope | None = None,
    ) -> RequestContext:
        control = CallControl()
        self.controls.append(control)
        streamed = message if message is not None and self._streams(message) else None
        token = progress_token(streamed.params) if streamed is not None else None
        progress = ProgressNotifier(token, self._send_event) if token is not None else None
        elicit = None
        # 2026: no session at all; 2025: the one the client repeats, or initialize's own.
        session_id = None if envelope is not None else self._session_id()
        if (
            envelope is None
            and streamed is not None
            and offers_elicitation(streamed.params, session_id)
        ):
            elicit = functools.partial(
                self.mcp.elicitations.ask,
                client,
                self._send_event,
                version=version,
                timeout=self.services.settings.input_timeout,
            )
        session = session_id or ""
        # One agent per MCP session (clients sharing the server's token told apart); in the
        # 2026 era, per client name (there is no session); or per Jupyter AI persona and chat,
        # which its headers name.
        agent = f"{client} {session}".strip()
        if envelope is not None and envelope.client_name:
            agent = f"{client} client:{envelope.client_name}"
        caller = self.caller
        caller = dataclasses.replace(
            caller,
            agent=caller.agent if caller.persona else agent,
            name=caller.name or DEFAULT_AGENT_NAME,
        )
        return RequestContext(
            caller,
            client,
            version,
            control,
            progress,
            elicit=elicit,
            session=session,
            envelope=envelope,
            give_up=self._give_up if streamed is not None else None,
            trace=self.request.headers.get("traceparent", ""),
        )

    def _give_up(self) -> None:
        """End a cancelled call's stream without its answer; its run goes on when detached."""
        if self.gone or self._finished:
            return
        self.gone = True  # nothing more is written to it
        self._ticker.cancel()
        with contextlib.suppress(Exception):
            self.finish(set_content_type=SSE)

    def _session_id(self) -> str | None:
        """The request's ``Mcp-Session-Id``, or the one its ``initialize`` is given now."""
        return self._issued_session or self.request.headers.get("Mcp-Session-Id")

    async def _stream(self, message: Message, context: RequestContext) -> None:
        self.set_header("Content-Type", SSE)
        self.set_header("Cache-Control", "no-cache")
        self.set_header("X-Accel-Buffering", "no")  # proxies (nginx) would hold events back
        loop = asyncio.get_running_loop()
        self._ticker = loop.call_later(PROGRESS_INTERVAL, self._tick, context.progress)
        try:
            response = await self.mcp.request(message, context)
        finally:
            self._ticker.cancel()
        if not self.gone and context.modern and not self._streaming and "error" in response:
            # 2026: an error before anything streamed is JSON, with the transport's status.
            self._write_json(response, http_status(response))
        elif not self.gone:
            # Not flushed: a call that sent nothing before answers in one write, with a
            # Content-Length; after progress events, as the last chunk.
            self.write(_event(response))
            self.finish(set_content_type=SSE)

    def _tick(self, progress: ProgressNotifier | None) -> None:
        if self.gone:
            return
        if progress is not None:
            progress.tick()
        else:
            self._write_event(b": keep-alive\n\n")
        self._ticker = asyncio.get_running_loop().call_later(
            PROGRESS_INTERVAL, self._tick, progress
        )

    def _send_event(self, message: dict[str, Any]) -> None:
        self._write_event(_event(message))

    def _write_event(self, data: bytes) -> None:
        """Write and flush at once (the response has begun: its headers go with the first)."""
        if self.gone:
            return
        connection = self.request.connection
        if not self._streaming and connection is not None and hasattr(connection, "stream"):
            # Events must not wait on delayed ACKs (see handlers/python.py).
            connection.stream.set_nodelay(True)
        self._streaming = True
        try:
            self.write(data)
            future = self.flush()
        except StreamClosedError:
            self.on_connection_close()
            return
        future.add_done_callback(functools.partial(_flushed, self))

    def _write_json(self, body: Any, status: int) -> None:
        self.set_status(status)
        self.finish(json.dumps(body))


def _event(message: dict[str, Any]) -> bytes:
    """One Server-Sent Event carrying a JSON-RPC message (JSON has no raw newline)."""
    return f"event: message\ndata: {json.dumps(message)}\n\n".encode()


def _flushed(handler: McpHandler, future: Any) -> None:
    """Notice a failed flush (the client went away) and cancel its call."""
    if future.cancelled() or future.exception() is not None:
        handler.on_connection_close()


def routes(services: XcshServices) -> list[tuple[str, type, dict[str, Any]]]:
    """The MCP endpoint; its server is built once, here, with the extension's services."""
    return [(r"/api/xcsh/mcp", McpHandler, {"services": services, "mcp": McpServer(services)})]
