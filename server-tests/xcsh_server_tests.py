"""A pytest plugin for jupyter_server's own tests: every server they start has jupyter_xcsh loaded.

``scripts/server-tests.sh`` runs jupyter_server's REST API tests with it, so that a change the
extension makes to the server it lives in fails them. The extension is added to
``ServerApp.jpserver_extensions`` in whichever ``jp_server_config`` a test gets (pytest-jupyter's
or a test module's own, parametrized one); failures to link or load it are raised, not logged;
before each test that has a server runs, the extension is checked to be linked and loaded
(its services built and published in the web application's settings), and a run in which no
test had a server fails.

``XCSH_SERVER_TESTS_EXTENSION=0`` is the control run: the same tests, the extension not loaded
(checked the same way).

Every server error (5xx) answered during the run is listed at its end, with the test it came
from, that test's outcome and, for a test that did not pass, the server's traceback: an
uncaught exception in a handler (tornado's ``Uncaught exception``) or a 5xx ``HTTPError``, as
tornado logs them. Some tests expect one (a kernel that fails to start); a 500 in a failing
test then says what it was without digging in the captured logs. A test that failed after one
of its kernels could not bind a port (``Address already in use``: another process on the
machine took the port between jupyter_client choosing it and the kernel binding it) is named as
such: that kernel died at start, with or without the extension (a websocket to it answers 500).

Deselected, with or without the extension: the tests parametrized with the deprecated
synchronous ``MappingKernelManager``. Its kernels' ZMQ streams live on jupyter_core's
process-wide ``run_sync`` event loop (a thread that outlives each test's server), where a stream
still registered when a test's server destroys its ZMQ context keeps its file descriptor's
entry (under the tests' ``-W error``, pyzmq's "Unregistering FD after closing socket" warning
aborts the unregistering). A later stream whose socket gets that descriptor then fails with
``ValueError: fd N added twice``: in a kernel start (HTTP 500), or in a websocket's ``open``
after the server has counted the connection, which is then never uncounted
(``sessions/test_api.py::test_restart_kernel``: "connections" stays 1). Seen in control runs
without the extension as with it (issue 29).
"""

from __future__ import annotations

import logging
import os
import traceback
from dataclasses import dataclass
from typing import Any

import pytest

EXTENSION = "jupyter_xcsh"
#: The deprecated synchronous kernel manager whose parametrizations are deselected.
SYNC_KERNEL_MANAGER = "jupyter_server.services.kernels.kernelmanager.MappingKernelManager"

LOADED = os.environ.get("XCSH_SERVER_TESTS_EXTENSION", "1") != "0"

_servers_checked = 0
#: What a kernel prints when a port it was given is taken (a ZMQError at bind).
PORT_TAKEN = "Address already in use"


@dataclass
class ServerError:
    """One 5xx answer: the test it happened in, what tornado logged, its traceback if any."""

    test: str
    message: str
    traceback: str


class ServerErrors(logging.Handler):
    """Collect the 5xx answers tornado logs, each with the test running then."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.test = "(no test)"
        self.errors: list[ServerError] = []
        self.outcomes: dict[str, str] = {}
        #: Failed tests one of whose kernels could not bind its port.
        self.port_races: set[str] = set()

    def emit(self, record: logging.LogRecord) -> None:
        """Keep uncaught exceptions and 5xx ``HTTPError``s; ignore everything else.

        Told apart by tornado's formats, not by logger name: jupyter_server renames tornado's
        loggers after its own (``ServerApp``).
        """
        args = record.args if isinstance(record.args, tuple) else ()
        uncaught = str(record.msg).startswith("Uncaught exception") and bool(record.exc_info)
        http_error = record.msg == "%d %s: %s" and bool(args) and isinstance(args[0], int)
        if not uncaught and not (http_error and args[0] >= 500):
            return
        message = record.getMessage().splitlines()[0]
        trace = "".join(traceback.format_exception(*record.exc_info)) if record.exc_info else ""
        if trace:
            message += f": {trace.rstrip().splitlines()[-1]}"
        self.errors.append(ServerError(self.test, message, trace))


_errors = ServerErrors()


def pytest_configure(config: pytest.Config) -> None:
    """Listen to tornado's loggers for the whole run."""
    for name in ("tornado.application", "tornado.general"):
        logging.getLogger(name).addHandler(_errors)


def pytest_runtest_logstart(nodeid: str) -> None:
    """The test whose servers answer from now on."""
    _errors.test = nodeid


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """A test's outcome: failed if any phase failed."""
    if report.outcome != "passed" or report.nodeid not in _errors.outcomes:
        _errors.outcomes[report.nodeid] = report.outcome
    if report.failed and PORT_TAKEN in report.capstderr:
        _errors.port_races.add(report.nodeid)


@pytest.fixture(autouse=True)
def _xcsh_enabled(jp_server_config: Any) -> None:
    """Enable (or, in the control run, disable) the extension before the test's server starts."""
    server = jp_server_config.setdefault("ServerApp", {})
    server.setdefault("jpserver_extensions", {})[EXTENSION] = LOADED
    server["reraise_server_extension_failures"] = True


def extension_loaded(serverapp: Any) -> bool:
    """Whether the extension is linked and loaded in ``serverapp`` (its services published)."""
    manager = serverapp.extension_manager
    package = manager.extensions.get(EXTENSION)
    if package is None or not package.enabled or not manager.linked_extensions.get(EXTENSION):
        return False
    services = [getattr(app, "services", None) for app in manager.extension_apps[EXTENSION]]
    published = serverapp.web_app.settings.get("xcsh")
    return published is not None and any(published is s for s in services)


def _kernel_manager_class(item: pytest.Item) -> Any:
    callspec = getattr(item, "callspec", None)
    config = callspec.params.get("jp_server_config") if callspec is not None else None
    if not isinstance(config, dict):
        return None
    return (config.get("ServerApp") or {}).get("kernel_manager_class")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the synchronous ``MappingKernelManager`` parametrizations (module docstring)."""
    kept = [item for item in items if _kernel_manager_class(item) != SYNC_KERNEL_MANAGER]
    if len(kept) < len(items):
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    """Before a test that has a server runs, check the extension is (or is not) loaded in it."""
    global _servers_checked
    serverapp = getattr(item, "funcargs", {}).get("jp_serverapp")
    if serverapp is not None:
        loaded = extension_loaded(serverapp)
        assert loaded == LOADED, f"{EXTENSION} {'not ' if LOADED else ''}loaded in the server"
        _servers_checked += 1


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail a run in which no test had a server (nothing was checked)."""
    if session.testscollected and not _servers_checked and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Say in how many tests' servers the extension was loaded, and list every 5xx answered."""
    state = "loaded" if LOADED else "not loaded (control run)"
    terminalreporter.write_line(f"{EXTENSION} {state} in the server of {_servers_checked} tests")
    errors = _errors.errors
    terminalreporter.write_line(f"server errors (5xx) answered: {len(errors)}")
    for error in errors:
        outcome = _errors.outcomes.get(error.test, "?")
        terminalreporter.write_line(f"  {error.test} [{outcome}]: {error.message}")
        if outcome != "passed" and error.traceback:
            for line in error.traceback.rstrip().splitlines():
                terminalreporter.write_line(f"    {line}")
    for test in sorted(_errors.port_races):
        terminalreporter.write_line(
            f"{test} failed after a kernel of its server could not bind its port ({PORT_TAKEN}:"
            " another process took it after jupyter_client chose it)"
        )
