"""A kernel session: one kernel's life — start, connect, recover, restart — and its counters.

The session owns its kernel's state machine and nothing else; who may use the session, and
when, is the pool's business (``pool.py``). Every change of kernel incarnation goes through
``_new_incarnation``, so the counters callers see stay consistent:

- ``generation``: the kernel incarnation in use, 1 for the session's first kernel;
- ``restart_count``: how many times the session lost its kernel state and went on with a new
  incarnation (a death, a reset, an escalated interrupt, a kernel shut down outside the tool,
  an eviction) — always ``generation - 1`` once a kernel has started.

A session that replaces one disposed earlier (evicted, idle, deleted) inherits its counters and
the reason its state is gone (``SessionHistory``), so the next call says ``stateLost``.

The session also records its kernel's activity for the server, from the messages the tool reads
anyway (``take_over_watch``). Jupyter Server watches every kernel it starts: a second IOPub
socket per kernel whose every message it decodes (dates parsed with dateutil, status messages
twice) to keep the kernel's ``last_activity`` and ``execution_state`` (``GET /api/kernels``, the
idle culler). For a session kernel that is a quarter of the server's work on a ``pass`` call,
spent on messages the tool's own connection has just decoded. While a connection reads a session
kernel, it takes the watch over: the server's watcher is closed and the connection records the
same figures, by the same rules (``ActivityRecorder``); when the connection closes, the server's
watcher comes back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from traitlets import All, HasTraits, Instance

from jupyter_xcsh.execution.kernel.connection import (
    IOPUB_HIGH_WATER_MARK,
    KernelConnection,
    KernelLostError,
)
from jupyter_xcsh.execution.kernel.launcher import KernelLauncher
from jupyter_xcsh.execution.python.failures import (
    KERNEL_GONE,
    TOO_MANY_RESTARTS,
    SessionDisposedError,
    TooManyRestartsError,
)
from jupyter_xcsh.execution.python.prelude import NOTICE_EXPRESSION, read_notice
from jupyter_xcsh.execution.python.starts import KernelStart

__all__ = [
    "ActivityRecorder",
    "KernelReady",
    "KernelSession",
    "SessionHistory",
    "SessionKey",
    "probe_trait_store",
    "resume_server_watch",
    "store_trait",
    "take_over_watch",
]

log = logging.getLogger(__name__)

#: Longest wait for the server's own auto-restarter to act on a dead local kernel.
RESTARTER_WAIT = 10.0


@dataclass(frozen=True)
class SessionKey:
    """What identifies a session: the caller's session name and the working directory."""

    name: str
    cwd: str


@dataclass(frozen=True)
class SessionHistory:
    """What a disposed session leaves to the next session of its key."""

    generation: int
    restart_count: int
    reason: str


@dataclass(frozen=True)
class KernelReady:
    """A session's kernel made ready for a call.

    ``lost``: why the state earlier calls left in the kernel is gone (None: it is intact).
    ``notice``: what the kernel's environment setup could not do (a remote kernel that cannot
    see the server's files), for the caller to read once.
    """

    lost: str | None = None
    notice: str | None = None


