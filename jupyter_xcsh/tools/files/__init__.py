"""The files tool: folders and text files of the contents root, through the contents manager."""

from jupyter_xcsh.tools.files.request import ACTIONS, FilesRequest, parse_request
from jupyter_xcsh.tools.files.workspace import FileLimits, Workspace

__all__ = ["ACTIONS", "FileLimits", "FilesRequest", "Workspace", "parse_request"]
