"""Unit tests of ``jupyter_xcsh.execution.kernel``."""
