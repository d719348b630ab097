r"""How a call answers the kernel's prompts for input, whatever runs the code.

The contract: docs/developers/contract.md §8.

A kernel that calls ``input()``, ``getpass()`` or a debugger sends an ``input_request`` and
blocks until an ``input_reply`` arrives. An agent's call cannot leave it blocked, so a
``StdinPolicy`` answers every prompt of one call, as the request's ``stdin`` says:

- ``"notice"`` (default, docs/developers/contract.md §8.1): one line saying how to answer
  (``stdin_notice``), end-of-file, and the cell fails with exit code 1 (its ``EOFError`` shows
  no traceback);
- ``"eof"``: end-of-file at once (``EOFError`` in the code);
- a list of strings: the answers in order, then ``"notice"``;
- ``"ask"``: the call stops waiting for an answer (the tool's ``run_id`` + ``answer``, or
  ``POST /api/xcsh/runs/<id>/input``; over MCP, elicitation when the client offers it); the
  kernel keeps waiting, end-of-file after ``input_timeout`` seconds.

End-of-file is the ``input_reply`` value ``"\x04"``, on which ipykernel's ``input()`` raises
``EOFError`` (a protocol-level answer: no prelude needed, so it works for runs in place too).
The prompt and each answer are echoed into the cell's output as a terminal would show them,
except a password prompt's answer, which is never written anywhere.

The policy knows neither kernels nor HTTP: whoever handles the kernel's messages calls
``prompt`` with a way to reply and a way to echo, and waits longer by ``delay()`` seconds.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from jupyter_xcsh.errors import ConflictError, InvalidRequestError
from jupyter_xcsh.outputs.view import terminal_text

__all__ = [
    "EOF",
    "Prompt",
    "StdinPolicy",
    "StdinSpec",
    "parse_stdin",
    "stdin_notice",
]

#: The ``input_reply`` value on which ipykernel's ``input()`` raises ``EOFError``.
EOF = "\x04"


def stdin_notice(prompt: str, used: int = 0) -> str:
    """The line written when the code asks for input the call does not provide (§8.1).

    ``used`` is the number of answers the call gave, all used up by earlier prompts.
    """
    asked = f" (prompt {prompt!r})" if prompt else ""
    if used:
        why = f"the {used} answer{'s' if used > 1 else ''} given {'were' if used > 1 else 'was'}"
        why += " used up"
    else:
        why = "no answer was given"
    return (
        f"[stdin] The code asked for input{asked} and got end of file: {why}. To answer, run "
        'it again with stdin: ["answer", ...] (the answers, in order) or stdin: "ask" (answer '
        "when it asks)."
    )


MODES = ("notice", "eof", "ask")


@dataclass(frozen=True)
class StdinSpec:
    """The validated ``stdin`` field of a request: a mode, or answers to give in order."""

    mode: str = "notice"
    answers: tuple[str, ...] = ()

    @property
    def asks(self) -> bool:
        """Whether a prompt makes the call stop and wait for an answer."""
        return self.mode == "ask"

    @property
    def reads(self) -> bool:
        """Whether the code's prompts get answers (given or asked): its lab events say so."""
        return self.mode in ("answers", "ask")


def parse_stdin(value: Any) -> StdinSpec:
    """Validate a request's ``stdin``; ``InvalidRequestError`` saying what is wrong."""
    if isinstance(value, str) and value in MODES:
        return StdinSpec(mode=value)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return StdinSpec(mode="answers", answers=tuple(value))
    raise InvalidRequestError(
        'stdin must be "notice", "eof", "ask" or a list of strings (the answers, in order)'
    )


@dataclass
class Prompt:
    """A prompt the kernel is waiting on, in ``"ask"`` mode, until it is answered."""

    cell_index: int
    prompt: str
    password: bool
    reply: Callable[[str], None]
    echo: Callable[[str], None]
    #: What the call has produced so far (the running cell's output), for a partial result.
    snapshot: Callable[[], Any]
    since: float = field(default_factory=time.monotonic)

    def describe(self, run_id: str | None) -> dict[str, Any]:
        """The ``awaitingInput`` of a result: ``{runId, prompt, password}``."""
        return {"runId": run_id, "prompt": self.prompt, "password": self.password}

    def instructions(self, run_id: str | None, input_timeout: float) -> str:
        """The line ending a partial result's text: what to do next."""
        kind = "a password" if self.password else "input"
        return (
            f"[stdin] The kernel is waiting for {kind} (prompt {self.prompt!r}). Answer by "
            f'calling this tool again with {{"run_id": "{run_id}", "answer": "..."}} (over '
            f'REST: POST /api/xcsh/runs/{run_id}/input {{"value": "..."}}); unanswered, it '
            f"gets end of file after {input_timeout:g} seconds."
        )


