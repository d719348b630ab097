"""Events emitted without ``EventLogger.emit``'s per-event costs (``jupyter_xcsh.events.emit``).

What handlers and listeners receive must be what ``EventLogger.emit`` would have given them.
"""

from __future__ import annotations

import asyncio
import copy
import io
import json
import logging

import pytest
from jsonschema import ValidationError
from jupyter_events import EventLogger
from jupyter_events.schema import EventSchema

from jupyter_xcsh.events import activity
from jupyter_xcsh.events import emit as event_emit
from jupyter_xcsh.events.activity import PYTHON_SCHEMA, ActivityEvents
from jupyter_xcsh.events.emit import emit_event
from jupyter_xcsh.events.validation import ShapeValidatedSchema
from tests.unit.events.test_event_validation import BASE

SCHEMA = {**BASE, "$id": "https://events.jupyter.org/test/emit/v1", "title": "emit"}
ID = SCHEMA["$id"]
EVENT = {"callId": "c1", "event": "started", "cells": [{"index": 0}, {"index": 1}]}


class Receivers:
    """What a logging handler and a listener of each kind received from one logger."""

    def __init__(self, logger: EventLogger) -> None:
        self.stream = io.StringIO()
        handler = logging.StreamHandler(self.stream)
        logger.register_handler(handler)
        self.modified: list[tuple[str, dict]] = []
        self.unmodified: list[tuple[str, dict]] = []

        async def on_modified(logger: EventLogger, schema_id: str, data: dict) -> None:
            self.modified.append((schema_id, copy.deepcopy(data)))

        async def on_unmodified(logger: EventLogger, schema_id: str, data: dict) -> None:
            self.unmodified.append((schema_id, copy.deepcopy(data)))

        logger.add_listener(schema_id=ID, listener=on_modified)
        logger.add_listener(modified=False, schema_id=ID, listener=on_unmodified)

    def capsules(self) -> list[dict]:
        """The capsules the logging handler wrote, without their timestamps."""
        lines = [json.loads(line) for line in self.stream.getvalue().splitlines()]
        for line in lines:
            assert line.pop("__timestamp__").endswith("Z")
        return lines


def new_logger() -> EventLogger:
    logger = EventLogger()
    logger.register_event_schema(ShapeValidatedSchema(copy.deepcopy(SCHEMA)))
    return logger


async def test_handlers_and_listeners_receive_what_event_logger_emit_gives_them():
    stock, ours = new_logger(), new_logger()
    stock_seen, our_seen = Receivers(stock), Receivers(ours)

    for _ in range(2):  # the second time past the once-per-schema checks
        stock.emit(schema_id=ID, data=copy.deepcopy(EVENT))
        emit_event(ours, ID, copy.deepcopy(EVENT))
    await asyncio.gather(*stock._active_listeners, *ours._active_listeners)

    assert our_seen.capsules() == stock_seen.capsules()
    assert our_seen.capsules()[0] == {
        "__schema__": ID,
        "__schema_version__": SCHEMA["version"],
        "__metadata_version__": 1,
        **EVENT,
    }
    assert our_seen.modified == stock_seen.modified == [(ID, EVENT)] * 2
    assert our_seen.unmodified == stock_seen.unmodified == [(ID, EVENT)] * 2
    assert not ours._active_listeners  # finished listener tasks are let go, as jupyter_events does


async def test_an_invalid_event_raises_and_reaches_nobody():
    logger = new_logger()
    seen = Receivers(logger)
    emit_event(logger, ID, copy.deepcopy(EVENT))  # a valid event of another shape first

    with pytest.raises(ValidationError):
        emit_event(logger, ID, {"callId": "c1", "event": "bogus"})
    with pytest.raises(ValidationError):
        emit_event(logger, ID, {"callId": 7, "event": "started"})
    await asyncio.gather(*logger._active_listeners)

    assert len(seen.capsules()) == len(seen.modified) == 1


async def test_without_handlers_or_listeners_nothing_is_validated(monkeypatch):
    logger = new_logger()
    validated: list[dict] = []
    monkeypatch.setattr(EventSchema, "validate", lambda self, data: validated.append(data))

    emit_event(logger, ID, {"callId": 7})  # invalid, but nobody would receive it

    assert validated == []


