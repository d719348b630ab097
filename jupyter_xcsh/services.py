"""The services the extension builds once and hands to every handler, as one typed object."""

from __future__ import annotations

from dataclasses import dataclass

from .events.activity import ActivityEvents
from .execution.inplace.service import InPlaceService
from .execution.python.runner import ExecutionService
from .fast_paths import FastPaths
from .notebook.store import NotebookStore
from .outputs.artifacts import ArtifactStore
from .policy.gate import PolicyGate
from .settings import XcshSettings
from .tools import ArtifactTool, NotebookTool, PythonTool
from .tools.files import FilesTool
from .tools.kernel import KernelTool
from .tools.run import RunTool
from .tools.runs import RunInputTool, RunRegistry

__all__ = ["XcshServices"]


@dataclass(frozen=True)
class XcshServices:
    """Everything the handlers use: the settings, the domain services and the tools."""

    settings: XcshSettings
    #: The fast paths in use (probed at startup).
    fast_paths: FastPaths
    notebook_store: NotebookStore
    artifact_store: ArtifactStore
    execution: ExecutionService
    activity: ActivityEvents
    notebook: NotebookTool
    python: PythonTool
    artifacts: ArtifactTool
    #: The calls running code (python and in place), by call id: followed, answered, cancelled.
    runs: RunRegistry
    run_inputs: RunInputTool
    # Runs in place (docs/developers/contract.md §6): the engine and its tool.
    inplace: InPlaceService
    run: RunTool
    #: The files tool (folders and text files of the contents root).
    files: FilesTool
    #: The kernel tool: variables, status and control of session and notebook kernels.
    kernel: KernelTool
    #: The agent policies and approvals (docs/users/policies.md), asked by every agent tool.
    policies: PolicyGate
