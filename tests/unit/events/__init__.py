"""Unit tests of ``jupyter_xcsh.events``."""
