"""Private internals of other libraries used for speed: each probed once, with a public fallback.

Why: a few hot paths lean on internals of jupyter_client, pyzmq, jupyter_events, jupyter_server
and ipykernel (listed in ``FAST_PATHS``), which a release of those libraries may change without
notice. Each has a *probe* next to the code that uses it: run once when the server starts, it
exercises the internal as the fast path will (a capability check, not a version test) and
raises when it does not behave as expected. A fast path that fails its probe, or that the
settings turn off (``XcshSettings.fast_paths``, ``disabled_fast_paths``, or the setting of the
intervention it belongs to), is not used: its code takes the public API instead. The server
logs one line saying which paths are in use and which fell back, and why.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

__all__ = ["FAST_PATHS", "FastPaths", "Probe", "probe_fast_paths"]

#: Every fast path: its name, and what it does instead of the public call (and leans on).
FAST_PATHS: dict[str, str] = {
    "message_decoding": (
        "kernel messages decoded keeping header dates as strings, with jupyter_client "
        "Session's digest history (instead of Session.deserialize)"
    ),
    "socket_views": (
        "kernel messages read and requests sent through pyzmq synchronous views of the "
        "asyncio sockets, a message waited for as pyzmq's Poller waits (a poll receive event) "
        "(instead of their recv_multipart futures and Session.send)"
    ),
    "event_emit": (
        "events handed to jupyter_events' listener sets without EventLogger.emit's deep copy "
        "and per-event metadata validation (instead of EventLogger.emit)"
    ),
    "activity_watch": (
        "the server's activity watcher of a session kernel closed and its figures kept from "
        "the tool's own connection (jupyter_server's kernel _activity_stream), stored straight "
        "into the traits' values when nothing observes them (traitlets' _trait_values)"
    ),
    "save_guard": (
        "the contents manager's save and atomic_writing wrapped on the instance: one writer "
        "per file, the tool's saves renamed into place"
    ),
    "kernel_stream_bound": (
        "session kernels' stdout/stderr sent in messages of at most 1 MiB, IOPub waiting for "
        "the server (ipykernel OutStream internals, probed inside each kernel)"
    ),
    "restarter_wait": (
        "a dead kernel left to the server's auto-restarter when it has one "
        "(jupyter_client's kernel _restarter)"
    ),
}

#: Checks one fast path: returns None when the internal behaves as the fast path needs, else
#: why not (it may also raise: the exception is the reason). None instead of a probe: the
#: path is checked where it runs (inside each kernel).
Probe = Callable[[], str | None] | None


@dataclass(frozen=True)
class FastPaths:
    """Which fast paths are in use; the others take the public API."""

    in_use: frozenset[str] = frozenset(FAST_PATHS)
    #: Fast paths whose probe failed: name -> why.
    fell_back: Mapping[str, str] = field(default_factory=dict)
    #: Fast paths turned off by a setting: name -> the setting.
    turned_off: Mapping[str, str] = field(default_factory=dict)

    def uses(self, name: str) -> bool:
        """Whether fast path ``name`` is in use."""
        if name not in FAST_PATHS:
            raise KeyError(name)
        return name in self.in_use

    @classmethod
    def none(cls) -> FastPaths:
        """No fast path at all: every use takes the public API."""
        return cls(in_use=frozenset())

    def summary(self) -> str:
        """The one line logged at startup."""
        in_use = ", ".join(sorted(self.in_use)) or "none"
        fell_back = "; ".join(f"{k} ({why})" for k, why in sorted(self.fell_back.items()))
        off = ", ".join(f"{k} ({setting})" for k, setting in sorted(self.turned_off.items()))
        return (
            f"jupyter_xcsh fast paths in use: {in_use}; fell back to the public API: "
            f"{fell_back or 'none'}; turned off: {off or 'none'}"
        )


def probe_fast_paths(
    probes: Mapping[str, Probe],
    *,
    enabled: bool = True,
    disabled: Iterable[str] = (),
    turned_off: Mapping[str, str] | None = None,
) -> FastPaths:
    """Probe every fast path not turned off; the paths to use.

    ``enabled`` False turns them all off (``XcshSettings.fast_paths``), ``disabled`` names
    some (``disabled_fast_paths``); ``turned_off`` maps a path to the setting that turned it
    off (an intervention's own switch).
    """
    off = dict(turned_off or {})
    for name in disabled:
        off.setdefault(name, "disabled_fast_paths")
    if not enabled:
        off = dict.fromkeys(FAST_PATHS, "fast_paths=False")
    in_use: set[str] = set()
    fell_back: dict[str, str] = {}
    for name in FAST_PATHS:
        if name in off:
            continue
        probe = probes.get(name)
        try:
            why = probe() if probe is not None else None
        except Exception as e:
            why = f"{type(e).__name__}: {e}"
        if why is None:
            in_use.add(name)
        else:
            fell_back[name] = why
    return FastPaths(frozenset(in_use), fell_back, off)