async def test_the_capsule_is_checked_against_the_core_schema_once_per_schema(monkeypatch):
    logger = new_logger()
    Receivers(logger)
    checked: list[dict] = []

    class Spy:
        @staticmethod
        def validate(capsule: dict) -> None:
            checked.append(capsule)
            validator.validate(capsule)

    validator = event_emit.JUPYTER_EVENTS_CORE_VALIDATOR
    monkeypatch.setattr(event_emit, "JUPYTER_EVENTS_CORE_VALIDATOR", Spy)

    for _ in range(3):
        emit_event(logger, ID, copy.deepcopy(EVENT))
    await asyncio.gather(*logger._active_listeners)

    assert len(checked) == 1


async def test_a_schema_with_modifiers_goes_through_event_logger_emit():
    logger = new_logger()
    seen = Receivers(logger)

    def redact(schema_id: str, data: dict) -> dict:
        return {**data, "callId": "redacted"}

    logger.add_modifier(schema_id=ID, modifier=redact)
    event = copy.deepcopy(EVENT)
    emit_event(logger, ID, event)
    await asyncio.gather(*logger._active_listeners)

    assert seen.modified == [(ID, {**EVENT, "callId": "redacted"})]
    assert seen.unmodified == [(ID, EVENT)]
    assert event == EVENT  # the caller's dict is untouched, as EventLogger.emit leaves it


async def test_a_failing_listener_is_logged_and_the_others_still_run(caplog):
    logger = new_logger()
    seen = Receivers(logger)

    async def broken(logger: EventLogger, schema_id: str, data: dict) -> None:
        raise RuntimeError("listener broke")

    logger.add_listener(schema_id=ID, listener=broken)
    with caplog.at_level(logging.ERROR):
        emit_event(logger, ID, copy.deepcopy(EVENT))
        await asyncio.gather(*logger._active_listeners, return_exceptions=True)
        await asyncio.sleep(0)  # the done callbacks run on the next turn

    assert len(seen.modified) == 1
    assert any("listener broke" in str(r.exc_info[1]) for r in caplog.records if r.exc_info)
    assert not logger._active_listeners


async def test_activity_events_go_out_in_order_after_the_delay_or_at_close(monkeypatch):
    logger = EventLogger()
    events = ActivityEvents(logger)
    seen: list[str] = []

    async def listener(logger: EventLogger, schema_id: str, data: dict) -> None:
        seen.append(data["event"])

    logger.add_listener(schema_id=PYTHON_SCHEMA, listener=listener)
    monkeypatch.setattr(activity, "EMIT_DELAY", 0.05)
    for event in ("started", "cell"):
        events.emit(PYTHON_SCHEMA, {"callId": "c", "event": event, "cellIndex": 0, "status": "ok"})
    await asyncio.sleep(0.01)
    assert seen == []  # not on the call's path
    for _ in range(100):
        await asyncio.sleep(0.01)
        if seen:
            break
    await asyncio.sleep(0)
    assert seen == ["started", "cell"]

    monkeypatch.setattr(activity, "EMIT_DELAY", 3600)  # only close() can send these in time
    events.emit(PYTHON_SCHEMA, {"callId": "c", "event": "finished", "result": {}})
    await events.close()
    events.emit(PYTHON_SCHEMA, {"callId": "d", "event": "started", "cells": []})  # after close
    await asyncio.sleep(0)
    assert seen == ["started", "cell", "finished", "started"]


async def test_without_the_jupyter_events_internals_it_uses_event_logger_emit(monkeypatch):
    logger = new_logger()
    seen = Receivers(logger)
    stock: list[str] = []
    emit = logger.emit

    def spy(**kwargs: object) -> object:
        stock.append(str(kwargs["schema_id"]))
        return emit(**kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(logger, "emit", spy)
    monkeypatch.setattr(event_emit, "JUPYTER_EVENTS_CORE_VALIDATOR", None)
    emit_event(logger, ID, copy.deepcopy(EVENT))
    await asyncio.gather(*logger._active_listeners)

    assert stock == [ID]
    assert seen.modified == [(ID, EVENT)]
