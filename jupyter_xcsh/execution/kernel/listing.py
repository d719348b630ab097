"""The python tool's kernels as sessions of the server, so that a person can tell whose they are.

A kernel the python tool starts has no server session of its own: JupyterLab's Running panel
lists it as "No sessions connected". Each python tool session's kernel is therefore recorded
in the server's session manager as a session named ``Agent: <session>``, of type ``xcsh``,
whose path is the session's working directory, bound to that kernel
(``create_session(kernel_id=...)`` starts nothing).

The record is only a name: the python tool's pool stays the sole owner of the kernel's life.
The record goes when the session gives its kernel up (eviction, idle cleanup, shutdown, a
replaced kernel); a person who shuts the kernel down from the lab deletes the record with it,
and the session sees a kernel shut down elsewhere, as before.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from jupyter_core.utils import ensure_async

__all__ = ["SESSION_TYPE", "SessionListing"]

#: The type of the python tool's records in the server's session manager.
SESSION_TYPE = "xcsh"


class SessionListing:
    """Records of the python tool's kernels in the server's session manager.

    Parameters
    ----------
    session_manager
        ``ServerApp.session_manager`` (local or gateway); None records nothing.

    """

    def __init__(self, session_manager: Any | None, *, log: logging.Logger) -> None:
        self.session_manager = session_manager
        self.log = log
        self._adding: dict[str, asyncio.Future[None]] = {}

    def add(self, kernel_id: str, session: str, cwd: str) -> None:
        """Record kernel ``kernel_id`` as python tool session ``session`` (in the background)."""
        if self.session_manager is None:
            return
        task = asyncio.ensure_future(self._add(kernel_id, session, cwd))
        self._adding[kernel_id] = task
        task.add_done_callback(lambda _: self._adding.pop(kernel_id, None))

    async def _add(self, kernel_id: str, session: str, cwd: str) -> None:
        sm: Any = self.session_manager
        # Checked in the same step as create_session's own check: given a kernel it does not
        # know, it would start a new one.
        if kernel_id not in sm.kernel_manager:
            return
        try:
            await ensure_async(
                sm.create_session(
                    path=cwd, name=f"Agent: {session}", type=SESSION_TYPE, kernel_id=kernel_id
                )
            )
        except Exception as e:  # a name is a courtesy: never fail a call for it
            self.log.warning("xcsh: could not list kernel %s as a session: %s", kernel_id, e)

    def remove(self, kernel_id: str) -> None:
        """Remove the record of ``kernel_id`` (the kernel itself is left to its session)."""
        adding = self._adding.pop(kernel_id, None)
        if adding is not None:
            adding.cancel()  # not started yet: nothing is recorded
        # The session manager's own statement for a record whose kernel is gone; its
        # delete_session would shut the kernel down. Without a database (another session
        # manager), the record goes when the kernel does.
        cursor = getattr(self.session_manager, "cursor", None)
        if cursor is not None:
            cursor.execute(
                "DELETE FROM session WHERE kernel_id=? AND type=?", (kernel_id, SESSION_TYPE)
            )
