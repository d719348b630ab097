"""MCP tool input schemas, derived from ``rest-api.yml`` (the wire format's one source of truth).

A tool's arguments are the REST request of the operation it forwards to, so its input schema
is that operation's request schema with every ``$ref`` inlined (MCP clients expect a
self-contained schema). Nothing is copied by hand: a field added to ``rest-api.yml`` shows up
in ``tools/list`` as it is.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from functools import cache
from importlib.resources import files
from typing import Any

import yaml

__all__ = [
    "artifact_schema",
    "flatten",
    "load_spec",
    "merge_actions",
    "request_schema",
    "resolve",
    "tidy",
]

Schema = dict[str, Any]


@cache
def load_spec() -> dict[str, Any]:
    """The OpenAPI description shipped in the package."""
    text = files("jupyter_xcsh").joinpath("rest-api.yml").read_text(encoding="utf-8")
    spec: dict[str, Any] = yaml.safe_load(text)
    return spec


def resolve(spec: Mapping[str, Any], node: Any, _seen: tuple[str, ...] = ()) -> Any:
    """A deep copy of ``node`` with every local ``$ref`` replaced by what it points to."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            if ref in _seen:
                raise ValueError(f"recursive schema reference: {ref}")
            target: Any = spec
            for part in ref.removeprefix("#/").split("/"):
                target = target[part]
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            resolved = resolve(spec, target, (*_seen, ref))
            # OpenAPI 3.1 lets a $ref carry a sibling description: it wins over the target's.
            return {**resolved, **resolve(spec, siblings, _seen)}
        return {key: resolve(spec, value, _seen) for key, value in node.items()}
    if isinstance(node, list):
        return [resolve(spec, value, _seen) for value in node]
    return copy.deepcopy(node)


def request_schema(spec: Mapping[str, Any], path: str, method: str = "post") -> Schema:
    """The JSON request body schema of ``method path``, self-contained."""
    operation = spec["paths"][path][method]
    body = resolve(spec, operation["requestBody"])
    schema: Schema = flatten(tidy(body["content"]["application/json"]["schema"]))
    return schema


def tidy(node: Any) -> Any:
    """``node`` with its descriptions stripped of the newline YAML's folded text leaves."""
    if isinstance(node, dict):
        return {
            key: value.strip() if key == "description" and isinstance(value, str) else tidy(value)
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [tidy(value) for value in node]
    return node


def flatten(schema: Schema) -> Schema:
    """One flat object schema for a ``oneOf``/``anyOf``/``allOf`` of object schemas.

    MCP clients and model APIs want a plain ``type: object`` at the top. Properties are
    united (the first definition of a name wins); a name stays required when every
    alternative requires it (every part, for ``allOf``); the object stays closed
    (``additionalProperties: false``) when every part is.
    """
    for keyword in ("oneOf", "anyOf", "allOf"):
        parts = schema.get(keyword)
        if not isinstance(parts, list) or not parts:
            continue
        rest = flatten({k: v for k, v in schema.items() if k != keyword})
        flat_parts = [flatten(part) for part in parts]
        if keyword == "allOf" or rest.get("properties"):
            flat_parts.append(rest)
        properties: dict[str, Any] = {}
        for part in flat_parts:
            for name, field in part.get("properties", {}).items():
                properties.setdefault(name, field)
        requirements = [set(part.get("required", [])) for part in flat_parts]
        if keyword == "allOf":
            required = set().union(*requirements)
        else:
            required = set.intersection(*requirements)
            required |= set(rest.get("required", []))
        merged = {k: v for k, v in rest.items() if k not in ("properties", "required")}
        merged["type"] = "object"
        merged["properties"] = properties
        merged["required"] = [name for name in properties if name in required]
        if all(part.get("additionalProperties") is False for part in flat_parts):
            merged["additionalProperties"] = False
        return merged
    return schema


def merge_actions(base: Schema, actions: Mapping[str, Schema]) -> Schema:
    """Fold the request schemas of other operations into ``base`` as extra ``action`` values.

    ``actions`` maps an action name to the request schema of the operation serving it (which
    has no ``action`` field: the REST path says it). The result stays one flat object, as MCP
    clients and model APIs want (no top-level ``oneOf``): the ``action`` enum grows, fields
    only the other operation has are added with ``<action> only:`` in their description, and
    only the fields every operation requires stay required.
    """
    merged = flatten(copy.deepcopy(base))
    properties: dict[str, Any] = merged.setdefault("properties", {})
    required = set(merged.get("required", []))
    for action, schema in actions.items():
        schema = flatten(schema)
        chosen = properties.setdefault("action", {"type": "string"})
        known = chosen.get("enum") or ([chosen["const"]] if "const" in chosen else [])
        chosen.pop("const", None)
        chosen["enum"] = [*known, action]
        for name, field in schema.get("properties", {}).items():
            if name not in properties:
                field = copy.deepcopy(field)
                note = field.get("description", "").strip()
                field["description"] = f"{action} only: {note}" if note else f"{action} only."
                properties[name] = field
        required &= {*schema.get("required", []), "action"}
    merged["required"] = [name for name in merged.get("required", []) if name in required]
    return merged


#: MCP argument names for the artifact operation's path and query parameters.
ARTIFACT_ARGUMENTS = {"artifact_id": "id", "offset": "offset", "limit": "limit"}


def artifact_schema(spec: Mapping[str, Any], path: str) -> Schema:
    """The ``artifact`` tool's arguments: the parameters of ``GET path`` (the artifact route).

    The id may also be given as the ``artifact://<id>`` link the other tools print.
    """
    operation = spec["paths"][path]["get"]
    properties: dict[str, Any] = {}
    required = []
    for parameter in tidy(resolve(spec, operation["parameters"])):
        name = ARTIFACT_ARGUMENTS.get(parameter["name"])
        if name is None:
            continue  # the Range header: bytes are not a tool's business
        field = dict(parameter["schema"])
        if "description" in parameter:
            field["description"] = parameter["description"]
        if name == "id" and "pattern" in field:
            field["pattern"] = "^(artifact://)?" + field["pattern"].removeprefix("^")
            field["description"] = "The artifact's id, or its `artifact://<id>` link."
        properties[name] = field
        if parameter.get("required"):
            required.append(name)
    return {
        "type": "object",
        "additionalProperties": False,
        "required": required,
        "properties": properties,
    }
