"""The services the extension builds once and hands to every handler, as one typed object."""

from __future__ import annotations

from dataclasses import dataclass

from jupyter_xcsh.artifacts.store import ArtifactStore
from jupyter_xcsh.events.activity import ActivityEvents
from jupyter_xcsh.execution.inplace.service import InPlaceService
from jupyter_xcsh.execution.python.service import PythonService
from jupyter_xcsh.fast_paths import FastPaths
from jupyter_xcsh.notebook.storage.store import NotebookStore
from jupyter_xcsh.policy.gate import PolicyGate
from jupyter_xcsh.runs.registry import RunInputTool, RunRegistry
from jupyter_xcsh.settings import XcshSettings
from jupyter_xcsh.tools import ArtifactTool, NotebookTool, PythonTool
from jupyter_xcsh.tools.files.tool import FilesTool
from jupyter_xcsh.tools.inplace.tool import InPlaceTool
from jupyter_xcsh.tools.kernel.tool import KernelTool

__all__ = ["XcshServices"]


@dataclass(frozen=True)
class XcshServices:
    """Everything the handlers use: the settings, the domain services and the tools."""

    settings: XcshSettings
    #: The fast paths in use (probed at startup).
    fast_paths: FastPaths
    notebook_store: NotebookStore
    artifact_store: ArtifactStore
    execution: PythonService
    activity: ActivityEvents
    notebook: NotebookTool
    python: PythonTool
    artifacts: ArtifactTool
    #: The calls running code (python and in place), by call id: followed, answered, cancelled.
    runs: RunRegistry
    run_inputs: RunInputTool
    # Runs in place (docs/developers/contract.md §6): the engine and its tool.
    inplace: InPlaceService
    run: InPlaceTool
    #: The files tool (folders and text files of the contents root).
    files: FilesTool
    #: The kernel tool: variables, status and control of session and notebook kernels.
    kernel: KernelTool
    #: The agent policies and approvals (docs/users/policies.md), asked by every agent tool.
    policies: PolicyGate
