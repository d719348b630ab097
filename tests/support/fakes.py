"""Fault-injecting replacements, each selected through the server's config."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import threading
import time

from jupyter_client.kernelspec import NoSuchKernel
from jupyter_server.auth.authorizer import Authorizer
from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager
from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager
from tornado.web import HTTPError
from traitlets import Float, Int, Unicode


class DenyWritesAuthorizer(Authorizer):
    """Allow reads, refuse every write (``ServerApp.authorizer_class``)."""

    def is_authorized(self, handler, user, action, resource):  # type: ignore[no-untyped-def]
        return action == "read"


class DenyContentsWritesAuthorizer(Authorizer):
    """Allow everything but writing contents: code runs, notebooks stay as they are."""

    def is_authorized(self, handler, user, action, resource):  # type: ignore[no-untyped-def]
        return not (action == "write" and resource == "contents")


class DenyAllAuthorizer(Authorizer):
    """Refuse everything (``ServerApp.authorizer_class``)."""

    def is_authorized(self, handler, user, action, resource):  # type: ignore[no-untyped-def]
        return False


class ApiReadOnlyAuthorizer(Authorizer):
    """Allow reading the API (``api``) and nothing else: the MCP endpoint answers, every tool
    is refused (``ServerApp.authorizer_class``)."""

    def is_authorized(self, handler, user, action, resource):  # type: ignore[no-untyped-def]
        return (action, resource) == ("read", "api")


class NoContentsReadAuthorizer(Authorizer):
    """Allow everything but reading contents (``ServerApp.authorizer_class``)."""

    def is_authorized(self, handler, user, action, resource):  # type: ignore[no-untyped-def]
        return (action, resource) != ("read", "contents")


class EmfileKernelManager(AsyncMappingKernelManager):
    """Fail one kernel start with EMFILE, as a process out of file descriptors would.

    ``ServerApp.kernel_manager_class``; ``EmfileKernelManager.fail_start`` is the 1-based
    start that fails (default the first).
    """

    fail_start = Int(1, config=True, help="Which kernel start (1-based) raises EMFILE.")
    starts = 0

    async def start_kernel(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.starts += 1
        if self.starts == self.fail_start:
            raise OSError(errno.EMFILE, "Too many open files")
        return await super().start_kernel(*args, **kwargs)


class UnreadableContentsManager(AsyncLargeFileManager):
    """Refuse to read file contents, as a permission problem would (``contents_manager_class``).

    The fakes' ``get`` passes on ``**kwargs`` (``require_hash`` from jupyter_server 2.11).
    """

    async def get(self, path, content=True, type=None, format=None, **kwargs):  # type: ignore[no-untyped-def]
        if content and type != "directory":
            raise HTTPError(403, f"Permission denied: {path}")
        return await super().get(path, content=content, type=type, format=format, **kwargs)


class SlowStartKernelManager(AsyncMappingKernelManager):
    """Wait ``start_delay`` seconds before each kernel start (a slow or queued cluster)."""

    start_delay = Float(0.0, config=True, help="Seconds each kernel start waits first.")
    started: list[str]

    async def start_kernel(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        await asyncio.sleep(self.start_delay)
        kernel_id = await super().start_kernel(*args, **kwargs)
        self.started = [*getattr(self, "started", []), kernel_id]
        return kernel_id


class SlowShutdownKernelManager(AsyncMappingKernelManager):
    """Wait ``shutdown_delay`` seconds in each kernel shutdown; record when things happen.

    ``events`` lists ``("start" | "shutdown-begin" | "shutdown-end", kernel_id, monotonic)``.
    """

    shutdown_delay = Float(0.0, config=True, help="Seconds each kernel shutdown takes extra.")
    events: list[tuple[str, str, float]]

    def _record(self, what: str, kernel_id: str) -> None:
        self.events = [*getattr(self, "events", []), (what, kernel_id, time.monotonic())]

    async def start_kernel(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        kernel_id = await super().start_kernel(*args, **kwargs)
        self._record("start", kernel_id)
        return kernel_id

    async def shutdown_kernel(self, kernel_id, *args, **kwargs):  # type: ignore[no-untyped-def]
        self._record("shutdown-begin", kernel_id)
        await asyncio.sleep(self.shutdown_delay)
        try:
            return await super().shutdown_kernel(kernel_id, *args, **kwargs)
        finally:
            self._record("shutdown-end", kernel_id)


class MissingSpecOnStartKernelManager(AsyncMappingKernelManager):
    """Fail every kernel start with NoSuchKernel although the spec is listed (a spec removed
    between the lookup and the start)."""

    async def start_kernel(self, *args, kernel_name=None, **kwargs):  # type: ignore[no-untyped-def]
        raise NoSuchKernel(kernel_name or "python3")


class SlowMissingSpecKernelManager(AsyncMappingKernelManager):
    """Wait ``start_delay`` seconds, then fail the kernel start with NoSuchKernel (a spec
    removed while a slow cluster queued the start): a call that fails after it began."""

    start_delay = Float(1.0, config=True, help="Seconds each kernel start waits first.")

    async def start_kernel(self, *args, kernel_name=None, **kwargs):  # type: ignore[no-untyped-def]
        await asyncio.sleep(self.start_delay)
        raise NoSuchKernel(kernel_name or "python3")


class VanishingContentsManager(AsyncLargeFileManager):
    """Delete the file ``vanish`` (an API path) right after each read of its content, as a
    person deleting a notebook just after an agent read it
    (``ServerApp.contents_manager_class``)."""

    vanish = Unicode("", config=True, help="The API path of the file deleted once read.")

    async def get(self, path, content=True, type=None, format=None, **kwargs):  # type: ignore[no-untyped-def]
        model = await super().get(path, content=content, type=type, format=format, **kwargs)
        if content and path.strip("/") == self.vanish:
            os.remove(self._get_os_path(path))
        return model


class DiskFullContentsManager(AsyncLargeFileManager):
    """Fail every file write as a full disk would (``ServerApp.contents_manager_class``).

    The OSError names the absolute path, as the operating system's does; the stock contents
    manager then answers ``Unexpected error while saving file: <path> <error>``.
    """

    async def _save_file(self, os_path, content, format):  # type: ignore[no-untyped-def]
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), os_path)


class HeldSaveContentsManager(AsyncLargeFileManager):
    """Hold every write of a file named ``held.ipynb`` until ``release`` is set, setting
    ``entered`` first (a save slow on disk: a network file system, a busy device). The events
    are the class's: a test clears them before use (``ServerApp.contents_manager_class``)."""

    entered = threading.Event()
    release = threading.Event()

    @contextlib.contextmanager
    def perm_to_403(self, os_path="", hold=True):  # type: ignore[no-untyped-def]
        # Entered by every write of a file (the server's atomic_writing and the tool's own).
        if hold and os.path.basename(os_path) == "held.ipynb":
            type(self).entered.set()
            type(self).release.wait(60)
        with super().perm_to_403(os_path):
            yield

    @contextlib.contextmanager
    def open(self, os_path, *args, **kwargs):  # type: ignore[no-untyped-def]
        # The server's ``open`` (its reads), never held.
        with self.perm_to_403(os_path, hold=False), open(os_path, *args, **kwargs) as f:
            yield f


