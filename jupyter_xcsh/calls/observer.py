"""Progress callbacks of an execution, so streams and lab events need no change to the engine."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jupyter_xcsh.execution.kernel.stdin import StdinPolicy

__all__ = ["ExecutionObserver", "ObserverGroup", "report_input"]


class ExecutionObserver:
    """Receives the progress of one python tool call; every method does nothing by default.

    Callbacks run on the server's event loop and must not block.
    """

    def call_started(self, call: dict[str, Any]) -> None:
        """The call was accepted: ``call`` holds its session, mode and cell titles."""

    def cell_status(self, index: int, status: str) -> None:
        """Cell ``index`` went ``pending``/``running``/``complete``/``error``."""

    def chunk(self, index: int, text: str) -> None:
        """Cell ``index`` printed ``text`` (coalesced by the stream interval)."""

    def display(self, index: int, kind: str, data: Any) -> None:
        """Cell ``index`` displayed an ``image`` (``{mimeType, data}``) or a ``json`` value."""

    def status_event(self, index: int, event: dict[str, Any]) -> None:
        """Cell ``index`` emitted a status event through ``status(op, **data)``."""

    def input_requested(self, index: int, prompt: dict[str, Any]) -> None:
        """Cell ``index`` waits for an answer: ``prompt`` is ``{runId, prompt, password}``."""

    def input_ended(self, how: str) -> None:
        """The prompt stopped waiting: ``answered``, ``timeout`` (end-of-file) or ``ended``."""

    def call_finished(self, result: dict[str, Any]) -> None:
        """The call ended with ``result`` (the response body)."""


class ObserverGroup(ExecutionObserver):
    """Fan one call's progress out to several observers (e.g. an NDJSON stream and lab events)."""

    def __init__(self, *observers: ExecutionObserver) -> None:
        self.observers = observers

    def call_started(self, call: dict[str, Any]) -> None:  # noqa: D102
        for observer in self.observers:
            observer.call_started(call)

    def cell_status(self, index: int, status: str) -> None:  # noqa: D102
        for observer in self.observers:
            observer.cell_status(index, status)

    def chunk(self, index: int, text: str) -> None:  # noqa: D102
        for observer in self.observers:
            observer.chunk(index, text)

    def display(self, index: int, kind: str, data: Any) -> None:  # noqa: D102
        for observer in self.observers:
            observer.display(index, kind, data)

    def status_event(self, index: int, event: dict[str, Any]) -> None:  # noqa: D102
        for observer in self.observers:
            observer.status_event(index, event)

    def input_requested(self, index: int, prompt: dict[str, Any]) -> None:  # noqa: D102
        for observer in self.observers:
            observer.input_requested(index, prompt)

    def input_ended(self, how: str) -> None:  # noqa: D102
        for observer in self.observers:
            observer.input_ended(how)

    def call_finished(self, result: dict[str, Any]) -> None:  # noqa: D102
        for observer in self.observers:
            observer.call_finished(result)


def report_input(stdin: StdinPolicy, observer: ExecutionObserver) -> None:
    """Tell a call's observer that one of its prompts started or stopped waiting for an answer."""
    waiting = stdin.waiting
    if waiting is not None:
        observer.input_requested(waiting.cell_index, waiting.describe(stdin.run_id))
    else:
        observer.input_ended(stdin.last_end or "ended")
