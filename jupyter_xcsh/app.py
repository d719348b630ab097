"""The Jupyter Server extension application: builds the services once and routes handlers."""

from __future__ import annotations

import asyncio
import contextlib
import os
from typing import Any

from jupyter_server.extension.application import ExtensionApp
from traitlets import Instance

from .activity import ActivityEvents
from .execution import ExecutionService
from .handlers import artifacts as artifacts_handlers
from .handlers import notebook as notebook_handlers
from .handlers import python as python_handlers
from .handlers import sessions as sessions_handlers
from .notebook.reader import ReadLimits
from .notebook.store import NotebookStore
from .outputs.artifacts import ArtifactStore
from .settings import XcshSettings


class XcshApp(ExtensionApp):
    """Serve the notebook tool and the other xcsh endpoints under ``/api/xcsh``."""

    name = "jupyter_xcsh"
    load_other_extensions = True

    classes = [XcshSettings]

    xcsh_settings = Instance(
        XcshSettings, allow_none=True, help="The user settings (XcshSettings)."
    )
    notebook_store = Instance(NotebookStore, allow_none=True, help="Reads and saves notebooks.")
    artifact_store = Instance(ArtifactStore, allow_none=True, help="Keeps full outputs as files.")
    execution = Instance(ExecutionService, allow_none=True, help="Runs python tool calls.")
    activity = Instance(ActivityEvents, allow_none=True, help="Reports tool calls to the lab.")

    #: Seconds between two artifact retention passes (the first runs at start).
    artifact_prune_interval = 600.0
    _prune_task: asyncio.Task[None] | None = None

    def initialize_settings(self) -> None:
        """Build the services, once, from the server's managers and the user settings."""
        self.xcsh_settings = XcshSettings(parent=self)
        limits = ReadLimits(
            max_chars=self.xcsh_settings.read_max_chars,
            max_source_chars=self.xcsh_settings.read_max_source_chars,
            max_output_chars=self.xcsh_settings.read_max_output_chars,
        )
        assert self.serverapp is not None  # set by the server before it loads extensions
        self.notebook_store = NotebookStore(self.serverapp.contents_manager, limits)
        self.activity = ActivityEvents(self.serverapp.event_logger)
        self.artifact_store = ArtifactStore(
            self.serverapp.root_dir,
            folder=self.xcsh_settings.artifacts_dir,
            max_bytes=self.xcsh_settings.artifacts_max_bytes,
            max_age=self.xcsh_settings.artifacts_max_age,
            prune_interval=5.0,
        )
        settings = self.xcsh_settings
        self.execution = ExecutionService(
            self.serverapp.kernel_manager,
            artifact_store=self.artifact_store,
            root_dir=self.serverapp.root_dir,
            state_dir=os.path.join(self.serverapp.runtime_dir, "xcsh-sessions"),
            log=self.log,
            max_output_bytes=settings.max_output_bytes,
            stream_interval=settings.stream_interval / 1000,
            max_sessions=settings.max_sessions,
            idle_timeout=settings.idle_timeout,
            cleanup_interval=settings.cleanup_interval,
            heartbeat_interval=settings.heartbeat_interval,
        )
        self.settings["xcsh"] = {
            "settings": self.xcsh_settings,
            "notebook_store": self.notebook_store,
            "artifact_store": self.artifact_store,
            "execution": self.execution,
            "activity": self.activity,
        }

    def initialize_handlers(self) -> None:
        """Register every endpoint, each handler receiving its services through ``initialize``."""
        services: dict[str, Any] = {
            "settings": self.xcsh_settings,
            "notebook_store": self.notebook_store,
            "artifact_store": self.artifact_store,
            "execution": self.execution,
            "activity": self.activity,
        }
        routes = notebook_handlers.routes(services)
        routes += artifacts_handlers.routes(services)
        routes += python_handlers.routes(services)
        routes += sessions_handlers.routes(services)
        self.handlers.extend(routes)

    async def _start_jupyter_server_extension(self, serverapp: Any) -> None:
        """Start background work once the server's event loop runs: artifact retention."""
        self._prune_task = asyncio.create_task(self._prune_artifacts())

    async def _prune_artifacts(self) -> None:
        store = self.artifact_store
        assert store is not None
        while True:
            try:
                # Off the event loop: the folder may hold many files.
                removed = await asyncio.to_thread(store.prune)
            except OSError as e:
                self.log.warning("Could not prune artifacts in %s: %s", store.os_folder, e)
            else:
                if removed:
                    self.log.info("Removed %d old artifacts from %s", len(removed), store.folder)
            await asyncio.sleep(self.artifact_prune_interval)

    async def stop_extension(self) -> None:
        """Release what the extension holds when the server stops."""
        if self._prune_task is not None:
            self._prune_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._prune_task
            self._prune_task = None
        if self.execution is not None:
            # Every kernel the python tool started goes with the server; bounded, not forever.
            try:
                await asyncio.wait_for(self.execution.close(), 30)
            except TimeoutError:
                self.log.warning("jupyter_xcsh: python tool kernels did not stop within 30 s")
        self.log.debug("jupyter_xcsh stopped")
