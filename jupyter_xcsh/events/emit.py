"""Emit an event as ``EventLogger.emit`` does, without its per-event fixed costs.

jupyter_events' ``emit`` spends ~100 µs on a small event while a JupyterLab listens: a
``deepcopy`` of the data (so that modifiers cannot touch the caller's dict), a ``jsonschema``
walk of the capsule's four metadata fields on every event, and the data's own validation. The
extension's events are built fresh for each emit and never used again by their builder, have no
modifiers, and carry a capsule made here from values of fixed types. ``emit_event`` therefore:

- validates the data against its schema (``ShapeValidatedSchema``: once per shape of event);
- builds the capsule exactly as ``EventLogger.emit`` does and validates it against jupyter_events'
  core schema once per schema (the first event), not on every event;
- passes the data itself, not a deep copy, to the listeners: all of them receive the same dict,
  as ``EventLogger.emit`` gives the same copy to all its "modified" listeners;
- hands the capsule to the logging handlers and schedules each listener as a task, as
  ``EventLogger.emit`` does, with the same error logging when a listener fails.

Whenever the logger has modifiers for the schema, or is not the jupyter_events it was written
against (its private listener sets are missing), the event goes through ``EventLogger.emit``.
This is the ``event_emit`` fast path (``jupyter_xcsh.fast_paths``): ``probe_event_emit`` checks
at startup that listeners and modifiers land in the sets read here; else the extension calls
``EventLogger.emit`` for every event.
"""

from __future__ import annotations

import asyncio
import weakref
from datetime import UTC, datetime
from typing import Any

from jupyter_events import EventLogger

try:
    from jupyter_events.logger import EVENTS_METADATA_VERSION
    from jupyter_events.validators import JUPYTER_EVENTS_CORE_VALIDATOR
except ImportError:  # another jupyter_events: every event goes through EventLogger.emit
    EVENTS_METADATA_VERSION = 0  # unused: see JUPYTER_EVENTS_CORE_VALIDATOR
    JUPYTER_EVENTS_CORE_VALIDATOR = None

__all__ = ["emit_event", "probe_event_emit"]

#: The schema of the probe's own throwaway logger.
_PROBE_SCHEMA = "https://events.jupyter.org/jupyter_xcsh/fast-path-probe/v1"

#: Per logger, the schemas whose capsule has been validated against the core schema.
_CAPSULES_CHECKED: weakref.WeakKeyDictionary[EventLogger, set[str]] = weakref.WeakKeyDictionary()


def emit_event(logger: EventLogger, schema_id: str, data: dict[str, Any]) -> None:
    """Emit ``data`` (a dict nobody changes afterwards) as an event of ``schema_id``."""
    try:
        modifiers = logger._modifiers.get(schema_id)
        modified = logger._modified_listeners.get(schema_id) or ()
        unmodified = logger._unmodified_listeners.get(schema_id) or ()
        active = logger._active_listeners
        internal = logger._logger
    except AttributeError:  # another jupyter_events: the stock path below
        modifiers = True
    schemas = logger.schemas  # traits: read once
    handlers = logger.handlers
    if modifiers or JUPYTER_EVENTS_CORE_VALIDATOR is None or schema_id not in schemas:
        logger.emit(schema_id=schema_id, data=data)
        return
    if not (handlers or modified or unmodified):
        return
    schema = schemas.get(schema_id)
    schema.validate(data)
    capsule = {
        "__timestamp__": datetime.now(tz=UTC).isoformat() + "Z",
        "__schema__": schema_id,
        "__schema_version__": schema.version,
        "__metadata_version__": EVENTS_METADATA_VERSION,
    }
    checked = _CAPSULES_CHECKED.setdefault(logger, set())
    if schema_id not in checked:
        JUPYTER_EVENTS_CORE_VALIDATOR.validate(capsule)  # raises as EventLogger.emit would
        checked.add(schema_id)
    if handlers:
        capsule.update(data)
        internal.info(capsule)
    if not (modified or unmodified):
        return

    def done(task: asyncio.Task[Any]) -> None:
        active.discard(task)
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:
            logger.log.error(
                "Event listener %s failed for %s: %s",
                task.get_name(),
                schema_id,
                error,
                exc_info=error,
            )

    for listener in (*modified, *unmodified):
        task = asyncio.create_task(listener(logger=logger, schema_id=schema_id, data=data))
        active.add(task)
        task.add_done_callback(done)


def probe_event_emit(logger: EventLogger | None) -> str | None:
    """Whether ``emit_event`` sees the listeners and modifiers of loggers like ``logger``.

    A throwaway logger of the same class gets a listener and a modifier through the public
    calls; None when both land in the private sets ``emit_event`` reads, else what differs.
    """
    if logger is None:
        return "the server has no event logger"
    if JUPYTER_EVENTS_CORE_VALIDATOR is None:
        return "jupyter_events has no core schema validator to check capsules with"
    probe = type(logger)()
    probe.register_event_schema(
        {"$id": _PROBE_SCHEMA, "version": "1", "type": "object", "properties": {}}
    )

    async def listener(logger: EventLogger, schema_id: str, data: dict[str, Any]) -> None:
        """Receive nothing: only registered."""

    def modifier(schema_id: str, data: dict[str, Any]) -> dict[str, Any]:
        return data

    async def unmodified(logger: EventLogger, schema_id: str, data: dict[str, Any]) -> None:
        """Receive nothing: only registered."""

    probe.add_listener(schema_id=_PROBE_SCHEMA, listener=listener)
    probe.add_listener(schema_id=_PROBE_SCHEMA, listener=unmodified, modified=False)
    if listener not in (probe._modified_listeners.get(_PROBE_SCHEMA) or ()):
        return "a listener is not in the logger's _modified_listeners"
    if unmodified not in (probe._unmodified_listeners.get(_PROBE_SCHEMA) or ()):
        return "an unmodified listener is not in the logger's _unmodified_listeners"
    probe.add_modifier(schema_id=_PROBE_SCHEMA, modifier=modifier)
    if not probe._modifiers.get(_PROBE_SCHEMA):
        return "a modifier is not in the logger's _modifiers"
    if not isinstance(probe._active_listeners, set) or not hasattr(probe._logger, "info"):
        return "the logger's _active_listeners or _logger changed"
    return None
