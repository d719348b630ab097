"""Benchmark: what an agent's model receives doing one data-science task, here and at the peers.

Usage (the driver's environment holds the MCP SDK client and this project, each peer its own)::

    python3 -m venv .venv-bench && SKIP_JUPYTER_BUILDER=1 uv pip install \\
        --python .venv-bench/bin/python -e ".[mcp-test]"
    python3 -m venv .venv-jms && uv pip install --python .venv-jms/bin/python \\
        jupyter-mcp-server pandas matplotlib ipykernel
    python3 -m venv .venv-jml && uv pip install --python .venv-jml/bin/python \\
        jupyter-mcp-live pandas matplotlib ipykernel
    .venv-bench/bin/python bench/context.py [--ours-api current|legacy] [--json out.json]
        [--servers ours,jupyter-mcp-server,jupyter-mcp-live]

(``uv pip install --python ...`` or the environment's own ``pip install``; the ``mcp-test``
extra brings ``mcp``, pandas and matplotlib). ``--jms-python`` / ``--jml-python`` name other
environments' interpreters (defaults: ``.venv-jms`` and ``.venv-jml`` at the checkout's root);
this project's server runs from the driver's environment (``--ours-python`` to change it).
About 70 seconds for the three servers on a loaded 2-core machine. Exits with status 2 and
says what to install when a peer or the SDK is missing.

Each server runs as a Jupyter Server of its own (127.0.0.1, a free port, a token, a fresh
root, its own config and data directories), from its own environment, so its kernels are that
environment's ``python3`` (each needs pandas and matplotlib): this project's MCP endpoint
(``/api/xcsh/mcp``), jupyter-mcp-server in extension mode (``/mcp``) and jupyter-mcp-live
(``/mcp``, its 16 notebook tools registered as its README configures them; it serves them in
"Code Mode": ``list_tools``, ``get_schema`` and ``execute``, a sandboxed script calling
``call_tool``). The official MCP SDK client (``mcp``, streamable HTTP) does the same ten steps
on each, as an agent would with what that server offers:

0. ``tools/list`` (paid in every conversation; jupyter-mcp-live's agent also calls its
   ``list_tools`` with ``detail: "detailed"`` to learn the parameters);
1. create ``analysis.ipynb``;
2. add and run a cell building a deterministic 200-row DataFrame (``region, product, units,
   price``) and showing ``df.head()``;
3. add and run ``df.describe()``;
4. add and run a bar plot the agent must see (an image);
5. add and run a cell printing 5,000 ANSI-coloured lines;
6. add and run ``df['missing_column']`` (a pandas ``KeyError``);
7. edit the first cell to show ``df.head(3)`` and run it again;
8. read the notebook back;
9. evaluate ``df.units.sum()`` in the notebook's kernel without adding a cell, as the server
   allows.

Counted per step, in characters: the text content, image data (base64), other content (a
resource link's JSON), and structured content (its compact JSON; 0 when absent); and
``tools/list`` as the compact JSON of the tools array the SDK returns (per tool and in all).
"Content" is ``tools/list`` + text + image data + other content; "content + structured" adds
the structured content (clients that hand it to the model pay that). Checked per step: the
information reached the model (the columns of head and describe, an image, the 5,000 lines in
full or a truncation notice with the kept lines, ``KeyError: 'missing_column'``, every source in
the read, the scratch value), in the text as read (ANSI escapes removed, JSON strings decoded).

This project's mapping follows ``--ours-api``: ``current`` (the default) uses the notebook
tool's ``create``, ``insert`` / ``edit`` with ``run: true``, ``read``, and the python tool's
``notebook_path`` for the scratch expression; ``legacy`` does what an agent can without them:
the files tool writes the nbformat JSON, each cell is an insert then a ``run`` (two calls), and
the scratch expression goes to the python tool's own session (whose kernel has no ``df``).

Prints a markdown table (steps x servers) with the totals, the calls, the steps whose
information did not reach the model and how each server did each step; ``--json`` writes all of
it. ``mcp-tests/test_context_budget.py`` runs the same task (``run_task``) against this project
and holds its budgets.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from execute import free_port, server_options, wait_for_server

from tests.support.hubprocess import stop as stop_process  # execute puts the checkout on the path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = "analysis.ipynb"

#: The cells of the task, as an agent would write them.
FRAME = """\
import numpy as np
import pandas as pd

