"""What a notebook's kernel executed, for the stale-cell marks of ``read`` and ``run``."""

from __future__ import annotations

from collections.abc import Callable

from jupyter_xcsh.execution.inplace.kernels import NotebookKernels

__all__ = ["CodeOf", "KernelLogs"]

#: The hash of the code a kernel ran as ``[n]`` (None: not seen).
CodeOf = Callable[[int], str | None]


class KernelLogs:
    """Find the execution log of the kernel a notebook's server session uses."""

    def __init__(self, kernels: NotebookKernels) -> None:
        self.kernels = kernels

    async def code_of(self, api_path: str) -> CodeOf | None:
        """The lookup of notebook ``api_path``'s kernel (None: no kernel this server read)."""
        session = await self.kernels.find_session(api_path)
        if session is None:
            return None
        log = self.kernels.executed(str(session["kernel"]["id"]))
        return None if log is None else log.code_of
