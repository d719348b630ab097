"""Tests through a real server's API, one folder per tool."""
