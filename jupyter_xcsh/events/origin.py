"""Where a call came from, for its activity events: the agent's name and its trace context.

A transport sets the origin of the request it answers (``call_origin``); the events of the call
(a notebook call's one event, a python call's or a run's ``started``) carry it, and so does the
activity history that keeps them. A context variable, so that a run going on in a task of its
own after its request (a task created in the request's context) still carries it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from typing import Any

__all__ = ["call_origin", "mark_origin", "origin_of", "valid_traceparent"]

_ORIGIN: ContextVar[dict[str, str] | None] = ContextVar("xcsh_call_origin", default=None)

#: W3C Trace Context's ``traceparent``: version, trace id, parent id, flags (lower-case hex).
_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$")


def valid_traceparent(value: object) -> str | None:
    """``value`` when it is a well-formed ``traceparent`` (version ``ff`` is invalid), else None."""
    if isinstance(value, str) and _TRACEPARENT.fullmatch(value) and not value.startswith("ff"):
        return value
    return None


@contextmanager
def call_origin(agent: str, traceparent: str | None) -> Iterator[None]:
    """Mark the calls made in this block as the agent ``agent``'s, in ``traceparent``'s trace."""
    token = mark_origin(agent, traceparent)
    try:
        yield
    finally:
        _ORIGIN.reset(token)


def mark_origin(agent: str, traceparent: str | None) -> Token[dict[str, str] | None]:
    """Mark the calls made from now on in this task (and the tasks it starts) as ``agent``'s.

    For a transport whose request is a task of its own (tornado's: a REST request), set once
    when the request begins; ``call_origin`` for a block.
    """
    origin = {"agent": agent} if agent else {}
    if traceparent is not None:
        origin["traceparent"] = traceparent
    return _ORIGIN.set(origin or None)


def origin_of(data: dict[str, Any]) -> dict[str, Any]:
    """An event's ``data`` with its call's origin, when it is the event that starts a call."""
    origin = _ORIGIN.get()
    if origin is None or data.get("event", "started") != "started":
        return data
    return {**origin, **data}
