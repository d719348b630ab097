"""The package's layers, as docs/developers/architecture.md draws them, held by its imports.

Each module belongs to one layer; it imports modules of its own layer and of the layers below,
never above (lazy and ``TYPE_CHECKING`` imports included, as in the import-graph test beside
this one). Two rules more: the transports (REST handlers, MCP) reach code only through the
tools and the shared packages, never an engine; and a tool's folder uses another tool's only
through that tool's ``tool`` module (its public face), never its parts (the modules at the top
of ``tools/`` are what the tools share).

An edge the rules refuse but the code still has is listed in ``KNOWN`` with why, so that it is
seen, and any other such edge fails here.
"""

from __future__ import annotations

from tests.repo.test_import_graph import PACKAGE, import_graph

#: From the bottom up; a module's layer is that of its longest listed package prefix.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    (
        "base",
        ("errors", "fields", "paths", "settings", "memory", "fast_paths", "version", "_version"),
    ),
    # The policies' gate (a branch's ``policy/``) is what a Caller carries: the calls' layer.
    ("calls", ("calls", "policy")),
    (
        "shared",
        (
            "notebook",
            "search",
            "outputs",
            "artifacts",
            "events",
            "runs",
            "execution",
            "execution.kernel",
        ),
    ),
    ("engines", ("execution.python", "execution.inplace")),
    ("tools", ("tools",)),
    ("wiring", ("services",)),
    ("transports", ("handlers", "mcp")),
    ("app", ("", "app", "cli")),
]

#: Engines, which the transports never import.
ENGINES = ("execution.python", "execution.inplace", "execution.kernel")

#: Edges the rules refuse that the code still has: (importer, imported) -> why.
KNOWN: dict[tuple[str, str], str] = {
    ("calls.observer", "execution.kernel.stdin"): (
        "report_input's argument is the kernel core's StdinPolicy (a type only)"
    ),
}


def short(module: str) -> str:
    """A module's name under the package ("" for the package itself)."""
    return module[len(PACKAGE) + 1 :] if module != PACKAGE else ""


def within(name: str, package: str) -> bool:
    """Whether ``name`` is ``package`` or one of its modules ("" holds only the package)."""
    return name == package or (package != "" and name.startswith(package + "."))


def layer_of(module: str) -> int:
    """The index in LAYERS of a module's layer."""
    name = short(module)
    best: tuple[int, int] | None = None
    for index, (_, packages) in enumerate(LAYERS):
        for package in packages:
            if within(name, package) and (best is None or len(package) >= best[1]):
                best = (index, len(package))
    assert best is not None, f"{module} is in no layer: add its package to LAYERS"
    return best[0]


def in_tool_folder(name: str) -> bool:
    """Whether a module is a tool's own (``tools/<tool>/...``), not the tools' shared code.

    Modules at the top of ``tools/`` (``base``, ...) are what every tool shares.
    """
    return within(name, "tools") and name.count(".") >= 2


def wrong_edges() -> list[str]:
    """Every edge the rules refuse and KNOWN does not list."""
    wrong = []
    for module, targets in import_graph().items():
        source = short(module)
        for target in sorted(targets):
            name = short(target)
            if (source, name) in KNOWN:
                continue
            low, high = layer_of(module), layer_of(target)
            if high > low:
                wrong.append(f"{source} ({LAYERS[low][0]}) -> {name} ({LAYERS[high][0]})")
            elif LAYERS[low][0] == "transports" and any(within(name, e) for e in ENGINES):
                wrong.append(f"{source} (a transport) -> {name} (an engine)")
            elif (
                in_tool_folder(source)
                and in_tool_folder(name)
                and source.split(".")[1] != name.split(".")[1]
                and not name.endswith(".tool")
            ):
                wrong.append(f"{source} -> {name} (another tool's part)")
    return wrong


def test_every_module_has_a_layer():
    for module in import_graph():
        layer_of(module)


def test_the_layers_hold():
    wrong = wrong_edges()
    assert not wrong, "\n".join(wrong)


def test_known_exceptions_are_still_there():
    """A known edge the code no longer has leaves KNOWN (the list stays the truth)."""
    graph = import_graph()
    gone = [
        f"{a} -> {b}"
        for a, b in KNOWN
        if f"{PACKAGE}.{b}" not in graph.get(f"{PACKAGE}.{a}" if a else PACKAGE, set())
    ]
    assert not gone, "no longer imported, remove from KNOWN: " + ", ".join(gone)


def test_an_engine_imported_by_a_transport_is_refused(monkeypatch):
    """The check itself fails on the break it is for (a handler importing an engine)."""
    graph = import_graph()
    graph[f"{PACKAGE}.handlers.python"] = {f"{PACKAGE}.execution.python.pool"}
    monkeypatch.setattr(f"{__name__}.import_graph", lambda: graph)
    assert wrong_edges() == ["handlers.python (a transport) -> execution.python.pool (an engine)"]


def test_a_layer_importing_upwards_is_refused(monkeypatch):
    graph = {f"{PACKAGE}.notebook.model": {f"{PACKAGE}.tools.notebook.tool"}}
    monkeypatch.setattr(f"{__name__}.import_graph", lambda: graph)
    assert wrong_edges() == ["notebook.model (shared) -> tools.notebook.tool (tools)"]


def test_a_tool_reaching_into_another_tools_parts_is_refused(monkeypatch):
    graph = {
        f"{PACKAGE}.tools.python.tool": {
            f"{PACKAGE}.tools.kernel.probe",
            f"{PACKAGE}.tools.inplace.tool",
            f"{PACKAGE}.tools.base",
        }
    }
    monkeypatch.setattr(f"{__name__}.import_graph", lambda: graph)
    assert wrong_edges() == ["tools.python.tool -> tools.kernel.probe (another tool's part)"]
