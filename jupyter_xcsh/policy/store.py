"""The person's policy rules, kept in a JSON file outside the contents root.

One file may serve several servers (the Jupyter data directory is per user): rules are kept
per contents root. Written whole to a temporary file then renamed, so a crash leaves the old
rules or the new ones, never half a file. Read once at start; the server is the only writer.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import threading
from typing import Any

from jupyter_xcsh.policy.rules import Rule, parse_rule

__all__ = ["PolicyStore"]

log = logging.getLogger(__name__)

#: The version of the file's layout.
VERSION = 1


class PolicyStore:
    """The person's rules for the contents root ``root``, saved in the JSON file ``path``."""

    def __init__(self, path: str, root: str) -> None:
        self.path = os.path.realpath(path)
        self.root = os.path.realpath(root)
        self._lock = threading.Lock()
        self._rules: dict[tuple[str, str], Rule] = {}
        for rule in self._load().get(self.root, []):
            try:
                parsed = parse_rule(rule, "person", where="stored rule")
            except Exception as e:  # a hand-edited file: keep the others
                log.warning("jupyter_xcsh: ignoring a stored policy rule in %s: %s", path, e)
                continue
            self._rules[(parsed.path, parsed.kind)] = parsed

    @property
    def rules(self) -> list[Rule]:
        """The person's rules, in no particular order."""
        return list(self._rules.values())

    def set(self, rule: Rule) -> None:
        """Add ``rule`` or replace the rule with its path and kind, and save."""
        with self._lock:
            self._rules[(rule.path, rule.kind)] = rule
            self._save()

    def remove(self, path: str, kind: str) -> bool:
        """Remove the rule of ``path`` and ``kind`` (saved); whether there was one."""
        with self._lock:
            if self._rules.pop((path, kind), None) is None:
                return False
            self._save()
            return True

    def _load(self) -> dict[str, list[Any]]:
        try:
            with open(self.path, encoding="utf-8") as f:
                data = json.load(f)
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as e:
            log.warning("jupyter_xcsh: cannot read the policy file %s: %s", self.path, e)
            return {}
        roots = data.get("roots") if isinstance(data, dict) else None
        return roots if isinstance(roots, dict) else {}

    def _save(self) -> None:
        roots = self._load()
        mine = [
            {"path": r.path, "kind": r.kind, "classes": dict(r.classes)}
            for r in sorted(self._rules.values(), key=lambda r: (r.path, r.kind))
        ]
        if mine:
            roots[self.root] = mine
        else:
            roots.pop(self.root, None)
        folder = os.path.dirname(self.path)
        os.makedirs(folder, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=".policies-", suffix=".json", dir=folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump({"version": VERSION, "roots": roots}, f, indent=1, sort_keys=True)
            os.replace(temporary, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
