"""One follower of the runs (``RunInputTool``), built once, for every tool that runs code."""

from __future__ import annotations


async def test_every_tool_that_runs_code_shares_the_application_follower(jp_serverapp):
    services = jp_serverapp.web_app.settings["xcsh"]
    assert services.run_inputs.runs is services.runs
    assert services.python.follow_ups is services.run_inputs
    assert services.run.follow_ups is services.run_inputs
    assert services.notebook.follow_ups is services.run_inputs
