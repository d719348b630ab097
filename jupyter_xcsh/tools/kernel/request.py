"""A kernel tool request: the body's fields checked and typed. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jupyter_xcsh.errors import InvalidRequestError
from jupyter_xcsh.fields import action_fields

__all__ = ["ACTIONS", "KernelRequest", "parse_kernel_request"]

ACTIONS = ("variables", "inspect", "status", "interrupt", "restart", "change", "sessions")

#: Every field and its JSON type.
FIELDS: dict[str, type] = {
    "action": str,
    "session": str,
    "cwd": str,
    "notebook_path": str,
    "name": str,
    "kernel_name": str,
    "force": bool,
    "timeout": float,
    "max_variables": int,
    "max_chars": int,
}
#: The optional fields each action accepts (the target fields are checked apart).
_ACCEPTED = {
    "variables": {"session", "cwd", "notebook_path", "timeout", "max_variables", "max_chars"},
    "inspect": {"session", "cwd", "notebook_path", "timeout", "name", "max_chars"},
    "status": {"session", "cwd", "notebook_path"},
    "interrupt": {"session", "cwd", "notebook_path"},
    "restart": {"notebook_path", "force", "timeout"},
    "change": {"notebook_path", "kernel_name", "force", "timeout"},
    "sessions": set(),
}
#: Seconds a request waits for a busy kernel by default, and at most.
DEFAULT_TIMEOUT, MAX_TIMEOUT = 10.0, 600.0
#: Names listed by default and at most; characters of the answer by default and at most.
DEFAULT_VARIABLES, MAX_VARIABLES = 100, 1000
DEFAULT_CHARS, MAX_CHARS = 20000, 200000


@dataclass(frozen=True)
class KernelRequest:
    """A validated kernel tool request; ``session`` or ``notebook_path`` names the kernel."""

    action: str
    session: str | None = None
    cwd: str | None = None
    notebook_path: str | None = None
    name: str | None = None
    kernel_name: str | None = None
    force: bool = False
    timeout: float = DEFAULT_TIMEOUT
    max_variables: int = DEFAULT_VARIABLES
    max_chars: int = DEFAULT_CHARS


def parse_kernel_request(body: dict[str, Any]) -> KernelRequest:
    """Validate a request body; raise ``InvalidRequestError`` saying what is wrong."""
    action, fields = action_fields(body, FIELDS, _ACCEPTED)
    del fields["action"]
    for name in ("session", "notebook_path", "name", "kernel_name"):
        if fields.get(name) == "":
            raise InvalidRequestError(f"{name} must not be empty")
    targets = [name for name in ("session", "notebook_path") if name in fields]
    needs_target = _ACCEPTED[action] & {"session", "notebook_path"}
    if needs_target and not targets:
        what = " or ".join(sorted(needs_target, reverse=True))
        raise InvalidRequestError(f"{what} is required for the {action} action")
    if len(targets) > 1:
        raise InvalidRequestError("Give session or notebook_path, not both")
    if "cwd" in fields and "session" not in fields:
        raise InvalidRequestError("cwd goes with session (the python session's directory)")
    if action == "inspect" and "name" not in fields:
        raise InvalidRequestError("name is required for the inspect action")
    if action == "change" and "kernel_name" not in fields:
        raise InvalidRequestError("kernel_name is required for the change action")
    timeout = fields.get("timeout", DEFAULT_TIMEOUT)
    if not 0 <= timeout <= MAX_TIMEOUT:
        raise InvalidRequestError(f"timeout must be between 0 and {MAX_TIMEOUT:g} seconds")
    if not 1 <= fields.get("max_variables", 1) <= MAX_VARIABLES:
        raise InvalidRequestError(f"max_variables must be between 1 and {MAX_VARIABLES}")
    if not 100 <= fields.get("max_chars", DEFAULT_CHARS) <= MAX_CHARS:
        raise InvalidRequestError(f"max_chars must be between 100 and {MAX_CHARS}")
    return KernelRequest(action=action, **fields)
