"""List or inspect the names of a kernel's namespace without leaving a trace in it.

The probe is one user expression of a silent execution (``silent=True``: no execution count,
no history, nothing broadcast as input): it runs ``PROBE`` in a namespace of its own, reading
the user's namespace (``globals()`` of the expression) without adding a name to it, and answers
one JSON string. numpy, pandas, polars and torch objects are described by their shape, dtype
and columns when their module is already imported (the probe never imports one); every repr
is bounded.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["PROBE", "probe_expression", "render_inspection", "render_variables"]

#: Runs in the kernel: ``args`` (mode, name, limits) and ``ns`` (the user's namespace) given;
#: sets ``out`` to a JSON string.
PROBE = r"""
import json as _json, sys as _sys, types as _types

def _type_name(v):
    t = type(v)
    mod = getattr(t, "__module__", "") or ""
    return t.__qualname__ if mod == "builtins" else mod + "." + t.__qualname__

def _cut(text, limit):
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "\u2026"

def _safe(f, default=None):
    try:
        return f()
    except Exception:
        return default

def _describe(v, repr_chars):
    info = {"type": _type_name(v)}
    mod = (getattr(type(v), "__module__", "") or "").split(".")[0]
    if mod == "numpy" and "numpy" in _sys.modules and hasattr(v, "shape"):
        info["shape"] = list(v.shape)
        info["dtype"] = str(v.dtype)
        info["size"] = _safe(lambda: int(v.size))
    elif mod in ("pandas", "polars") and mod in _sys.modules and hasattr(v, "shape"):
        info["shape"] = list(v.shape)
        if hasattr(v, "columns"):
            cols = list(v.columns)
            info["columns"] = [str(c) for c in cols[:50]]
            info["dtypes"] = _safe(lambda: [str(d) for d in list(v.dtypes)[:50]])
            if len(cols) > 50:
                info["moreColumns"] = len(cols) - 50
        elif hasattr(v, "dtype"):
            info["dtype"] = str(v.dtype)
    elif mod == "torch" and "torch" in _sys.modules and hasattr(v, "shape"):
        info["shape"] = list(v.shape)
        info["dtype"] = str(v.dtype)
        info["device"] = _safe(lambda: str(v.device))
    elif isinstance(v, (str, bytes, list, tuple, dict, set, frozenset)):
        info["size"] = len(v)
    info["repr"] = _cut(_safe(lambda: repr(v), "<repr failed>") or "", repr_chars)
    return info

def _hidden(ns):
    ip = ns.get("get_ipython")
    shell = _safe(ip) if callable(ip) else None
    return dict(getattr(shell, "user_ns_hidden", None) or {})

_NOT_HIDDEN = object()

def _listed(ns):
    hidden = _hidden(ns)
    for k, v in list(ns.items()):
        if k.startswith("_") or isinstance(v, _types.ModuleType):
            continue
        if hidden.get(k, _NOT_HIDDEN) is v:  # as %who: IPython's own names, the tool's helpers
            continue
        yield k, v

def _main(ns, args):
    if args["mode"] == "inspect":
        name = args["name"]
        if name not in ns:
            return {"found": False}
        v = ns[name]
        info = _describe(v, args["repr_chars"])
        extra = {}
        mod = (getattr(type(v), "__module__", "") or "").split(".")[0]
        if mod in ("pandas", "polars") and hasattr(v, "head"):
            extra["head"] = _cut(_safe(lambda: repr(v.head(10)), "") or "", args["repr_chars"])
        if callable(v):
            import inspect as _inspect
            extra["signature"] = _safe(lambda: str(_inspect.signature(v)))
            extra["doc"] = _cut(_safe(lambda: _inspect.getdoc(v)) or "", 1000)
        if isinstance(v, (list, tuple, set, frozenset)) and v:
            extra["itemTypes"] = sorted({_type_name(x) for x in list(v)[:1000]})[:10]
        if isinstance(v, dict) and v:
            extra["keys"] = _cut(repr(list(v)[:100]), 1000)
        info.update({k: x for k, x in extra.items() if x})
        return {"found": True, "name": name, **info}
    names = list(_listed(ns))
    out = []
    for k, v in names[: args["max_variables"]]:
        out.append({"name": k, **_describe(v, args["repr_chars"])})
    return {"variables": out, "total": len(names)}

out = _json.dumps(_main(ns, args), default=str)
"""


def probe_expression(args: dict[str, Any]) -> str:
    """The user expression that runs the probe with ``args`` and evaluates to its JSON text."""
    return (
        "(lambda __g: __import__('builtins').exec(__g['src'], __g) or __g['out'])"
        f"({{'src': {PROBE!r}, 'ns': globals(), "
        f"'args': __import__('json').loads({json.dumps(args)!r})}})"
    )


def _fields(entry: dict[str, Any]) -> str:
    parts = [entry.get("type", "?")]
    if "shape" in entry:
        parts.append("shape " + "x".join(str(n) for n in entry["shape"]))
    if entry.get("dtype"):
        parts.append(f"dtype {entry['dtype']}")
    if entry.get("device"):
        parts.append(f"device {entry['device']}")
    if "size" in entry and "shape" not in entry:
        parts.append(f"len {entry['size']}")
    if entry.get("columns"):
        columns = entry["columns"]
        dtypes = entry.get("dtypes") or []
        named = [f"{c}: {d}" for c, d in zip(columns, dtypes, strict=False)] or columns
        more = f", … {entry['moreColumns']} more" if entry.get("moreColumns") else ""
        parts.append("columns [" + ", ".join(named) + more + "]")
    return " · ".join(parts)


def render_variables(found: dict[str, Any], where: str, max_chars: int) -> dict[str, Any]:
    """The ``{text, details}`` of a ``variables`` answer, its text within ``max_chars``."""
    variables = found.get("variables") or []
    total = int(found.get("total") or 0)
    lines = [f"Variables of {where}: {total}"]
    shown: list[dict[str, Any]] = []
    used = len(lines[0])
    for entry in variables:
        line = f"{entry['name']}: {_fields(entry)} = {entry.get('repr', '')}"
        if shown and used + len(line) + 1 > max_chars:
            break
        lines.append(line)
        shown.append(entry)
        used += len(line) + 1
    truncated = len(shown) < total
    if truncated:
        lines.append(
            f"[{len(shown)} of {total} shown: inspect one by name, or raise max_variables]"
        )
    details = {"action": "variables", "variables": shown, "total": total, "truncated": truncated}
    return {"text": "\n".join(lines), "details": details}


def render_inspection(found: dict[str, Any]) -> dict[str, Any]:
    """The ``{text, details}`` of an ``inspect`` answer."""
    lines = [f"{found['name']}: {_fields(found)}"]
    if found.get("signature"):
        lines.append(f"signature: {found['name']}{found['signature']}")
    if found.get("doc"):
        lines.append(f"doc: {found['doc']}")
    if found.get("keys"):
        lines.append(f"keys: {found['keys']}")
    if found.get("itemTypes"):
        lines.append("item types: " + ", ".join(found["itemTypes"]))
    if found.get("head"):
        lines.append(f"head:\n{found['head']}")
    lines.append(f"repr:\n{found.get('repr', '')}")
    variable = {k: v for k, v in found.items() if k != "found"}
    return {"text": "\n".join(lines), "details": {"action": "inspect", "variable": variable}}
