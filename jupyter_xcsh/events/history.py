"""The activity history: the lab's events of finished calls, kept in SQLite across restarts.

What is kept is exactly what the lab was shown (docs/developers/contract.md §13): the payloads of
the activity events (``activity.py``, ``run.py``), one row per call — a notebook call's one event,
or a python call's / run in place's events from ``started`` to ``finished``, with only the last
output tail of each cell and without the ``outputs`` events a run sends to open notebooks. A
call that read stdin (answers given, or asked) keeps no output text at all: the tools echo
answers into the output as a terminal would. Passwords are never in any event.

Several server processes may share one file (one home directory): the database is in WAL mode
with a busy timeout, each write is one short transaction (of the calls finished within
``WRITE_DELAY`` of each other), and rows carry the server's contents
root so that each server serves only its own. On the event loop an event costs one append to
a queue; the store's one worker thread takes the queue ``WRITE_DELAY`` later and does the rest
(each call's events gathered, stamped, trimmed, serialised and written), so no database work and
no row building happens on a call's path. A failure is logged and never reaches a call.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

__all__ = ["NO_STDIN_OUTPUT", "REVIEW_STATES", "ActivityHistory", "HistoryPage"]

log = logging.getLogger(__name__)

#: The ``result.text`` kept for a call that read stdin (its output held the answers).
NO_STDIN_OUTPUT = "(output not kept in the activity history: the call read stdin)"

#: Most events kept for one python call (its later events, but ``finished``, are left out).
MAX_CALL_EVENTS = 500
#: Largest base64 image kept in a stored display event; a larger one keeps its size only.
MAX_STORED_IMAGE = 64 * 1024
#: Seconds a statement waits for another process's lock (SQLite's busy timeout).
BUSY_TIMEOUT = 10.0
#: Tries of one write when SQLite answers "locked" without waiting (e.g. while set up).
WRITE_ATTEMPTS = 5
#: The states a person's review leaves a call (or its change to one cell) in.
REVIEW_STATES = ("kept", "undone", "yours")

#: Seconds a finished call waits to be written with the calls finishing after it (one
#: transaction for all: with many calls a second, most of the writes' cost; and each wake of
#: the store's thread took the interpreter's lock from the event loop). A query, a review,
#: ``flush`` and ``close`` write what waits first, so nobody reading sees the delay.
WRITE_DELAY = 1.0

#: Python calls followed at once (a call whose ``finished`` never comes is forgotten past it).
MAX_OPEN_CALLS = 1000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    root TEXT NOT NULL,
    call_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    path TEXT,
    created REAL NOT NULL,
    events TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS calls_root_id ON calls (root, id);
CREATE INDEX IF NOT EXISTS calls_created ON calls (created);
CREATE TABLE IF NOT EXISTS reviews (
    root TEXT NOT NULL,
    call_id TEXT NOT NULL,
    cell_id TEXT NOT NULL,
    state TEXT NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (root, call_id, cell_id)
);
"""

_COLUMNS = "SELECT id, call_id, kind, path, created, events FROM calls"

#: Event kind of each schema id's rows.
_KINDS = {
    "https://events.jupyter.org/jupyter_xcsh/notebook/v1": "notebook",
    "https://events.jupyter.org/jupyter_xcsh/python/v1": "python",
    "https://events.jupyter.org/jupyter_xcsh/run/v1": "run",
    "https://events.jupyter.org/jupyter_xcsh/approval/v1": "approval",
}


#: How a call's events are written (one encoder for all: ``json.dumps`` with options makes one
#: per call).
_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)

#: One answer of ``GET /api/xcsh/activity``: ``{entries, cursor, more}``.
HistoryPage = dict[str, Any]


