"""Event schemas validated once per shape of event (``jupyter_xcsh.events.validation``)."""

from __future__ import annotations

import pytest
from jsonschema import ValidationError
from jupyter_events.schema import EventSchema

from jupyter_xcsh.events.activity import SCHEMA_DIR
from jupyter_xcsh.events.validation import ShapeValidatedSchema

BASE = {
    "$id": "https://events.jupyter.org/test/shapes/v1",
    "version": "1",
    "title": "shapes",
    "personal-data": True,
    "description": "a test schema",
    "type": "object",
    "required": ["callId", "event"],
    "properties": {
        "callId": {"type": "string"},
        "event": {"enum": ["started", "finished"]},
        "count": {"type": "integer"},
        "cells": {
            "type": "array",
            "items": {"type": "object", "properties": {"index": {"type": "integer"}}},
        },
    },
}


@pytest.fixture
def full_validations(monkeypatch) -> list[dict]:
    """The events jupyter_events' own (full) validation was asked to check."""
    seen: list[dict] = []
    validate = EventSchema.validate

    def spy(self: EventSchema, data: dict) -> None:
        seen.append(data)
        validate(self, data)

    monkeypatch.setattr(EventSchema, "validate", spy)
    return seen


def test_an_event_of_a_shape_already_valid_is_not_validated_again(full_validations):
    schema = ShapeValidatedSchema(BASE)

    schema.validate({"callId": "a", "event": "started", "cells": [{"index": 0}]})
    schema.validate({"callId": "b", "event": "started", "cells": [{"index": 7}, {"index": 8}]})

    assert len(full_validations) == 1


def test_invalid_events_raise_every_time_whatever_was_seen_before():
    schema = ShapeValidatedSchema(BASE)
    schema.validate({"callId": "a", "event": "started", "count": 1})

    for bad in (
        {"callId": "a", "event": "bogus", "count": 1},  # an enum's value is part of the shape
        {"callId": "a", "event": "started", "count": 1.5},
        {"callId": "a", "event": "started", "count": True},
        {"callId": "a", "event": "started", "count": "1"},
        {"callId": "a"},
        {"callId": "a", "event": "started", "cells": [{"index": "0"}]},
    ):
        for _ in range(2):
            with pytest.raises(ValidationError):
                schema.validate(bad)


def test_a_float_with_an_integral_value_counts_as_an_integer_only_when_it_is_one():
    schema = ShapeValidatedSchema(BASE)
    schema.validate({"callId": "a", "event": "started", "count": 2.0})

    with pytest.raises(ValidationError):
        schema.validate({"callId": "a", "event": "started", "count": 2.5})


def test_a_schema_checking_more_than_shapes_validates_every_event(full_validations):
    strict = {
        **BASE,
        "properties": {**BASE["properties"], "callId": {"type": "string", "minLength": 2}},
    }
    schema = ShapeValidatedSchema(strict)

    schema.validate({"callId": "ab", "event": "started"})
    with pytest.raises(ValidationError):
        schema.validate({"callId": "a", "event": "started"})  # same shape, too short

    assert len(full_validations) == 2


@pytest.mark.parametrize("path", sorted(SCHEMA_DIR.glob("*.yaml")), ids=lambda p: p.name)
def test_the_extension_schemas_are_validated_by_shape(path):
    schema = ShapeValidatedSchema.from_file(path)

    assert schema._by_shape, f"{path.name} uses a keyword shapes do not capture"
