"""Code cells whose outputs are stale, from the notebook and what its kernel executed. Pure.

A code cell that ran (it has an execution count ``[n]``) is stale when

- its source changed since it ran as ``[n]`` in the current kernel (known when this server saw
  that execution: the kernel's ``ExecutionLog``); or
- it uses a name (static definitions and uses, with Python's ``ast``) that another cell defines
  which ran after it (a higher count) or is itself stale: its outputs were computed from a value
  that is no longer there.

Cells that never ran, and cells whose source is not Python (after IPython's own rewriting of
magics and shell escapes, when IPython is there), are never marked by the second rule.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

__all__ = ["CellNames", "cell_names", "code_hash", "stale_cells"]

#: Code cells analysed at most (the dependency rule is skipped past it: a notebook that large
#: gets only the "source changed" rule).
MAX_ANALYSED = 2000


def code_hash(code: str) -> str:
    """The hash an executed code is remembered by (SHA-256, hex): a cell's source is compared."""
    return hashlib.sha256(code.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class CellNames:
    """The module-level names a cell defines, and the names it uses that it did not define."""

    defines: frozenset[str]
    uses: frozenset[str]


@cache
def _transformer() -> Any:
    """IPython's rewriter of magics and shell escapes (None without IPython)."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:
        return None
    return TransformerManager()  # type: ignore[no-untyped-call]


def _python(source: str) -> str:
    """``source`` with IPython's magics and shell escapes rewritten (or dropped) to parse."""
    transformer = _transformer()
    if transformer is None:  # no IPython on the server: drop the lines that cannot parse
        lines = source.splitlines()
        return "\n".join(line for line in lines if not line.lstrip().startswith(("%", "!", "?")))
    try:
        return str(transformer.transform_cell(source))
    except Exception:
        return source


@lru_cache(maxsize=4096)
def cell_names(source: str) -> CellNames | None:
    """What ``source`` defines and uses at module level; None when it is not Python.

    Cached by source: a notebook read again and again analyses only the cells that changed.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        try:  # magics or shell escapes: IPython's rewriting first (slower, so only then)
            tree = ast.parse(_python(source))
        except (SyntaxError, ValueError, RecursionError):
            return None
    defines: set[str] = set()
    loads: set[str] = set()
    augmented: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                loads.add(node.id)
            elif isinstance(node.ctx, (ast.Store, ast.Del)):
                defines.add(node.id)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            augmented.add(node.target.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defines.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                defines.add(alias.asname or alias.name.split(".")[0])
    # Names bound inside functions or comprehensions are counted as the cell's too: a cell
    # rarely reuses a global's name for a local one, and over-counting only hides a mark.
    uses = (loads | augmented) - (defines - augmented)
    return CellNames(frozenset(defines), frozenset(uses))


def _text(source: Any) -> str:
    if isinstance(source, list):
        return "".join(s for s in source if isinstance(s, str))
    return source if isinstance(source, str) else ""


def _count(cell: Any) -> int | None:
    count = cell.get("execution_count") if isinstance(cell, dict) else None
    return count if isinstance(count, int) and not isinstance(count, bool) else None


def stale_cells(
    cells: Sequence[Any], code_of: Callable[[int], str | None] | None = None
) -> dict[int, str]:
    """The stale code cells of a notebook: ``{index: why}``, in the notebook's order.

    ``code_of(n)`` is the hash (``code_hash``) of the code the notebook's kernel ran as ``[n]``,
    or None when that execution was not seen (no kernel log: None for all).
    """
    ran: dict[int, tuple[int, str]] = {}  # index -> (count, source)
    for index, cell in enumerate(cells):
        count = _count(cell)
        if count is not None and isinstance(cell, dict) and cell.get("cell_type") == "code":
            ran[index] = (count, _text(cell.get("source")))
    stale: dict[int, str] = {}
    if code_of is not None:
        hashes = {index: code_hash(source) for index, (count, source) in ran.items()}
        for index, (count, _) in ran.items():
            seen = code_of(count)
            if seen is None or seen == hashes[index]:
                continue
            # Another cell with the same count is the one the kernel ran as [n]: this one's
            # outputs come from an earlier kernel.
            twin = any(ran[o][0] == count and hashes[o] == seen for o in ran if o != index)
            stale[index] = (
                f"it ran as [{count}] in an earlier kernel"
                if twin
                else f"its source changed since it ran as [{count}]"
            )
    if len(ran) > MAX_ANALYSED:
        return dict(sorted(stale.items()))
    names = {index: cell_names(source) for index, (count, source) in ran.items()}
    definers: dict[str, list[int]] = {}
    for index, found in names.items():
        for name in found.defines if found is not None else ():
            definers.setdefault(name, []).append(index)
    # A cell made stale makes the cells using its names stale: repeat until nothing changes
    # (each pass marks at least one more cell, so at most one pass per cell).
    changed = True
    while changed:
        changed = False
        for index, found in names.items():
            if index in stale or found is None:
                continue
            count = ran[index][0]
            for name in sorted(found.uses):
                why = _why(name, index, count, definers.get(name, []), ran, stale)
                if why is not None:
                    stale[index] = why
                    changed = True
                    break
    return dict(sorted(stale.items()))


def _why(
    name: str,
    index: int,
    count: int,
    definers: list[int],
    ran: dict[int, tuple[int, str]],
    stale: dict[int, str],
) -> str | None:
    """Why the cell at ``index`` (run as ``[count]``) is stale through ``name``, if it is."""
    for other in definers:
        if other == index:
            continue
        other_count = ran[other][0]
        if other_count > count:
            return f"it uses {name}, which cell {other} redefined after it ran ([{other_count}])"
        if other in stale:
            return f"it uses {name}, defined by cell {other}, which is stale"
    return None
