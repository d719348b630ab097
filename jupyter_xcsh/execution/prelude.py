"""The code every session kernel runs, silently, before its first call."""

from __future__ import annotations

import ast
from typing import Any

__all__ = ["NOTICE_EXPRESSION", "PRELUDE", "init_code", "read_notice"]

#: Helpers defined in the kernel: ``status(op, **data)`` and ``output(id)``.
PRELUDE = '''
def status(op, **data):
    """Report progress to the caller as a status event (op: what is happening)."""
    from IPython.display import display as _display
    _display({"application/x-xcsh-status": {"op": op, **data}}, raw=True)


def output(id):
    """Return the full text of artifact://<id> (an earlier call's spilled output)."""
    import glob as _glob
    import os as _os
    if id.startswith("artifact://"):
        id = id[len("artifact://"):]
    folder = _os.environ.get("ARTIFACTS", "")
    if not _os.path.isdir(folder):
        url = _os.environ.get("XCSH_ARTIFACTS_URL", "/api/xcsh/artifacts/")
        raise FileNotFoundError(
            f"Artifact {id} is on the Jupyter server, whose files this kernel cannot see; "
            f"read it over HTTP: GET {url}{id} (with the server's token)"
        )
    pattern = _os.path.join(folder, _glob.escape(id) + ".*.log")
    matches = sorted(_glob.glob(pattern))
    if not matches:
        raise FileNotFoundError(f"No artifact {id}")
    with open(matches[0], encoding="utf-8", errors="replace") as f:
        return f.read()
'''

#: Sets the environment up; a step the kernel cannot take (a remote kernel that does not see
#: the server's disk) leaves a one-line notice for the caller instead of failing.
_ENVIRONMENT = """
def __xcsh_environment(cwd, env):
    import os, sys
    os.environ.update(env)
    try:
        os.chdir(cwd)
    except OSError as e:
        return (
            "[The kernel cannot see the server's files ({{}}: {{}}), so it runs in {{}}; "
            "read artifacts over HTTP: GET {{}}<id>]"
        ).format(cwd, e.strerror or e, os.getcwd(), env.get("XCSH_ARTIFACTS_URL", ""))
    if cwd in sys.path:
        sys.path.remove(cwd)
    sys.path.insert(0, cwd)
    return ""
__import__("os").environ["XCSH_ENVIRONMENT_NOTICE"] = __xcsh_environment({cwd!r}, {env!r})
del __xcsh_environment


def __xcsh_warm_tracebacks():
    # IPython imports its traceback formatting on first use (~0.1 s, far more on a busy
    # machine). Paid here, an interrupted cell reports in time and its kernel is not restarted.
    import sys
    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt:
        try:
            get_ipython().InteractiveTB.structured_traceback(*sys.exc_info())
        except Exception:
            pass
__xcsh_warm_tracebacks()
del __xcsh_warm_tracebacks
"""

#: Evaluated (as a ``user_expression``) right after the init code: reads and clears its notice.
NOTICE_EXPRESSION = "__import__('os').environ.pop('XCSH_ENVIRONMENT_NOTICE', '')"


def init_code(*, cwd: str, env: dict[str, str]) -> str:
    """Return the init script: set ``env``, chdir to ``cwd``, cwd first on sys.path, prelude."""
    return _ENVIRONMENT.format(cwd=cwd, env=env) + PRELUDE


def read_notice(reply: dict[str, Any]) -> str | None:
    """The environment notice from the init code's ``execute_reply`` (None: all went well)."""
    result = (reply.get("user_expressions") or {}).get("notice") or {}
    text = (result.get("data") or {}).get("text/plain")
    if not isinstance(text, str):
        return None
    try:
        notice = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None
    return notice if isinstance(notice, str) and notice else None
