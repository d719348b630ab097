"""The pause of the cyclic garbage collector around notebook file work (issue 14)."""

from __future__ import annotations

import gc
import threading

import pytest

from jupyter_xcsh.notebook.storage import gcpause
from jupyter_xcsh.notebook.storage.gcpause import CollectorPause


class Timers:
    """A scheduler whose timers the test fires."""

    def __init__(self) -> None:
        self.pending: list[tuple[float, object]] = []
        self.cancelled = 0

    def __call__(self, delay, action):
        entry = (delay, action)
        self.pending.append(entry)

        def cancel() -> None:
            if entry in self.pending:
                self.pending.remove(entry)
                self.cancelled += 1

        return cancel

    def fire(self) -> None:
        for _, action in list(self.pending):
            action()


def test_the_collector_is_off_while_held_and_on_after(collector_on):
    pause = CollectorPause()
    with pause.paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_the_collector_comes_back_when_the_block_raises(collector_on):
    pause = CollectorPause()
    with pytest.raises(ValueError), pause.paused():
        raise ValueError("boom")
    assert gc.isenabled()


def test_overlapping_holders_share_one_pause_until_the_last_leaves(collector_on):
    pause = CollectorPause(schedule=Timers())
    first, second = pause.paused(), pause.paused()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert not gc.isenabled()  # the second holder still holds it
    second.__exit__(None, None, None)
    assert gc.isenabled()


def test_a_stream_of_overlapping_holders_cannot_keep_the_collector_off(collector_on):
    timers = Timers()
    pause = CollectorPause(max_pause=2.0, schedule=timers)
    holders = [pause.paused()]
    holders[0].__enter__()
    for _ in range(5):  # each new holder comes before the previous one leaves
        holder = pause.paused()
        holder.__enter__()
        holders.pop().__exit__(None, None, None)
        holders.append(holder)
    assert [delay for delay, _ in timers.pending] == [2.0]  # one pause, one bound
    timers.fire()  # 2 s after the pause began, a holder still in
    assert gc.isenabled()  # it ended for good
    late = pause.paused()
    late.__enter__()
    assert gc.isenabled()  # joining an ended pause does not restart it
    late.__exit__(None, None, None)
    holders.pop().__exit__(None, None, None)
    assert gc.isenabled()
    with pause.paused():  # a pause after everyone left is a new one
        assert not gc.isenabled()
    assert gc.isenabled()


def test_one_holder_waiting_long_cannot_keep_the_collector_off(collector_on):
    timers = Timers()
    pause = CollectorPause(max_pause=2.0, schedule=timers)
    with pause.paused():
        assert not gc.isenabled()
        assert [delay for delay, _ in timers.pending] == [2.0]
        timers.fire()  # 2 s later, the holder still waiting (a slow save, say)
        assert gc.isenabled()
    assert gc.isenabled()


def test_a_pause_that_ends_in_time_cancels_its_timer(collector_on):
    timers = Timers()
    pause = CollectorPause(schedule=timers)
    with pause.paused():
        pass
    assert (timers.pending, timers.cancelled) == ([], 1)


def test_a_late_timer_does_not_end_a_later_pause(collector_on):
    timers = Timers()
    pause = CollectorPause(schedule=timers)
    with pause.paused():
        late = timers.pending[0][1]
    with pause.paused():
        late()  # the first pause's timer, firing after its pause ended
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_someone_else_disabled_stays_disabled(collector_on):
    gc.disable()
    with CollectorPause().paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_the_time_limits_run_in_order_on_one_thread_and_cancelled_ones_never():
    """The server's scheduler: one thread for every pause's limit, not one started per pause
    (a thread start on the event loop's thread for every edit)."""
    timers = gcpause._Timers()
    ran: list[str] = []
    done = threading.Event()
    threads = threading.active_count()
    timers.schedule(0.3, lambda: (ran.append("last"), done.set()))
    cancel = timers.schedule(0.05, lambda: ran.append("cancelled"))
    timers.schedule(0.1, lambda: ran.append(threading.current_thread().name))
    cancel()
    assert threading.active_count() == threads + 1
    assert done.wait(10)
    assert ran == ["xcsh-timers", "last"]
    timers.schedule(0.01, done.clear)  # the same thread runs what comes later
    assert threading.active_count() == threads + 1
