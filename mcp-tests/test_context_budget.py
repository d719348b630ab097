"""What an agent's model pays for the ten-step task of ``bench/context.py``, held to budgets.

The same task as the benchmark (its ``run_task``, imported, not copied), with the official SDK
client against this project's MCP endpoint on a live server, through the notebook tool's
``create``, ``insert`` / ``edit`` with ``run: true``, ``read`` and the python tool's
``notebook_path``. Characters are counted, not timed: ids have fixed lengths, so the figures
move only when what the tools say changes.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.timeout(300)


def load_benchmark() -> ModuleType:
    """``bench/context.py`` as a module (``bench/`` is not a package)."""
    path = Path(__file__).resolve().parents[1] / "bench" / "context.py"
    spec = importlib.util.spec_from_file_location("bench_context", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


bench = load_benchmark()

#: The issue's targets (characters the model receives).
TOOLS_LIST = 8_000
CONTENT = 35_000
CONTENT_AND_STRUCTURED = 45_000
#: Structured content is the small machine-readable part: ids, revision, counts, status.
STRUCTURED_PER_CALL = 2_048
#: One call per step with the decided API (create, five insert-and-runs, an edit-and-run,
#: a read, a scratch expression).
CALLS = 9
#: Sanity bounds per step (content: text + image data + links), so that one step's growth is
#: named where it happens rather than only in the total. The plot's image is bounded apart.
STEP_CONTENT = {
    1: 400,  # create: a summary line
    2: 1_200,  # df.head(): the change's line, five rows
    3: 1_500,  # df.describe(): eight rows
    4: 800,  # the plot's text (its image below)
    5: 8_000,  # 5,000 lines: the notice, a head and a tail
    6: 2_000,  # a folded KeyError: the user's frame, one line per library frame, the error
    7: 1_200,  # df.head(3)
    8: 4_000,  # five cells' sources and their outputs' summaries
    9: 600,  # one value
}
IMAGE = 20_000


def failures(run, listed_tools) -> list[str]:
    """Every budget ``run`` misses, each said in a line."""
    # First the calls that failed: they explain most of what follows.
    out = [
        f"step {step.index} ({step.name}): {call.what} is an error: {call.error}"
        for step in run.steps
        for call in step.calls
        if call.is_error and step.index != 6  # the KeyError's run is an error result
    ]
    if run.tools_list > TOOLS_LIST:
        out.append(f"tools/list is {run.tools_list:,} characters (at most {TOOLS_LIST:,})")
    if run.content > CONTENT:
        out.append(f"the task's content is {run.content:,} characters (at most {CONTENT:,})")
    if run.with_structured > CONTENT_AND_STRUCTURED:
        out.append(
            f"the task's content + structured is {run.with_structured:,} characters "
            f"(at most {CONTENT_AND_STRUCTURED:,})"
        )
    if run.calls != CALLS:
        out.append(f"{run.calls} calls (the task takes {CALLS} with the decided API)")
    out += [f"missing: {missing}" for missing in run.missing]
    with_schema = {tool.name for tool in listed_tools if tool.output_schema is not None}
    for step in run.steps[1:]:
        name = f"step {step.index} ({step.name})"
        bound = STEP_CONTENT[step.index]
        if step.content - step.image > bound:
            out.append(f"{name}: {step.content - step.image:,} characters (at most {bound:,})")
        for call in step.calls:
            if call.structured > STRUCTURED_PER_CALL:
                out.append(
                    f"{name}: {call.what}'s structured content is {call.structured:,} "
                    f"characters (at most {STRUCTURED_PER_CALL:,})"
                )
        unschemed = {c.tool for c in step.calls if c.structured and c.tool not in with_schema}
        out += [f"{name}: {tool} returns structured content, no outputSchema" for tool in unschemed]
        for where in ("text", "structured"):
            if step.facts.get(f"ansi_{where}"):
                out.append(f"{name}: ANSI escapes in the {where} content")
    plot = run.steps[4]
    if plot.images != 1 or plot.image > IMAGE:
        out.append(f"the plot: {plot.images} images, {plot.image:,} characters (1, <= {IMAGE:,})")
    noisy = run.steps[5].facts
    if noisy.get("kept_lines", 0) < bench.NOISY_LINES and noisy.get("notice") != "first":
        out.append(f"the 5,000 lines: the truncation notice is {noisy.get('notice')}, not first")
    if noisy.get("garbled_lines"):
        out.append(f"the 5,000 lines: {noisy['garbled_lines']} line(s) cut or garbled")
    if run.disk.get("cells") != len(bench.FINAL_SOURCES) or not run.disk.get("as_expected"):
        out.append(f"the notebook on disk: {run.disk.get('note')} (the scratch adds no cell)")
    return out


async def test_tools_list_fits_its_budget(connect):
    async with connect() as client:
        listed = await client.list_tools()
    total, per_tool = bench.tool_sizes(listed.tools)
    assert total <= TOOLS_LIST, f"tools/list is {total:,} characters: {per_tool}"


async def test_the_task_fits_its_budget_with_every_step_informed(connect, jp_root_dir):
    async with connect() as client:
        listed = await client.list_tools()
        run = await bench.run_task(client, bench.Ours("current"), jp_root_dir)
    missed = failures(run, listed.tools)
    assert not missed, "\n".join(["", *missed, "", bench.report([run])])
