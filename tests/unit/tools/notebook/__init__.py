"""Unit tests of ``jupyter_xcsh.tools.notebook``."""
