"""A kernel jupyter_server is starting gets its activity figures when created, not after.

jupyter_client's ``MultiKernelManager`` lists a kernel as soon as its process is launched
(``_add_kernel_when_ready`` adds it to the manager's kernels); jupyter_server stamps it —
``last_activity`` now, ``execution_state`` "starting" — when its start coroutine resumes, at
least one event-loop iteration later. Anything served in between reads an unset
``last_activity``: ``kernel_model`` raises (traitlets' ``TraitError``, or ``AttributeError``
for a kernel manager class without the trait), so ``GET /api/kernels``, ``GET /api/status`` and
``GET /api/sessions`` answer 500, and the idle culler fails on the kernel. It happens with or
without this extension (12 of ~2,600 requests while 24 kernels started; about one in two kernel
starts under a client polling ``/api/kernels``), but the python tool starts kernels for its
sessions, and a lab and agents poll those endpoints.

``stamp_kernels_when_created`` wraps the server kernel manager's ``kernel_manager_factory`` (a
public trait of jupyter_client: the constructor of each kernel's manager) on its instance, so
each kernel manager is created with the figures the server gives it once started: the server's
own stamp, one iteration later, replaces them. Nothing else changes: a kernel the server has
already stamped, or one it loads from a connection file, keeps what it sets.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from traitlets import TraitError

__all__ = ["stamp_kernels_when_created"]


def stamp_kernels_when_created(kernel_manager: Any) -> str | None:
    """Stamp each kernel ``kernel_manager`` creates; None once done, else why it was not.

    A gateway's kernel manager is left alone: its kernels are listed once started, with the
    gateway's own model of them.
    """
    from jupyter_server.gateway.managers import GatewayMappingKernelManager

    if isinstance(kernel_manager, GatewayMappingKernelManager):
        return "the kernels are a gateway's (their models come from the gateway)"
    factory = getattr(kernel_manager, "kernel_manager_factory", None)
    if not callable(factory) or not callable(getattr(kernel_manager, "kernel_model", None)):
        return "the kernel manager has no kernel_manager_factory or kernel_model"
    kernel_manager.kernel_manager_factory = _stamping(factory)
    return None


def _stamping(factory: Callable[..., Any]) -> Callable[..., Any]:
    def create_kernel_manager(*args: Any, **kwargs: Any) -> Any:
        kernel = factory(*args, **kwargs)
        stamp(kernel)
        return kernel

    return create_kernel_manager


def stamp(kernel: Any) -> None:
    """Give ``kernel`` the figures jupyter_server gives a kernel it has just started, if unset."""
    try:
        unset = getattr(kernel, "last_activity", None) is None
    except TraitError:  # ServerKernelManager's trait has no default: reading it raises
        unset = True
    if not unset:
        return
    kernel.last_activity = datetime.now(UTC)
    if getattr(kernel, "execution_state", None) is None:
        kernel.execution_state = "starting"
