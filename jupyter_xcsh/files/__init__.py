"""The files tool: folders and text files of the contents root, through the contents manager."""

from .request import ACTIONS, FilesRequest, parse_request
from .workspace import FileLimits, Workspace

__all__ = ["ACTIONS", "FileLimits", "FilesRequest", "Workspace", "parse_request"]
