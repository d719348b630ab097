"""Unit tests of ``jupyter_xcsh.outputs``."""
