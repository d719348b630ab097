"""Which lines of cell sources match a pattern: the search behind the notebook tool's ``find``.

Pure and standard-library only, because this module also runs on its own as a child process
(:func:`main`): Python's ``re`` has no timeout and holds the GIL while it matches, so a pattern
that backtracks catastrophically (``(a+)+$`` on a long line of ``a``) would freeze the
server's event loop for minutes, and a thread cannot be stopped. Regex searches therefore run
in a child the server kills at its deadline (``regex_workers.py``); literal searches
(``str.find``, linear) run in the server.

A source's lines are what splitting it on newlines gives (nbformat's own lines), numbered from
1, without their newline; a pattern matches a line when it occurs in it (``re.search``), never
across lines.
"""

from __future__ import annotations

import json
import re
import signal
import sys
from collections.abc import Sequence
from typing import Any

#: One cell's result: ``[position in the texts searched, number of matching lines,
#: [[line number, start, end] of the first matching lines]]``; ``start``/``end`` delimit the
#: line's first match, in characters.
Hit = list[Any]


def search_texts(texts: Sequence[str], pattern: str, regex: bool, max_lines: int) -> list[Hit]:
    """Search every line of every text; return one ``Hit`` per text with a matching line.

    Every matching line is counted; only the first ``max_lines`` of a text are located.
    """
    compiled = re.compile(pattern) if regex else None
    hits: list[Hit] = []
    for position, text in enumerate(texts):
        if compiled is None and pattern not in text:
            continue  # most cells: one linear scan, no split
        count = 0
        lines: list[list[int]] = []
        for number, line in enumerate(text.split("\n"), 1):
            if compiled is not None:
                match = compiled.search(line)
                if match is None:
                    continue
                span = match.span()
            else:
                start = line.find(pattern)
                if start < 0:
                    continue
                span = (start, start + len(pattern))
            count += 1
            if len(lines) < max_lines:
                lines.append([number, *span])
        if count:
            hits.append([position, count, lines])
    return hits


class _Expired(Exception):
    """The worker's own deadline passed (a second guard behind the server's kill)."""


def _expire(signum: int, frame: Any) -> None:
    raise _Expired


def _serve(request: dict[str, Any]) -> dict[str, Any]:
    timeout = float(request.get("timeout", 0))
    # ``re`` checks for signals while it matches, so an alarm stops a runaway search even when
    # the server that should kill this process is gone (no orphan spins forever).
    alarm = timeout > 0 and hasattr(signal, "setitimer")
    if alarm:
        signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        hits = search_texts(request["texts"], request["pattern"], True, request["max_lines"])
    except _Expired:
        return {"error": "timeout"}
    except Exception as e:  # any failure is an answer, never a dead worker
        return {"error": f"{type(e).__name__}: {e}"}
    finally:
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
    return {"hits": hits}


def main() -> None:
    """Serve regex searches: one JSON request per line on stdin, one JSON answer per line.

    Says ``{"ready": true}`` first; ends when stdin closes (the server went away).
    """
    if hasattr(signal, "setitimer"):
        signal.signal(signal.SIGALRM, _expire)
    reader, writer = sys.stdin.buffer, sys.stdout.buffer
    writer.write(b'{"ready": true}\n')
    writer.flush()
    for line in reader:
        writer.write(json.dumps(_serve(json.loads(line))).encode("ascii") + b"\n")
        writer.flush()


if __name__ == "__main__":
    main()
