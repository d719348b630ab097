"""What every tool's request body is checked for first, with the same words for every tool.

A body is a JSON object of known fields; a JSON null means "not given" (agents often send every
field, unused ones as null); ``action`` names one of the tool's actions, each of which accepts
its own fields; each field has one JSON type. The tools' own rules (which fields go together,
ranges) follow in their request modules (``notebook/request.py``, ``files/request.py``,
``kernel_tool/request.py``). Pure.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping
from typing import Any

from .errors import InvalidRequestError

__all__ = ["action_fields", "as_integer", "check_type", "known_fields", "type_name"]

#: A value's JSON type as error messages name it, with its article.
_KINDS = {
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    str: "a string",
    dict: "an object",
    list: "an array",
}
#: Characters of a refused scalar value an error message shows.
_SHOWN_CHARS = 200


def type_name(value: Any) -> str:
    """The JSON name of a value's type, for error messages."""
    if isinstance(value, bool):
        return "boolean"
    return {int: "integer", float: "number", str: "string", list: "array", dict: "object"}.get(
        type(value), "null" if value is None else type(value).__name__
    )


def as_integer(value: Any) -> Any:
    """Return a JSON number with no fraction (``1.0``) as the ``int`` it is; anything else as is.

    JSON has one number type: ``1.0`` and ``1`` are the same number, and JSON Schema counts both
    as an integer. ``1.5``, ``"1"`` and ``true`` stay what they are (and are refused).
    """
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def check_type(name: str, value: Any, expected: type) -> Any:
    """``value`` if it is of the JSON type ``expected`` (a number as ``float``), else a 400.

    ``bool`` is an ``int`` subclass in Python: ``true`` is no integer or number here, and
    ``1.5`` or ``"2"`` no integer. A refused object or array is named by its type only (a whole
    cell could be megabytes), a scalar also by its value (clipped).
    """
    if expected is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if ok and not math.isfinite(value):
            raise InvalidRequestError(f"{name} must be a finite number, got {value!r}")
        if ok:
            return float(value)
    elif isinstance(value, expected) and (expected is bool or not isinstance(value, bool)):
        return value
    got = type_name(value)
    if not isinstance(value, (dict, list)):
        shown = repr(value)
        if len(shown) > _SHOWN_CHARS:
            shown = shown[:_SHOWN_CHARS] + "…"
        got = f"{got}: {shown}"
    raise InvalidRequestError(
        f"{name} must be {_KINDS.get(expected, expected.__name__)}, got {got}"
    )


def action_fields(
    body: Mapping[str, Any],
    fields: Mapping[str, type],
    accepted: Mapping[str, Collection[str]],
    *,
    always: Collection[str] = ("action",),
    first: Callable[[str, dict[str, Any]], None] | None = None,
) -> tuple[str, dict[str, Any]]:
    """The body's action and its given fields, typed; a 400 for the first thing wrong.

    ``fields`` maps every field of the tool to its JSON type, ``accepted`` every action to the
    fields it takes besides those in ``always``. In this order: an unknown field, no or an
    unknown ``action``, then ``first(action, body)`` (a tool's check that must come before the
    others), then a field the action does not take or of the wrong type. Integer fields
    given as ``2.0`` come back as ``2``, number fields as ``float``; nulls are dropped.
    """
    given = _given(body, fields)
    action = given.get("action")
    if action is None:
        raise InvalidRequestError("action is required")
    if not isinstance(action, str) or action not in accepted:
        raise InvalidRequestError(f"Invalid action: {action}")
    if first is not None:
        first(action, given)
    typed: dict[str, Any] = {}
    for name, value in given.items():
        if name not in always and name not in accepted[action]:
            raise InvalidRequestError(f"Field {name} is not accepted by the {action} action")
        expected = fields[name]
        typed[name] = check_type(name, as_integer(value) if expected is int else value, expected)
    return action, typed


def known_fields(
    body: Mapping[str, Any], fields: Mapping[str, type], *, required: Collection[str] = ()
) -> dict[str, Any]:
    """The body's given fields, typed, for a request without actions; a 400 for the first wrong.

    In this order: an unknown field, a ``required`` one not given (or null), then a field of
    the wrong type. Nulls are dropped.
    """
    given = _given(body, fields)
    for name in required:
        if name not in given:
            raise InvalidRequestError(f"{name} is required")
    return {name: check_type(name, value, fields[name]) for name, value in given.items()}


def _given(body: Mapping[str, Any], fields: Mapping[str, type]) -> dict[str, Any]:
    """The body's non-null fields; a 400 for a field not in ``fields``."""
    unknown = next((name for name in body if name not in fields), None)
    if unknown is not None:
        raise InvalidRequestError(f"Unknown field: {unknown}")
    return {name: value for name, value in body.items() if value is not None}
