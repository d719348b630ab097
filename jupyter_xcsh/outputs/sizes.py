"""Byte counts written for people, one way across the package (notices, image markers, views)."""

from __future__ import annotations

__all__ = ["format_size"]


def format_size(n: int) -> str:
    """Format a byte count as the tool's notices show it: ``512B``, ``50.0KB``, ``1.5MB``.

    One decimal from a kibibyte up, binary units, no space (the truncation notice of
    docs/developers/contract.md §7.1 reads ``(50.0KB limit)``).
    """
    if n < 1024:
        return f"{n}B"
    if n < 1024**2:
        return f"{n / 1024:.1f}KB"
    if n < 1024**3:
        return f"{n / 1024**2:.1f}MB"
    return f"{n / 1024**3:.1f}GB"
