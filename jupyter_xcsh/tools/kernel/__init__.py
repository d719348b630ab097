"""The kernel tool's parts: its request, the namespace probe run in a kernel, and its targets."""
