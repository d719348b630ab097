"""Unit tests of ``jupyter_xcsh.notebook``."""
