"""One client connection to one kernel incarnation, with messages routed by request id.

A ``KernelConnection`` keeps reading the shell, IOPub and stdin channels of the client the
kernel manager gives (a ZMQ client for local kernels, a websocket client for a gateway), and
hands every message to the queue of the request it answers. Reading all the time keeps the
channels drained (a late message of an interrupted cell never blocks the next one) and lets
parent-less messages, such as the ``restarting`` status a gateway sends when its kernel died,
reach the session.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from queue import Empty
from typing import Any

import zmq.asyncio
from jupyter_client.client import KernelClient
from jupyter_core.utils import ensure_async
from zmq.backend import Socket as BaseSocket
from zmq.backend import zmq_poll

from jupyter_xcsh.execution.kernel.wire import decode_message, deserialize_message
from jupyter_xcsh.fast_paths import FastPaths

__all__ = [
    "ConnectionClosedError",
    "Handler",
    "KernelConnection",
    "KernelLostError",
    "NotBegunError",
    "Route",
    "probe_socket_views",
]

#: Seconds given to a ZMQ stdin socket to finish connecting once the kernel answers.
STDIN_SETTLE = 0.25

#: One routed message: the channel name and the message.
Route = tuple[str, dict[str, Any]]
#: Receives the routed messages of one request, on the event loop, as they are read. The
#: channel is ``"lost"`` (with an empty message) when the kernel died or restarted, and
#: ``"closed"`` when the connection itself was closed.
Handler = Callable[[str, dict[str, Any]], None]
#: Sees one message.
Handler1 = Callable[[dict[str, Any]], None]
#: Messages handled in a row before a pump lets other tasks run.
FAIRNESS_BATCH = 64
#: Seconds a pump handles already-queued messages in a row before it lets other tasks run: a
#: large print's messages are 1 MiB each, so 64 of them kept the event loop 150 ms and more.
FAIRNESS_SECONDS = 0.005
#: Kernel messages the server's IOPub socket holds for a session kernel before it stops reading
#: from it. ZMQ's default (1000 messages) lets a kernel printing faster than the server handles
#: its output fill the server's memory with a backlog of up to a thousand messages (a gigabyte
#: at the 1 MiB a session kernel's stream message is bounded to); past this bound the backlog
#: stays in the kernel, whose IOPub waits for the server (the prelude's ``XPUB_NODROP``). Only
#: for kernels running the prelude: another kernel's IOPub drops what does not fit its queue.
IOPUB_HIGH_WATER_MARK = 8
#: libzmq's default high-water mark, what a context's sockets get when it sets none.
ZMQ_DEFAULT_HWM = 1000

#: pyzmq's socket without its Python layer (``zmq.Socket`` subclasses it): the views send and
#: receive through it with plain integer flags. ``zmq.Socket.send_multipart`` computes each
#: frame's flags with ``IntFlag`` operators and ``recv_multipart`` looks each ``RCVMORE`` up as
#: an enum: ~65,000 instructions a 6-frame request and ~11,000 a message read, of a call's ~5 M.
#: The base socket's ``get`` looks its option up as a ``SocketOption`` enum too: the views read
#: neither ``RCVMORE`` nor ``EVENTS`` (``recv_frames``, ``take_frames``).
_BaseSocket = BaseSocket
_NOBLOCK, _SNDMORE = int(zmq.NOBLOCK), int(zmq.SNDMORE)
_POLLIN = int(zmq.POLLIN)


def send_frames(view: Any, frames: list[bytes]) -> None:
    """Send ``frames`` as one message on a synchronous socket ``view`` (as ``send_multipart``)."""
    send = _BaseSocket.send
    for frame in frames[:-1]:
        send(view, frame, _SNDMORE)
    send(view, frames[-1], 0)


def take_frames(view: Any) -> list[bytes] | None:
    """The frames of the message queued on ``view``; None when there is none.

    ``recv_frames`` after a poll of the socket that does not wait: an empty socket costs no
    ``zmq.Again`` (an exception and its errno's enum, every time a pump finds nothing queued),
    and ``zmq_poll`` no ``SocketOption`` enum as reading the socket's ``EVENTS`` would.
    """
    if not zmq_poll([(view, _POLLIN)], 0):
        return None
    return recv_frames(view)


def readable(socket: Any, future: asyncio.Future[Any] | None = None) -> Awaitable[Any]:
    """A future done when the asyncio ZMQ ``socket`` has a message to read (not read).

    pyzmq's own ``Poller`` waits so (a ``poll`` receive event): its ``recv_multipart`` would
    then read the message through ``zmq.Socket``'s Python layer, with ``IntFlag`` operators on
    every flag (~19 enum conversions a message); the caller reads it through a view instead.
    Cancelled when the socket closes, as a pending receive is.
    """
    waiter: Awaitable[Any] = socket._add_recv_event("poll", future=future)
    return waiter


def recv_frames(view: Any) -> list[bytes]:
    """The frames of the message queued on ``view`` (``zmq.Again`` when there is none).

    As ``view.recv_multipart(zmq.NOBLOCK)``: a message's frames arrive together. Each frame
    is received as a ``zmq.Frame``, which carries its ``more`` flag: reading ``RCVMORE`` from
    the socket instead looks the option up as a ``SocketOption`` enum, ~3 us a frame.
    """
    recv = _BaseSocket.recv
    frame = recv(view, _NOBLOCK, False)
    frames = [frame.bytes]
    while frame.more:
        frame = recv(view, _NOBLOCK, False)
        frames.append(frame.bytes)
    return frames


class KernelLostError(RuntimeError):
    """The kernel died or restarted while a request was outstanding."""


class ConnectionClosedError(RuntimeError):
    """The connection was closed (its session shut down) while a request was outstanding."""


class NotBegunError(TimeoutError):
    """The kernel had not begun a request by the time asked: it waits behind another execution.

    The request stays queued in the kernel (nothing takes it back); its answer is dropped.
    """


class KernelConnection:
    """Read a kernel client's channels and route messages to the request they answer."""

    def __init__(
        self,
        client: Any,
        *,
        log: logging.Logger,
        on_lost: Callable[[str], None] | None = None,
        iopub_queue: int | None = None,
        on_iopub: Handler1 | None = None,
        on_close: Callable[[], None] | None = None,
        fast_paths: FastPaths | None = None,
    ) -> None:
        """Wrap ``client`` (its channels start in ``open``).

        ``iopub_queue``: messages the IOPub socket queues (None: ZMQ's default); ``on_iopub``
        sees every IOPub message read; ``on_close`` runs once, when the connection closes;
        ``fast_paths``: whether messages are decoded (``message_decoding``) and sockets read
        and written (``socket_views``) the fast way (default: both).
        """
        self.client = client
        paths = fast_paths or FastPaths()
        self._socket_views = paths.uses("socket_views")
        self._decode = decode_message if paths.uses("message_decoding") else deserialize_message
        self._iopub_queue = iopub_queue
        self._on_iopub = on_iopub
        self._on_close = on_close
        self.log = log
        self._on_lost = on_lost
        self._routes: dict[str, Handler] = {}
        self._twins: dict[int, Any] = {}  # id of an asyncio ZMQ socket -> its synchronous view
        self._pumps: list[asyncio.Task[None]] = []
        self.lost: str | None = None
        #: Called with every IOPub ``status`` message, whoever's request it answers (so a run in
        #: place can tell when the kernel is busy with someone else's execution).
        self.status_listener: Callable[[dict[str, Any]], None] | None = None
        self.kernel_info: dict[str, Any] = {}
        self.ready = False
        self.closed = False
        #: A gateway's client, whose websocket is opened and closed on threads of their own
        #: (``_start_channels``); whether that websocket is open, under its lock.
        self._websocket = _opens_a_websocket(client)
        self._websocket_open = False
        self._websocket_lock = threading.Lock()

    # -- lifecycle ------------------------------------------------------------------------
    async def open(self, deadline: float, is_alive: Callable[[], Awaitable[bool]]) -> None:
        """Start the channels and wait until the kernel answers, IOPub included.

        Waiting for a ``kernel_info_reply`` on shell *and* a message on IOPub means no early
        IOPub message of the first request is lost.

        Raises ``TimeoutError`` past ``deadline`` (a ``time.monotonic`` value) and
        ``KernelLostError`` when the kernel is found dead.
        """
        self._create_iopub()
        # No heartbeat channel: the tool tells a kernel's death from the kernel manager
        # (``is_alive``, the sessions' own heartbeat). jupyter_client's is a thread per
        # connection pinging every second, which closing the connection joined on the event
        # loop (up to 133 ms seen with 24 agents' sessions).
        await self._start_channels()
        for name in ("shell", "iopub", "stdin", "control"):
            self._pumps.append(asyncio.create_task(self._pump(name)))
        while True:
            # Built and sent here rather than by ``client.kernel_info()``: an asynchronous
            # client of jupyter_client 8.0 returns a future of the id there, not the id.
            request = self.client.session.msg("kernel_info_request", {})
            self._deliver("shell", request)
            msg_id: str = request["header"]["msg_id"]
            queue = self.collect(msg_id)
            try:
                replied = iopub_seen = False
                attempt_end = min(deadline, time.monotonic() + 1.0)
                while not (replied and iopub_seen):
                    remaining = attempt_end - time.monotonic()
                    if remaining <= 0:
                        break
                    try:
                        channel, msg = await asyncio.wait_for(queue.get(), remaining)
                    except TimeoutError:
                        break
                    if channel == "closed":
                        raise ConnectionClosedError("the kernel connection was closed")
                    if channel == "lost":
                        raise KernelLostError(self.lost or "kernel lost")
                    if channel == "shell" and msg["msg_type"] == "kernel_info_reply":
                        replied = True
                        self.kernel_info = msg.get("content", {})
                    elif channel == "iopub":
                        iopub_seen = True
                if replied and iopub_seen:
                    # A kernel's stdin ROUTER drops an input_request to a DEALER whose
                    # connection it has not seen yet, and the cell would then wait forever.
                    # A DEALER (ours, or a gateway's behind its websocket) retries its
                    # connection every 100 ms (ZMQ's reconnect_ivl), so once shell answers,
                    # stdin is connected within that.
                    await asyncio.sleep(STDIN_SETTLE)
                    self.ready = True
                    return
            finally:
                self.unroute(msg_id)
            if time.monotonic() >= deadline:
                raise TimeoutError("Kernel did not answer in time")
            if not await is_alive():
                raise KernelLostError("Kernel died before replying to kernel_info")

    def close(self) -> None:
        """Stop reading and close the client's channels (releasing its sockets).

        Requests still routed get a ``"closed"`` message, so nobody waits on a dead socket.
        """
        if not self.closed:
            self.closed = True
            for handler in list(self._routes.values()):
                with contextlib.suppress(Exception):
                    handler("closed", {})
        for task in self._pumps:
            task.cancel()
        self._pumps.clear()
        self._stop_channels()
        on_close, self._on_close = self._on_close, None
        if on_close is not None:
            try:
                on_close()
            except Exception:
                self.log.exception("xcsh: closing a kernel connection")

    async def _start_channels(self) -> None:
        """Start the client's channels (no heartbeat); a gateway's on a thread of its own.

        jupyter_server's gateway client opens its websocket with a blocking handshake, and
        closes it waiting up to 3 s for the gateway's answer, then as long as the socket's
        timeout (``KERNEL_LAUNCH_TIMEOUT``, 40 s by default) for its reader thread: on the event
        loop, a gateway slow to accept or to close a kernel's websocket held every request of
        the server, and a run waiting for a busy kernel answered that much past its deadline.
        Cancelled, the wait ends at once; the handshake goes on, and what it opened is closed
        once it is done (``close`` came meanwhile).
        """
        if not self._websocket:
            await ensure_async(self.client.start_channels(hb=False))
            return
        loop = asyncio.get_running_loop()
        started: asyncio.Future[None] = loop.create_future()

        def start() -> None:
            error: BaseException | None = None
            try:
                asyncio.run(self.client.start_channels(hb=False))
            except BaseException as e:  # reported to the waiter, if it still waits
                error = e
            with self._websocket_lock:
                self._websocket_open = error is None and not self.closed
                abandoned = error is None and self.closed
            if abandoned:
                _stop_channels(self.client)
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits
                loop.call_soon_threadsafe(_settle, started, error)

        threading.Thread(target=start, name="xcsh-gateway-open", daemon=True).start()
        await started

    def _stop_channels(self) -> None:
        """Stop the client's channels; a gateway's websocket is closed on a thread of its own."""
        if not self._websocket:
            _stop_channels(self.client)
            return
        with self._websocket_lock:
            was_open, self._websocket_open = self._websocket_open, False
        if was_open:
            closing = threading.Thread(
                target=_stop_channels, args=(self.client,), name="xcsh-gateway-close", daemon=True
            )
            closing.start()

    # -- requests -------------------------------------------------------------------------
    def route(self, msg_id: str, handler: Handler) -> None:
        """Hand every message whose parent is ``msg_id`` to ``handler`` as soon as it is read.

        Handling inline, rather than queueing, keeps memory bounded whatever the output rate.
        """
        self._routes[msg_id] = handler
        if self.lost is not None:
            handler("lost", {})

    def collect(self, msg_id: str) -> asyncio.Queue[Route]:
        """Route the (few) messages of ``msg_id`` into a queue, for short requests."""
        queue: asyncio.Queue[Route] = asyncio.Queue()
        self.route(msg_id, lambda channel, msg: queue.put_nowait((channel, msg)))
        return queue

    def unroute(self, msg_id: str) -> None:
        """Stop routing the messages of ``msg_id`` (later ones are dropped)."""
        self._routes.pop(msg_id, None)

    def execute(
        self,
        code: str,
        handler: Handler,
        *,
        silent: bool = False,
        user_expressions: dict[str, str] | None = None,
        store_history: bool | None = None,
    ) -> str:
        """Send an ``execute_request`` whose messages go to ``handler``; return its id.

        ``store_history`` (default: not ``silent``) False runs code that shows its output but
        takes no execution count and stays out of the kernel's history (scratch code).
        """
        content = {  # what jupyter_client's execute() sends
            "code": code,
            "silent": silent,
            "store_history": not silent if store_history is None else store_history,
            "user_expressions": user_expressions or {},
            "allow_stdin": not silent,
            "stop_on_error": False,
        }
        msg = self.client.session.msg("execute_request", content)
        self._deliver("shell", msg)
        msg_id: str = msg["header"]["msg_id"]
        # No await between sending and routing: the pumps cannot see a reply before the route.
        self.route(msg_id, handler)
        return msg_id

    async def run_silently(
        self,
        code: str,
        deadline: float,
        *,
        user_expressions: dict[str, str] | None = None,
        begin_by: float | None = None,
    ) -> dict[str, Any]:
        """Run ``code`` silently (no history, no stdin) to its end; return the reply content.

        Raises ``TimeoutError`` past ``deadline``, ``KernelLostError`` if the kernel dies and
        ``ConnectionClosedError`` if the connection is closed meanwhile. With ``begin_by``,
        ``NotBegunError`` when the kernel has not begun it by then (its ``busy`` status for
        it not seen: it is queued behind someone else's execution).
        """
        queue: asyncio.Queue[Route] = asyncio.Queue()
        msg_id = self.execute(
            code,
            lambda channel, msg: queue.put_nowait((channel, msg)),
            silent=True,
            user_expressions=user_expressions,
        )
        try:
            reply: dict[str, Any] | None = None
            idle = False
            while reply is None or not idle:
                # ``begin_by`` holds only until the kernel has begun the request (cleared below).
                limit = deadline if begin_by is None else min(begin_by, deadline)
                begins_first = limit != deadline
                remaining = limit - time.monotonic()
                if remaining <= 0:
                    if begins_first:
                        raise NotBegunError("the kernel runs another execution first")
                    raise TimeoutError("Kernel initialisation timed out")
                try:
                    channel, msg = await asyncio.wait_for(queue.get(), remaining)
                except TimeoutError:
                    continue  # which limit passed is told above
                if channel == "closed":
                    raise ConnectionClosedError("the kernel connection was closed")
                if channel == "lost":
                    raise KernelLostError(self.lost or "kernel lost")
                kind = msg.get("msg_type")
                begin_by = None  # any message of the request: the kernel has it in hand
                if channel == "shell" and kind == "execute_reply":
                    reply = msg["content"]
                elif kind == "status" and msg["content"].get("execution_state") == "idle":
                    idle = True
            return reply
        finally:
            self.unroute(msg_id)

    def _send(self, channel: str, msg_type: str, content: dict[str, Any]) -> None:
        msg = self.client.session.msg(msg_type, content)
        # A gateway client's websocket needs the channel in the message, else the gateway
        # delivers it on shell (jupyter_server's GatewayKernelClient omits it).
        msg["channel"] = channel
        self._deliver(channel, msg)

    def _deliver(self, name: str, msg: dict[str, Any]) -> None:
        """Send ``msg`` on channel ``name``: signed frames straight to a ZMQ socket's twin.

        ``Session.send`` would make a new synchronous view of the asyncio socket for every
        message and read half a dozen traits (~45 us more per message); a gateway's channel, or
        a session that adapts messages to an older protocol, goes through the channel's send.
        """
        channel = getattr(self.client, f"{name}_channel")
        session = self.client.session
        socket: Any = getattr(channel, "socket", None)
        twin = self._twin(socket)
        if twin is None or session.adapt_version:
            channel.send(msg)
            return
        send_frames(twin, session.serialize(msg))
        # A send lets libzmq process the socket's pending commands, which can consume the edge
        # of its file descriptor that a waiting receive counts on: read the socket's events
        # through the asyncio socket, which then serves a message that arrived meanwhile (as
        # pyzmq does after its own sends).
        socket.get(zmq.EVENTS)

    def _twin(self, socket: Any) -> Any:
        """A synchronous view of an open asyncio ZMQ ``socket``; None for any other channel.

        The view never closes the socket; it is made again if the channel's socket changed.
        """
        if not (self._socket_views and isinstance(socket, zmq.asyncio.Socket)) or socket.closed:
            return None
        twin = self._twins.get(id(socket))
        if twin is None or twin.underlying != socket.underlying:
            twin = self._twins[id(socket)] = zmq.Socket.shadow(socket.underlying)
        return twin

    def input_reply(self, value: str) -> None:
        """Answer the kernel's pending ``input_request``."""
        self._send("stdin", "input_reply", {"value": value})

    async def iopub_barrier(self, timeout: float) -> bool:
        """Wait until IOPub has brought what the kernel published before now; whether it did.

        An ``input_request`` travels on stdin and may overtake the output printed just before
        it on IOPub. A ``kernel_info_request`` on the control channel (answered while the
        shell waits for input) makes the kernel publish a status on IOPub after everything it
        published before; its arrival is the barrier. False after ``timeout`` seconds (a
        kernel that does not answer on control) or on a closed connection.
        """
        if self.closed or self.lost is not None:
            return False
        msg = self.client.session.msg("kernel_info_request", {})
        msg["channel"] = "control"
        arrived = asyncio.Event()

        def handle(channel: str, reply: dict[str, Any]) -> None:
            if channel in ("iopub", "lost", "closed"):
                arrived.set()

        msg_id: str = msg["header"]["msg_id"]
        self.route(msg_id, handle)
        try:
            self.client.control_channel.send(msg)
            await asyncio.wait_for(arrived.wait(), timeout)
        except Exception as e:  # TimeoutError, or a socket closed under us
            self.log.debug("xcsh: no IOPub barrier: %r", e)
            return False
        finally:
            self.unroute(msg_id)
        return not (self.closed or self.lost is not None)

    def _create_iopub(self) -> None:
        """Create the IOPub socket with its receive queue set before it connects.

        Lowering the queue of a connected socket is not safe: libzmq can then count messages
        read before the change as still queued and stop reading the kernel for good. The
        client's context may be shared (``KernelLauncher.client`` gives every client of the
        tools one context): its default is set only around the one synchronous socket creation
        (with pyzmq's public ``Context.getsockopt``/``setsockopt``).
        """
        client = self.client
        context = getattr(client, "context", None)
        if self._iopub_queue is None or not isinstance(context, zmq.Context):
            return
        if getattr(type(client), "iopub_channel", None) is not KernelClient.iopub_channel:
            return  # not ZMQ channels: a gateway's websocket
        if getattr(client, "_iopub_channel", None) is not None:
            return  # already connected: it keeps ZMQ's default queue
        try:
            previous = context.getsockopt(zmq.RCVHWM)
        except (KeyError, zmq.ZMQError):  # no default set: ZMQ's own
            previous = ZMQ_DEFAULT_HWM
        context.setsockopt(zmq.RCVHWM, self._iopub_queue)
        try:
            client.iopub_channel  # noqa: B018 (creates and connects the socket)
        finally:
            context.setsockopt(zmq.RCVHWM, previous)

    def interrupt_request(self) -> None:
        """Send an ``interrupt_request`` on the control channel (protocol 5.3+).

        Best effort: nothing is sent on a closed connection, and a failed send is logged.
        """
        if self.closed:
            return
        version = str(self.kernel_info.get("protocol_version", "5.0"))
        major, _, minor = version.partition(".")
        if (int(major or 0), int((minor or "0").split(".")[0] or 0)) < (5, 3):
            return
        try:
            self._send("control", "interrupt_request", {})
        except Exception as e:  # a socket closed under us (locally) or a gateway's websocket
            self.log.warning("xcsh: control interrupt_request failed: %s", e)

    # -- reading --------------------------------------------------------------------------
    def mark_lost(self, reason: str) -> None:
        """The kernel died or restarted: every routed request gets ``"lost"``, once."""
        self._mark_lost(reason)

    def _mark_lost(self, reason: str) -> None:
        if self.lost is not None:
            return
        self.lost = reason
        for handler in list(self._routes.values()):
            handler("lost", {})
        if self._on_lost is not None:
            self._on_lost(reason)

    async def _next(
        self, channel: Any, idle_sleep: list[float], waited: list[bool]
    ) -> dict[str, Any]:
        """The channel's next message; ``waited[0]`` is set unless it was taken synchronously."""
        waited[0] = True
        if hasattr(channel, "get_nowait"):
            # A gateway channel is a thread-fed queue whose own get_msg spins the event loop;
            # poll it with a short, growing sleep instead.
            waited[0] = False
            while True:
                try:
                    msg: dict[str, Any] = channel.get_nowait()
                except Empty:
                    if getattr(channel, "response_router_finished", False):
                        raise ConnectionError("gateway websocket closed") from None
                    await asyncio.sleep(idle_sleep[0])
                    waited[0] = True
                    idle_sleep[0] = min(idle_sleep[0] * 2, 0.02)
                else:
                    idle_sleep[0] = 0.0005
                    channel.task_done()
                    return msg
        socket = getattr(channel, "socket", None)
        if isinstance(socket, zmq.asyncio.Socket):
            # Straight from the socket: get_msg would first await a poll, then the receive. A
            # message already queued is taken at once from a synchronous twin of the socket:
            # pyzmq's future machinery costs ~20 us a message. (Never on a closed socket: the
            # twin does not own it.)
            # Awaited, the socket's readiness alone (pyzmq's future machinery, none of its
            # receive's enum work), then the message through the twin.
            twin = self._twin(socket)
            if twin is not None:
                frames = take_frames(twin)
                if frames is not None:
                    waited[0] = False
                    return self._decode(channel.session, frames)
                while True:
                    await readable(socket)
                    twin = self._twin(socket)  # closed meanwhile: the receive below says so
                    if twin is None:
                        break
                    frames = take_frames(twin)
                    if frames is not None:
                        return self._decode(channel.session, frames)
            return self._decode(channel.session, await socket.recv_multipart())
        return await channel.get_msg(timeout=None)

    async def _pump(self, name: str) -> None:
        channel = getattr(self.client, f"{name}_channel")
        idle_sleep = [0.0005]
        waited = [True]
        handled = 0
        busy_since = time.monotonic()  # since the pump last let other tasks run
        while True:
            try:
                msg = await self._next(channel, idle_sleep, waited)
            except asyncio.CancelledError:
                raise
            except Exception as e:
                self.log.debug("xcsh: %s channel stopped: %s", name, e)
                if name in ("iopub", "shell"):
                    self._mark_lost(f"{name} channel closed")
                return
            if name == "iopub" and self._on_iopub is not None:
                try:
                    self._on_iopub(msg)
                except Exception:
                    self.log.exception("xcsh: recording a kernel's activity failed")
            parent = (msg.get("parent_header") or {}).get("msg_id")
            listener = self.status_listener
            if listener is not None and name == "iopub" and msg.get("msg_type") == "status":
                try:
                    listener(msg)
                except Exception:
                    self.log.exception("xcsh: a kernel status listener failed")
            handler = self._routes.get(parent) if parent else None
            handled += 1
            now = time.monotonic()
            if waited[0]:
                busy_since = now
            if handled % FAIRNESS_BATCH == 0 or now - busy_since > FAIRNESS_SECONDS:
                # zmq hands over ready messages without yielding: let the server breathe.
                await asyncio.sleep(0)
                busy_since = time.monotonic()
            if handler is not None:
                try:
                    handler(name, msg)
                except Exception:
                    self.log.exception("xcsh: handling a %s message failed", msg.get("msg_type"))
            elif name == "iopub" and msg.get("msg_type") == "status":
                state = msg.get("content", {}).get("execution_state")
                # "starting" before readiness is the fresh kernel's own first status; after it,
                # a new process started on the same ports (a restart we did not ask for).
                if state in ("restarting", "dead") or (state == "starting" and self.ready):
                    self._mark_lost(f"kernel {state}")


def _opens_a_websocket(client: Any) -> bool:
    """Whether ``client`` is a gateway's, which opens a websocket (blocking) to start channels."""
    return hasattr(client, "channel_socket") and inspect.iscoroutinefunction(
        type(client).start_channels
    )


def _stop_channels(client: Any) -> None:
    """Stop ``client``'s channels, whatever fails (the connection is gone either way)."""
    with contextlib.suppress(Exception):
        client.stop_channels()


def _settle(future: asyncio.Future[None], error: BaseException | None) -> None:
    """End ``future`` (on its loop) with ``error`` or None, unless it was cancelled."""
    if future.done():
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)


