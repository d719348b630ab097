"""Helpers of the run-in-place tests: call the endpoint, write notebooks, act as another client."""

from __future__ import annotations

import asyncio
import inspect
import json
import time
from typing import Any

import zmq.asyncio
from jupyter_client.session import Session
from jupyter_core.utils import ensure_async
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from tornado.httpclient import HTTPClientError

from tests.support.notebooks import jupyter_text
from tests.support.openapi_check import assert_response_matches
from tests.support.python_tool import REQUEST_TIMEOUT

RUN = "/api/xcsh/notebook/run"


async def call_run(jp_fetch: Any, body: dict[str, Any], **kwargs: Any) -> tuple[int, Any]:
    """``POST /api/xcsh/notebook/run``; ``(status, json)``, checked against the OpenAPI file."""
    kwargs.setdefault("request_timeout", REQUEST_TIMEOUT)
    try:
        response = await jp_fetch(
            "api", "xcsh", "notebook", "run", method="POST", body=json.dumps(body), **kwargs
        )
    except HTTPClientError as e:
        assert e.response is not None
        result = json.loads(e.response.body)
        assert_response_matches(RUN, "post", e.code, result)
        return e.code, result
    result = json.loads(response.body)
    assert_response_matches(RUN, "post", 200, result)
    return 200, result


async def run_ok(jp_fetch: Any, **body: Any) -> Any:
    """Run and return the 200 result."""
    status, result = await call_run(jp_fetch, body)
    assert status == 200, result
    return result


def write_notebook(path: Any, *cells: Any) -> str:
    """Write an nbformat 4.5 notebook of ``cells`` (strings are code cells); return its text."""
    made = [new_code_cell(c, id=f"c{i}") if isinstance(c, str) else c for i, c in enumerate(cells)]
    nb = new_notebook(
        cells=made, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}}
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    text = jupyter_text(nb)
    path.write_text(text, encoding="utf-8")
    return text


def markdown(text: str, cell_id: str) -> Any:
    """A markdown cell with a fixed id."""
    return new_markdown_cell(text, id=cell_id)


async def sessions(jp_fetch: Any) -> list[dict[str, Any]]:
    """The server's sessions (``GET /api/sessions``)."""
    return json.loads((await jp_fetch("api", "sessions")).body)  # type: ignore[no-any-return]


class OtherClient:
    """Another client of a kernel (as the lab is): its own session, its own requests."""

    def __init__(self, serverapp: Any, kernel_id: str) -> None:
        self.kernel_id = kernel_id
        kernel = serverapp.kernel_manager.get_kernel(kernel_id)
        self.client = kernel.client(
            session=Session(key=kernel.session.key), context=zmq.asyncio.Context()
        )

    async def ready(self) -> None:
        # A gateway's client opens its websocket asynchronously; a local one at once.
        await ensure_async(self.client.start_channels())
        await self.client.wait_for_ready(timeout=60)

    async def execute(self, code: str, started: bool = True) -> str:
        """Send ``code``; with ``started``, return once the kernel began executing it."""
        msg_id = self.client.execute(code)
        if inspect.isawaitable(msg_id):  # jupyter_client 8.0: a future of the id
            msg_id = await msg_id
        if started:
            await self.wait_for(msg_id, "busy")
        return msg_id

    async def wait_for(self, msg_id: str, state: str, timeout: float = 120) -> None:
        """Wait for the kernel's ``state`` status of request ``msg_id``."""
        end = time.monotonic() + timeout
        while True:
            msg = await self.client.get_iopub_msg(timeout=max(0.1, end - time.monotonic()))
            if (
                msg["parent_header"].get("msg_id") == msg_id
                and msg["msg_type"] == "status"
                and msg["content"]["execution_state"] == state
            ):
                return

    async def reply(self, msg_id: str, timeout: float = 120) -> dict[str, Any]:
        """The execute_reply of ``msg_id``."""
        end = time.monotonic() + timeout
        while True:
            msg = await self.client.get_shell_msg(timeout=max(0.1, end - time.monotonic()))
            if msg["parent_header"].get("msg_id") == msg_id:
                return msg["content"]  # type: ignore[no-any-return]

    async def run(self, code: str) -> dict[str, Any]:
        """Execute ``code`` and return its reply."""
        return await self.reply(await self.execute(code, started=False))

    def close(self) -> None:
        self.client.stop_channels()
        self.client.context.destroy(linger=100)


async def shared_with_a_person(jp_fetch: Any, serverapp: Any, path: Any, code: str) -> OtherClient:
    """Write a one-cell notebook at ``path`` and run it (its session kernel starts); return
    another client of that kernel, ready, as a person's lab tab is."""
    write_notebook(path, code)
    first = await run_ok(jp_fetch, notebook_path=path.name, cell_index=0)
    other = OtherClient(serverapp, first["kernel"]["id"])
    try:
        await other.ready()
    except BaseException:
        other.close()
        raise
    return other


async def wait_until(check: Any, timeout: float = 60) -> None:
    """Wait until ``check()`` (sync) is true."""
    end = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < end, "condition not met in time"
        await asyncio.sleep(0.05)
