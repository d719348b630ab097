"""The code every session kernel runs, silently, before its first call."""

from __future__ import annotations

__all__ = ["PRELUDE", "init_code"]

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
    pattern = _os.path.join(_os.environ["ARTIFACTS"], _glob.escape(id) + ".*.log")
    matches = sorted(_glob.glob(pattern))
    if not matches:
        raise FileNotFoundError(f"No artifact {id}")
    with open(matches[0], encoding="utf-8", errors="replace") as f:
        return f.read()
'''

_ENVIRONMENT = """
import os as __xcsh_os, sys as __xcsh_sys
try:
    __xcsh_os.chdir({cwd!r})
except OSError:
    pass  # a remote (gateway) kernel may not see the server's directories
__xcsh_os.environ.update({env!r})
if {cwd!r} in __xcsh_sys.path:
    __xcsh_sys.path.remove({cwd!r})
__xcsh_sys.path.insert(0, {cwd!r})
del __xcsh_os, __xcsh_sys
"""


def init_code(*, cwd: str, env: dict[str, str]) -> str:
    """Return the init script: chdir to ``cwd``, set ``env``, cwd first on sys.path, prelude."""
    return _ENVIRONMENT.format(cwd=cwd, env=env) + PRELUDE
