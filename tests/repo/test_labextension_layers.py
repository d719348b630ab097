"""The lab extension's shape, as docs/developers/architecture.md draws it, held by its imports.

``labextension/src`` has three kinds of module. ``core/`` holds what every feature shares (the
event types and parsing, the activity model, DOM building, formats, which calls can be undone);
the modules at the top (``client.ts``, ``tokens.ts``, ``translation.ts``, ...) are the shared
plumbing, ``index.ts`` the wiring of the plugins; and each feature has its folder (``panel/``,
``review/``, ``policy/``, ...). A feature imports its own folder, ``core/`` and the top-level
modules; never another feature's folder, save the few relationships ``ALLOWED`` lists with why.
``core/`` and the top-level modules (``index.ts`` apart) import no feature. And no folder is in
an import cycle with another (``import type`` included: a cycle of types is still two
folders that cannot be read one without the other).

The test files (``__tests__/``) exercise everything and are left out.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "labextension" / "src"

#: The shared folder.
CORE = "core"
#: One folder per feature.
FEATURES = {"panel", "review", "policy", "marks", "connect", "status", "artifacts"}
#: Folders that are not part of the extension's code.
NOT_CODE = {"__tests__"}
#: The wiring of the plugins: the one top-level module that imports the features.
WIRING = "index"

#: A feature folder's imports of another feature's: (importer, imported) -> why.
ALLOWED: dict[tuple[str, str], str] = {
    ("policy", "review"): (
        "an approval request shows the change it asks for as the review shows a change: the "
        "review's diff lines (review/diff.ts) and unified rendering (review/render.ts)"
    ),
    ("panel", "artifacts"): (
        "the activity panel's plugin installs the artifact viewer and opens a call's artifacts "
        "in it (artifacts/ has no plugin of its own)"
    ),
}

#: `from '…'`, `import '…'`, `export … from '…'` and `import('…')`, relative ones only.
IMPORT = re.compile(r"""(?:\bfrom\s+|\bimport\s*\(?\s*)['"](\.{1,2}/[^'"]+)['"]""")


def unit(path: str) -> str:
    """The unit a module (its path under ``src``, without extension) belongs to: its folder,
    or for a module at the top its own name."""
    return path.split("/", 1)[0]


def is_folder(name: str) -> bool:
    return (SRC / name).is_dir()


def modules() -> dict[str, str]:
    """Each module's path under ``src`` (without extension) -> its text."""
    found = {}
    for file in sorted([*SRC.rglob("*.ts"), *SRC.rglob("*.tsx")]):
        relative = file.relative_to(SRC).as_posix()
        if relative.split("/", 1)[0] in NOT_CODE:
            continue
        found[relative.rsplit(".", 1)[0]] = file.read_text(encoding="utf-8")
    return found


def edges() -> list[tuple[str, str]]:
    """Every (importer, imported) pair of module paths under ``src``."""
    found = []
    for path, text in modules().items():
        for spec in IMPORT.findall(text):
            target = posixpath.normpath(posixpath.join(posixpath.dirname(path), spec))
            found.append((path, target))
    return found


def test_the_scan_sees_the_imports() -> None:
    """Not vacuous: the scan finds the imports the rules are about."""
    found = set(edges())
    assert ("panel/widget", "core/activity") in found
    assert ("review/undorequest", "core/undoable") in found
    assert ("index", "panel/plugin") in found
    # an `import type` and a multi-line import are imports too
    assert ("status/agentstatus", "core/activity") in found


def test_every_folder_is_core_or_a_feature() -> None:
    """A new folder is placed in the shape (core, or a feature of ``FEATURES``)."""
    folders = {p.name for p in SRC.iterdir() if p.is_dir()} - NOT_CODE
    assert folders - FEATURES - {CORE} == set(), "add the folder to FEATURES, or to core/"


def test_a_feature_imports_no_other_feature_outside_the_allowed() -> None:
    refused = sorted(
        (path, target)
        for path, target in edges()
        if unit(path) in FEATURES
        and unit(target) in FEATURES
        and unit(target) != unit(path)
        and (unit(path), unit(target)) not in ALLOWED
    )
    assert refused == [], (
        "a feature imports another feature's folder: move what both need to core/, or say "
        f"why in ALLOWED: {refused}"
    )


def test_every_allowed_relationship_is_still_used() -> None:
    """An entry of ALLOWED that the code no longer needs goes, so the list stays true."""
    used = {(unit(p), unit(t)) for p, t in edges()}
    assert set(ALLOWED) - used == set()


def test_core_and_the_shared_modules_import_no_feature() -> None:
    refused = sorted(
        (path, target)
        for path, target in edges()
        if unit(target) in FEATURES
        and (unit(path) == CORE or not is_folder(unit(path)))
        and path != WIRING
    )
    assert refused == [], f"core/ or a shared module imports a feature: {refused}"


def test_no_folder_is_in_an_import_cycle() -> None:
    """Units: each folder, and each module at the top. A cycle among modules at the top alone
    stays within one folder (``client.ts`` and ``tokens.ts`` name each other's types); any
    cycle through a folder fails."""
    graph: dict[str, set[str]] = {}
    for path, target in edges():
        if unit(path) != unit(target):
            graph.setdefault(unit(path), set()).add(unit(target))

    def reach(start: str) -> set[str]:
        seen: set[str] = set()
        todo = [start]
        while todo:
            for nxt in graph.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    reachable = {name: reach(name) for name in graph}
    cycles = sorted(
        (folder, other)
        for folder in graph
        if is_folder(folder)
        for other in reachable[folder]
        if other != folder and folder in reachable.get(other, set())
    )
    assert cycles == [], f"folders in an import cycle (each pair reaches the other): {cycles}"
