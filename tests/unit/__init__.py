"""Tests of one module or a few, without a server (the package's layout mirrored)."""