class KernelSession:
    """One caller session's kernel: started lazily, restarted when it dies, counted."""

    def __init__(
        self,
        key: SessionKey,
        *,
        kernel_name: str,
        launcher: KernelLauncher,
        init_code: str,
        log: logging.Logger,
        history: SessionHistory | None = None,
    ) -> None:
        self.key = key
        self.kernel_name = kernel_name
        self.launcher = launcher
        self.init_code = init_code
        self.log = log
        self.kernel_id: str | None = None
        self.connection: KernelConnection | None = None
        self.dead: str | None = None  # why the kernel is dead; the next call restarts it
        self.restarted_underneath = False
        self.restart_streak = 0
        self.generation = history.generation if history else 0
        self.restart_count = history.restart_count if history else 0
        self.disposed = False
        self._lost = history.reason if history else None  # for the next call to report
        self._counted_ahead = False  # the next kernel was counted when the last one was given up
        self._restarter_event: asyncio.Event | None = None
        self._restarter_outcome: str | None = None
        self._starts = KernelStart(launcher, keep=self._keep_started, log=log)
        self._restart: asyncio.Future[None] | None = None  # an escalation restart under way

    # -- observations --------------------------------------------------------------------
    def mark_dead(self, reason: str) -> None:
        """Record that the kernel is dead: the next call restarts it first."""
        if self.dead is None:
            self.log.info("xcsh: session %s kernel %s dead: %s", self.key, self.kernel_id, reason)
        self.dead = reason

    def release_connection(self) -> None:
        """Close the cached client (its sockets); the next call opens a new one."""
        if self.connection is not None:
            self.connection.close()
            self.connection = None

    def _on_connection_lost(self, reason: str) -> None:
        if reason in ("kernel restarting", "kernel starting"):
            self.restarted_underneath = True
        else:
            self.mark_dead(f"the kernel died ({reason})")

    def _on_restarter(self, what: str) -> None:
        self._restarter_outcome = what
        if what == "restart":
            self.restarted_underneath = True
            # A kernel that died soon after its start comes back on new ports, where this
            # connection never hears it: a running call learns it from here.
            if self.connection is not None:
                self.connection.mark_lost("kernel restarting")
        else:
            self.mark_dead("the kernel died and the server's auto-restarter gave up")
        if self._restarter_event is not None:
            self._restarter_event.set()

    @property
    def ready(self) -> bool:
        """Whether a call can run right away (no start, restart or reconnection needed)."""
        connection = self.connection
        return (
            connection is not None
            and connection.lost is None
            and self.dead is None
            and not self.restarted_underneath
            and self._lost is None
            and self._restart is None
            and self.kernel_id is not None
            and self.launcher.exists(self.kernel_id)
        )

    @property
    def starting(self) -> bool:
        """Whether a kernel start (perhaps one a timed-out call left behind) is under way."""
        return self._starts.running

    def describe(self) -> dict[str, Any]:
        """The session's kernel as listed by the sessions API."""
        return {
            "name": self.key.name,
            "cwd": self.key.cwd,
            "kernelId": self.kernel_id,
            "kernelName": self.kernel_name,
            "restartCount": self.restart_count,
            "generation": self.generation,
            # Dead, or restarted by someone else: either way the next call restarts/re-inits.
            "dead": self.dead is not None or self.restarted_underneath,
        }

    def history(self, reason: str) -> SessionHistory | None:
        """What the next session of this key inherits when this one is disposed for ``reason``.

        None when there is nothing to inherit: no kernel ever ran, no loss is pending.
        """
        if self.generation == 0:
            if self._lost is None:
                return None
            reason = self._lost  # never got a kernel: the earlier loss is still news
        return SessionHistory(self.generation, self.restart_count, reason)

    def check_disposed(self) -> None:
        """Raise ``SessionDisposedError`` if the session was shut down."""
        if self.disposed:
            raise SessionDisposedError()

    # -- getting ready for a call --------------------------------------------------------
    async def prepare(self, kernel_name: str, deadline: float) -> KernelReady:
        """Make a ``kernel_name`` kernel ready to run; say whether earlier state was lost.

        Raises ``TooManyRestartsError`` when the kernel needs a second restart in a row,
        ``SessionDisposedError`` once the session was shut down and ``TimeoutError`` past
        ``deadline``.
        """
        self.check_disposed()
        lost: list[str] = [self._lost] if self._lost else []
        try:
            notice = await self._make_ready(kernel_name, deadline, lost)
        except BaseException:
            # Not reported by this call: the next prepare says it (the call's re-run after a
            # kernel that died at start, or the next call), beside what it finds itself.
            self._lost = "; ".join(dict.fromkeys(lost)) or None
            raise
        self._lost = None
        return KernelReady("; ".join(dict.fromkeys(lost)) or None, notice)

    async def _make_ready(self, kernel_name: str, deadline: float, lost: list[str]) -> str | None:
        """``prepare``'s work: each loss of state it finds is appended to ``lost``."""
        if self._restart is not None:
            # An escalation restart (already reported) is under way: let it finish.
            remaining = max(0.0, deadline - time.monotonic())
            await asyncio.wait_for(asyncio.shield(self._restart), remaining)
        if self.kernel_id is not None and kernel_name != self.kernel_name:
            lost.append(f"the kernel changed from {self.kernel_name} to {kernel_name}")
            await self._shutdown_kernel()
            self.check_disposed()
        self.kernel_name = kernel_name
        if self.kernel_id is not None and not self.launcher.exists(self.kernel_id):
            lost.append(KERNEL_GONE.format(self.kernel_id))
            self._forget_kernel()
        elif self.connection is not None and self.connection.lost is not None:
            self._on_connection_lost(self.connection.lost)
        notice = None
        if self.kernel_id is None:
            notice = await self._start(deadline)
        elif self.dead is not None or self.restarted_underneath:
            reason, notice = await self._recover(deadline)
            lost.append(reason)
        elif self.connection is None:
            notice = await self._connect(deadline)
        return notice

    def settle(self) -> None:
        """The call ran on this kernel to the end: a later death counts as the first again."""
        if self.dead is None:
            self.restart_streak = 0

    def _new_incarnation(self) -> None:
        if self._counted_ahead:
            self._counted_ahead = False
            return
        self.generation += 1
        if self.generation > 1:
            self.restart_count += 1

    def _forget_kernel(self) -> None:
        self.release_connection()
        if self.kernel_id is not None:
            self.launcher.listing.remove(self.kernel_id)
        self.kernel_id = None
        self.dead, self.restarted_underneath = None, False

    async def _start(self, deadline: float) -> str | None:
        """Start the kernel (or join the start under way), waiting at most until ``deadline``."""
        kernel_id = await self._starts.wait(self.kernel_name, self.key.cwd, deadline)
        self.check_disposed()  # the start's kernel was not kept
        self._adopt(kernel_id)
        return await self._connect(deadline)

    def _adopt(self, kernel_id: str) -> None:
        if self.kernel_id == kernel_id:
            return
        self.kernel_id = kernel_id
        self.launcher.listing.add(kernel_id, self.key.name, self.key.cwd)
        self.launcher.watch_restarts(kernel_id, self._on_restarter)
        self._new_incarnation()

    def _keep_started(self, kernel_name: str, kernel_id: str) -> bool:
        """Whether the session takes a kernel whose start just ended (else it is shut down)."""
        if self.disposed or kernel_name != self.kernel_name:
            return False
        if self.kernel_id is None:
            self._adopt(kernel_id)  # a call that gave up on it left it for the next one
        return self.kernel_id == kernel_id

    async def _connect(self, deadline: float) -> str | None:
        """Open a connection and set the kernel's environment up; return its notice."""
        assert self.kernel_id is not None
        kernel_id = self.kernel_id
        self.release_connection()
        try:
            client = self.launcher.client(kernel_id)
        except KeyError:
            raise KernelLostError(KERNEL_GONE.format(kernel_id)) from None
        # The connection reads every IOPub message anyway: it keeps the server's figures of
        # the kernel's activity while it is open (see ``take_over_watch``).
        km, paths = self.launcher.km, self.launcher.fast_paths
        recorder = take_over_watch(km, kernel_id) if paths.uses("activity_watch") else None
        connection = KernelConnection(
            client,
            log=self.log,
            on_lost=self._on_connection_lost,
            # The prelude's stream bound makes the kernel wait for a small queue; without it
            # the kernel's IOPub drops what does not fit, so the queue keeps ZMQ's default.
            iopub_queue=IOPUB_HIGH_WATER_MARK if paths.uses("kernel_stream_bound") else None,
            on_iopub=recorder,
            on_close=None if recorder is None else lambda: resume_server_watch(km, kernel_id),
            fast_paths=paths,
        )
        try:
            await connection.open(deadline, lambda: self.launcher.is_alive(kernel_id))
            reply = await connection.run_silently(
                self.init_code, deadline, user_expressions={"notice": NOTICE_EXPRESSION}
            )
            self.check_disposed()  # dispose() shut the kernel down meanwhile
        except BaseException:
            connection.close()
            self.check_disposed()
            raise
        if reply.get("status") != "ok":
            self.log.warning("xcsh: kernel init failed: %s", reply)
        self.connection = connection
        self.dead = None
        self.restarted_underneath = False
        return read_notice(reply)

    # -- recovery ------------------------------------------------------------------------
    async def _recover(self, deadline: float) -> tuple[str, str | None]:
        """Bring a dead (or restarted-underneath) kernel back, as a new incarnation.

        Returns why the state was lost and the environment notice.
        """
        reason = self.dead or "the kernel was restarted outside the python tool"
        self.restart_streak += 1
        if self.restart_streak > 1:
            self.restart_streak = 0
            self.mark_dead(TOO_MANY_RESTARTS)
            raise TooManyRestartsError()
        self.release_connection()
        kernel_id = self.kernel_id
        assert kernel_id is not None
        launcher = self.launcher
        gone = not launcher.exists(kernel_id)
        try:
            if self.dead is not None and not gone:
                if launcher.has_restarter(kernel_id) and not await launcher.is_alive(kernel_id):
                    await self._wait_for_restarter(deadline)
                elif not self.restarted_underneath:
                    await self._restart_or_replace(kernel_id)
        except KeyError:
            gone = True  # shut down elsewhere or forgotten by its gateway: replaced below
        if gone or not launcher.exists(kernel_id):
            if gone:
                reason = KERNEL_GONE.format(kernel_id)
            self._forget_kernel()
            return reason, await self._start(deadline)
        self._new_incarnation()
        await self._wait_alive(kernel_id, deadline)
        return reason, await self._connect(deadline)

    async def _restart_or_replace(self, kernel_id: str) -> None:
        """Restart the kernel; one that cannot be restarted is shut down (to be replaced)."""
        try:
            await self.launcher.restart(kernel_id)
        except KeyError:
            raise
        except Exception as e:
            self.log.warning("xcsh: restart of %s failed (%s); replacing it", kernel_id, e)
            await self.launcher.shutdown(kernel_id)

    async def _wait_for_restarter(self, deadline: float) -> None:
        """Let the server's auto-restarter act rather than race it on the same kernel."""
        self._restarter_event = event = asyncio.Event()
        if self._restarter_outcome is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    event.wait(), max(0.0, min(RESTARTER_WAIT, deadline - time.monotonic()))
                )
        self._restarter_event = None
        if self._restarter_outcome is None and self.kernel_id is not None:
            await self._restart_or_replace(self.kernel_id)
        self._restarter_outcome = None

    async def _wait_alive(self, kernel_id: str, deadline: float) -> None:
        # No event says "a restarted kernel's process is up"; it takes a few polls at most.
        while not await self.launcher.is_alive(kernel_id):
            if not self.launcher.exists(kernel_id):
                raise KernelLostError(KERNEL_GONE.format(kernel_id))
            if time.monotonic() >= deadline:
                raise TimeoutError("Kernel did not come back in time")
            await asyncio.sleep(0.1)

    async def reset(self, deadline: float) -> None:
        """Restart the kernel on request (state is dropped, the streak is not counted)."""
        if self.kernel_id is not None and self.launcher.exists(self.kernel_id):
            kernel_id = self.kernel_id
            self.release_connection()
            try:
                await self.launcher.restart(kernel_id)
            except KeyError:
                pass
            else:
                self._new_incarnation()
                await self._wait_alive(kernel_id, deadline)
                await self._connect(deadline)
                return
        self._forget_kernel()
        await self._start(deadline)

    def escalate(self, *, restart: bool = True) -> None:
        """Give up on a kernel whose cell ignored its interrupt: restart it in the background.

        The call that gave up returns at once (its deadline holds) and reports the state as
        lost; the next call waits for the restart. ``restart=False`` when the kernel is about
        to be shut down anyway (a per-call session).
        """
        kernel_id = self.kernel_id
        self.release_connection()
        if kernel_id is None or not restart:
            return
        self._new_incarnation()
        self._restart = asyncio.ensure_future(self._escalated_restart(kernel_id))

    async def _escalated_restart(self, kernel_id: str) -> None:
        try:
            await self._restart_or_replace(kernel_id)
        except KeyError:
            pass
        finally:
            self._restart = None
        if self.kernel_id == kernel_id and not self.launcher.exists(kernel_id):
            self._counted_ahead = True  # the replacement is the incarnation counted already
            self._forget_kernel()

    # -- shutting down -------------------------------------------------------------------
    async def _shutdown_kernel(self) -> None:
        """Close the connection and shut the kernel down; the session stays usable."""
        kernel_id = self.kernel_id
        self._forget_kernel()
        if kernel_id is not None:
            await self.launcher.shutdown(kernel_id)

    async def dispose(self) -> None:
        """Shut the session down for good (idempotent, never raises).

        A kernel start in flight is shut down when it ends; a call running on the session
        ends as cancelled (``SessionDisposedError``).
        """
        self.disposed = True
        kernel_id = self.kernel_id
        self._forget_kernel()
        try:
            if self._restart is not None:
                await asyncio.wait({self._restart})
            if kernel_id is not None:
                await self.launcher.shutdown(kernel_id)
        except Exception:  # a caller (an eviction, a sweep) must never fail because of it
            self.log.exception("xcsh: disposing session %s failed", self.key)


