"""Unit tests of ``jupyter_xcsh.runs``."""
