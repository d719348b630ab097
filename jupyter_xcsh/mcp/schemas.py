"""MCP tool input schemas, derived from ``rest-api.yml`` (the wire format's one source of truth).

A tool's arguments are the REST request of the operation it forwards to, so its input schema
is that operation's request schema with every ``$ref`` inlined (MCP clients expect a
self-contained schema). Nothing is copied by hand: a field added to ``rest-api.yml`` shows up
in ``tools/list`` as it is.

What ``tools/list`` shows is then narrowed to the subset every client can send
(``single_typed``): one ``type`` per property, no ``null`` (an optional field is one left out
of ``required``), no ``oneOf``/``anyOf``/``allOf``. Clients that build forms or command lines
from a schema (the MCP Inspector, several IDEs) cannot fill ``["integer", "null"]`` or an
``anyOf``, and some model APIs refuse them. The tools still accept what REST accepts, and a
``null`` argument is taken as "not given" (``mcp/server.py``).
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
    "merge_variants",
    "request_schema",
    "resolve",
    "single_typed",
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
    """One flat object schema for an object schema built with ``oneOf``/``anyOf``/``allOf``.

    MCP clients and model APIs want a plain ``type: object`` at the top, so alternatives are
    folded into one object that accepts every request any of them accepts (the tool still
    checks each request exactly, as REST does):

    - alternatives that only constrain the object's own properties (``anyOf`` of ``required``
      lists) add what every one of them requires;
    - alternatives that are whole request shapes (one per ``action``) unite their properties,
      each property's variants merged by ``merge_variants``; a name stays required when every
      alternative requires it, and the object stays closed when every alternative is;
    - ``allOf`` parts add up (their requirements too).

    OpenAPI's ``discriminator`` is dropped: it means nothing outside the OpenAPI document.
    """
    discriminator = schema.get("discriminator", {}).get("propertyName")
    schema = {k: v for k, v in schema.items() if k != "discriminator"}
    base = {k: v for k, v in schema.items() if k not in ("oneOf", "anyOf", "allOf")}
    properties: dict[str, Any] = dict(base.get("properties", {}))
    required = set(base.get("required", []))
    closed = base.get("additionalProperties") is False
    for part in (flatten(p) for p in schema.get("allOf", [])):
        for name, field in part.get("properties", {}).items():
            properties.setdefault(name, field)
        required |= set(part.get("required", []))
        closed = closed or part.get("additionalProperties") is False
    for keyword in ("oneOf", "anyOf"):
        alternatives = [flatten(p) for p in schema.get(keyword, [])]
        if not alternatives:
            continue
        variants: dict[str, list[Any]] = {}
        for alternative in alternatives:
            for name, field in alternative.get("properties", {}).items():
                if name not in base.get("properties", {}):
                    variants.setdefault(name, []).append(field)
        for name, fields in variants.items():
            properties[name] = _note_users(
                merge_variants(fields), name, alternatives, discriminator
            )
        required |= set.intersection(*(set(a.get("required", [])) for a in alternatives))
        if not base.get("properties"):
            closed = all(a.get("additionalProperties") is False for a in alternatives)
    if properties or "oneOf" in schema or "anyOf" in schema or "allOf" in schema:
        base["type"] = "object"
        base["properties"] = properties
        base["required"] = [name for name in properties if name in required]
        if closed:
            base["additionalProperties"] = False
    return base


def merge_variants(variants: list[Schema]) -> Schema:
    """One schema accepting what any of a property's ``variants`` accepts.

    Constants become an ``enum``; variants that differ only in their ``type`` (typically a
    field of another action accepted only as ``null``) get the union of the types; anything
    else becomes an ``anyOf``. The first description is kept.
    """
    distinct: list[Schema] = []
    for variant in variants:
        if variant not in distinct:
            distinct.append(variant)
    # "Only null here" adds nothing to a variant that already accepts null.
    if any(_accepts_null(v) for v in distinct if not _only_null(v)):
        distinct = [v for v in distinct if not _only_null(v)] or distinct
    if len(distinct) == 1:
        return distinct[0]
    # A placeholder ("a field of another action, accepted only as null") describes nothing.
    described = sorted(distinct, key=lambda v: v.get("type") == "null")
    description = next((v["description"] for v in described if "description" in v), None)
    bare = [{k: v for k, v in d.items() if k != "description"} for d in distinct]
    merged: Schema
    if all(set(b) == {"const"} for b in bare):
        values = [b["const"] for b in bare]
        merged = {"enum": list(dict.fromkeys(values))}
        if all(isinstance(value, str) for value in values):
            merged = {"type": "string", **merged}
    elif all("type" in b for b in bare) and _same_but_type(bare):
        types: list[str] = []
        for b in bare:
            for kind in b["type"] if isinstance(b["type"], list) else [b["type"]]:
                if kind not in types:
                    types.append(kind)
        shape = next((b for b in bare if set(b) != {"type"}), {})
        types.sort(key=lambda kind: kind == "null")  # the real type first
        merged = {**shape, "type": types if len(types) > 1 else types[0]}
        if "enum" in merged and "null" in types and None not in merged["enum"]:
            merged["enum"] = [*merged["enum"], None]
    else:
        merged = {"anyOf": bare}
    if description is not None:
        merged["description"] = description
    return merged


def _only_null(schema: Schema) -> bool:
    """Whether ``schema`` accepts only null (a field of another shape, "not given")."""
    return schema.get("type") == "null" and not set(schema) - {"type", "description"}


def _accepts_null(schema: Schema) -> bool:
    """Whether ``schema`` visibly accepts null: in its ``type`` or one of its alternatives."""
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    return any(_accepts_null(v) for k in ("anyOf", "oneOf") for v in schema.get(k, []))


def _note_users(
    field: Schema, name: str, alternatives: list[Schema], discriminator: str | None
) -> Schema:
    """Say which shapes use a field the others accept only as null: ``move only: ...``."""
    labels = [a.get("properties", {}).get(discriminator, {}).get("const") for a in alternatives]
    if discriminator is None or not all(isinstance(label, str) for label in labels):
        return field
    users = [
        label
        for label, a in zip(labels, alternatives, strict=True)
        if a.get("properties", {}).get(name, {"type": "null"}).get("type") != "null"
    ]
    if not users or len(users) == len(alternatives):
        return field
    note = field.get("description", "").strip()
    prefix = f"{', '.join(users)} only"
    return {**field, "description": f"{prefix}: {note}" if note else f"{prefix}."}


def _same_but_type(variants: list[Schema]) -> bool:
    """Whether the variants agree on every keyword but ``type`` (a bare ``type`` agrees)."""
    shapes = [{k: v for k, v in b.items() if k != "type"} for b in variants]
    given = [shape for shape in shapes if shape]
    return all(shape == given[0] for shape in given)


def merge_actions(base: Schema, actions: Mapping[str, Schema]) -> Schema:
    """Fold the request schemas of other operations into ``base`` as extra ``action`` values.

    ``actions`` maps an action name to the request schema of the operation serving it (which
    has no ``action`` field: the REST path says it). The result stays one flat object, as MCP
    clients and model APIs want (no top-level ``oneOf``): the ``action`` enum grows, fields
    only the other operation has are added with ``<action> only:`` in their description, a
    description of ``action`` that lists its values lists the new one too, and only the fields
    every operation requires stay required.
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
        listed = ", ".join(str(a) for a in known if a is not None)
        described = chosen.get("description", "")
        if listed and listed in described:
            chosen["description"] = described.replace(listed, f"{listed}, {action}", 1)
        for name, field in schema.get("properties", {}).items():
            if name not in properties:
                field = copy.deepcopy(field)
                note = field.get("description", "").strip()
                field["description"] = f"{action} only: {note}" if note else f"{action} only."
                properties[name] = field
            else:  # a field some actions share with this one: it is this one's too
                properties[name] = _also_used_by(properties[name], action)
        required &= {*schema.get("required", []), "action"}
    merged["required"] = [name for name in merged.get("required", []) if name in required]
    return merged


