"""The stdin policy alone (no kernel): how each mode answers a prompt, and what it echoes."""

from __future__ import annotations

import asyncio
import math

import pytest

from jupyter_xcsh.errors import ConflictError, InvalidRequestError
from jupyter_xcsh.execution.kernel.stdin import (
    EOF,
    StdinPolicy,
    StdinSpec,
    parse_stdin,
    stdin_notice,
)


class Kernel:
    """What a prompt's handler sees: the replies sent and the text echoed."""

    def __init__(self):
        self.replies: list[str] = []
        self.echoed = ""

    def ask(self, policy, prompt="name? ", password=False, cell=0):
        policy.prompt(
            cell,
            {"prompt": prompt, "password": password},
            reply=self.replies.append,
            echo=self.echo,
        )

    def echo(self, text):
        self.echoed += text


def test_stdin_is_a_mode_or_a_list_of_answers():
    assert parse_stdin("notice") == StdinSpec()
    assert parse_stdin("ask").asks
    assert parse_stdin(["a", ""]) == StdinSpec("answers", ("a", ""))
    for bad in (None, "yes", 1, ["a", 2], {"mode": "eof"}):
        with pytest.raises(InvalidRequestError):
            parse_stdin(bad)


def test_notice_sends_end_of_file_and_fails_the_cell():
    policy, kernel = StdinPolicy(StdinSpec()), Kernel()
    kernel.ask(policy, cell=2)
    assert kernel.replies == [EOF]
    assert kernel.echoed == stdin_notice("name? ") + "\n"
    assert policy.failed_cells == {2}


def test_the_notice_is_one_line_naming_the_prompt_and_both_ways_to_answer():
    assert stdin_notice("name? ") == (
        "[stdin] The code asked for input (prompt 'name? ') and got end of file: no answer was "
        'given. To answer, run it again with stdin: ["answer", ...] (the answers, in order) or '
        'stdin: "ask" (answer when it asks).'
    )
    assert "\n" not in stdin_notice("a\nb? ")
    assert stdin_notice("").startswith("[stdin] The code asked for input and got end of file")
    assert "the 1 answer given was used up" in stdin_notice("more? ", 1)
    assert "the 2 answers given were used up" in stdin_notice("more? ", 2)


async def test_a_coloured_prompt_is_named_as_plain_text():
    for spec in (StdinSpec(), parse_stdin("ask")):
        policy, kernel = StdinPolicy(spec, run_id="r"), Kernel()
        kernel.ask(policy, "\x1b[1mname\x1b[0m? ")
        if policy.waiting is not None:
            assert policy.waiting.describe("r")["prompt"] == "name? "
            assert "(prompt 'name? ')" in policy.waiting.instructions("r", 300)
            policy.abandon()
        else:
            assert kernel.echoed == stdin_notice("name? ") + "\n"


def test_eof_sends_end_of_file_and_echoes_the_prompt():
    policy, kernel = StdinPolicy(parse_stdin("eof")), Kernel()
    kernel.ask(policy)
    assert (kernel.replies, kernel.echoed, policy.failed_cells) == ([EOF], "name? \n", set())


def test_answers_are_given_in_order_then_the_notice():
    policy, kernel = StdinPolicy(parse_stdin(["bob", "s3cret"])), Kernel()
    kernel.ask(policy)
    kernel.ask(policy, "password? ", password=True)
    kernel.ask(policy, "more? ", cell=1)
    assert kernel.replies == ["bob", "s3cret", EOF]
    assert kernel.echoed == "name? bob\npassword? \n" + stdin_notice("more? ", 2) + "\n"
    assert policy.failed_cells == {1}


async def test_ask_holds_the_prompt_until_it_is_answered():
    policy, kernel = StdinPolicy(parse_stdin("ask"), run_id="r"), Kernel()
    changes = []
    policy.listen(lambda: changes.append(policy.waiting is not None))

    kernel.ask(policy, "password? ", password=True)
    assert kernel.replies == [] and policy.waiting is not None
    assert policy.waiting.describe("r") == {"runId": "r", "prompt": "password? ", "password": True}
    assert math.isinf(policy.delay())

    policy.answer("hunter2")
    assert kernel.replies == ["hunter2"]
    assert kernel.echoed == "password? \n"  # the answer itself is never echoed
    assert (policy.waiting, policy.last_end, changes) == (None, "answered", [True, False])
    assert 0 <= policy.delay() < 60
    with pytest.raises(ConflictError, match="Run r is not waiting for input"):
        policy.answer("again")


async def test_an_unanswered_prompt_gets_end_of_file_after_the_input_timeout():
    policy, kernel = StdinPolicy(parse_stdin("ask"), input_timeout=0.05), Kernel()
    ended = asyncio.Event()
    policy.listen(ended.set)
    kernel.ask(policy)
    ended.clear()
    await asyncio.wait_for(ended.wait(), 30)
    assert kernel.replies == [EOF] and policy.last_end == "timeout"
    assert kernel.echoed.endswith("[stdin] No answer within 0.05 seconds: end of file sent.\n")


async def test_an_abandoned_prompt_is_not_answered():
    policy, kernel = StdinPolicy(parse_stdin("ask"), input_timeout=0.05), Kernel()
    kernel.ask(policy)
    policy.abandon()
    await asyncio.sleep(0.1)  # past the input timeout: its timer was cancelled
    assert (kernel.replies, policy.last_end) == ([], "ended")


async def test_a_prompt_waits_for_its_barrier_and_not_for_a_cell_that_ended():
    policy, kernel = StdinPolicy(parse_stdin("eof")), Kernel()
    order = []

    async def barrier():
        order.append("barrier")

    def prompt(running):
        return policy.prompt_in_order(
            barrier,
            lambda: running,
            0,
            {"prompt": "x? "},
            reply=lambda v: order.append(("reply", v)),
            echo=kernel.echo,
        )

    await prompt(True)
    await prompt(False)
    assert order == ["barrier", ("reply", EOF), "barrier"]
