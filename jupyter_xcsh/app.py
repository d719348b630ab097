"""The Jupyter Server extension application: builds the services once and routes handlers."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from typing import Any

from jupyter_server import version_info as server_version
from jupyter_server.extension.application import ExtensionApp
from traitlets import Instance

from jupyter_xcsh.artifacts.store import (
    DEFAULT_FOLDER,
    LEGACY_FOLDER,
    ArtifactStore,
    ContentsArtifactStore,
)
from jupyter_xcsh.events.activity import ActivityEvents
from jupyter_xcsh.events.emit import probe_event_emit
from jupyter_xcsh.events.history import ActivityHistory
from jupyter_xcsh.execution.inplace.kernels import NotebookKernels
from jupyter_xcsh.execution.inplace.logs import KernelLogs
from jupyter_xcsh.execution.inplace.service import InPlaceService
from jupyter_xcsh.execution.kernel.connection import probe_socket_views
from jupyter_xcsh.execution.kernel.launcher import probe_activity_watch, probe_restarter
from jupyter_xcsh.execution.kernel.stamp import stamp_kernels_when_created
from jupyter_xcsh.execution.kernel.wire import probe_decoding
from jupyter_xcsh.execution.python.service import PythonService
from jupyter_xcsh.execution.python.session import probe_trait_store
from jupyter_xcsh.fast_paths import FastPaths, probe_fast_paths
from jupyter_xcsh.handlers import activity as activity_handlers
from jupyter_xcsh.handlers import artifacts as artifacts_handlers
from jupyter_xcsh.handlers import files as files_handlers
from jupyter_xcsh.handlers import inplace as run_handlers
from jupyter_xcsh.handlers import kernel as kernel_handlers
from jupyter_xcsh.handlers import mcp as mcp_handlers
from jupyter_xcsh.handlers import mcpconfig as mcpconfig_handlers
from jupyter_xcsh.handlers import notebook as notebook_handlers
from jupyter_xcsh.handlers import policies as policies_handlers
from jupyter_xcsh.handlers import python as python_handlers
from jupyter_xcsh.handlers import runs as runs_handlers
from jupyter_xcsh.handlers import sessions as sessions_handlers
from jupyter_xcsh.handlers.base import NotFoundHandler
from jupyter_xcsh.mcp.jupyter_ai import (
    offer_to_jupyter_ai,
    server_token,
    server_url,
    settings_entry,
)
from jupyter_xcsh.memory import freeze_startup_heap, limit_heap_arenas
from jupyter_xcsh.notebook.reader import ReadLimits
from jupyter_xcsh.notebook.rooms.live import LiveDocuments
from jupyter_xcsh.notebook.storage.atomic import TemporaryFiles
from jupyter_xcsh.notebook.storage.saves import SaveGuard, probe_save_guard
from jupyter_xcsh.notebook.storage.store import NotebookStore
from jupyter_xcsh.policy.approvals import ApprovalRegistry
from jupyter_xcsh.policy.gate import PolicyGate
from jupyter_xcsh.policy.rules import parse_rule
from jupyter_xcsh.policy.store import PolicyStore
from jupyter_xcsh.runs.registry import RunInputTool, RunRegistry
from jupyter_xcsh.search.find import NotebookFinder
from jupyter_xcsh.search.regex_workers import RegexWorkers
from jupyter_xcsh.services import XcshServices
from jupyter_xcsh.settings import XcshSettings
from jupyter_xcsh.tools import ArtifactTool, NotebookTool, PythonTool
from jupyter_xcsh.tools.files.search import FileSearch
from jupyter_xcsh.tools.files.tool import FilesTool
from jupyter_xcsh.tools.files.workspace import FileLimits, Workspace
from jupyter_xcsh.tools.inplace.tool import InPlaceTool
from jupyter_xcsh.tools.kernel.tool import KernelTool
from jupyter_xcsh.tools.python.tool import NotebookScratch

#: The fast paths that are also an intervention with a setting of its own: name -> setting.
INTERVENTION_SETTINGS = {
    "save_guard": "guard_saves",
    "activity_watch": "take_over_activity_watch",
    "kernel_stream_bound": "bound_kernel_streams",
}

#: The modules whose ``routes(services)`` make up the extension's endpoints.
ROUTE_MODULES = (
    notebook_handlers,
    artifacts_handlers,
    python_handlers,
    sessions_handlers,
    mcp_handlers,
    mcpconfig_handlers,
    runs_handlers,
    run_handlers,
    files_handlers,
    kernel_handlers,
    activity_handlers,
    policies_handlers,
)


class XcshApp(ExtensionApp):
    """Serve the notebook tool and the other xcsh endpoints under ``/api/xcsh``."""

    name = "jupyter_xcsh"
    load_other_extensions = True

    classes = [XcshSettings]

    services = Instance(
        XcshServices, allow_none=True, help="The services every handler is given (built once)."
    )

    #: Seconds between two artifact retention passes (the first runs at start).
    artifact_prune_interval = 600.0
    #: The glibc arena limit the extension set (``memory.limit_heap_arenas``); None: none.
    heap_arenas: int | None = None
    #: Whether the server's kernels are stamped when created (``execution/kernel/stamp.py``).
    kernels_stamped = False
    _prune_task: asyncio.Task[None] | None = None

    def initialize_settings(self) -> None:
        """Build the services, once, from the server's managers and the user settings."""
        assert self.serverapp is not None  # set by the server before it loads extensions
        server = self.serverapp
        settings = XcshSettings(parent=self)
        self.heap_arenas = limit_heap_arenas(settings.heap_arenas)
        if settings.stamp_starting_kernels:
            why_not = stamp_kernels_when_created(server.kernel_manager)
            self.kernels_stamped = why_not is None
            if why_not is not None:
                server.log.info("jupyter_xcsh: kernels not stamped when created: %s", why_not)
        fast = self._fast_paths(settings)
        limits = ReadLimits(
            max_chars=settings.read_max_chars,
            max_source_chars=settings.read_max_source_chars,
            max_output_chars=settings.read_max_output_chars,
        )
        temporaries = TemporaryFiles(
            os.path.join(server.runtime_dir, "xcsh-temporary-folders.txt"), self.log
        )
        # Off the start-up path: the journal may name many folders.
        threading.Thread(
            target=self._remove_leftovers,
            args=(temporaries, time.time()),
            name="xcsh-leftovers",
            daemon=True,
        ).start()
        notebook_store = NotebookStore(
            server.contents_manager,
            limits,
            live=LiveDocuments(server.web_app.settings),
            guard=SaveGuard(server.contents_manager, temporaries, install=fast.uses("save_guard")),
            pause_collector=settings.pause_collector,
            cache_bytes=settings.notebook_cache_bytes,
            trim_memory=settings.trim_memory,
        )
        history = None
        if settings.activity_history:
            history = ActivityHistory(
                settings.activity_history_path
                or os.path.join(server.data_dir, "xcsh", "activity.sqlite"),
                root=server.root_dir,
                max_calls=settings.activity_history_max_calls,
                max_age=settings.activity_history_max_age,
            )
        activity = ActivityEvents(
            server.event_logger, fast_emit=fast.uses("event_emit"), history=history
        )
        artifact_store = self._artifact_store(settings, temporaries)
        execution = PythonService(
            server.kernel_manager,
            artifact_store=artifact_store,
            root_dir=server.root_dir,
            state_dir=os.path.join(server.runtime_dir, "xcsh-sessions"),
            log=self.log,
            base_url=server.base_url,
            max_output_bytes=settings.max_output_bytes,
            output_head_lines=settings.output_head_lines,
            output_tail_lines=settings.output_tail_lines,
            stream_interval=settings.stream_interval / 1000,
            max_sessions=settings.max_sessions,
            idle_timeout=settings.idle_timeout,
            cleanup_interval=settings.cleanup_interval,
            heartbeat_interval=settings.heartbeat_interval,
            session_manager=server.session_manager,
            fast_paths=fast,
            trim_memory=settings.trim_memory,
        )
        runs = RunRegistry()
        # One follower of the runs for every tool that runs code, and the runs endpoints.
        run_inputs = RunInputTool(runs)
        inplace = InPlaceService(
            NotebookKernels(execution.launcher, server.session_manager, log=self.log),
            artifact_store,
            log=self.log,
            max_output_bytes=settings.max_output_bytes,
            output_head_lines=settings.output_head_lines,
            output_tail_lines=settings.output_tail_lines,
            max_stored_bytes=settings.run_max_output_bytes,
            max_outputs=settings.run_max_outputs,
            stream_interval=settings.stream_interval / 1000,
        )
        # The files tool shares the notebook tool's save locks and regex search processes.
        regex = RegexWorkers(settings.find_timeout)
        workspace = Workspace(
            server.contents_manager,
            notebook_store.guard,
            FileLimits(max_chars=limits.max_chars),
            artifacts=artifact_store.folder,
        )
        run = InPlaceTool(
            inplace,
            notebook_store,
            activity,
            runs,
            follow_ups=run_inputs,
            input_timeout=settings.input_timeout,
            stream_interval=settings.stream_interval / 1000,
        )
        self.services = XcshServices(
            settings=settings,
            fast_paths=fast,
            notebook_store=notebook_store,
            artifact_store=artifact_store,
            execution=execution,
            activity=activity,
            notebook=NotebookTool(
                notebook_store,
                activity,
                settings.require_preconditions,
                artifact_store,
                NotebookFinder(notebook_store, limits, regex),
                kernel_logs=KernelLogs(inplace.kernels),
                run=run,
                kernels=execution.launcher,
            ),
            python=PythonTool(
                execution,
                activity,
                settings,
                runs,
                follow_ups=run_inputs,
                contents_manager=server.contents_manager,
                notebooks=NotebookScratch(inplace, notebook_store),
            ),
            artifacts=ArtifactTool(artifact_store),
            runs=runs,
            run_inputs=run_inputs,
            inplace=inplace,
            run=run,
            files=FilesTool(workspace, FileSearch(workspace, regex)),
            kernel=KernelTool(execution, inplace.kernels, notebook_store, runs),
            policies=self._policies(settings, activity),
        )
        self.settings["xcsh"] = self.services
        if settings.offer_to_jupyter_ai:
            entry = settings_entry(server_url(server), server_token(server))
            self.log.info("jupyter_xcsh: MCP endpoint %s", offer_to_jupyter_ai(server, entry))
        loop = getattr(server, "io_loop", None)  # set before extensions load (init_ioloop)
        if tuple(server_version[:2]) < (2, 16) and loop is not None:
            # Before 2.16 the server never calls ``_start_jupyter_server_extension``: the
            # extension starts its background work itself when the server's loop starts.
            loop.add_callback(self._start_jupyter_server_extension, server)

    def _policies(self, settings: XcshSettings, activity: ActivityEvents) -> PolicyGate:
        """The operator's rules (checked at start: a bad rule stops the server), the person's."""
        server = self.serverapp
        assert server is not None
        operator = [
            parse_rule(rule, "operator", where=f"c.XcshSettings.agent_policies[{k}]")
            for k, rule in enumerate(settings.agent_policies)
        ]
        store = PolicyStore(
            settings.policy_store_path or os.path.join(server.data_dir, "xcsh", "policies.json"),
            server.root_dir,
        )
        approvals = ApprovalRegistry(activity, presence_window=settings.approval_presence)
        return PolicyGate(
            operator, store, approvals, timeout=settings.approval_timeout, root=server.root_dir
        )

    def _artifact_store(self, settings: XcshSettings, temporaries: TemporaryFiles) -> ArtifactStore:
        """A folder of the root on the local disk, or through the contents manager if not.

        The root is local when the contents manager maps API paths to files (``_get_os_path``,
        as jupyter_server's file managers do); the notebook store and the save guard go by the
        same test.
        """
        assert self.serverapp is not None
        server = self.serverapp
        cm = server.contents_manager
        folder, max_bytes, max_age = (
            settings.artifacts_dir,
            settings.artifacts_max_bytes,
            settings.artifacts_max_age,
        )
        if getattr(cm, "_get_os_path", None) is not None:
            local = ArtifactStore(server.root_dir, folder, max_bytes, max_age, prune_interval=5.0)
            if local.folder == DEFAULT_FOLDER:
                # The earlier default folder's artifacts keep their ids in the new one.
                moved = local.adopt(LEGACY_FOLDER)
                if moved:
                    server.log.info(
                        "jupyter_xcsh: %d artifacts moved from %s/ to %s/",
                        moved,
                        LEGACY_FOLDER,
                        local.folder,
                    )
            return local
        loop = getattr(getattr(server, "io_loop", None), "asyncio_loop", None)
        store = ContentsArtifactStore(
            cm,
            folder,
            max_bytes,
            max_age,
            prune_interval=5.0,
            upload_max_bytes=settings.artifacts_upload_max_bytes,
            loop=loop,
            temporaries=temporaries,
        )
        server.log.info(
            "jupyter_xcsh: artifacts in %s through the contents manager (%s), at most %d bytes "
            "each (XcshSettings.artifacts_upload_max_bytes)",
            store.folder,
            type(cm).__name__,
            store.upload_max_bytes,
        )
        return store

    def _fast_paths(self, settings: XcshSettings) -> FastPaths:
        """Probe the fast paths the settings leave on; log them and the interventions on."""
        assert self.serverapp is not None
        server = self.serverapp
        fast = probe_fast_paths(
            {
                "message_decoding": probe_decoding,
                "socket_views": probe_socket_views,
                "event_emit": lambda: probe_event_emit(server.event_logger),
                "activity_watch": lambda: (
                    probe_activity_watch(server.kernel_manager) or probe_trait_store()
                ),
                "save_guard": lambda: probe_save_guard(server.contents_manager),
                "kernel_stream_bound": None,  # checked inside each kernel by the prelude
                "restarter_wait": lambda: probe_restarter(server.kernel_manager),
            },
            enabled=settings.fast_paths,
            disabled=settings.disabled_fast_paths,
            turned_off={
                name: setting
                for name, setting in INTERVENTION_SETTINGS.items()
                if not getattr(settings, setting)
            },
        )
        log = server.log  # the server's log, where operators look at startup
        log.info(fast.summary())
        on = [
            what
            for what, enabled in (
                ("collector pause during notebook edits", settings.pause_collector),
                ("malloc_trim after large calls", settings.trim_memory),
                ("startup heap frozen once started", settings.freeze_startup_heap),
                (f"malloc arenas limited to {self.heap_arenas}", self.heap_arenas is not None),
                ("kernels stamped when created", self.kernels_stamped),
                ("contents manager save guard", fast.uses("save_guard")),
                ("kernel activity-watch takeover", fast.uses("activity_watch")),
                ("session kernel stream bound", fast.uses("kernel_stream_bound")),
            )
            if enabled
        ]
        log.info(
            "jupyter_xcsh process-wide interventions on: %s (see XcshSettings)",
            ", ".join(on) or "none",
        )
        return fast

    def initialize_handlers(self) -> None:
        """Register every endpoint, each handler receiving the services through ``initialize``."""
        assert self.services is not None
        for module in ROUTE_MODULES:
            self.handlers.extend(module.routes(self.services))
        # Last: any other URL under /api/xcsh answers a JSON 404, as the API's errors are JSON.
        self.handlers.append((r"/api/xcsh(?:/.*)?", NotFoundHandler, {"services": self.services}))

    async def _start_jupyter_server_extension(self, serverapp: Any) -> None:
        """Once the server's event loop runs: artifact retention, and its heap frozen.

        Every extension has loaded by then (``XcshSettings.freeze_startup_heap``).
        """
        self._prune_task = asyncio.create_task(self._prune_artifacts())
        assert self.services is not None
        if self.services.settings.freeze_startup_heap:
            frozen = freeze_startup_heap()
            serverapp.log.info(
                "jupyter_xcsh: %d objects of the server's startup heap frozen out of the "
                "garbage collector's full collections (XcshSettings.freeze_startup_heap)",
                frozen,
            )

    def _remove_leftovers(self, temporaries: TemporaryFiles, started: float) -> None:
        """Remove the temporary files crashed servers left (run on a thread of its own)."""
        try:
            removed = temporaries.remove_leftovers(started)
        except OSError as e:
            self.log.warning("xcsh: could not remove leftover temporary files: %s", e)
            return
        for path in removed:
            self.log.info("xcsh: removed %s, left by a server that stopped mid-save", path)

    async def _prune_artifacts(self) -> None:
        assert self.services is not None
        store = self.services.artifact_store
        while True:
            try:
                # Off the event loop: the folder may hold many files.
                removed = await asyncio.to_thread(store.prune)
            except OSError as e:
                self.log.warning("Could not prune artifacts in %s: %s", store.folder, e)
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
        if self.services is not None:
            # Agents shown in collaboration rooms leave them (and their renewal timers stop).
            self.services.notebook_store.presence.close()
            # The find action's regex search processes.
            await self.services.notebook.finder.close()
            # Runs in place leave their kernels to their sessions: only connections close.
            await self.services.inplace.close()
            # Every kernel the python tool started goes with the server; bounded, not forever.
            try:
                await asyncio.wait_for(self._close_execution(self.services), 30)
            except TimeoutError:
                self.log.warning("jupyter_xcsh: python tool kernels did not stop within 30 s")
            # Artifacts still on their way to the contents manager (the calls above ended).
            if not await asyncio.to_thread(self.services.artifact_store.close, 30):
                self.log.warning("jupyter_xcsh: artifact uploads did not end within 30 s")
            # Last: the events of the calls that just ended go out while the loop still runs.
            await self.services.activity.close()
        self.log.debug("jupyter_xcsh stopped")

    @staticmethod
    async def _close_execution(services: XcshServices) -> None:
        # Calls waiting for input end first (interrupted), then the kernels go (ending the
        # calls still running with "Session was shut down"), then any run left.
        await services.runs.close(waiting_only=True)
        await services.execution.close()
        await services.runs.close()
