"""Tests of jupyter-xcsh."""