class ActivityHistory:
    """The history of one server's calls in a SQLite file, bounded by count and age.

    ``root`` is the server's contents root (rows of other servers sharing the file are not
    served); ``max_calls`` (0: no bound) and ``max_age`` seconds (0: no bound) are applied on
    every write.
    """

    def __init__(
        self, db_path: str, *, root: str, max_calls: int = 1000, max_age: float = 0
    ) -> None:
        self.db_path = db_path
        self.root = os.path.realpath(root)
        self.max_calls = max_calls
        self.max_age = max_age
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="xcsh-history")
        self._db: sqlite3.Connection | None = None  # used on the worker thread only
        # The worker thread's own: python calls' events until the call finishes, and the calls
        # whose output is not kept.
        self._open: dict[str, list[dict[str, Any]]] = {}
        self._redact: set[str] = set()
        # Events taken and not yet gathered (``(schema_id, payload, time)``; a ``redact`` is
        # ``(None, call_id, 0)``), and the worker's task that will gather and write them (None:
        # none queued). Events taken while the worker writes are handled together after.
        self._pending: list[tuple[str | None, Any, float]] = []
        self._drain: Future[None] | None = None
        self._pending_lock = threading.Lock()
        self._stamp_second, self._stamp_prefix = -1, ""  # the worker's: ``_stamp``

    # -- recording (the event loop's thread: one append) -------------------------------------
    def record(self, schema_id: str, payload: dict[str, Any]) -> Future[None] | None:
        """Take one event as emitted; the future of the worker's task that handles it.

        A finished call (a notebook call's event, a python call's or run's ``finished``) is
        written then, with the calls finished within ``WRITE_DELAY``. ``payload`` is not
        changed, here or later (the lab's listeners receive the same dict).
        """
        return self._queue((schema_id, payload, time.time()))

    def redact(self, call_id: str) -> None:
        """Keep no output text of the call ``call_id`` (it reads stdin)."""
        self._queue((None, call_id, 0.0))

    def _queue(self, item: tuple[str | None, Any, float]) -> Future[None] | None:
        """Append ``item`` for the worker; the future of the task that will take it."""
        at_once = False
        with self._pending_lock:
            self._pending.append(item)
            drain = self._drain
            if drain is None:
                drain = self._drain = Future()
                try:
                    asyncio.get_running_loop().call_later(WRITE_DELAY, self._start_drain)
                except RuntimeError:  # a thread without a loop (tests, scripts): at once
                    at_once = True
        if at_once:
            self._start_drain()
        return drain

    def _start_drain(self) -> None:
        """Have the worker write what waits (its future ends when it is written)."""
        with self._pending_lock:
            drain = self._drain
        if drain is None:
            return  # written already (a query, a flush)
        try:
            self._executor.submit(self._write_pending)
        except RuntimeError:  # closed: the server is stopping (``close`` wrote them)
            with self._pending_lock:
                self._pending.clear()
                self._drain = None
            drain.set_result(None)

    # -- the worker thread --------------------------------------------------------------------
    def _connection(self) -> sqlite3.Connection:
        if self._db is None:
            folder = os.path.dirname(self.db_path)
            if folder:
                os.makedirs(folder, exist_ok=True)
            db = sqlite3.connect(self.db_path, timeout=BUSY_TIMEOUT, isolation_level=None)
            try:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
                db.executescript(_SCHEMA)
            except BaseException:
                db.close()  # set up again on the next attempt
                raise
            self._db = db
        return self._db

    def _write_pending(self) -> None:
        """Gather the events taken; write the calls they finish in one transaction."""
        with self._pending_lock:
            taken, self._pending = self._pending, []
            drain, self._drain = self._drain, None
        try:
            batch = []
            for schema_id, payload, at in taken:
                if schema_id is None:
                    self._redact.add(payload)
                    if len(self._redact) > MAX_OPEN_CALLS:
                        self._redact.pop()
                    continue
                row = self._gather(schema_id, payload, at)
                if row is not None:
                    batch.append(row)
            self._write_rows(batch)
        finally:
            if drain is not None:
                drain.set_result(None)

    def _gather(
        self, schema_id: str, payload: dict[str, Any], at: float
    ) -> tuple[tuple[str, str, str, str | None, float], list[Any]] | None:
        """Add one event to its call; the call's row and events when the event finishes it."""
        kind = _KINDS.get(schema_id)
        call_id = payload.get("callId")
        if kind is None or not isinstance(call_id, str):
            return None
        emission = {"schema_id": schema_id, "version": 1, "__timestamp__": self._stamp(at)}
        emission.update((k, v) for k, v in payload.items() if v is not None)
        path = payload.get("path")
        row = (self.root, call_id, kind, path if isinstance(path, str) else None, at)
        if kind in ("notebook", "approval"):  # one event, one row (an approval: each step)
            return row, [emission]
        event = payload.get("event")
        if event == "outputs":  # a run's outputs for open notebooks: not the panel's
            return None
        events = self._open.get(call_id)
        if events is None:
            if len(self._open) >= MAX_OPEN_CALLS:  # forget the oldest call never finished
                oldest = next(iter(self._open))
                del self._open[oldest]
                self._redact.discard(oldest)
            events = self._open[call_id] = []
        if event == "chunk":  # only the latest tail of a cell is worth keeping
            cell = payload.get("cellIndex")
            events[:] = [e for e in events if e.get("event") != "chunk" or e["cellIndex"] != cell]
        if event == "display":
            emission = _small_display(emission)
        if event == "finished" or len(events) < MAX_CALL_EVENTS:
            events.append(emission)
        if event != "finished":
            return None
        del self._open[call_id]
        if call_id in self._redact:
            self._redact.discard(call_id)
            events = _without_output(events)
        return row, events

    def _stamp(self, at: float) -> str:
        """``at`` as ``datetime.isoformat`` writes it in UTC, to the millisecond.

        The date and time of its second are made once per second (a call's events share them).
        """
        second = int(at)
        micros = round((at - second) * 1_000_000)  # rounded as datetime does, then cut
        if micros >= 1_000_000:
            second, micros = second + 1, micros - 1_000_000
        if second != self._stamp_second:
            self._stamp_second = second
            self._stamp_prefix = datetime.fromtimestamp(second, UTC).isoformat()[:19]
        return f"{self._stamp_prefix}.{micros // 1000:03d}+00:00"

    def _write_rows(
        self, batch: list[tuple[tuple[str, str, str, str | None, float], list[Any]]]
    ) -> None:
        rows = []
        for row, events in batch:
            try:
                rows.append((*row, _ENCODER.encode(events)))
            except (TypeError, ValueError) as e:
                log.warning("xcsh: could not keep a call in the activity history: %s", e)
        if not rows:
            return
        for attempt in range(WRITE_ATTEMPTS):
            try:
                self._insert(rows)
                return
            except sqlite3.OperationalError as e:
                # Another process holds a lock SQLite does not wait for (setting up the file,
                # a read turning into a write): try again shortly.
                if attempt + 1 < WRITE_ATTEMPTS and _busy(e):
                    time.sleep(0.05 * (attempt + 1))
                    continue
                error: Exception = e
            except (sqlite3.Error, OSError) as e:
                error = e
            log.warning(
                "xcsh: could not keep a call in the activity history %s: %s", self.db_path, error
            )
            return

    def _insert(self, rows: list[tuple[str, str, str, str | None, float, str]]) -> None:
        db = self._connection()
        db.execute("BEGIN IMMEDIATE")
        try:
            db.executemany(
                "INSERT INTO calls (root, call_id, kind, path, created, events)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                rows,
            )
            self._prune(db, rows[-1][4])
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def _prune(self, db: sqlite3.Connection, now: float) -> None:
        before = db.total_changes
        if self.max_age > 0:
            db.execute("DELETE FROM calls WHERE created < ?", (now - self.max_age,))
        if self.max_calls > 0:
            db.execute(
                "DELETE FROM calls WHERE root = ? AND id <= (SELECT id FROM calls WHERE root = ?"
                " ORDER BY id DESC LIMIT 1 OFFSET ?)",
                (self.root, self.root, self.max_calls),
            )
        if db.total_changes == before:
            return  # no call went: a review is only ever kept of a call kept
        # Review states of calls no longer kept go with them.
        db.execute(
            "DELETE FROM reviews WHERE root = ? AND call_id NOT IN"
            " (SELECT call_id FROM calls WHERE root = ?)",
            (self.root, self.root),
        )

    def _query(self, path: str | None, since: int | None, limit: int) -> HistoryPage:
        self._write_pending()  # every call finished so far is in the answer
        db = self._connection()
        where = "root = ?"
        args: list[Any] = [self.root]
        if path is not None:
            where += " AND path = ?"
            args.append(path)
        if self.max_age > 0:
            where += " AND created >= ?"
            args.append(time.time() - self.max_age)
        if since is None:  # the newest `limit`, oldest first
            sql = f"SELECT * FROM ({_COLUMNS} WHERE {where} ORDER BY id DESC LIMIT ?) ORDER BY id"
            rows = db.execute(sql, (*args, limit + 1)).fetchall()
            more = len(rows) > limit
            rows = rows[1:] if more else rows
        else:
            sql = f"{_COLUMNS} WHERE {where} AND id > ? ORDER BY id LIMIT ?"
            rows = db.execute(sql, (*args, since, limit + 1)).fetchall()
            more = len(rows) > limit
            rows = rows[:limit]
        reviews = self._reviews(db, [row[1] for row in rows])
        entries = [
            {
                "id": row[0],
                "callId": row[1],
                "kind": row[2],
                "path": row[3],
                "time": datetime.fromtimestamp(row[4], UTC).isoformat(timespec="milliseconds"),
                "events": json.loads(row[5]),
                "review": reviews.get(row[1], []),
            }
            for row in rows
        ]
        cursor = entries[-1]["id"] if entries else since or 0
        return {"entries": entries, "cursor": cursor, "more": more}

    def _reviews(
        self, db: sqlite3.Connection, call_ids: list[str]
    ) -> dict[str, list[dict[str, Any]]]:
        """The review states of calls: ``{callId: [{cellId, state}]}`` (cellId null: whole)."""
        found: dict[str, list[dict[str, Any]]] = {}
        for start in range(0, len(call_ids), 500):  # SQLite's bound on parameters
            chunk = call_ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for call_id, cell_id, state in db.execute(
                f"SELECT call_id, cell_id, state FROM reviews WHERE root = ?"
                f" AND call_id IN ({marks}) ORDER BY created",
                (self.root, *chunk),
            ):
                found.setdefault(call_id, []).append({"cellId": cell_id or None, "state": state})
        return found

    def _review(self, path: str, call_ids: list[str], cell_id: str | None, state: str) -> int:
        """Keep a review state; return how many of ``call_ids`` on ``path`` the history holds."""
        self._write_pending()  # a call just finished can be reviewed
        db = self._connection()
        db.execute("BEGIN IMMEDIATE")
        try:
            known = 0
            for call_id in call_ids:
                row = db.execute(
                    "SELECT 1 FROM calls WHERE root = ? AND call_id = ? AND path = ? LIMIT 1",
                    (self.root, call_id, path),
                ).fetchone()
                if row is None:
                    continue
                known += 1
                db.execute(
                    "INSERT OR REPLACE INTO reviews (root, call_id, cell_id, state, created)"
                    " VALUES (?, ?, ?, ?, ?)",
                    (self.root, call_id, cell_id or "", state, time.time()),
                )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return known

    # -- the API ---------------------------------------------------------------------------
    async def query(
        self, path: str | None = None, since: int | None = None, limit: int = 200
    ) -> HistoryPage:
        """The calls kept, oldest first: after the cursor ``since``, or else the newest ones.

        ``more`` says that calls beyond the page exist (after it with ``since``; before it
        without); ``cursor`` is the id of the page's last entry (``since`` for an empty page).
        """
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._query, path, since, limit)

    def query_sync(
        self, path: str | None = None, since: int | None = None, limit: int = 200
    ) -> HistoryPage:
        """``query`` from a thread other than the event loop's (tests, scripts)."""
        return self._executor.submit(self._query, path, since, limit).result()

    async def review(self, path: str, call_ids: list[str], cell_id: str | None, state: str) -> int:
        """Keep the person's review of calls on the notebook ``path`` (of one cell: ``cell_id``).

        ``state`` is one of :data:`REVIEW_STATES`; a later state replaces an earlier one of the
        same call and cell. Returns how many of the calls the history holds on that notebook
        (others are not kept: their calls are not in the history).
        """
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._executor, self._review, path, call_ids, cell_id, state
        )

    def flush(self) -> None:
        """Wait until every call finished so far is written."""
        self._executor.submit(self._write_pending).result()

    def close(self) -> None:
        """Finish the writes submitted, then close the file (calls still running are lost)."""

        def _close() -> None:
            self._open.clear()
            if self._db is not None:
                self._db.close()
                self._db = None

        try:
            self._executor.submit(self._write_pending)
            self._executor.submit(_close)
        except RuntimeError:
            return
        self._executor.shutdown(wait=True)


def _small_display(emission: dict[str, Any]) -> dict[str, Any]:
    """A display event with a large image's data left out (its size and artifact stay)."""
    display = emission.get("display")
    if not isinstance(display, dict) or display.get("kind") != "image":
        return emission
    data = display.get("data")
    if not isinstance(data, str) or len(data) <= MAX_STORED_IMAGE:
        return emission
    return {**emission, "display": {k: v for k, v in display.items() if k != "data"}}


def _without_output(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A stdin-reading call's events without any output text (it held the answers)."""
    kept: list[dict[str, Any]] = []
    for event in events:
        name = event.get("event")
        if name in ("chunk", "display"):
            continue
        if name == "finished" and isinstance(event.get("result"), dict):
            event = {**event, "result": {**event["result"], "text": NO_STDIN_OUTPUT}}
        kept.append(event)
    return kept


def _busy(error: sqlite3.OperationalError) -> bool:
    """Whether ``error`` is SQLite's "database is locked" / "busy" (worth another try)."""
    text = str(error).lower()
    return "locked" in text or "busy" in text