class StdinPolicy:
    """Answer the prompts of one call (one ``input_request`` at a time, as kernels send them).

    Parameters
    ----------
    spec
        What the request asked for.
    input_timeout
        Seconds an ``"ask"`` prompt waits for its answer before end-of-file.
    run_id
        The id answers are posted to (``"ask"`` only).

    """

    def __init__(self, spec: StdinSpec, input_timeout: float = 300.0, run_id: str | None = None):
        self.spec = spec
        self.input_timeout = input_timeout
        self.run_id = run_id
        self.answers = deque(spec.answers)
        #: Cells that asked for input the call did not provide: they fail (exit code 1).
        self.failed_cells: set[int] = set()
        self.waiting: Prompt | None = None
        #: How the last wait ended: ``answered``, ``timeout`` (end-of-file sent) or ``ended``.
        self.last_end: str | None = None
        #: The call's result so far, set by whoever runs the call (for a partial result).
        self.partial_result: Callable[[], Awaitable[dict[str, Any]]] | None = None
        self._listeners: list[Callable[[], None]] = []
        self._paused = 0.0
        self._timer: asyncio.TimerHandle | None = None

    def listen(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` whenever a prompt starts or stops waiting; returns an unlisten."""
        self._listeners.append(callback)
        return lambda: self._listeners.remove(callback)

    # -- the kernel's side --------------------------------------------------------------
    def prompt(
        self,
        cell_index: int,
        content: dict[str, Any],
        *,
        reply: Callable[[str], None],
        echo: Callable[[str], None],
        snapshot: Callable[[], Any] = lambda: None,
    ) -> None:
        """Answer (or, asking, hold) the kernel's ``input_request`` ``content``."""
        text = str(content.get("prompt", ""))
        password = bool(content.get("password", False))
        if self.waiting is not None:
            self.abandon()  # a kernel asks once at a time: the previous prompt is over
        if self.spec.mode == "eof":
            echo(text + "\n")
            reply(EOF)
        elif self.answers:
            value = self.answers.popleft()
            echo(text + ("\n" if password else value + "\n"))
            reply(value)
        elif self.spec.asks:
            echo(text)
            # What the caller is told of the prompt is plain text (it may be coloured).
            shown = terminal_text(text)
            self.waiting = Prompt(cell_index, shown, password, reply, echo, snapshot)
            if self.input_timeout > 0 and math.isfinite(self.input_timeout):
                loop = asyncio.get_running_loop()
                self._timer = loop.call_later(self.input_timeout, self.expire)
            self._changed()
        else:
            # notice, or the given answers ran out: the default behaviour, never a hang.
            echo(stdin_notice(terminal_text(text), len(self.spec.answers)) + "\n")
            reply(EOF)
            self.failed_cells.add(cell_index)

    @property
    def paused(self) -> float:
        """Seconds spent waiting for answers in finished waits."""
        return self._paused

    async def prompt_in_order(
        self,
        barrier: Callable[[], Awaitable[object]],
        still_running: Callable[[], bool],
        cell_index: int,
        content: dict[str, Any],
        *,
        reply: Callable[[str], None],
        echo: Callable[[str], None],
        snapshot: Callable[[], Any] = lambda: None,
    ) -> None:
        """``prompt``, once ``barrier()`` (e.g. ``KernelConnection.iopub_barrier``) has passed.

        The prompt travels on stdin and may overtake the output printed just before it on
        IOPub: waiting for the barrier puts the echo after that output, and a partial result
        holds it. Nothing is done if the cell is over meanwhile (``still_running()`` false).
        """
        await barrier()
        if still_running():
            self.prompt(cell_index, content, reply=reply, echo=echo, snapshot=snapshot)

    def delay(self) -> float:
        """Seconds spent waiting for answers so far (infinite while waiting): add to deadlines."""
        if self.waiting is not None:
            return math.inf
        return self._paused

    # -- the caller's side --------------------------------------------------------------
    def answer(self, value: str) -> None:
        """Send the answer to the waiting prompt; ``ConflictError`` when none is waiting."""
        waiting = self.waiting
        if waiting is None:
            raise ConflictError(f"Run {self.run_id} is not waiting for input")
        self._resume("answered")
        waiting.echo("\n" if waiting.password else value + "\n")
        waiting.reply(value)

    def expire(self) -> None:
        """End-of-file for a prompt unanswered past ``input_timeout``."""
        waiting = self.waiting
        if waiting is None:
            return
        self._resume("timeout")
        seconds = f"{self.input_timeout:g}"
        waiting.echo(f"\n[stdin] No answer within {seconds} seconds: end of file sent.\n")
        waiting.reply(EOF)

    def refuse(self, notice: str) -> None:
        """End-of-file for the waiting prompt, with ``notice`` saying why in the output."""
        waiting = self.waiting
        if waiting is None:
            raise ConflictError(f"Run {self.run_id} is not waiting for input")
        self._resume("ended")
        waiting.echo(f"\n{notice}\n")
        waiting.reply(EOF)

    def abandon(self) -> None:
        """Forget the waiting prompt without answering it (interrupted, or the kernel is gone)."""
        if self.waiting is not None:
            self._resume("ended")

    def _resume(self, how: str) -> None:
        waiting, self.waiting = self.waiting, None
        self.last_end = how
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if waiting is not None:
            self._paused += time.monotonic() - waiting.since
        self._changed()

    def _changed(self) -> None:
        for callback in list(self._listeners):
            callback()
