"""The agent as a collaborator of a room: its name, colour and cursor in the room's awareness.

When the notebook tool changes a notebook open in a jupyter-collaboration room, the agent is
shown to the room's people as one more collaborator — an awareness client of its own (a client
id that is not the server's) whose state is what a JupyterLab tab publishes:

- in the document's awareness (``ynotebook.awareness``, the room's): ``user`` — the shape
  JupyterLab's ``User`` identity has, ``{username, name, display_name, initials, color,
  avatar_url}`` — and ``cursors``: ``[{anchor, head, primary, empty}]``, Yjs relative positions
  (JSON) in the source text of the cell it is editing, which JupyterLab's collaboration cursors
  draw in that cell with the agent's name;
- in the lab's global awareness room (``JupyterLab:globalAwareness``, when open), read by the
  collaborators panel: ``user``, ``current`` (``notebook:<path>``) and ``documents``.

The states are applied with the origin ``"local"``, which pycrdt-websocket's room broadcasts to
its clients. Yjs clients drop a remote state not renewed for 30 s, so the state is renewed every
``RENEW_SECONDS`` while the agent is active, and removed (a null state, broadcast) after
``idle_seconds`` without a change by that agent in that room.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import random
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

#: The agent's name when its client gave none.
DEFAULT_NAME = "Agent"
#: Seconds without a change after which the agent leaves a room's awareness.
IDLE_SECONDS = 60.0
#: Seconds between renewals of a shown state (Yjs clients drop one older than 30 s).
RENEW_SECONDS = 10.0
#: The room of JupyterLab's global awareness (the collaborators panel).
GLOBAL_AWARENESS = "JupyterLab:globalAwareness"
#: Colours of agents (picked by the agent's key), readable on light and dark themes.
COLOURS = ("#9c27b0", "#00897b", "#ef6c00", "#3949ab", "#c2185b", "#558b2f")
#: Characters of an agent's name kept.
MAX_NAME = 64


def clean_name(name: str | None) -> str:
    """An agent's name as shown: printable, at most ``MAX_NAME`` characters; else the default."""
    text = "".join(ch for ch in (name or "") if ch.isprintable()).strip()[:MAX_NAME]
    return text or DEFAULT_NAME


def agent_user(name: str, key: str) -> dict[str, Any]:
    """The awareness ``user`` of an agent: JupyterLab's identity fields."""
    digest = hashlib.sha256(f"{key}\0{name}".encode()).hexdigest()
    words = [w for w in name.replace("-", " ").replace("_", " ").split() if w]
    initials = "".join(w[0] for w in words[:2]).upper() or "A"
    return {
        "username": f"xcsh-agent-{digest[:12]}",
        "name": name,
        "display_name": name,
        "initials": initials,
        "color": COLOURS[int(digest[:8], 16) % len(COLOURS)],
        "avatar_url": None,
    }


def _update(client_id: int, clock: int, state: dict[str, Any] | None) -> bytes:
    """An encoded awareness update of one client (y-protocols' format)."""
    from pycrdt import Encoder

    encoder = Encoder()
    encoder.write_var_uint(1)
    encoder.write_var_uint(client_id)
    encoder.write_var_uint(clock)
    encoder.write_var_string(json.dumps(state, separators=(",", ":")))
    return encoder.to_bytes()


def cursor_at(ytext: Any, offset: int) -> dict[str, Any] | None:
    """A collapsed cursor at UTF-8 byte ``offset`` of a cell's shared source, or None.

    Relative positions name a character by its item id; their clocks count characters as
    Yjs does only for ASCII text, so a cursor in a text with other characters is put at its
    start (a position that is exact in any text). None for an empty text.
    """
    try:
        from pycrdt import Assoc, StickyIndex
    except ImportError:  # a pycrdt without relative positions: the agent shows, no cursor
        return None

    text = str(ytext)
    size = len(text.encode("utf-8"))
    if size == 0:
        return None
    if not text.isascii():
        offset = 0
    offset = max(0, min(offset, size))
    if offset < size:
        position = StickyIndex.new(ytext, offset, Assoc.AFTER).to_json()
    else:
        position = StickyIndex.new(ytext, size, Assoc.BEFORE).to_json()
    return {"anchor": position, "head": position, "primary": True, "empty": True}


@dataclass
class _Shown:
    """One agent shown in one awareness."""

    awareness: Any
    client_id: int
    state: dict[str, Any]
    clock: int = 0
    timer: asyncio.TimerHandle | None = None
    last: float = 0.0


