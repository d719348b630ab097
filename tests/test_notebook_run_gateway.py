"""Runs in place with kernels on a gateway as well as local ones (issue 23).

The kernel a run starts works in the notebook's folder, and a run waiting for a kernel a
person keeps busy answers by its deadline, wherever the kernel runs. With
``XCSH_ENTERPRISE_GATEWAY`` set, the gateway is Enterprise Gateway (``tests/gateway.py``).
"""

from __future__ import annotations

import json
import os
import time

import pytest

from .gateway import KERNELS, hidden_root_kernel_fixture, kernel_gateway, use_kernels  # noqa: F401
from .notebook_run import run_ok, shared_with_a_person, write_notebook

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(params=KERNELS)
def jp_server_config(request, jp_server_config):
    return use_kernels(request, jp_server_config)


async def test_the_kernel_a_run_starts_works_in_the_notebooks_folder(jp_fetch, jp_root_dir):
    # A gateway starts kernels in its own folder (Kernel Gateway ignores the server's
    # KERNEL_WORKING_DIR): the run moves the kernel it started where the lab's would be.
    write_notebook(jp_root_dir / "sub" / "wd.ipynb", "import os\nprint(os.getcwd())")
    result = await run_ok(jp_fetch, notebook_path="sub/wd.ipynb", cell_index=0)
    assert result["kernel"]["started"] is True, result["kernel"]
    assert result["text"] == os.path.realpath(jp_root_dir / "sub"), result
    assert "notices" not in result


@pytest.mark.parametrize("jp_server_config", ["gateway"], indirect=True)
async def test_a_kernel_that_cannot_see_the_folder_says_where_it_works(
    jp_fetch, jp_root_dir, hidden_root_kernel
):
    path = jp_root_dir / "far.ipynb"
    write_notebook(path, "print('ran')")
    notebook = json.loads(path.read_text())
    notebook["metadata"]["kernelspec"] = {"name": hidden_root_kernel, "display_name": "far"}
    path.write_text(json.dumps(notebook))
    result = await run_ok(jp_fetch, notebook_path="far.ipynb", cell_index=0)
    [notice] = result["notices"]
    assert notice.startswith("The notebook's kernel cannot see this server's files"), notice
    assert f"[{notice}]" in result["text"] and result["text"].startswith("ran")


async def test_a_run_waiting_for_a_busy_kernel_answers_by_its_deadline(
    jp_fetch, jp_root_dir, jp_serverapp
):
    other = await shared_with_a_person(
        jp_fetch, jp_serverapp, jp_root_dir / "busy.ipynb", "print('agent')"
    )
    try:
        await other.execute("import time; time.sleep(60)")  # the person's cell runs
        start = time.monotonic()
        result = await run_ok(jp_fetch, notebook_path="busy.ipynb", cell_index=0, timeout=2)
        took = time.monotonic() - start
    finally:
        await jp_serverapp.kernel_manager.interrupt_kernel(other.kernel_id)
        other.close()
    assert result["timedOut"] is True, result
    # Within the deadline + 1 s (4.5 s for timeout 2 on Enterprise Gateway, issue 23).
    assert took < 3.0, took
