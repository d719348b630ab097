"""The code every session kernel runs, silently, before its first call."""

from __future__ import annotations

from typing import Any

from jupyter_xcsh.execution.kernel.messages import string_expression

__all__ = [
    "NOTICE_EXPRESSION",
    "PRELUDE",
    "STREAM_BOUND",
    "STREAM_BOUND_CHARS",
    "init_code",
    "read_notice",
]

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


try:  # the tool's helpers, not the user's names (as %who and the kernel tool list them)
    get_ipython().user_ns_hidden.update(status=status, output=output)
except Exception:
    pass
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

#: Characters a session kernel's stdout/stderr buffer before they are sent, whatever the time.
STREAM_BOUND_CHARS = 1024 * 1024

#: Bounds what a session kernel's output can make the server hold, at the source:
#:
#: - a message: ipykernel sends what a stream buffered every 0.2 s, and a tight print loop
#:   buffers tens of megabytes in that time, one message the server must then hold whole. Once a
#:   stream holds ``STREAM_BOUND_CHARS``, a write hands the buffer to the IOPub thread at once,
#:   and a flush sends more than that (one huge write) as several messages of at most the bound.
#:   The hooks are ``_schedule_flush`` (which every write of ipykernel's streams calls) and
#:   ``_flush_buffers``, in a subclass the streams are switched to: IPython replaces and
#:   restores the streams' ``write`` around every cell, which would undo a patched ``write``;
#: - the backlog: the IOPub socket waits for a subscriber whose queue is full (``XPUB_NODROP``)
#:   instead of dropping its messages, and a writer more than one bound ahead of what was sent
#:   waits for it. The server reads the kernel with a small queue of its own
#:   (``connection.IOPUB_HIGH_WATER_MARK``), so a kernel printing faster than the server handles
#:   its output slows down to the server's pace instead of piling its output up in the server
#:   (and never drops output because a queue is full). The socket's own queue keeps ZMQ's
#:   default length: libzmq hangs the sender when ``SNDHWM`` is lowered on a connected XPUB
#:   socket with ``XPUB_NODROP`` (measured with pyzmq 27 / libzmq 4.3).
#:
#: Only ipykernel's own streams are touched: another kernel is left as it is.
STREAM_BOUND = f"""
def __xcsh_bound_streams(limit):
    import sys, threading
    try:
        import zmq
        from ipykernel.iostream import OutStream
    except ImportError:
        return
    threads = set()
    hooks = ("_flush", "_flush_buffers", "_schedule_flush", "_buffers")
    for stream in (sys.stdout, sys.stderr):
        cls = type(stream)
        thread = getattr(stream, "pub_thread", None)
        if (
            not isinstance(stream, OutStream)
            or getattr(cls, "_xcsh_bounded", False)
            or not all(hasattr(stream, a) for a in hooks)
            or not hasattr(thread, "schedule")
        ):
            continue
        threads.add(thread)

        class BoundedStream(cls):
            _xcsh_bounded = True
            _xcsh_sent = None

            def _schedule_flush(self):
                super()._schedule_flush()
                try:
                    buffered = sum(b.tell() for b in list(self._buffers.values()))
                except ValueError:  # the IOPub thread just took (and closed) these buffers
                    return
                thread = self.pub_thread
                if buffered < limit or thread is None:
                    return
                sent, self._xcsh_sent = self._xcsh_sent, threading.Event()
                if sent is not None:
                    sent.wait(10)  # the previous bound's message is not sent yet
                thread.schedule(self._flush)
                # _flush queues its send on the thread: the event is set after that send.
                thread.schedule(lambda e=self._xcsh_sent, t=thread: t.schedule(e.set))

            def _flush_buffers(self):
                # One write can hold more than the bound: send it as several messages.
                for parent, data in super()._flush_buffers():
                    for start in range(0, len(data), limit):
                        yield parent, data[start : start + limit]

        stream.__class__ = BoundedStream

    def wait_for_subscribers(thread):
        socket = getattr(thread, "socket", None)
        if socket is not None:
            try:
                socket.setsockopt(zmq.XPUB_NODROP, 1)
            except Exception:  # not an XPUB socket, an old libzmq: it drops as before
                pass

    for thread in threads:  # sockets belong to their thread: set options there
        thread.schedule(lambda t=thread: wait_for_subscribers(t))
__xcsh_bound_streams({STREAM_BOUND_CHARS})
del __xcsh_bound_streams
"""

#: Evaluated (as a ``user_expression``) right after the init code: reads and clears its notice.
NOTICE_EXPRESSION = "__import__('os').environ.pop('XCSH_ENVIRONMENT_NOTICE', '')"


def init_code(*, cwd: str, env: dict[str, str], bound_streams: bool = True) -> str:
    """Return the init script: set ``env``, chdir to ``cwd``, cwd first on sys.path, prelude.

    ``bound_streams``: with ``STREAM_BOUND`` (the ``kernel_stream_bound`` fast path).
    """
    bound = STREAM_BOUND if bound_streams else ""
    return _ENVIRONMENT.format(cwd=cwd, env=env) + bound + PRELUDE


def read_notice(reply: dict[str, Any]) -> str | None:
    """The environment notice from the init code's ``execute_reply`` (None: all went well)."""
    return string_expression(reply, "notice") or None
