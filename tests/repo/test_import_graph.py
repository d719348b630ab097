"""The package's modules import one another without a cycle of any kind.

The graph is built from the source with ``ast``, not by importing: every ``import`` and
``from … import`` counts, at module level, inside functions and under ``if TYPE_CHECKING:``
alike, relative imports resolved against the importing module. A cycle that only a lazy import
or ``TYPE_CHECKING`` hides at runtime still means the two modules cannot be read, tested or
moved apart, so it fails here too, with the cycle printed.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = "jupyter_xcsh"
ROOT = Path(__file__).resolve().parents[2] / PACKAGE


def module_name(path: Path) -> str:
    """The dotted name of a source file under the package."""
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    """Every module of the package, by dotted name (the built lab extension left out)."""
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        if "labextension" in path.parts:
            continue
        found[module_name(path)] = path
    return found


def resolve(name: str, known: dict[str, Path]) -> str | None:
    """The longest prefix of ``name`` that is one of the package's modules, if any."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in known:
            return candidate
        parts.pop()
    return None


def imports_of(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The package's modules that ``module`` imports, wherever in the file the import is."""
    is_package = path.name == "__init__.py"
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = resolve(alias.name, known)
                if target:
                    found.add(target)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                if node.level > 1:
                    base = base[: len(base) - (node.level - 1)]
                origin = ".".join([*base, node.module] if node.module else base)
            else:
                origin = node.module or ""
            if not origin.startswith(PACKAGE):
                continue
            # ``from pkg import name`` imports the submodule ``pkg.name`` when there is one.
            for alias in node.names:
                target = resolve(f"{origin}.{alias.name}", known)
                if target and target != origin and target.startswith(origin + "."):
                    found.add(target)
                elif origin in known:
                    found.add(origin)
                # else a module the build generates (``_version``): not in the source tree
    found.discard(module)
    return found


def import_graph() -> dict[str, set[str]]:
    """Each module of the package and the package's modules it imports."""
    known = modules()
    return {name: imports_of(name, path, known) for name, path in known.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph (its modules, the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return [*stack[stack.index(target) :], target]
            if target not in state:
                cycle = visit(target)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_graph_sees_the_whole_package():
    graph = import_graph()
    assert "jupyter_xcsh.app" in graph
    # The application imports the services, so the graph holds real edges.
    assert any(target.startswith(PACKAGE) for target in graph["jupyter_xcsh.app"])


def test_lazy_relative_and_type_checking_imports_count(tmp_path):
    source = tmp_path / "a.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from .b import B\n"
        "def f():\n"
        "    from . import c\n"
        "    import jupyter_xcsh.d\n"
        "    from ..e import E\n"
    )
    known = {f"{PACKAGE}.x.{name}": source for name in ("a", "b", "c", "d")}
    known[f"{PACKAGE}.x"] = source
    known[f"{PACKAGE}.e"] = source
    known[f"{PACKAGE}.d"] = source
    assert imports_of(f"{PACKAGE}.x.a", source, known) == {
        f"{PACKAGE}.x.b",
        f"{PACKAGE}.x.c",
        f"{PACKAGE}.d",
        f"{PACKAGE}.e",
    }


def test_a_cycle_is_found():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_engines_share_only_the_kernel_core():
    """``execution.kernel`` imports neither engine; neither engine imports the other."""
    graph = import_graph()
    engines = {f"{PACKAGE}.execution.{name}" for name in ("kernel", "python", "inplace")}
    forbidden = {
        f"{PACKAGE}.execution.kernel": engines - {f"{PACKAGE}.execution.kernel"},
        f"{PACKAGE}.execution.python": {f"{PACKAGE}.execution.inplace"},
        f"{PACKAGE}.execution.inplace": {f"{PACKAGE}.execution.python"},
    }
    wrong = sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        for package, refused in forbidden.items()
        if module == package or module.startswith(package + ".")
        for target in targets
        if any(target == r or target.startswith(r + ".") for r in refused)
    )
    assert not wrong, "\n".join(wrong)
