"""One call path per tool, shared by the REST handlers, the MCP handler and the lab."""

from .artifacts import ArtifactTool
from .caller import Caller
from .notebook import NotebookTool
from .python import PythonTool

__all__ = ["ArtifactTool", "Caller", "NotebookTool", "PythonTool"]