n = np.arange(200)
df = pd.DataFrame(
    {
        "region": np.array(["north", "south", "east", "west"])[n % 4],
        "product": np.array(["alpha", "beta", "gamma"])[n * 7 % 3],
        "units": n * 37 % 50 + 1,
        "price": (n * 13 % 97) / 4 + 5,
    }
)
df.head()"""
DESCRIBE = "df.describe()"
PLOT = "df.groupby('region').units.sum().plot.bar()"
NOISY = 'for i in range(5000):\n    print(f"\\x1b[32mstep {i}\\x1b[0m loss={1 / (i + 1):.6f}")'
MISSING = "df['missing_column']"
FRAME_EDITED = FRAME.replace("df.head()", "df.head(3)")
SCRATCH = "df.units.sum()"
#: What ``SCRATCH`` evaluates to (the data are arithmetic, not random: the same in any numpy).
UNITS_SUM = sum(i * 37 % 50 + 1 for i in range(200))
NOISY_LINES = 5000

#: The cells added by steps 2-6, in order (cell k is added by step k + 2).
ADDED = (FRAME, DESCRIBE, PLOT, NOISY, MISSING)
#: The notebook's sources once step 7 has edited the first cell.
FINAL_SOURCES = (FRAME_EDITED, DESCRIBE, PLOT, NOISY, MISSING)

STEPS = (
    "tools/list",
    "create the notebook",
    "add + run df.head()",
    "add + run df.describe()",
    "add + run a bar plot",
    "add + run 5,000 noisy lines",
    "add + run a KeyError",
    "edit + re-run df.head(3)",
    "read the notebook",
    "scratch df.units.sum()",
)

#: Runs' timeout (seconds): generous enough for a loaded machine's first kernel start.
RUN_TIMEOUT = 120


# ---------------------------------------------------------------------------------------------
# What the model receives


ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
#: ANSI left where the model reads it: the escape itself, its JSON form, or a visible remnant
#: (``[32m`` after a cut; not the ``\x1b[32m`` a cell's source spells out).
ANSI_TRACES = re.compile(r"\x1b|\\u001b|(?<![\w\\])\[(?:\d{1,3};)*\d{1,3}m")


def compact(value: Any) -> str:
    """The compact JSON of ``value`` (what is counted for JSON: no optional spaces)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@dataclass
class Call:
    """One ``tools/call``: what was asked, and what came back, in characters."""

    tool: str
    what: str
    text: int = 0
    image: int = 0
    other: int = 0
    structured: int = 0
    images: int = 0
    is_error: bool = False
    ansi_text: bool = False
    ansi_structured: bool = False
    error: str = ""  # an error result's first line


