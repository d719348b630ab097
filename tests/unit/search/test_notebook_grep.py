"""Line search of cell sources, and regex searches stopped at their deadline (``find``)."""

from __future__ import annotations

import asyncio
import time

import pytest

from jupyter_xcsh.search.find import MAX_LINE_CHARS, clip_line
from jupyter_xcsh.search.grep import search_texts
from jupyter_xcsh.search.regex_workers import RegexWorkers, SearchTimeout

pytestmark = pytest.mark.timeout(120)

#: Exponential backtracking in Python's re: (a+)+ tries every split of the a's before failing.
CATASTROPHIC = "(a+)+$"
RUNAWAY_LINE = "a" * 40 + "!"


def test_literal_search_numbers_matching_lines_from_one_and_locates_the_first_match():
    texts = ["x = 1\ndf_clean = df\nprint(df_clean)", "nothing here", "df_clean"]

    hits = search_texts(texts, "df_clean", regex=False, max_lines=10)

    assert hits == [[0, 2, [[2, 0, 8], [3, 6, 14]]], [2, 1, [[1, 0, 8]]]]


def test_regex_search_matches_within_a_line_never_across_lines():
    texts = ["def f():\n    return 1", "x = 1"]

    assert search_texts(texts, r"^def \w+", regex=True, max_lines=10) == [[0, 1, [[1, 0, 5]]]]
    assert search_texts(texts, r"f\(\):\n", regex=True, max_lines=10) == []
    assert search_texts(texts, r"1$", regex=True, max_lines=10) == [
        [0, 1, [[2, 11, 12]]],
        [1, 1, [[1, 4, 5]]],
    ]


def test_every_matching_line_is_counted_but_only_the_first_few_located():
    text = "\n".join(["hit"] * 50)

    [[_, count, located]] = search_texts([text], "hit", regex=False, max_lines=3)

    assert count == 50
    assert [line for line, _, _ in located] == [1, 2, 3]


def test_a_long_line_is_shown_around_its_match():
    line = "x" * 1000 + "needle" + "y" * 1000

    clipped = clip_line(line, 1000)

    assert "needle" in clipped
    assert clipped.startswith("…") and clipped.endswith("…")
    assert len(clipped) == MAX_LINE_CHARS + 2
    assert clip_line("short needle", 6) == "short needle"
    assert clip_line(line[:1006], 1000).endswith("needle")  # no ellipsis after the line's end


def test_regex_workers_search_in_a_child_process():
    async def search():
        workers = RegexWorkers(timeout=10)
        try:
            first = await workers.search(["a1\nb22", "c"], r"\d+", 5)
            again = await workers.search(["zz"], "z", 5)  # the same child, reused
            return first, again
        finally:
            await workers.close()

    first, again = asyncio.run(search())

    assert first == [[0, 2, [[1, 1, 2], [2, 1, 3]]]]
    assert again == [[0, 1, [[1, 0, 1]]]]


def test_a_runaway_regex_is_stopped_at_its_deadline_and_the_next_search_works():
    async def search():
        workers = RegexWorkers(timeout=1)
        try:
            # Started (Python's start-up) before the clock runs: only the search is timed.
            await workers.search(["warm"], "w", 1)
            started = time.monotonic()
            with pytest.raises(SearchTimeout):
                await workers.search([RUNAWAY_LINE], CATASTROPHIC, 5)
            stopped_after = time.monotonic() - started
            return stopped_after, await workers.search(["still works"], "works$", 5)
        finally:
            await workers.close()

    stopped_after, after = asyncio.run(search())

    # Backtracking through 40 a's takes hours: stopping at all is the point (the deadline is
    # 1 s; the bound here is only generous for a loaded machine).
    assert stopped_after < 60
    assert after == [[0, 1, [[1, 6, 11]]]]


@pytest.mark.slow
def test_the_event_loop_keeps_running_while_a_runaway_regex_is_searched():
    async def search():
        workers = RegexWorkers(timeout=3)
        ticks = 0

        async def tick():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.05)
                ticks += 1

        ticker = asyncio.create_task(tick())
        try:
            await workers.search(["warm"], "w", 1)
            before = ticks
            with pytest.raises(SearchTimeout):
                await workers.search([RUNAWAY_LINE], CATASTROPHIC, 5)
            return ticks - before
        finally:
            ticker.cancel()
            await workers.close()

    # The loop went on ticking during the 3 s the search ran (a blocked loop would not tick).
    assert asyncio.run(search()) > 5