class AgentPresence:
    """Show agents in the awareness of the rooms they change; remove them once idle."""

    def __init__(
        self,
        settings: Mapping[str, Any] | None = None,
        idle_seconds: float = IDLE_SECONDS,
        renew_seconds: float = RENEW_SECONDS,
    ) -> None:
        """``settings``: the server's (``web_app.settings``), for the lab's global awareness."""
        self.settings = settings or {}
        self.idle_seconds = idle_seconds
        self.renew_seconds = renew_seconds
        # (id of the awareness, agent key) -> what is shown; awareness objects die with rooms.
        self._shown: dict[tuple[int, str], _Shown] = {}
        self._awareness: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()

    def shown(self) -> list[dict[str, Any]]:
        """The states shown now (for tests and diagnostics)."""
        return [dict(s.state) for s in self._shown.values()]

    def show(
        self,
        ynotebook: Any,
        api_path: str,
        name: str,
        key: str,
        cell_id: str | None = None,
        offset: int | None = None,
    ) -> None:
        """Show the agent (``key``, named ``name``) in ``ynotebook``'s room, at ``cell_id``.

        ``offset``: the cursor's UTF-8 byte offset in the cell's source (default: its end).
        Never raises: presence is a courtesy, the change it follows is made already.
        """
        try:
            self._show(ynotebook, api_path, clean_name(name), key, cell_id, offset)
        except Exception:  # an awareness we cannot write to must not fail the call
            log.warning("Could not show the agent in the room of %s", api_path, exc_info=True)

    def _show(
        self,
        ynotebook: Any,
        api_path: str,
        name: str,
        key: str,
        cell_id: str | None,
        offset: int | None,
    ) -> None:
        user = agent_user(name, key)
        awareness = getattr(ynotebook, "awareness", None)
        if awareness is not None:
            state: dict[str, Any] = {"user": user}
            cursor = self._cursor(ynotebook, cell_id, offset)
            if cursor is not None:
                state["cursors"] = [cursor]
            self._set(awareness, key, state)
        room_awareness = self._global_awareness()
        if room_awareness is not None:
            state = {"user": user, "current": f"notebook:{api_path}", "documents": [api_path]}
            self._set(room_awareness, key, state)

    def _cursor(self, ynotebook: Any, cell_id: str | None, offset: int | None) -> Any:
        if cell_id is None:
            return None
        ycell = next((c for c in ynotebook.ycells if c.get("id") == cell_id), None)
        ytext = None if ycell is None else ycell.get("source")
        if ytext is None or isinstance(ytext, str):
            return None
        if offset is None:
            offset = len(str(ytext).encode("utf-8"))
        return cursor_at(ytext, offset)

    def _global_awareness(self) -> Any:
        extension = self.settings.get("jupyter_server_ydoc")
        server = getattr(extension, "ywebsocket_server", None)
        rooms = getattr(server, "rooms", None)
        room = rooms.get(GLOBAL_AWARENESS) if isinstance(rooms, dict) else None
        return getattr(room, "awareness", None)

    def _set(self, awareness: Any, key: str, state: dict[str, Any]) -> None:
        slot = (id(awareness), key)
        shown = self._shown.get(slot)
        if shown is None or self._awareness.get(id(awareness)) is not awareness:
            # A client id of its own: never the server's (nor a person's, by chance).
            client_id = random.randrange(1, 2**31)
            while client_id in awareness.states or client_id == awareness.client_id:
                client_id = random.randrange(1, 2**31)
            shown = self._shown[slot] = _Shown(awareness, client_id, state)
            self._awareness[id(awareness)] = awareness
        shown.state = state
        shown.last = asyncio.get_running_loop().time()
        self._publish(shown)
        self._schedule(slot, shown)

    def _publish(self, shown: _Shown, state: Any = ...) -> None:
        shown.clock += 1
        value = shown.state if state is ... else state
        # "local": the origin pycrdt-websocket's room broadcasts to its clients.
        shown.awareness.apply_awareness_update(
            _update(shown.client_id, shown.clock, value), "local"
        )

    def _schedule(self, slot: tuple[int, str], shown: _Shown) -> None:
        if shown.timer is not None:
            shown.timer.cancel()
        loop = asyncio.get_running_loop()
        left = self.idle_seconds - (loop.time() - shown.last)
        delay = max(0.0, min(self.renew_seconds, left))
        shown.timer = loop.call_later(delay, self._tick, slot, shown)

    def _tick(self, slot: tuple[int, str], shown: _Shown) -> None:
        if self._shown.get(slot) is not shown:
            return
        idle = asyncio.get_running_loop().time() - shown.last
        try:
            if idle >= self.idle_seconds:
                self.remove(slot)
                return
            self._publish(shown)
        except Exception:  # a room closing meanwhile
            log.debug("Could not renew an agent's awareness", exc_info=True)
            self._shown.pop(slot, None)
            return
        self._schedule(slot, shown)

    def remove(self, slot: tuple[int, str]) -> None:
        """Take one agent out of one awareness (a null state, broadcast)."""
        shown = self._shown.pop(slot, None)
        if shown is None:
            return
        if shown.timer is not None:
            shown.timer.cancel()
        self._publish(shown, None)

    def close(self) -> None:
        """Take every agent out of every awareness (the server stops)."""
        for slot in list(self._shown):
            try:
                self.remove(slot)
            except Exception:  # a room already gone
                log.debug("Could not remove an agent's awareness", exc_info=True)