class HalfWrittenContentsManager(AsyncLargeFileManager):
    """Serve the first ``half_written_reads`` text reads of each file cut in the middle, as a
    reader meeting a file another program is still writing would see it."""

    half_written_reads = Int(1, config=True, help="Text reads of each file served half-written.")
    reads: dict[str, int]

    async def get(self, path, content=True, type=None, format=None, **kwargs):  # type: ignore[no-untyped-def]
        model = await super().get(path, content=content, type=type, format=format, **kwargs)
        if content and type == "file" and format == "text":
            self.reads = getattr(self, "reads", {})
            self.reads[path] = self.reads.get(path, 0) + 1
            if self.reads[path] <= self.half_written_reads:
                model["content"] = model["content"][: len(model["content"]) // 2]
        return model


class SaveAfterLoadContentsManager(AsyncLargeFileManager):
    """After the first text read of a file, save it once more with an extra markdown cell
    (through the contents manager, as a JupyterLab save landing just then would)."""

    saved: bool = False

    async def get(self, path, content=True, type=None, format=None, **kwargs):  # type: ignore[no-untyped-def]
        model = await super().get(path, content=content, type=type, format=format, **kwargs)
        if content and type == "file" and not self.saved:
            self.saved = True
            notebook = await super().get(path, content=True, type="notebook")
            notebook["content"].cells.append(
                {"cell_type": "markdown", "id": "lab-save", "metadata": {}, "source": "lab"}
            )
            # A save made a moment later than the read: a distinct modification time.
            await asyncio.sleep(0.01)
            await self.save({"type": "notebook", "content": notebook["content"]}, path)
        return model


class RoomOpensOnLoadContentsManager(AsyncLargeFileManager):
    """Open a collaboration room for a notebook right after its first text read (the notebook
    tool's load), as a lab tab connecting at that moment would."""

    opened: bool = False

    async def get(self, path, content=True, type=None, format=None, **kwargs):  # type: ignore[no-untyped-def]
        model = await super().get(path, content=content, type=type, format=format, **kwargs)
        if content and type == "file" and path.endswith(".ipynb") and not self.opened:
            self.opened = True
            collaboration = self.parent.web_app.settings["jupyter_server_ydoc"]
            await collaboration.get_document(
                path=path, content_type="notebook", file_format="json", copy=False, create=True
            )
        return model


class DenyExecuteAuthorizer(Authorizer):
    """Allow everything but executing code in kernels (``ServerApp.authorizer_class``)."""

    def is_authorized(self, handler, user, action, resource):  # type: ignore[no-untyped-def]
        return not (action == "execute" and resource == "kernels")


class FixedMethodsContentsManager(AsyncLargeFileManager):
    """Ignore methods set on the instance, as a manager with slots or a proxy would: the
    ``save_guard`` fast path's probe fails (``ServerApp.contents_manager_class``)."""

    def __setattr__(self, name: str, value: object) -> None:
        if name in ("save", "atomic_writing"):
            return
        super().__setattr__(name, value)
