"""Policies as data: classes of action, decisions, presets and the rules that match a path. Pure.

A rule names a notebook (its API path, or a glob) or a folder (which covers everything under
it) and a decision per class of action. The effective decision of a class for a path is the
strictest of every operator rule that matches it and of the most specific person rule that
matches it (docs/users/policies.md); with no rule, everything is allowed.
"""

from __future__ import annotations

import fnmatch
import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from jupyter_xcsh.errors import InvalidRequestError

__all__ = [
    "CLASSES",
    "DECISIONS",
    "KINDS",
    "PRESETS",
    "Rule",
    "effective",
    "normalize_path",
    "parse_rule",
    "preset_of",
    "strictest",
]

#: The classes of action a policy decides, in the order they are shown.
CLASSES = ("read", "edit", "run", "python", "destructive")
#: The decisions, from the least strict to the strictest.
DECISIONS = ("allow", "ask", "deny")
#: What a rule names: one notebook (or the files a glob matches) or a folder and all under it.
KINDS = ("notebook", "folder")

#: The lab's "Agent access" menu: each preset's decision per class.
PRESETS: dict[str, dict[str, str]] = {
    "full": dict.fromkeys(CLASSES, "allow"),
    "ask-changes": {**dict.fromkeys(CLASSES, "allow"), "edit": "ask", "destructive": "ask"},
    "ask-running": {**dict.fromkeys(CLASSES, "allow"), "run": "ask", "python": "ask"},
    "read-only": {**dict.fromkeys(CLASSES, "deny"), "read": "allow"},
}

_GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True)
class Rule:
    """One rule: ``path`` (an API path or a glob), ``kind`` and a decision per class.

    ``classes`` may leave classes out (they are then ``allow`` as far as this rule goes).
    ``source``: ``operator`` (server configuration) or ``person`` (set in the lab).
    """

    path: str
    kind: str
    classes: Mapping[str, str] = field(default_factory=dict)
    source: str = "person"

    @property
    def is_glob(self) -> bool:
        """Whether ``path`` is a glob (``*``, ``?``, ``[``) rather than one path."""
        return any(c in _GLOB_CHARS for c in self.path)

    def matches(self, path: str) -> bool:
        """Whether the rule covers the API path ``path``.

        A notebook rule matches its path (or, a glob, the paths it matches: ``*`` crosses
        folders); a folder rule matches the folder and everything under it ("" is the root).
        """
        path = normalize_path(path)
        if self.kind == "notebook":
            return fnmatch.fnmatchcase(path, self.path) if self.is_glob else path == self.path
        if self.path == "":
            return True
        if self.is_glob:
            parts = path.split("/")
            return any(
                fnmatch.fnmatchcase("/".join(parts[:n]), self.path)
                for n in range(1, len(parts) + 1)
            )
        return path == self.path or path.startswith(self.path + "/")

    def specificity(self) -> tuple[int, int, int]:
        """How specific the rule is: a notebook before a folder, a path before a glob, deeper."""
        depth = self.path.count("/") + (1 if self.path else 0)
        return (1 if self.kind == "notebook" else 0, 0 if self.is_glob else 1, depth)

    def to_json(self) -> dict[str, Any]:
        """The rule as the REST API shows it."""
        return {
            "path": self.path,
            "kind": self.kind,
            "classes": dict(self.classes),
            "source": self.source,
        }


def normalize_path(path: str) -> str:
    """An API path as rules compare it: no leading or trailing slash, no ``.`` parts."""
    path = path.strip().replace("\\", "/").strip("/")
    if not path:
        return ""
    normal = posixpath.normpath(path)
    return "" if normal == "." else normal


def parse_rule(value: Any, source: str, *, where: str = "rule") -> Rule:
    """A rule from its JSON (``{path, kind, classes}`` or ``{path, kind, preset}``); 400 if bad."""
    if not isinstance(value, Mapping):
        raise InvalidRequestError(f"{where} must be an object with path, kind and classes")
    unknown = sorted(set(value) - {"path", "kind", "classes", "preset", "source"})
    if unknown:
        raise InvalidRequestError(f"{where}: unknown field {unknown[0]}")
    path = value.get("path")
    if not isinstance(path, str) or len(path) > 4096:
        raise InvalidRequestError(f"{where}: path must be a string (an API path or a glob)")
    kind = value.get("kind")
    if kind not in KINDS:
        raise InvalidRequestError(f"{where}: kind must be one of {', '.join(KINDS)}")
    preset, classes = value.get("preset"), value.get("classes")
    if (preset is None) == (classes is None):
        raise InvalidRequestError(f"{where}: give exactly one of preset and classes")
    if preset is not None:
        if not isinstance(preset, str) or preset not in PRESETS:
            raise InvalidRequestError(f"{where}: preset must be one of {', '.join(PRESETS)}")
        decisions = dict(PRESETS[preset])
    else:
        if not isinstance(classes, Mapping) or not classes:
            raise InvalidRequestError(f"{where}: classes must be an object of class: decision")
        decisions = {}
        for name, decision in classes.items():
            if name not in CLASSES:
                raise InvalidRequestError(
                    f"{where}: unknown class {name!r} (one of {', '.join(CLASSES)})"
                )
            if decision not in DECISIONS:
                raise InvalidRequestError(
                    f"{where}: decision of {name} must be one of {', '.join(DECISIONS)}"
                )
            decisions[name] = decision
    return Rule(normalize_path(path), kind, decisions, source)


def strictest(decisions: Iterable[str]) -> str:
    """The strictest of ``decisions`` (deny > ask > allow); ``allow`` for none."""
    return max(decisions, key=DECISIONS.index, default="allow")


def effective(
    operator: Iterable[Rule], person: Iterable[Rule], path: str
) -> tuple[dict[str, str], list[Rule]]:
    """Each class's decision for ``path`` and the rules it comes from.

    Every operator rule that matches counts; of the person's rules, the most specific one
    that matches (a notebook's own rule overrides its folder's).
    """
    matching = [rule for rule in operator if rule.matches(path)]
    mine = [rule for rule in person if rule.matches(path)]
    if mine:
        matching.append(max(mine, key=Rule.specificity))
    decisions = {
        name: strictest(rule.classes.get(name, "allow") for rule in matching) for name in CLASSES
    }
    return decisions, matching


def preset_of(decisions: Mapping[str, str]) -> str:
    """The preset whose decisions these are, else ``custom``."""
    for name, preset in PRESETS.items():
        if all(decisions.get(c, "allow") == preset[c] for c in CLASSES):
            return name
    return "custom"