def utcnow() -> datetime:
    """The time now, timezone-aware, as jupyter_server stamps kernel activity."""
    return datetime.now(UTC)


class ActivityRecorder:
    """Keep a kernel's ``last_activity``/``execution_state`` as ``record_activity`` does.

    The figures are traits (traitlets) of the kernel manager and the kernel; setting one
    through traitlets validates it and builds a change notice for its observers, which these
    have none of: ~0.26 M instructions a ``pass`` call (5 % of its work in the server) for
    storing three timestamps. They are stored as traitlets' ``set`` would (``store_trait``),
    through traitlets whenever anything observes or validates them.
    """

    def __init__(self, kernel_manager: Any, kernel: Any) -> None:
        self.km = kernel_manager
        self.kernel = kernel

    def __call__(self, msg: dict[str, Any]) -> None:
        """Record one IOPub message of the kernel."""
        km, kernel = self.km, self.kernel
        msg_type = msg.get("msg_type")
        parent_type = (msg.get("parent_header") or {}).get("msg_type")
        tracked_parent = km.track_message_type(parent_type)
        if km.track_message_type(msg_type) or tracked_parent or kernel.execution_state == "busy":
            now = utcnow()
            store_trait(km, "last_kernel_activity", now)
            store_trait(kernel, "last_activity", now)
        if msg_type == "status":
            state = (msg.get("content") or {}).get("execution_state")
            if tracked_parent:
                store_trait(kernel, "execution_state", state)
            elif kernel.execution_state == "starting" and state != "starting":
                store_trait(kernel, "execution_state", "idle")


