"""The python tool's execution engine: kernel sessions on the server's own kernel manager."""

from .control import CallCancelledError, CallControl
from .observer import ExecutionObserver
from .request import PythonRequest, parse_python_request
from .runner import ExecutionService

__all__ = [
    "CallCancelledError",
    "CallControl",
    "ExecutionObserver",
    "ExecutionService",
    "PythonRequest",
    "parse_python_request",
]
