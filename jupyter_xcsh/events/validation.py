"""Event schemas validated once per shape of event, not on every emit.

jupyter_events validates every event against its JSON schema before it goes out, which costs
more than building and sending the event (a ``jsonschema`` walk, ~0.1 ms for a small event) —
on every step of every tool call while a JupyterLab listens. The extension's events come from a
few call sites, each always building the same shape of event. ``ShapeValidatedSchema`` validates
the first event of each shape fully and lets later events of a shape already found valid through.

A shape is what the schema can see of an event: for an object the schema describes, its keys and
the shapes of their values; for an array with ``items``, the shapes of its items; for a value
with ``enum``/``const``, the value itself; otherwise the JSON type (and, for a float, whether it
is integral, which ``integer`` depends on). Two events of one shape are valid or invalid
together as long as the schema uses no keyword that looks at values in another way (lengths,
patterns, bounds, combinators...): a schema that does is validated on every emit, as before.
"""

from __future__ import annotations

from collections.abc import Hashable
from pathlib import Path
from typing import Any

import yaml
from jupyter_events.schema import EventSchema

__all__ = ["ShapeValidatedSchema", "shape_of"]

#: The keywords whose checks a shape captures in full; ``description`` and the like do not check.
SHAPE_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "items",
        "enum",
        "const",
        # Annotations and jupyter_events' own metadata: no check.
        "$id",
        "$schema",
        "version",
        "title",
        "description",
        "personal-data",
        "redactionPolicies",
        "examples",
        "default",
    }
)

#: Distinct shapes remembered per schema; past that, new shapes are validated every time.
MAX_SHAPES = 512


def _shape_only(node: Any) -> bool:
    """Whether every check of schema ``node`` is one a shape captures."""
    if not isinstance(node, dict):
        return False
    if not SHAPE_KEYWORDS.issuperset(node):
        return False
    properties = node.get("properties", {})
    if not isinstance(properties, dict) or not all(map(_shape_only, properties.values())):
        return False
    return "items" not in node or _shape_only(node["items"])


def shape_of(value: Any, node: dict[str, Any]) -> Hashable:
    """The shape of ``value`` as seen by schema ``node`` (see the module docstring)."""
    if "enum" in node or "const" in node:
        return (type(value).__name__, value if isinstance(value, Hashable) else repr(value))
    if isinstance(value, dict):
        properties = node.get("properties")
        if properties is None:
            return "object"
        return tuple((key, shape_of(item, properties.get(key, {}))) for key, item in value.items())
    if isinstance(value, list):
        items = node.get("items")
        if items is None:
            return "array"
        return ("array", frozenset(shape_of(item, items) for item in value))
    if isinstance(value, float):
        return ("float", value.is_integer())
    return type(value).__name__


class ShapeValidatedSchema(EventSchema):
    """An event schema that validates the first event of each shape only (see the module)."""

    def __init__(self, schema: dict[str, Any]) -> None:
        super().__init__(schema)
        self.schema = schema
        self._by_shape = _shape_only(schema)
        self._valid: set[Hashable] = set()

    @classmethod
    def from_file(cls, path: Path) -> ShapeValidatedSchema:
        """Load a YAML (or JSON) schema file."""
        return cls(yaml.safe_load(path.read_text(encoding="utf-8")))

    def validate(self, data: dict[str, Any]) -> None:
        """Raise ``ValidationError`` if ``data`` is not valid (checked once per shape)."""
        if not self._by_shape:
            super().validate(data)
            return
        try:
            shape = shape_of(data, self.schema)
        except TypeError:  # an unhashable enum value, say: validate it
            super().validate(data)
            return
        if shape in self._valid:
            return
        super().validate(data)
        if len(self._valid) < MAX_SHAPES:
            self._valid.add(shape)