def store_trait(owner: Any, name: str, value: Any) -> None:
    """``setattr(owner, name, value)`` for a trait of the server's, cheaply when nothing sees it.

    With no observer (of the trait or of all), no cross-validator and no old-style
    ``_<name>_changed``/``_<name>_validate`` method, traitlets' ``set`` would only store the
    value (a datetime or a state string, valid for the trait): it is stored. Otherwise, and
    for an object that is not a ``HasTraits`` as probed (``probe_trait_store``), ``setattr``.
    """
    try:
        notifiers = owner._trait_notifiers
        plain = not (
            notifiers.get(name)
            or any(notifiers.get(All, {}).values())
            or name in owner._trait_validators
            or _has_old_style_handlers(type(owner), name)
        )
        values = owner._trait_values
    except AttributeError:
        plain = False
    if plain:
        values[name] = value
    else:
        setattr(owner, name, value)


#: Per class and trait name: whether the class has an old-style handler of the trait.
_OLD_STYLE: dict[tuple[type, str], bool] = {}


def _has_old_style_handlers(cls: type, name: str) -> bool:
    found = _OLD_STYLE.get((cls, name))
    if found is None:
        found = hasattr(cls, f"_{name}_changed") or hasattr(cls, f"_{name}_validate")
        _OLD_STYLE[(cls, name)] = found
    return found


