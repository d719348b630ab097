"""Fault-injecting replacements, each selected through the server's config."""

from __future__ import annotations

import errno

from jupyter_server.auth.authorizer import Authorizer
from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager
from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager
from tornado.web import HTTPError
from traitlets import Int


class DenyWritesAuthorizer(Authorizer):
    """Allow reads, refuse every write (``ServerApp.authorizer_class``)."""

    def is_authorized(self, handler, user, action, resource):  # type: ignore[no-untyped-def]
        return action == "read"


class DenyAllAuthorizer(Authorizer):
    """Refuse everything (``ServerApp.authorizer_class``)."""

    def is_authorized(self, handler, user, action, resource):  # type: ignore[no-untyped-def]
        return False


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
    """Refuse to read file contents, as a permission problem would (``contents_manager_class``)."""

    async def get(self, path, content=True, type=None, format=None, require_hash=False):  # type: ignore[no-untyped-def]
        if content and type != "directory":
            raise HTTPError(403, f"Permission denied: {path}")
        return await super().get(
            path, content=content, type=type, format=format, require_hash=require_hash
        )
