"""Validate real responses against the package's OpenAPI description."""

from __future__ import annotations

import json
from functools import cache
from importlib.resources import files
from typing import Any

import jsonschema
import yaml
from openapi_spec_validator import validate as validate_spec


@cache
def spec() -> dict[str, Any]:
    """Load (and check, once) the OpenAPI description shipped in the package."""
    text = files("jupyter_xcsh").joinpath("rest-api.yml").read_text(encoding="utf-8")
    document = yaml.safe_load(text)
    validate_spec(document)
    return document


def _resolve(node: Any) -> Any:
    if isinstance(node, dict) and "$ref" in node:
        target: Any = spec()
        for part in node["$ref"].lstrip("#/").split("/"):
            target = target[part]
        return _resolve(target)
    return node


def assert_response_matches(path: str, method: str, status: int, body: Any) -> None:
    """Fail unless ``body`` is what rest-api.yml promises for ``method path`` with ``status``."""
    operation = spec()["paths"][path][method.lower()]
    response = _resolve(operation["responses"][str(status)])
    content = response.get("content", {})
    media = content.get("application/json") or content.get("text/plain")
    assert media is not None, f"{method} {path} {status} has no documented body"
    schema = dict(media["schema"])
    schema["components"] = spec()["components"]
    if isinstance(body, (bytes, str)) and "application/json" in content:
        body = json.loads(body)
    jsonschema.validate(body, schema, cls=jsonschema.Draft202012Validator)


def request_is_valid(path: str, method: str, body: Any) -> bool:
    """Whether ``body`` is a JSON request body rest-api.yml accepts for ``method path``."""
    operation = spec()["paths"][path][method.lower()]
    media = _resolve(operation["requestBody"])["content"]["application/json"]
    schema = dict(media["schema"])
    schema["components"] = spec()["components"]
    validator = jsonschema.Draft202012Validator(schema)
    return validator.is_valid(body)