def probe_trait_store() -> str | None:
    """Whether ``store_trait`` sees observers and validators where traitlets keeps them."""

    class Probe(HasTraits):
        when = Instance(datetime, allow_none=True)

    seen: list[Any] = []
    probe = Probe()
    now = utcnow()
    store_trait(probe, "when", now)
    if probe.when is not now or probe._trait_values.get("when") is not now:
        return "a trait stored in _trait_values does not read back"
    probe.observe(seen.append, names="when")
    if not probe._trait_notifiers.get("when"):
        return "an observer is not in the object's _trait_notifiers"
    store_trait(probe, "when", utcnow())
    if len(seen) != 1:
        return "an observed trait was stored without notifying its observer"
    if not isinstance(probe._trait_validators, dict):
        return "the object has no _trait_validators"
    return None


def take_over_watch(kernel_manager: Any, kernel_id: str) -> ActivityRecorder | None:
    """Close the server's activity watcher of a kernel; the recorder to feed instead.

    None (the server's watch left alone) when the server does not watch the kernel this way:
    a gateway's kernel, another kernel manager.
    """
    try:
        kernel = kernel_manager.get_kernel(kernel_id)
    except Exception:
        return None
    stream = getattr(kernel, "_activity_stream", None)
    if stream is None or not hasattr(kernel_manager, "track_message_type"):
        return None
    # Not stop_watching_activity: it also runs a pending restart's cleanup.
    kernel._activity_stream = None
    with contextlib.suppress(Exception):
        stream.close()
    return ActivityRecorder(kernel_manager, kernel)


def resume_server_watch(kernel_manager: Any, kernel_id: str) -> None:
    """Give the watch back to the server (the kernel is still there and nobody watches it)."""
    try:
        kernel = kernel_manager.get_kernel(kernel_id)
    except Exception:  # shut down meanwhile
        return
    if getattr(kernel, "_activity_stream", None) is not None:
        return  # a restart started a watcher of its own
    try:
        kernel_manager.start_watching_activity(kernel_id)
    except Exception as e:
        log.debug("xcsh: could not resume the server's activity watch of %s: %s", kernel_id, e)
