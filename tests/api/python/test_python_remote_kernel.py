"""A kernel that cannot see the server's files (Enterprise Gateway on Kubernetes, say).

Run under the real Kernel Gateway with a kernel spec whose kernels live in a private mount
namespace where an empty tmpfs covers the directory holding the test server's root: the
kernel runs, but ``os.chdir(cwd)`` fails there and the artifacts folder does not exist.
"""

from __future__ import annotations

import pytest

from tests.support.gateway import hidden_root_kernel_fixture, kernel_gateway, use_kernels  # noqa: F401
from tests.support.python_tool import run

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def jp_server_config(request, jp_server_config):
    return use_kernels(request, jp_server_config, "gateway")


@pytest.mark.slow
async def test_setup_steps_the_kernel_cannot_take_become_a_one_line_notice(
    jp_fetch, jp_root_dir, jp_base_url, hidden_root_kernel
):
    (jp_root_dir / "sub").mkdir()
    cwd = str(jp_root_dir / "sub")
    code = f"import os\nprint(os.path.isdir({cwd!r}), os.getcwd() != {cwd!r})"

    result = await run(jp_fetch, code, cwd="sub", kernel_name=hidden_root_kernel, timeout=120)

    assert result["isError"] is False
    output, notice = result["text"].split("\n\n")
    assert output == "False True"  # the kernel indeed cannot see the server's files
    assert result["notices"] == [notice]
    assert "\n" not in notice
    assert notice.startswith(f"[The kernel cannot see the server's files ({cwd}: ")
    assert notice.endswith(f"read artifacts over HTTP: GET {jp_base_url}api/xcsh/artifacts/<id>]")
    # Said once: the next call on the same kernel runs without it, state intact.
    again = await run(jp_fetch, "print(os.getcwd())", cwd="sub", kernel_name=hidden_root_kernel)
    assert "notices" not in again
    assert again["session"]["kernelId"] == result["session"]["kernelId"]


@pytest.mark.slow
async def test_output_explains_how_to_read_an_artifact_over_http(
    jp_fetch, jp_base_url, hidden_root_kernel
):
    options = {"kernel_name": hidden_root_kernel, "timeout": 120}
    # 200 KB of output spills to an artifact on the server, beyond the kernel's reach.
    spilled = await run(jp_fetch, "print('y\\n' * 100000, end='')", **options)
    artifact_id = spilled["artifactId"]

    result = await run(jp_fetch, f"output('artifact://{artifact_id}')", **options)

    error = result["cells"][0]["error"]
    assert error["ename"] == "FileNotFoundError"
    assert error["evalue"] == (
        f"Artifact {artifact_id} is on the Jupyter server, whose files this kernel cannot see; "
        f"read it over HTTP: GET {jp_base_url}api/xcsh/artifacts/{artifact_id} "
        "(with the server's token)"
    )
    response = await jp_fetch("api", "xcsh", "artifacts", artifact_id)
    assert response.body.decode().count("y\n") == 100000