def _also_used_by(field: Schema, action: str) -> Schema:
    """``field`` whose ``<actions> only:`` note (``_note_users``) names ``action`` too."""
    description = field.get("description", "")
    users, only, rest = description.partition(" only")
    if (
        not only
        or rest[:1] not in (":", ".")
        or not all(user.strip().isidentifier() for user in users.split(","))
    ):
        return field
    return {**field, "description": f"{users}, {action} only{rest}"}


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


def single_typed(schema: Schema) -> Schema:
    """``schema`` with one ``type`` per property, no null and no ``oneOf``/``anyOf``/``allOf``.

    A type list keeps its first non-null type; a field accepted only as null is left out;
    alternatives keep their first that is not only null (with its own description when the
    property's is a bare ``<action> only.``). Values of the alternatives left out are still
    accepted by the tool, as REST accepts them; the descriptions, which come from the same
    ``rest-api.yml``, still name them.
    """
    node = {k: v for k, v in schema.items() if k not in ("oneOf", "anyOf", "allOf")}
    offered: list[Schema] = schema.get("oneOf") or schema.get("anyOf") or []
    alternatives = [a for a in offered if not _only_null(a)]
    if alternatives:
        chosen = alternatives[0]
        outer, inner = node.pop("description", None), chosen.get("description")
        node = {**chosen, **node}
        # A bare "<action> only." note says less than the alternative's own description.
        described = inner if inner and (not outer or outer.endswith(" only.")) else outer
        if described:
            node["description"] = described
        return single_typed(node)
    kind = node.get("type")
    if isinstance(kind, list):
        node["type"] = next((k for k in kind if k != "null"), "null")
    if "enum" in node:
        node["enum"] = [value for value in node["enum"] if value is not None]
    if "const" in node and "type" not in node:
        node["type"] = _json_type(node["const"])
    if isinstance(node.get("properties"), dict):
        # A field accepted only as null ("not given") cannot be given: it is left out.
        fields = node["properties"].items()
        node["properties"] = {k: single_typed(v) for k, v in fields if not _only_null(v)}
    if isinstance(node.get("items"), dict):
        node["items"] = single_typed(node["items"])
    return node


def _json_type(value: Any) -> str:
    """The JSON Schema type of a constant."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "string" if isinstance(value, str) else "object"
