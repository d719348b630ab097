"""No change of a cell blocks the server's event loop, whatever the size of its outputs (issue 43).

A notebook whose one code cell holds 50 MB of outputs — 25 MB of output lines (a quarter of a
million strings once parsed) and a 25 MB image (one string) — is read, then that cell is
edited, made a markdown cell, moved and deleted through the notebook tool, each while a probe
on the event loop measures how late a 5 ms timer fires (the test server runs on this
process's loop: every request, the lab's included, waits as long). Before, one edit held the
loop 0.2-0.7 s (the cell as it was encoded for the lab's revert, on the loop) and, with the GIL,
whole-string work on worker threads (scanning, copying and encoding the cell) held it ~100 ms
at a time.
"""

from __future__ import annotations

import asyncio
import gc
import json
from typing import Any

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from tests.api.notebook.test_notebook_revert import _event_of, _previous_cell
from tests.support.notebooks import jupyter_text

pytestmark = pytest.mark.timeout(600)

P = "big.ipynb"
#: The longest an edit may hold the loop, in seconds (the issue's bound).
BOUND = 0.050
#: Seconds between two probes of the loop.
INTERVAL = 0.005
#: Seconds the probe goes on once the change answered: what follows it (the cell as it was
#: freed, the artifact written) is the change's too.
AFTER = 0.5
#: Attempts at most of each change (see the timing window below).
ATTEMPTS = 5

CHANGES: dict[str, dict[str, Any]] = {
    "edit": {"action": "edit", "cell_id": "big", "content": "show(2)"},
    "markdown": {"action": "edit", "cell_id": "big", "content": "# Shown", "cell_type": "markdown"},
    "move": {"action": "move", "cell_id": "big", "to_index": 0},
    "delete": {"action": "delete", "cell_id": "big"},
}


def big_notebook() -> Any:
    """Three cells, the middle one with 50 MB of outputs."""
    lines = "".join(f"step {i:06d} loss {i % 97:02d} " + "." * 74 + "\n" for i in range(250_000))
    outputs = [
        new_output("stream", name="stdout", text=lines),
        new_output("display_data", data={"image/png": "iVBO" * 6_250_000, "text/plain": "<Fig>"}),
    ]
    cells = [
        new_markdown_cell("# Training", id="m0"),
        new_code_cell("show()", id="big", execution_count=7, outputs=outputs),
        new_code_cell("x = 1", id="c2"),
    ]
    return new_notebook(cells=cells)


class LoopProbe:
    """How late a timer of ``INTERVAL`` seconds fires on the running loop, sample by sample."""

    def __init__(self) -> None:
        #: (when the timer was set, how late it fired), in the loop's seconds.
        self.samples: list[tuple[float, float]] = []

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            start = loop.time()
            await asyncio.sleep(INTERVAL)
            self.samples.append((start, loop.time() - start - INTERVAL))

    def worst(self, since: float, until: float) -> float:
        """The latest a timer set between ``since`` and ``until`` fired."""
        return max((late for at, late in self.samples if since <= at <= until), default=0.0)

    def quantile(self, since: float, until: float, q: float) -> float:
        """The ``q`` quantile of how late the timers set meanwhile fired."""
        late = sorted(late for at, late in self.samples if since <= at <= until)
        return late[min(len(late) - 1, int(q * len(late)))] if late else 0.0


async def _stall(
    probe: LoopProbe, notebook_tool, events, path, text, change
) -> tuple[float, dict[str, Any]]:
    """The longest the loop waited during ``change`` of the notebook ``text``; its event."""
    loop = asyncio.get_running_loop()
    path.write_text(text, encoding="utf-8")
    status, _ = await notebook_tool({"notebook_path": P, "action": "read", "cell_id": "m0"})
    assert status == 200  # the agent read it first: the server keeps it parsed
    gc.collect()  # this test's own garbage (the notebook it built) is not the change's
    await asyncio.sleep(0.2)
    since = loop.time()
    status, result = await notebook_tool({"notebook_path": P, **change})
    assert status == 200, result
    event = await _event_of(events, result["callId"])
    await asyncio.sleep(AFTER)
    return probe.worst(since, loop.time()), event


@pytest.mark.slow
# The save guard's own mechanism: it writes the tool's saves a MiB at a time. Without it
# (XCSH_TEST_FAST_PATHS=off, guard_saves off) the save is jupyter_server's, which encodes the
# whole text in one call holding the GIL: 110-240 ms of the loop for this notebook, as any save
# of it by the lab (docs/operators/interventions.md).
@pytest.mark.fast_path
async def test_no_change_of_a_cell_with_50_mb_of_outputs_blocks_the_event_loop(
    notebook_tool, events, jp_fetch, jp_root_dir
):
    nb = big_notebook()
    text = jupyter_text(nb)
    cell = json.loads(text)["cells"][1]
    path = jp_root_dir / P
    loop = asyncio.get_running_loop()
    probe = LoopProbe()
    probing = asyncio.ensure_future(probe.run())
    try:
        since = loop.time()
        await asyncio.sleep(1.0)
        idle = probe.quantile(since, loop.time(), 0.99)
        stalls: dict[str, list[float]] = {}
        for name, change in CHANGES.items():
            # The timing window: from the request to AFTER past its event. A change's own
            # blocking is the same C calls on the same data at every attempt (before the fix:
            # 0.1-0.5 s at each); other processes on a loaded 2-core machine stop the loop's
            # thread, or a worker thread holding the GIL, at random (up to ~170 ms seen at a
            # load of 9-11). So a change that held the loop past BOUND (plus the machine's own
            # lateness, the idle probe's p99) is measured again, ATTEMPTS times at most, and
            # its best attempt counts.
            stalls[name] = []
            for _ in range(ATTEMPTS):
                worst, event = await _stall(probe, notebook_tool, events, path, text, change)
                stalls[name].append(worst)
                if worst <= BOUND + idle:
                    break
            if name != "move":  # the cell as it was, whole, for the lab's revert
                assert await _previous_cell(jp_fetch, event) == cell
        best = {name: min(attempts) for name, attempts in stalls.items()}
        assert all(worst <= BOUND + idle for worst in best.values()), (stalls, idle)
    finally:
        probing.cancel()

    # The last change made, a delete, left the notebook as Jupyter would write it.
    del nb.cells[1]
    assert path.read_text(encoding="utf-8") == jupyter_text(nb)


@pytest.mark.slow
async def test_an_edit_of_a_cell_with_50_mb_of_outputs_changes_only_its_source(
    notebook_tool, jp_root_dir
):
    nb = big_notebook()
    path = jp_root_dir / P
    path.write_text(jupyter_text(nb), encoding="utf-8")
    for source in ("show(2)", "show(3)\nsave()"):  # the second edits the kept, spliced cell
        status, result = await notebook_tool(
            {"notebook_path": P, "action": "edit", "cell_id": "big", "content": source}
        )
        assert status == 200, result
        nb.cells[1].source = source
        assert path.read_text(encoding="utf-8") == jupyter_text(nb)
    nbformat.validate(nbformat.reads(path.read_text(encoding="utf-8"), as_version=4))
