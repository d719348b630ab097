"""The python tool's engine: calls on sessions of kernels the tool starts and owns."""
