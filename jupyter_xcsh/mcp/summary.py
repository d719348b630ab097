"""A tool result's ``structuredContent``: the machine-readable part of its REST body, bounded.

What a model reads is the result's ``content``: the text, then each image once. Clients that
hand ``structuredContent`` to the model as well (several do) would pay for everything twice if
it were the REST body: a RecursionError's body is some 330 KB of traceback, and an image's
base64 would be sent a second time. So ``structuredContent`` is the body's summary for
programs: its ids, hashes, counts, states and artifact ids, under the body's own names, with
what the text already says at length left out (outputs, tracebacks, sources, lines, entries,
variables, notices, messages, image data), at most ``LIMIT`` characters of JSON.

A summary is a projection of the REST body: the same keys, each kept value the body's, so a
program written against the REST body reads it the same way (``outputSchema`` describes both).
When it would still be longer than ``LIMIT`` (a run of hundreds of cells, a read of a long
notebook), its longest lists are cut, the cells or changes that failed or still run kept first,
and ``<name>Omitted`` says how many items a list lost. A caller that wants the whole REST body
instead asks for it in the request's ``_meta`` (``STRUCTURED_META``: ``"body"``).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "BODY",
    "LEFT_OUT",
    "LIMIT",
    "OUTPUT_SCHEMAS",
    "STRUCTURED_META",
    "counted",
    "size",
    "summarize",
]

#: Most characters of a summary, as ``json.dumps`` writes it (ASCII, spaces after separators:
#: the longest of the usual serialisations).
LIMIT = 2048
#: The ``tools/call`` ``_meta`` key that asks for another ``structuredContent``, and its value
#: asking for the REST body whole (text, outputs and image data included).
STRUCTURED_META = "jupyter-xcsh/structured"
BODY = "body"

#: Keys whose values the text already says at length, or that carry data: never summarized
#: (a number under such a key is a count, as an artifact page's ``lines``: kept).
LEFT_OUT = frozenset(
    {
        "text",  # the result's text, a find match's line, a search match's line
        "message",  # a refusal's message: the result's text
        "output",  # a cell's output
        "traceback",
        "evalue",  # the error's message, in the output
        "data",  # base64 image data: sent once, as image content
        "prompt",  # an input prompt, in the output
        "notices",  # also in the text
        "title",
        "cellSource",
        "source",
        "content",  # a file read, a conflict's file content
        "lines",  # a find match's lines
        "staleReason",
        "statusEvents",
        "jsonOutputs",
        "entries",  # a folder's entries, listed in the text
        "variables",  # a kernel's variables, listed in the text
        "variable",
        "artifactPath",  # artifactId names it
    }
)
#: Longest string kept whole (ids, hashes, paths); a longer one ends with "…".
MAX_STRING = 200
#: Statuses of the items kept first when a list is cut.
_NOTABLE = ("error", "running")


def size(node: Any) -> int:
    """Characters of ``node`` as JSON (``json.dumps``'s defaults)."""
    return len(json.dumps(node))


def summarize(body: dict[str, Any], limit: int = LIMIT) -> dict[str, Any]:
    """The summary of a tool's REST ``body`` (a result, or a refusal's ``{status, ...}``)."""
    summary: dict[str, Any] = _project(body)
    _bound(summary, limit)
    return summary


def counted(value: Any) -> bool:
    """Whether ``value`` is a count or a flag (kept under any key), not text or data."""
    return isinstance(value, (int, float))


def _project(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _project(v) for k, v in node.items() if k not in LEFT_OUT or counted(v)}
    if isinstance(node, list):
        return [_project(v) for v in node]
    if isinstance(node, str) and len(node) > MAX_STRING:
        return node[: MAX_STRING - 1] + "…"
    return node


def _bound(summary: dict[str, Any], limit: int) -> None:
    """Cut ``summary``'s longest lists (then its strings) until it fits in ``limit``."""
    while size(summary) > limit:
        lists = [(parent, key) for parent, key in _lists(summary) if parent[key]]
        if not lists:
            break
        parent, key = max(lists, key=lambda found: size(found[0][found[1]]))
        items: list[Any] = parent[key]
        keep = len(items) // 2
        chosen = sorted(range(len(items)), key=lambda i: (not _notable(items[i]), i))[:keep]
        parent[key] = [items[i] for i in sorted(chosen)]
        omitted = f"{key}Omitted"
        parent[omitted] = int(parent.get(omitted, 0)) + len(items) - keep
    width = MAX_STRING
    while size(summary) > limit and width > 16:
        width //= 2
        _clip(summary, width)


def _lists(node: Any) -> list[tuple[dict[str, Any], str]]:
    """Every list value in ``node``'s objects, as ``(the object, its key)``."""
    found: list[tuple[dict[str, Any], str]] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(value, list):
                found.append((node, key))
            found += _lists(value)
    elif isinstance(node, list):
        for value in node:
            found += _lists(value)
    return found


def _notable(item: Any) -> bool:
    """Whether a list item is worth keeping first: a cell that failed or still runs."""
    return isinstance(item, dict) and (
        item.get("status") in _NOTABLE or item.get("exitCode") not in (None, 0)
    )


def _clip(node: Any, width: int) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(value, str) and len(value) > width:
                node[key] = value[: width - 1] + "…"
            else:
                _clip(value, width)
    elif isinstance(node, list):
        for value in node:
            _clip(value, width)


def _types(*names: str) -> dict[str, Any]:
    return {"type": list(names) if len(names) > 1 else names[0]}


_S, _I, _B, _O, _A = (_types(t) for t in ("string", "integer", "boolean", "object", "array"))
#: A refusal's summary: ``status`` (the HTTP status REST answers), ``reason`` (a 409's kind)
#: and ``details`` (a 409's state of the cell or file, summarized).
_REFUSAL = {"status": _I}
#: What a run returns (the python tool's call, the notebook tool's ``run``): its cells are
#: ``{index, cellId, status, exitCode, executionCount, ...}``.
_RUN = {"callId": _S, "isError": _B, "cells": _A, "images": _A, "artifactId": _S}


def _schema(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {**properties, **_REFUSAL}}


#: Each tool's ``outputSchema``: its summary's shape (a REST body fits it too). Short, as it
#: is listed in every conversation: the top-level names a program reads first, with their types.
OUTPUT_SCHEMAS: dict[str, dict[str, Any]] = {
    "notebook": _schema(**_RUN, notebook=_O, details=_O),
    "python": _schema(**_RUN, session=_types("object", "null")),
    "artifact": _schema(details=_O),
    "files": _schema(details=_O),
    "kernel": _schema(details=_O),
}
