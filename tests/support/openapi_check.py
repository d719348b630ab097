"""Validate real responses against the package's OpenAPI description."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import jsonschema
from openapi_spec_validator import validate as validate_spec

from jupyter_xcsh.mcp.schemas import load_spec, resolve


@cache
def spec() -> dict[str, Any]:
    """Load (and check, once) the OpenAPI description shipped in the package."""
    document = load_spec()
    validate_spec(document)
    return document


def _schema(media: dict[str, Any]) -> dict[str, Any]:
    """A body's schema, self-contained (every ``$ref`` inlined, as the MCP tools' are)."""
    schema: dict[str, Any] = resolve(spec(), media["schema"])
    return schema


def assert_response_matches(path: str, method: str, status: int, body: Any) -> None:
    """Fail unless ``body`` is what rest-api.yml promises for ``method path`` with ``status``."""
    operation = spec()["paths"][path][method.lower()]
    response = resolve(spec(), operation["responses"][str(status)])
    content = response.get("content", {})
    media = content.get("application/json") or content.get("text/plain")
    assert media is not None, f"{method} {path} {status} has no documented body"
    if isinstance(body, (bytes, str)) and "application/json" in content:
        body = json.loads(body)
    jsonschema.validate(body, _schema(media), cls=jsonschema.Draft202012Validator)


def request_is_valid(path: str, method: str, body: Any) -> bool:
    """Whether ``body`` is a JSON request body rest-api.yml accepts for ``method path``."""
    operation = spec()["paths"][path][method.lower()]
    media = resolve(spec(), operation["requestBody"])["content"]["application/json"]
    return jsonschema.Draft202012Validator(_schema(media)).is_valid(body)