@dataclass
class Step:
    """One step of the task on one server."""

    index: int
    name: str
    how: str = ""
    calls: list[Call] = field(default_factory=list)
    tools: int = 0  # step 0: the tools array
    missing: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: What the checks found besides missing information (the 5,000 lines' notice, ...).
    facts: dict[str, Any] = field(default_factory=dict)
    texts: list[str] = field(default_factory=list, repr=False)

    @property
    def text(self) -> int:
        """Characters of text content."""
        return sum(c.text for c in self.calls)

    @property
    def image(self) -> int:
        """Characters of image data (base64)."""
        return sum(c.image for c in self.calls)

    @property
    def other(self) -> int:
        """Characters of other content (resource links, embedded resources)."""
        return sum(c.other for c in self.calls)

    @property
    def structured(self) -> int:
        """Characters of structured content (compact JSON)."""
        return sum(c.structured for c in self.calls)

    @property
    def images(self) -> int:
        """Images received."""
        return sum(c.images for c in self.calls)

    @property
    def content(self) -> int:
        """What the model reads without structured content."""
        return self.tools + self.text + self.image + self.other

    @property
    def with_structured(self) -> int:
        """What the model reads when the client hands it structured content too."""
        return self.content + self.structured

    def summary(self) -> dict[str, Any]:
        """The step as JSON."""
        out = asdict(self)
        del out["texts"]
        out.update(
            text=self.text,
            image=self.image,
            other=self.other,
            structured=self.structured,
            images=self.images,
            content=self.content,
            content_and_structured=self.with_structured,
        )
        return out


@dataclass
class ServerRun:
    """The whole task on one server."""

    server: str
    version: str
    steps: list[Step] = field(default_factory=list)
    tools: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: The notebook file at the end: its cell count and whether the code cells are the task's.
    disk: dict[str, Any] = field(default_factory=dict)

    @property
    def calls(self) -> int:
        """``tools/call`` requests made (``tools/list`` not counted)."""
        return sum(len(s.calls) for s in self.steps)

    @property
    def content(self) -> int:
        """The whole task, content only."""
        return sum(s.content for s in self.steps)

    @property
    def with_structured(self) -> int:
        """The whole task, content + structured."""
        return sum(s.with_structured for s in self.steps)

    @property
    def tools_list(self) -> int:
        """Characters of the tools array."""
        return self.steps[0].tools if self.steps else 0

    @property
    def missing(self) -> list[str]:
        """The steps whose information did not reach the model, each with what is missing."""
        return [f"{s.index} {s.name}: {'; '.join(s.missing)}" for s in self.steps if s.missing]

    def summary(self) -> dict[str, Any]:
        """The run as JSON."""
        return {
            "server": self.server,
            "version": self.version,
            "calls": self.calls,
            "tools_list": self.tools_list,
            "tools": self.tools,
            "content": self.content,
            "content_and_structured": self.with_structured,
            "missing": self.missing,
            "notes": self.notes,
            "disk": self.disk,
            "steps": [s.summary() for s in self.steps],
        }


def measure(result: Any, call: Call) -> str:
    """Count an SDK ``CallToolResult`` into ``call``; its text contents, joined."""
    texts = []
    for item in result.content:
        kind = getattr(item, "type", "")
        if kind == "text":
            texts.append(item.text)
            call.text += len(item.text)
        elif kind in ("image", "audio"):
            call.image += len(item.data)
            call.images += kind == "image"
        else:
            call.other += len(item.model_dump_json(by_alias=True, exclude_none=True))
    if result.structured_content is not None:
        structured = compact(result.structured_content)
        call.structured = len(structured)
        call.ansi_structured = ANSI_TRACES.search(structured) is not None
    call.is_error = bool(result.is_error)
    call.ansi_text = any(ANSI_TRACES.search(text) for text in texts)
    return "\n".join(texts)


class Agent:
    """The SDK client, each call measured and recorded into the current step."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.step: Step | None = None

    async def call(self, tool: str, arguments: dict[str, Any], what: str = "") -> str:
        """One ``tools/call``; the text the model reads (an error's message included)."""
        assert self.step is not None
        call = Call(tool, what or tool)
        self.step.calls.append(call)
        try:
            result = await self.client.call_tool(tool, arguments)
        except Exception as error:  # a protocol error reaches the model as its message
            text = f"{type(error).__name__}: {error}"
            call.text, call.is_error, call.error = len(text), True, first_line(text)
            self.step.notes.append(f"{call.what} raised {call.error}")
            self.step.texts.append(text)
            return text
        text = measure(result, call)
        if call.is_error:
            call.error = first_line(text)
            self.step.notes.append(f"{call.what} is an error: {call.error}")
        self.step.texts.append(text)
        return text


def first_line(text: str, limit: int = 160) -> str:
    """The first non-empty line of ``text``, cut to ``limit``."""
    line = next((line for line in text.splitlines() if re.search(r"\w", line)), "")
    return line[:limit]


# ---------------------------------------------------------------------------------------------
# Did the information reach the model?

HEADER = re.compile(r"region[ \t|]+product[ \t|]+units[ \t|]+price")
DESCRIBE_HEADER = re.compile(r"units[ \t|]+price")
NOISY_LINE = re.compile(r"step (\d+) loss=(\d\.\d{6})")
NOTICE = re.compile(
    r"truncat|omitted|elided|skipped|not shown|showing lines|more lines"
    r"|lines? \d+\s*[-\u2013]\s*\d+ of|artifact://|\d+ lines? (?:hidden|removed|filtered)",
    re.IGNORECASE,
)


def json_strings(value: Any) -> list[str]:
    """Every string inside a JSON value, depth first."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in json_strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in json_strings(v)]
    return []


def readable(texts: Sequence[str]) -> str:
    """The text the model reads: each text (the strings of one that is JSON), no ANSI.

    A server that answers with JSON escapes newlines and quotes; the model reads through
    that, so the checks do too.
    """
    parts = []
    for text in texts:
        stripped = text.strip()
        try:
            decoded = json.loads(stripped) if stripped[:1] in ("{", "[") else None
        except ValueError:
            decoded = None
        parts.extend([text] if decoded is None else json_strings(decoded))
    return ANSI.sub("", "\n".join(parts))


def lines_starting(text: str, word: str) -> bool:
    """Whether a line starts with ``word`` (after spaces and table pipes)."""
    return re.search(rf"^[ \t|]*{word}\b", text, re.MULTILINE) is not None


def check_step(step: Step, root: Path | None) -> None:
    """Record in ``step.missing`` what of its information did not reach the model."""
    text = readable(step.texts)
    missing = step.missing
    index = step.index
    if index == 1 and root is not None and not (root / NOTEBOOK).exists():
        missing.append(f"{NOTEBOOK} was not created")
    if index in (2, 7) and not HEADER.search(text):
        missing.append("the head's columns (region product units price)")
    if index == 3:
        if not DESCRIBE_HEADER.search(text):
            missing.append("describe's columns (units price)")
        for row in ("count", "mean", "std", "max"):
            if not lines_starting(text, row):
                missing.append(f"describe's {row} row")
    if index == 4 and step.images == 0:
        missing.append("the plot (no image)")
    if index == 5:
        check_noisy(step, text)
    if index == 6 and "KeyError: 'missing_column'" not in text:
        missing.append("KeyError: 'missing_column'")
    if index == 8:
        for k, source in enumerate(FINAL_SOURCES):
            absent = [line for line in source.splitlines() if line.strip() not in text]
            if absent:
                missing.append(f"cell {k}'s source ({len(absent)} lines, e.g. {absent[0]!r})")
    if index == 9 and not re.search(rf"\b{UNITS_SUM}\b", text):
        missing.append(f"the value {UNITS_SUM}")
    step.facts["ansi_text"] = any(c.ansi_text for c in step.calls)
    step.facts["ansi_structured"] = any(c.ansi_structured for c in step.calls)
    if step.facts["ansi_text"]:
        step.notes.append("ANSI escapes in the text")
    if step.facts["ansi_structured"]:
        step.notes.append("ANSI escapes in structured content")


def check_noisy(step: Step, text: str) -> None:
    """The 5,000 lines: all of them, or a notice and the kept lines (the last one among them)."""
    matches = list(NOISY_LINE.finditer(text))
    kept = sorted({int(m.group(1)) for m in matches})
    # A line of the output that is not whole: cut inside, or an escape sequence's remains.
    garbled = [
        line
        for line in text.splitlines()
        if re.search(r"loss=|^\s*step\b|^\s*[\d.=]+\s*$|\x1b", line)
        and not re.fullmatch(r"[ \t]*step \d+ loss=\d\.\d{6}[ \t]*", line)
        and "print(" not in line
    ]
    notice = NOTICE.search(text)
    step.facts.update(kept_lines=len(kept), garbled_lines=len(garbled), notice=None)
    if len(kept) == NOISY_LINES:
        step.notes.append("all 5,000 lines kept")
    else:
        if notice is not None:
            if not matches or notice.start() < matches[0].start():
                step.facts["notice"] = "first"
            elif notice.start() > matches[-1].end():
                step.facts["notice"] = "last"
            else:
                step.facts["notice"] = "in the middle"
        where = f", the notice {step.facts['notice']}" if notice is not None else ""
        step.notes.append(f"kept {len(kept)} of 5,000 lines ({ranges(kept)}){where}")
        if notice is None:
            step.missing.append("a truncation notice")
        if len(kept) < 10 or NOISY_LINES - 1 not in kept:
            step.missing.append("the kept lines (at least 10, the last among them)")
    if garbled:
        step.notes.append(f"{len(garbled)} cut or garbled line(s), e.g. {garbled[0][:40]!r}")


def ranges(numbers: list[int]) -> str:
    """``[0, 1, 2, 7, 8]`` as ``0-2, 7-8``."""
    out: list[str] = []
    for n in numbers:
        if out and int(out[-1].split("-")[-1]) == n - 1:
            out[-1] = f"{out[-1].split('-')[0]}-{n}"
        else:
            out.append(str(n))
    return ", ".join(out) if out else "none"


# ---------------------------------------------------------------------------------------------
# The servers' adapters: the task as an agent does it with what each server offers


class Adapter:
    """One server's way of doing each step (``step_<k>``), with ``how`` saying which calls."""

    name = ""
    how: dict[int, str] = {}

    async def before(self, agent: Agent, step: Step) -> None:
        """Step 0's calls besides ``tools/list`` (none unless the server needs them)."""

    async def create(self, agent: Agent) -> None:
        """Step 1."""
        raise NotImplementedError

    async def add_and_run(self, agent: Agent, index: int, code: str) -> None:
        """Steps 2-6: add ``code`` as cell ``index`` (the last) and run it."""
        raise NotImplementedError

    async def edit_and_run(self, agent: Agent, index: int, code: str) -> None:
        """Step 7: replace cell ``index``'s source with ``code`` and run it."""
        raise NotImplementedError

    async def read(self, agent: Agent) -> None:
        """Step 8: read every cell back."""
        raise NotImplementedError

    async def scratch(self, agent: Agent, code: str) -> None:
        """Step 9: evaluate ``code`` in the notebook's kernel, without a cell if it can."""
        raise NotImplementedError


class Ours(Adapter):
    """This project, with the decided API (``current``) or today's tools (``legacy``)."""

    name = "jupyter-xcsh"

    def __init__(self, api: str = "current") -> None:
        if api not in ("current", "legacy"):
            raise ValueError(f"api is current or legacy, not {api!r}")
        self.api = api
        if api == "current":
            self.how = {
                1: "notebook create",
                2: "notebook insert, run: true",
                7: "notebook edit, run: true",
                8: "notebook read",
                9: "python, notebook_path",
            }
        else:
            self.how = {
                1: "files write (nbformat JSON)",
                2: "notebook insert + notebook run",
                7: "notebook edit + notebook run",
                8: "notebook read",
                9: "python (its own session's kernel)",
            }

    async def create(self, agent: Agent) -> None:
        if self.api == "current":
            await agent.call("notebook", {"action": "create", "notebook_path": NOTEBOOK})
            return
        notebook = {
            "cells": [],
            "metadata": {
                "kernelspec": {
                    "display_name": "Python 3 (ipykernel)",
                    "language": "python",
                    "name": "python3",
                },
                "language_info": {"name": "python"},
            },
            "nbformat": 4,
            "nbformat_minor": 5,
        }
        arguments = {"action": "write", "path": NOTEBOOK, "content": json.dumps(notebook)}
        await agent.call("files", arguments, "files write")

    async def run(self, agent: Agent, index: int) -> None:
        arguments = {
            "action": "run",
            "notebook_path": NOTEBOOK,
            "cell_index": index,
            "timeout": RUN_TIMEOUT,
        }
        await agent.call("notebook", arguments, "notebook run")

    async def add_and_run(self, agent: Agent, index: int, code: str) -> None:
        arguments: dict[str, Any] = {
            "action": "insert",
            "notebook_path": NOTEBOOK,
            "cell_index": index,
            "content": code,
        }
        if self.api == "current":
            arguments |= {"run": True, "timeout": RUN_TIMEOUT}
            await agent.call("notebook", arguments, "notebook insert, run")
            return
        await agent.call("notebook", arguments, "notebook insert")
        await self.run(agent, index)

    async def edit_and_run(self, agent: Agent, index: int, code: str) -> None:
        arguments: dict[str, Any] = {
            "action": "edit",
            "notebook_path": NOTEBOOK,
            "cell_index": index,
            "content": code,
        }
        if self.api == "current":
            arguments |= {"run": True, "timeout": RUN_TIMEOUT}
            await agent.call("notebook", arguments, "notebook edit, run")
            return
        await agent.call("notebook", arguments, "notebook edit")
        await self.run(agent, index)

    async def read(self, agent: Agent) -> None:
        arguments = {"action": "read", "notebook_path": NOTEBOOK}
        await agent.call("notebook", arguments, "notebook read")

    async def scratch(self, agent: Agent, code: str) -> None:
        arguments: dict[str, Any] = {"cells": [{"code": code}], "timeout": RUN_TIMEOUT}
        if self.api == "current":
            arguments["notebook_path"] = NOTEBOOK
        await agent.call("python", arguments)


class McpServer(Adapter):
    """jupyter-mcp-server: a current notebook (``use_notebook``), cells by index."""

    name = "jupyter-mcp-server"
    how = {
        1: "use_notebook, mode create",
        2: "insert_execute_code_cell",
        7: "overwrite_cell_source + execute_cell",
        8: "read_notebook, detailed",
        9: "execute_code (the notebook's kernel)",
    }

    async def create(self, agent: Agent) -> None:
        arguments = {"notebook_name": "analysis", "notebook_path": NOTEBOOK, "mode": "create"}
        await agent.call("use_notebook", arguments)

    async def add_and_run(self, agent: Agent, index: int, code: str) -> None:
        arguments = {"cell_index": index, "cell_source": code, "timeout": RUN_TIMEOUT}
        await agent.call("insert_execute_code_cell", arguments)

    async def edit_and_run(self, agent: Agent, index: int, code: str) -> None:
        await agent.call("overwrite_cell_source", {"cell_index": index, "cell_source": code})
        await agent.call("execute_cell", {"cell_index": index, "timeout": RUN_TIMEOUT})

    async def read(self, agent: Agent) -> None:
        arguments = {"notebook_name": "analysis", "response_format": "detailed"}
        await agent.call("read_notebook", arguments)

    async def scratch(self, agent: Agent, code: str) -> None:
        await agent.call("execute_code", {"code": code, "timeout": RUN_TIMEOUT})


#: jupyter-mcp-live's tools, as its README's configuration registers them.
JML_TOOLS = (
    "list_notebook_sessions",
    "list_notebook_kernels",
    "execute_cell",
    "setup_notebook",
    "switch_notebook_kernel",
    "shutdown_notebook",
    "interrupt_notebook_kernel",
    "restart_notebook_kernel",
    "add_code_cell",
    "edit_code_cell",
    "add_markdown_cell",
    "edit_markdown_cell",
    "delete_cell",
    "view_notebook",
    "read_cell",
    "view_cell_image",
)


def script(*calls: tuple[str, dict[str, Any]], keep: int = 0) -> str:
    """A Code Mode script making ``calls`` in turn and returning the result of call ``keep``."""
    lines = [f"r{k} = await call_tool({tool!r}, {args!r})" for k, (tool, args) in enumerate(calls)]
    return "\n".join([*lines, f"return r{keep}"])


class McpLive(Adapter):
    """jupyter-mcp-live: every call a Code Mode ``execute`` script calling its tools."""

    name = "jupyter-mcp-live"
    how = {
        0: "tools/list + list_tools, detailed",
        1: "execute: setup_notebook",
        2: "execute: add_code_cell",
        4: "execute: add_code_cell + view_cell_image",
        7: "execute: edit_code_cell",
        8: "execute: view_notebook",
        9: "execute: add_code_cell + delete_cell (no way without a cell)",
    }

    async def execute(self, agent: Agent, what: str, *calls: tuple[str, dict[str, Any]]) -> None:
        await agent.call("execute", {"code": script(*calls)}, f"execute: {what}")

    async def before(self, agent: Agent, step: Step) -> None:
        await agent.call("list_tools", {"detail": "detailed"}, "list_tools")

    async def create(self, agent: Agent) -> None:
        await self.execute(agent, "setup_notebook", ("setup_notebook", {"notebook_path": NOTEBOOK}))

    async def add_and_run(self, agent: Agent, index: int, code: str) -> None:
        add = ("add_code_cell", {"notebook_path": NOTEBOOK, "source": code})
        if code == PLOT:  # the outputs say only "[Filtered image/png ...]": look at it
            look = ("view_cell_image", {"notebook_path": NOTEBOOK, "position_index": index})
            await self.execute(agent, "add_code_cell + view_cell_image", add, look)
            return
        await self.execute(agent, "add_code_cell", add)

    async def edit_and_run(self, agent: Agent, index: int, code: str) -> None:
        arguments = {"notebook_path": NOTEBOOK, "position_index": index, "source": code}
        await self.execute(agent, "edit_code_cell", ("edit_code_cell", arguments))

    async def read(self, agent: Agent) -> None:
        await self.execute(agent, "view_notebook", ("view_notebook", {"notebook_path": NOTEBOOK}))

    async def scratch(self, agent: Agent, code: str) -> None:
        # No tool runs code without a cell: add one, then delete it, in one script.
        add = ("add_code_cell", {"notebook_path": NOTEBOOK, "source": code})
        remove = ("delete_cell", {"notebook_path": NOTEBOOK, "position_index": len(ADDED)})
        await self.execute(agent, "add_code_cell + delete_cell", add, remove)


def how_of(adapter: Adapter, index: int) -> str:
    """How ``adapter`` does step ``index`` (steps 3-6 as step 2 unless said otherwise)."""
    if index in adapter.how:
        return adapter.how[index]
    if 3 <= index <= 6:
        return adapter.how.get(2, "")
    return "tools/list" if index == 0 else ""


def tool_sizes(tools: Sequence[Any]) -> tuple[int, dict[str, int]]:
    """The compact JSON of the tools array as the SDK returns it, in all and per tool."""
    dumped = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]
    return len(compact(dumped)), {t["name"]: len(compact(t)) for t in dumped}


async def run_task(
    client: Any,
    adapter: Adapter,
    root: Path | None = None,
    version: str = "",
    progress: Callable[[str], None] | None = None,
) -> ServerRun:
    """The ten steps on one server through an open SDK ``client``, measured and checked.

    ``root``: the server's contents root, to check the notebook on disk (skipped when None).
    """
    agent = Agent(client)
    run = ServerRun(adapter.name, version)

    def begin(index: int) -> Step:
        step = Step(index, STEPS[index], how_of(adapter, index))
        run.steps.append(step)
        agent.step = step
        if progress is not None:
            progress(f"{adapter.name}: {index} {STEPS[index]}")
        return step

    step = begin(0)
    listed = await client.list_tools()
    step.tools, run.tools = tool_sizes(listed.tools)
    await adapter.before(agent, step)
    begin(1)
    await adapter.create(agent)
    for k, code in enumerate(ADDED):
        begin(k + 2)
        await adapter.add_and_run(agent, k, code)
    begin(7)
    await adapter.edit_and_run(agent, 0, FRAME_EDITED)
    begin(8)
    await adapter.read(agent)
    begin(9)
    await adapter.scratch(agent, SCRATCH)
    for step in run.steps:
        check_step(step, root)
    if root is not None:
        run.disk = on_disk(root / NOTEBOOK)
        run.notes.append(f"on disk: {run.disk['note']}")
    return run


def on_disk(path: Path) -> dict[str, Any]:
    """What the notebook file holds at the end (a check the work was done, not counted)."""
    try:
        cells = json.loads(path.read_text())["cells"]
    except (OSError, ValueError, KeyError) as error:
        note = f"{path.name} unreadable ({type(error).__name__})"
        return {"cells": None, "as_expected": False, "note": note}
    code = [
        "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
        for c in cells
        if c["cell_type"] == "code"
    ]
    same = code == list(FINAL_SOURCES)
    note = f"{len(cells)} cells, the code cells' sources {'as' if same else 'NOT as'} expected"
    return {"cells": len(cells), "as_expected": same, "note": note}


# ---------------------------------------------------------------------------------------------
# Running the servers


@dataclass(frozen=True)
class Peer:
    """How to run one server: its environment, its endpoint, its adapter."""

    key: str
    package: str
    module: str
    path: str
    setup: str


PEERS = {
    "ours": Peer(
        "ours",
        "jupyter_xcsh",
        "jupyter_xcsh",
        "/api/xcsh/mcp",
        'SKIP_JUPYTER_BUILDER=1 uv pip install --python .venv-bench/bin/python -e ".[mcp-test]"',
    ),
    "jupyter-mcp-server": Peer(
        "jupyter-mcp-server",
        "jupyter-mcp-server",
        "jupyter_mcp_server",
        "/mcp",
        "python3 -m venv .venv-jms && uv pip install --python .venv-jms/bin/python "
        "jupyter-mcp-server pandas matplotlib ipykernel",
    ),
    "jupyter-mcp-live": Peer(
        "jupyter-mcp-live",
        "jupyter-mcp-live",
        "jupyter_mcp_live",
        "/mcp",
        "python3 -m venv .venv-jml && uv pip install --python .venv-jml/bin/python "
        "jupyter-mcp-live pandas matplotlib ipykernel",
    ),
}
#: What every server's environment needs besides its package (its kernels run the task).
KERNEL_MODULES = ("ipykernel", "pandas", "matplotlib")


def probe(python: str, peer: Peer) -> tuple[str | None, str]:
    """The version of ``peer``'s package in ``python``'s environment, or what is missing."""
    modules = (peer.module, *KERNEL_MODULES)
    code = (
        "import importlib.util, importlib.metadata, json, sys\n"
        f"missing = [m for m in {modules!r} if importlib.util.find_spec(m) is None]\n"
        "v = '' if missing else importlib.metadata.version(sys.argv[1])\n"
        "print(json.dumps([missing, v]))"
    )
    try:
        out = subprocess.run(
            [python, "-c", code, peer.package], capture_output=True, text=True, timeout=60
        )
        missing, found = json.loads(out.stdout)
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None, f"no Python at {python}"
    if missing:
        return None, f"{', '.join(missing)} not installed in {python}"
    return found, ""


class JupyterServer:
    """A Jupyter Server run from another environment's interpreter, in a directory of its own."""

    def __init__(self, python: str, options: Sequence[str] = (), config: str = "") -> None:
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.tmp = Path(tempfile.mkdtemp(prefix="xcsh-context-"))
        self.root = self.tmp / "root"
        self.root.mkdir()
        (self.tmp / "config").mkdir()
        if config:
            (self.tmp / "config" / "jupyter_server_config.py").write_text(config)
        env = {
            **os.environ,
            # Nothing of the user's: config, data (kernel specs), IPython profile, runtime.
            "JUPYTER_CONFIG_DIR": str(self.tmp / "config"),
            "JUPYTER_DATA_DIR": str(self.tmp / "data"),
            "JUPYTER_RUNTIME_DIR": str(self.tmp / "runtime"),
            "IPYTHONDIR": str(self.tmp / "ipython"),
        }
        env.pop("JUPYTER_TOKEN", None)
        self.log_path = self.tmp / "server.log"
        self.log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            [
                python,
                "-m",
                "jupyter_server",
                *server_options(self.port, self.token, self.root),
                *options,
            ],
            env=env,
            cwd=self.tmp,  # not a checkout: `-m` would import the package from there
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        self.url = f"http://127.0.0.1:{self.port}"
        try:
            wait_for_server(self.url, self.token, self.process, timeout=120, pause=0.3)
        except OSError:
            self.stop()
            raise RuntimeError(f"the server did not start (log: {self.log_path})") from None

    def stop(self) -> None:
        """Stop the server (its kernels with it) and remove its directory."""
        if self.process.poll() is None:
            stop_process(self.process, 60)
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def server_for(key: str, python: str) -> JupyterServer:
    """Start ``key``'s server from ``python``'s environment."""
    if key == "ours":
        return JupyterServer(python, ["--ServerApp.jpserver_extensions=jupyter_xcsh=True"])
    if key == "jupyter-mcp-server":
        return JupyterServer(python, ["--ServerApp.jpserver_extensions=jupyter_mcp_server=True"])
    tools = [f"jupyter_mcp_live.execution_tools:{name}" for name in JML_TOOLS]
    return JupyterServer(
        python,
        ["--ServerApp.jpserver_extensions=jupyter_mcp_live=True"],
        config=f"c.MCPExtensionApp.mcp_tools = {tools!r}\n",
    )


def adapter_for(key: str, ours_api: str) -> Adapter:
    """The adapter of ``key``'s server."""
    if key == "ours":
        return Ours(ours_api)
    return McpServer() if key == "jupyter-mcp-server" else McpLive()


async def run_server(key: str, python: str, version: str, ours_api: str) -> ServerRun:
    """Start one server, run the task on it over MCP, stop it."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    server = server_for(key, python)
    try:
        headers = {"Authorization": f"token {server.token}"}
        http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60, read=600))
        transport = streamable_http_client(server.url + PEERS[key].path, http_client=http)
        async with http, Client(transport) as client:
            adapter = adapter_for(key, ours_api)

            def progress(message: str) -> None:
                print(message, file=sys.stderr, flush=True)

            run = await run_task(client, adapter, server.root, version, progress)
            if key == "ours":
                run.server = f"{run.server} ({ours_api})"
            return run
    finally:
        server.stop()


# ---------------------------------------------------------------------------------------------
# Report


def tools_cell(run: ServerRun) -> str:
    """The ``tools/list`` figure, with what step 0's calls added (jupyter-mcp-live's list)."""
    first = run.steps[0]
    if not first.calls:
        return f"{run.tools_list:,}"
    calls = ", ".join(c.tool for c in first.calls)
    return f"{run.tools_list:,} (+{first.content - run.tools_list:,} for its {calls})"


def report(runs: Sequence[ServerRun]) -> str:
    """The markdown tables of ``runs``."""
    names = [f"{r.server} {r.version}".strip() for r in runs]
    out = [
        "Characters the model receives, per step: content (text + image data + links; "
        "step 0: the tools array) / structured content. `!` marks a step whose information "
        "did not reach the model.",
        "",
        "| step | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(runs),
    ]
    for index, name in enumerate(STEPS):
        cells = []
        for run in runs:
            step = run.steps[index]
            mark = " !" if step.missing else ""
            image = f" (image {step.image:,})" if step.image else ""
            cells.append(f"{step.content:,}{image} / {step.structured:,}{mark}")
        out.append(f"| {index} {name} | " + " | ".join(cells) + " |")
    rows = [
        ("`tools/list`", tools_cell),
        ("whole task, content only", lambda r: f"{r.content:,}"),
        ("whole task, content + structured", lambda r: f"{r.with_structured:,}"),
        ("calls (`tools/call`)", lambda r: str(r.calls)),
        (
            "steps whose information never reached the model",
            lambda r: ", ".join(f"{s.index} ({s.name})" for s in r.steps if s.missing) or "none",
        ),
    ]
    for title, value in rows:
        out.append(f"| **{title}** | " + " | ".join(value(r) for r in runs) + " |")
    out += ["", "How each step was done:", ""]
    out.append("| step | " + " | ".join(r.server for r in runs) + " |")
    out.append("|---|" + "---|" * len(runs))
    for index, name in enumerate(STEPS):
        out.append(f"| {index} {name} | " + " | ".join(r.steps[index].how for r in runs) + " |")
    out += ["", "Notes:", ""]
    for run in runs:
        tools = ", ".join(f"{name} {size:,}" for name, size in run.tools.items())
        out.append(f"- **{run.server}**: tools/list {tools}; {'; '.join(run.notes)}")
        for step in run.steps:
            said = [f"MISSING {'; '.join(step.missing)}"] if step.missing else []
            if said or step.notes:
                out.append(f"  - {step.index} {step.name}: {'; '.join(said + step.notes)}")
    return "\n".join(out)


def dump(runs: Sequence[ServerRun], folder: Path) -> None:
    """Write each step's texts to ``folder/<server>-<step>.txt`` (to see what was counted)."""
    folder.mkdir(parents=True, exist_ok=True)
    for run in runs:
        name = re.sub(r"[^\w.-]+", "-", run.server).strip("-")
        for step in run.steps:
            text = "\n\n----- next call -----\n\n".join(step.texts)
            (folder / f"{name}-{step.index}.txt").write_text(text)


