"""Why a call on a session could not run to its end: the session's errors and their texts."""

from __future__ import annotations

__all__ = [
    "KERNEL_GONE",
    "SESSION_SHUT_DOWN",
    "TOO_MANY_RESTARTS",
    "SessionDisposedError",
    "TooManyRestartsError",
]

#: The exact error of a session whose kernel died again right after a restart.
TOO_MANY_RESTARTS = "Python kernel restarted too many times in this session"

#: The message of a call whose session was shut down under it.
SESSION_SHUT_DOWN = "Session was shut down"

#: Why the state is gone when the kernel manager no longer has the session's kernel.
KERNEL_GONE = (
    "kernel {} was shut down outside the python tool (the lab's Running panel, "
    "DELETE /api/kernels, the server's idle culler, or its gateway)"
)


class TooManyRestartsError(RuntimeError):
    """The session's kernel died again after being restarted once."""

    def __init__(self) -> None:
        super().__init__(TOO_MANY_RESTARTS)


class SessionDisposedError(RuntimeError):
    """The session was shut down (deleted, evicted, or the server stopping) during a call."""

    def __init__(self) -> None:
        super().__init__(SESSION_SHUT_DOWN)
