"""A request's ``timeout``, as both tools take it: seconds, clamped to one range (no HTTP here)."""

from __future__ import annotations

import math
from typing import Any

from ...errors import InvalidRequestError

__all__ = ["DEFAULT_TIMEOUT", "TIMEOUT_RANGE", "parse_timeout"]

DEFAULT_TIMEOUT = 30.0
TIMEOUT_RANGE = (1.0, 600.0)


def parse_timeout(body: dict[str, Any]) -> float:
    """A request's ``timeout``: a finite number of seconds, clamped to ``TIMEOUT_RANGE``."""
    timeout = body.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise InvalidRequestError("timeout must be a number of seconds")
    try:
        seconds = float(timeout)
    except OverflowError:  # an integer beyond any float
        seconds = math.inf
    if not math.isfinite(seconds):
        raise InvalidRequestError("timeout must be a finite number of seconds")
    return min(max(seconds, TIMEOUT_RANGE[0]), TIMEOUT_RANGE[1])
