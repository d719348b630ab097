"""What every tool's request body is checked for first, with the same words for every tool.

A body is a JSON object of known fields; a JSON null means "not given" (agents often send every
field, unused ones as null); ``action`` names one of the tool's actions, each of which accepts
its own fields; each field has one JSON type. The tools' own rules (which fields go together,
ranges) follow in their request modules (``notebook/edit/request.py``, ``tools/files/request.py``,
``tools/kernel/request.py``). Pure.

A refusal teaches: an unknown field or action keeps its message's prefix (``Unknown field: x``,
``Invalid action: x``, what callers recognise) and goes on, in parentheses, with the nearest
valid name (``did you mean …?``) and the valid ones, taken from the same sets the check uses, so
an agent corrects itself in one retry.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from jupyter_xcsh.errors import InvalidRequestError

__all__ = [
    "ALIASES",
    "InvalidActionError",
    "action_fields",
    "as_integer",
    "check_type",
    "invalid_action",
    "known_fields",
    "nearest",
    "not_accepted",
    "type_name",
    "unknown_fields",
]

#: A value's JSON type as error messages name it, with its article.
_KINDS = {
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    str: "a string",
    dict: "an object",
    list: "an array",
}
#: The fields agents often mean by another name (from other tools' schemas), most likely first.
ALIASES: dict[str, tuple[str, ...]] = {
    "path": ("notebook_path", "path"),
    "notebook": ("notebook_path",),
    "notebook_path": ("path",),
    "file": ("path", "notebook_path"),
    "filename": ("path", "notebook_path"),
    "source": ("content",),
    "code": ("content",),
    "text": ("content",),
    "new_source": ("content",),
    "index": ("cell_index",),
    "id": ("cell_id", "id"),
    "type": ("cell_type",),
    "query": ("pattern",),
    "search": ("pattern",),
    "destination": ("new_path", "to_index"),
    "kernel": ("kernel_name",),
    "variable": ("name",),
}
#: Characters of a refused scalar value an error message shows.
_SHOWN_CHARS = 200


def nearest(name: str, valid: Iterable[str], hints: Mapping[str, str] | None = None) -> str | None:
    """The valid name ``name`` most likely meant, if any.

    A tool's own hint first (the python tool's ``code`` is a cell's), then a name agents use
    for a field of another name (``ALIASES``), then the closest spelling.
    """
    if hints and name in hints:
        return hints[name]
    names = list(valid)
    alias = next((a for a in ALIASES.get(name, ()) if a in names), None)
    if alias is not None:
        return alias
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.75)
    return close[0] if close else None


def _help(
    name: str, guess_from: Iterable[str], listed: str, hints: Mapping[str, str] | None
) -> str:
    guess = nearest(name, guess_from, hints)
    return f" (did you mean {guess}? {listed})" if guess else f" ({listed})"


def unknown_fields(
    names: Collection[str],
    valid: Iterable[str],
    *,
    prefix: str = "Unknown field",
    takes: str = "fields",
    guess_from: Iterable[str] | None = None,
    hints: Mapping[str, str] | None = None,
) -> str:
    """``<prefix>: <names> (did you mean <nearest>? <takes>: <valid>)``, for a 400.

    ``valid`` are the names the request may have (``takes`` says whose: ``fields``, or ``read
    takes``), ``guess_from`` where the nearest name is looked for (default ``valid``).
    """
    shown = list(valid)
    first = next(iter(names))
    listed = f"{takes}: {', '.join(shown)}"
    guesses = shown if guess_from is None else guess_from
    return f"{prefix}: {', '.join(names)}" + _help(first, guesses, listed, hints)


def not_accepted(name: str, action: str, takes: Iterable[str]) -> str:
    """``Field <name> is not accepted by the <action> action (<action> takes: …)``."""
    return f"Field {name} is not accepted by the {action} action ({action} takes: " + (
        ", ".join(takes) + ")"
    )


def invalid_action(action: Any, actions: Iterable[str]) -> str:
    """``Invalid action: <action> (did you mean <nearest>? actions: …)``."""
    shown = list(actions)
    listed = f"actions: {', '.join(shown)}"
    if not isinstance(action, str):
        return f"Invalid action: {action} ({listed})"
    return f"Invalid action: {action}" + _help(action, shown, listed, None)


class InvalidActionError(InvalidRequestError):
    """An ``action`` the tool does not have; ``actions`` are those it has.

    A transport that offers more actions than the tool (MCP's notebook tool has ``run``, served
    by another operation) raises it again with its own list (``widened``).
    """

    def __init__(self, action: Any, actions: Iterable[str]) -> None:
        self.action = action
        self.actions = tuple(actions)
        super().__init__(invalid_action(action, self.actions))

    def widened(self, more: Iterable[str]) -> InvalidActionError:
        """The same refusal, listing ``more`` actions too."""
        return InvalidActionError(self.action, [*self.actions, *more])


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
    more_actions: Collection[str] = (),
) -> tuple[str, dict[str, Any]]:
    """The body's action and its given fields, typed; a 400 for the first thing wrong.

    ``fields`` maps every field of the tool to its JSON type, ``accepted`` every action to the
    fields it takes besides those in ``always``; ``more_actions`` are the tool's actions served
    before this check (named when an action is refused). In this order: an unknown field, no
    or an unknown ``action``, then ``first(action, body)`` (a tool's check that must come
    before the others), then a field the action does not take or of the wrong type. Integer
    fields given as ``2.0`` come back as ``2``, number fields as ``float``; nulls are dropped.
    """
    action = body.get("action")
    known = isinstance(action, str) and action in accepted

    def takes(name: str) -> bool:
        return name != "action" and (name in always or name in accepted[str(action)])

    unknown = [name for name in body if name not in fields]
    if unknown:
        if known:
            valid = [name for name in fields if takes(name)]
            raise InvalidRequestError(
                unknown_fields(unknown[:1], valid, takes=f"{action} takes", guess_from=fields)
            )
        raise InvalidRequestError(unknown_fields(unknown[:1], fields))
    given = {name: value for name, value in body.items() if value is not None}
    action = given.get("action")
    if action is None:
        raise InvalidRequestError("action is required")
    if not isinstance(action, str) or action not in accepted:
        raise InvalidActionError(action, [*accepted, *more_actions])
    if first is not None:
        first(action, given)
    typed: dict[str, Any] = {}
    for name, value in given.items():
        if name not in always and name not in accepted[action]:
            valid = [field for field in fields if takes(field)]
            raise InvalidRequestError(not_accepted(name, action, valid))
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
        raise InvalidRequestError(unknown_fields([unknown], fields))
    return {name: value for name, value in body.items() if value is not None}
