"""Reduce Jupyter display and error messages to what the python tool returns (pure, no I/O)."""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from jupyter_xcsh.execution.kernel.markdown import html_to_markdown
from jupyter_xcsh.outputs.images import pick_image
from jupyter_xcsh.outputs.tracebacks import fold_traceback
from jupyter_xcsh.outputs.view import terminal_text

__all__ = [
    "STATUS_MIME",
    "DisplayOutput",
    "error_output",
    "reduce_display",
    "string_expression",
]

#: The MIME type of a status event emitted by the in-kernel ``status(op, **data)`` helper.
STATUS_MIME = "application/x-xcsh-status"


@dataclass(frozen=True)
class DisplayOutput:
    """What one ``execute_result`` / ``display_data`` bundle contributes to a result."""

    text: str | None = None
    #: The bundle's image, ``{mimeType, data}`` (base64, or the text of an SVG), if any.
    images: list[dict[str, Any]] = field(default_factory=list)
    json_outputs: list[Any] = field(default_factory=list)
    status: dict[str, Any] | None = None


def _as_text(value: Any) -> str:
    # nbformat allows multiline strings stored as lists of lines.
    if isinstance(value, list):
        return "".join(str(v) for v in value)
    return str(value)


def _status_event(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {"op": value}
    if isinstance(value, Mapping):
        return dict(value)
    return {"op": str(value)}


def reduce_display(data: Mapping[str, Any]) -> DisplayOutput:
    """Reduce a MIME bundle: a status event alone, else an image, JSON and the best text.

    The image is the bundle's first of PNG, JPEG, GIF, WebP and SVG (one figure offered in
    several formats is one image).

    Text precedence is ``text/markdown`` > ``text/plain`` > ``text/html`` (converted to
    markdown); the text always ends with a newline.
    """
    if STATUS_MIME in data:
        return DisplayOutput(status=_status_event(data[STATUS_MIME]))
    picked = pick_image(dict(data))
    images = [{"mimeType": picked[0], "data": picked[1]}] if picked else []
    json_outputs = [data["application/json"]] if "application/json" in data else []
    text: str | None = None
    if "text/markdown" in data:
        text = _as_text(data["text/markdown"])
    elif "text/plain" in data:
        text = _as_text(data["text/plain"])
    elif "text/html" in data:
        text = html_to_markdown(_as_text(data["text/html"]))
    if text is not None and not text.endswith("\n"):
        text += "\n"
    return DisplayOutput(text=text, images=images, json_outputs=json_outputs)


def error_output(
    content: Mapping[str, Any], save: Callable[[str], str | None] | None = None
) -> tuple[str, dict[str, Any]]:
    """Return the chunk (the traceback, folded) and the structured error (escapes removed).

    The traceback is folded for a model to read (``outputs.tracebacks``); when anything was
    left out, ``save`` keeps its full text as an artifact, named in the chunk's first line and
    as the error's ``artifactId``. The structured error keeps every line of the traceback.
    """
    traceback = [terminal_text(str(line)) for line in content.get("traceback") or []]
    ename = str(content.get("ename", ""))
    evalue = terminal_text(str(content.get("evalue", "")))
    error: dict[str, Any] = {"ename": ename, "evalue": evalue, "traceback": traceback}
    if not traceback:
        return f"{ename}: {evalue}\n", error
    full = "\n".join(traceback)
    folded = fold_traceback(full)
    text = folded.text
    if folded.folded:
        artifact_id = save(full + "\n") if save is not None else None
        if artifact_id is not None:
            error["artifactId"] = artifact_id
        text = folded.notice(artifact_id) + "\n" + text
    return text + "\n", error


def string_expression(reply: dict[str, Any], name: str) -> str | None:
    """The string value of the user expression ``name`` in an ``execute_reply``, if any."""
    result = (reply.get("user_expressions") or {}).get(name) or {}
    text = (result.get("data") or {}).get("text/plain")
    if not isinstance(text, str):
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None
    return value if isinstance(value, str) else None
