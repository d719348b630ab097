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

And made short (``listed``): ``tools/list`` is paid for in every conversation of every agent,
so it carries what an agent needs to call the tools right and no more. Three OpenAPI extensions
of ``rest-api.yml`` say how (REST and everything else derived from the file ignore them):

- ``x-mcp-description``: the property's description in ``tools/list``, one short line for an
  agent about the MCP arguments (``""``: none; the tool's description says it), instead of
  REST's ``description`` (which may name REST paths and sections of
  docs/developers/contract.md). Without it, ``description`` is listed as it is; a test holds every
  listed description short.
- ``x-mcp-listed: false``: the property is not listed (a field for the lab, such as the whole
  ``cell`` a revert writes back, or one whose MCP default is what agents want); the tool still
  accepts it.
- ``x-mcp-brief: true``: a schema listed as its ``type`` alone (with its description), its
  fields told in words (a batch's changes, each a request of its own).

Validation keywords (``pattern``, lengths, bounds, ``examples``) are left out of the listing:
the tool checks every argument and its message names what is wrong.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from functools import cache
from importlib.resources import files
from typing import Any

import yaml

__all__ = [
    "MCP_BRIEF",
    "MCP_DESCRIPTION",
    "MCP_LISTED",
    "artifact_schema",
    "flatten",
    "listed",
    "load_spec",
    "merge_actions",
    "merge_variants",
    "request_schema",
    "resolve",
    "single_typed",
    "tidy",
]

Schema = dict[str, Any]

#: The OpenAPI extensions that shape ``tools/list`` (see the module's docstring).
MCP_DESCRIPTION = "x-mcp-description"
MCP_LISTED = "x-mcp-listed"
MCP_BRIEF = "x-mcp-brief"
#: What a listed schema keeps: its shape and its description, not the checks the tool makes.
LISTED_KEYWORDS = frozenset(
    {"type", "enum", "const", "items", "properties", "required", "additionalProperties"}
)


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
    """The JSON request body schema of ``method path``, self-contained, as MCP lists it.

    One flat object (``flatten``) with the MCP descriptions (``tidy``), without the properties
    marked ``x-mcp-listed: false``.
    """
    operation = spec["paths"][path][method]
    body = resolve(spec, operation["requestBody"])["content"]["application/json"]["schema"]
    hidden = unlisted(body)
    schema: Schema = flatten(tidy(body))
    properties = schema.get("properties", {})
    for name in hidden:
        properties.pop(name, None)
    if "required" in schema:
        schema["required"] = [name for name in schema["required"] if name not in hidden]
    return schema


def unlisted(node: Any) -> set[str]:
    """The names of the properties marked ``x-mcp-listed: false`` anywhere in ``node``."""
    found: set[str] = set()
    if isinstance(node, dict):
        properties = node.get("properties")
        if isinstance(properties, dict):
            found |= {
                name
                for name, field in properties.items()
                if isinstance(field, dict) and field.get(MCP_LISTED) is False
            }
        for value in node.values():
            found |= unlisted(value)
    elif isinstance(node, list):
        for value in node:
            found |= unlisted(value)
    return found


def tidy(node: Any) -> Any:
    """``node`` with MCP's descriptions: ``x-mcp-description`` over ``description``, stripped.

    A description is stripped of the newline YAML's folded text leaves; an empty one is left
    out; a schema marked ``x-mcp-brief`` keeps its ``type`` and description alone.
    """
    if isinstance(node, dict):
        if node.get(MCP_BRIEF) is True:
            node = {k: v for k, v in node.items() if k in ("type", "description", MCP_DESCRIPTION)}
        described = node.get(MCP_DESCRIPTION, node.get("description"))
        tidied = {
            key: tidy(value)
            for key, value in node.items()
            if key not in ("description", MCP_DESCRIPTION, MCP_LISTED, MCP_BRIEF)
            or not isinstance(value, (str, bool))
        }
        if isinstance(described, str) and described.strip():
            tidied["description"] = described.strip()
        return tidied
    if isinstance(node, list):
        return [tidy(value) for value in node]
    return node


def listed(schema: Schema, *, top: bool = True) -> Schema:
    """``schema`` as ``tools/list`` shows it: its shape and descriptions, not its checks.

    The top level's own description is left out (the tool's description says it).
    """
    kept: Schema = {}
    for key, value in schema.items():
        if key == "description" and not top and isinstance(value, str):
            kept[key] = value
        elif key == "properties" and isinstance(value, dict):
            kept[key] = {name: listed(field, top=False) for name, field in value.items()}
        elif key == "items" and isinstance(value, dict):
            kept[key] = listed(value, top=False)
        elif key in LISTED_KEYWORDS - {"properties", "items"} and (
            top or key != "additionalProperties"  # nested: the tool names an unknown field
        ):
            kept[key] = value
    if top and not kept.get("required"):
        kept.pop("required", None)
    return kept


def flatten(schema: Schema) -> Schema:
    """One flat object schema for an object schema built with ``oneOf``/``anyOf``/``allOf``.

    MCP clients and model APIs want a plain ``type: object`` at the top, so alternatives are
    folded into one object that accepts every request any of them accepts (the tool still
    checks each request exactly, as REST does):

    - alternatives that only constrain the object's own properties (``anyOf`` of ``required``
      lists) add what every one of them requires;
    - alternatives that are whole request shapes (one per ``action``) unite their properties,
      each property's variants merged by ``merge_variants``; a name stays required when every
      alternative requires it, and the object stays closed when every alternative is (which
      action takes which field is the tool's description's to say, in a line per action);
    - ``allOf`` parts add up (their requirements too).

    OpenAPI's ``discriminator`` is dropped: it means nothing outside the OpenAPI document.
    """
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
            properties[name] = merge_variants(fields)
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
    described = [v for v in distinct if not _only_null(v)]
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
    only the other operation has are added, a description of ``action`` that lists its values
    lists the new one too, and only the fields every operation requires stay required.
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
                properties[name] = copy.deepcopy(field)
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
    property has none). Values of the alternatives left out are still
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
        described = outer or inner
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
