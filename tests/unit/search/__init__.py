"""Unit tests of ``jupyter_xcsh.search``."""