def probe_socket_views() -> str | None:
    """Whether a synchronous view of an asyncio ZMQ socket sends and receives on that socket.

    None when a message sent through one socket's view is received through its peer's view,
    both sockets staying open and their events readable; else what failed.
    """
    context = zmq.asyncio.Context()
    try:
        sender, receiver = context.socket(zmq.PAIR), context.socket(zmq.PAIR)
        sender.bind("inproc://xcsh-socket-views-probe")
        receiver.connect("inproc://xcsh-socket-views-probe")
        send_frames(zmq.Socket.shadow(sender.underlying), [b"xcsh", b"probe"])
        view: zmq.Socket[bytes] = zmq.Socket.shadow(receiver.underlying)
        if not view.poll(2000):
            return "a message sent through a view never arrived"
        if recv_frames(view) != [b"xcsh", b"probe"]:
            return "a view received another message"
        if take_frames(view) is not None:
            return "a view found a message on an empty socket"
        send_frames(zmq.Socket.shadow(sender.underlying), [b"ready"])
        if not view.poll(2000):
            return "a message sent through a view never arrived"
        loop = asyncio.new_event_loop()
        try:
            waiter = loop.create_future()
            readable(receiver, waiter)  # a message is queued: done at once, nothing read
            if not waiter.done() or waiter.exception() is not None:
                return "the asyncio socket's readiness is not a poll receive event"
        finally:
            loop.close()
        if take_frames(view) != [b"ready"]:
            return "waiting for readiness took the message"
        sender.get(zmq.EVENTS)
        if sender.closed or receiver.closed:
            return "a view closed its socket"
        return None
    finally:
        context.destroy(linger=0)
