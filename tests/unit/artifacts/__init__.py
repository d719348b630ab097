"""Unit tests of ``jupyter_xcsh.artifacts``."""
