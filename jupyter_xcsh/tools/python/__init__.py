"""The python tool: code run on the server's kernels in persistent sessions."""
