"""One call path per tool, shared by the REST handlers, the MCP handler and the lab."""

from jupyter_xcsh.calls.caller import Caller
from jupyter_xcsh.tools.artifact.tool import ArtifactTool
from jupyter_xcsh.tools.notebook.tool import NotebookTool
from jupyter_xcsh.tools.python.tool import PythonTool

__all__ = ["ArtifactTool", "Caller", "NotebookTool", "PythonTool"]