def default_python(venv: str) -> str:
    """The interpreter of the environment ``venv`` at the checkout's root."""
    return str(ROOT / venv / "bin" / "python")


def main() -> int:
    """Parse the options, check the environments, run the task on each server, report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--servers",
        default="ours,jupyter-mcp-server,jupyter-mcp-live",
        help="comma-separated: ours, jupyter-mcp-server, jupyter-mcp-live",
    )
    parser.add_argument(
        "--ours-api",
        choices=("current", "legacy"),
        default="current",
        help="this project's mapping: the decided API, or today's tools only",
    )
    parser.add_argument("--ours-python", default=sys.executable)
    parser.add_argument("--jms-python", default=default_python(".venv-jms"))
    parser.add_argument("--jml-python", default=default_python(".venv-jml"))
    parser.add_argument("--json", metavar="FILE", help="write the figures as JSON")
    parser.add_argument(
        "--dump", metavar="DIR", help="write the text each step's calls returned, one file a step"
    )
    args = parser.parse_args()
    pythons = {
        "ours": args.ours_python,
        "jupyter-mcp-server": args.jms_python,
        "jupyter-mcp-live": args.jml_python,
    }
    keys = [k.strip() for k in args.servers.split(",") if k.strip()]
    unknown = [k for k in keys if k not in PEERS]
    if unknown:
        parser.error(f"unknown servers: {', '.join(unknown)} (known: {', '.join(PEERS)})")
    problems = []
    if importlib.util.find_spec("mcp") is None or importlib.util.find_spec("httpx2") is None:
        problems.append(f"the MCP SDK client (mcp) is not installed here: {PEERS['ours'].setup}")
    versions = {}
    for key in keys:
        found, why = probe(pythons[key], PEERS[key])
        if found is None:
            problems.append(f"{key}: {why}; install it: {PEERS[key].setup}")
        versions[key] = found or ""
    if problems:
        print("bench/context.py cannot run:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 2
    runs = []
    started = time.monotonic()
    for key in keys:
        runs.append(asyncio.run(run_server(key, pythons[key], versions[key], args.ours_api)))
    print(report(runs))
    if args.dump:
        dump(runs, Path(args.dump))
    print(f"\n({time.monotonic() - started:.0f} s)")
    if args.json:
        data = {"ours_api": args.ours_api, "runs": [r.summary() for r in runs]}
        Path(args.json).write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
