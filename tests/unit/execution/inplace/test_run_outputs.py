"""Stored outputs of runs in place, built from IOPub messages as nbclient builds them (pure)."""

from __future__ import annotations

import json

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

from jupyter_xcsh.execution.inplace.stored import ArtifactLink, RunOutputs


def msg(kind, **content):
    return {"msg_type": kind, "header": {"msg_type": kind}, "content": content}


def stream(text, name="stdout"):
    return msg("stream", name=name, text=text)


def display(data, display_id=None, kind="display_data", **extra):
    content = {"data": data, "metadata": {}, **extra}
    if display_id is not None:
        content["transient"] = {"display_id": display_id}
    return msg(kind, **content)


def build(*messages, max_bytes=1 << 20, max_outputs=0, key="a"):
    run = RunOutputs(max_bytes, max_outputs)
    cell = run.start(key)
    for m in messages:
        run.handle(key, m)
    return cell


def test_consecutive_streams_of_one_name_are_merged_and_others_kept_apart():
    cell = build(stream("a\n"), stream("b\n"), stream("!\n", "stderr"), stream("c\n"))

    assert cell.to_json() == [
        {"name": "stdout", "output_type": "stream", "text": "a\nb\n"},
        {"name": "stderr", "output_type": "stream", "text": "!\n"},
        {"name": "stdout", "output_type": "stream", "text": "c\n"},
    ]


def test_carriage_returns_and_backspaces_overwrite_as_in_a_terminal():
    cell = build(
        stream("done\n"), stream("10%\r"), stream("20%\r"), stream("30%"), stream("ab\bc\n")
    )

    assert cell.to_json()[0]["text"] == "done\n30%ac\n"


def test_clear_output_wait_keeps_only_what_follows_the_last_clear():
    messages = []
    for i in range(5):
        messages += [msg("clear_output", wait=True), stream(f"step {i}\n")]
    cell = build(*messages)

    assert cell.to_json() == [{"name": "stdout", "output_type": "stream", "text": "step 4\n"}]


def test_clear_output_without_wait_clears_at_once():
    cell = build(stream("old\n"), msg("clear_output", wait=False))

    assert cell.to_json() == []


def test_update_display_data_replaces_the_output_with_its_display_id_in_any_cell():
    run = RunOutputs(1 << 20)
    first = run.start("a")
    run.handle("a", display({"text/plain": "v1"}, "h"))
    second = run.start("b")
    changed = run.handle("b", display({"text/plain": "v2"}, "h", kind="update_display_data"))

    assert changed == {"a"}
    assert first.to_json() == [
        {"output_type": "display_data", "data": {"text/plain": "v2"}, "metadata": {}}
    ]
    assert second.to_json() == []  # an update is never appended


def test_transient_is_dropped_and_execute_results_keep_their_count():
    cell = build(
        msg("execute_input", code="1", execution_count=7),
        display({"text/plain": "1"}, "x", kind="execute_result", execution_count=7),
    )

    assert cell.execution_count == 7
    assert cell.to_json() == [
        {
            "output_type": "execute_result",
            "data": {"text/plain": "1"},
            "metadata": {},
            "execution_count": 7,
        }
    ]


def test_stored_stream_text_keeps_its_tail_and_links_the_artifact():
    cell = build(*(stream(f"line {i:06d}\n") for i in range(10000)), max_bytes=1000)
    cell.artifact = ArtifactLink("20250101T000000-0123456789ab", ".xcsh-artifacts/x.run.log")
    cell.notebook_dir = "sub"
    outputs = cell.to_json()

    assert [o["output_type"] for o in outputs] == ["display_data", "stream"]
    text = outputs[1]["text"]
    assert len(text.encode()) <= 1000
    assert text.endswith("line 009999\n")
    notice = outputs[0]["data"]
    assert "artifact://20250101T000000-0123456789ab" in notice["text/plain"]
    assert 'href="../.xcsh-artifacts/x.run.log"' in notice["text/html"]
    nb = new_notebook(cells=[new_code_cell("print()", outputs=outputs)])
    nbformat.validate(nbformat.from_dict(json.loads(json.dumps(nb))))


def test_one_huge_chunk_is_cut_to_whole_characters():
    cell = build(stream("é" * 5000 + "end"), max_bytes=101)

    text = cell.to_json()[1]["text"]
    assert text.endswith("end") and set(text[:-3]) == {"é"}
    assert len(text.encode()) <= 101


def test_a_clear_forgets_what_was_dropped_before_it():
    cell = build(stream("x" * 5000), msg("clear_output", wait=True), stream("ok\n"), max_bytes=100)

    assert cell.to_json() == [{"name": "stdout", "output_type": "stream", "text": "ok\n"}]


def test_errors_are_stored_as_nbformat_error_outputs():
    cell = build(msg("error", ename="E", evalue="v", traceback=["t1", "t2"]))

    assert cell.to_json() == [
        {"output_type": "error", "ename": "E", "evalue": "v", "traceback": ["t1", "t2"]}
    ]


def test_displays_past_the_cap_are_left_out_and_counted_in_a_notice():
    figures = [display({"text/plain": f"<Figure {i}>"}) for i in range(5)]
    error = msg("error", ename="E", evalue="v", traceback=[])
    cell = build(stream("a\n"), *figures, stream("b\n"), error, max_outputs=2)

    outputs = cell.to_json()
    assert [o["output_type"] for o in outputs] == [
        "stream",
        "display_data",
        "display_data",
        "stream",
        "error",  # an error is always stored
        "display_data",
    ]
    assert [o["data"]["text/plain"] for o in outputs[1:3]] == ["<Figure 0>", "<Figure 1>"]
    assert outputs[-1]["data"]["text/plain"] == (
        "[3 more output(s) not stored: a cell stores at most 2 displays and results "
        "(XcshSettings.run_max_outputs)]"
    )
    nb = new_notebook(cells=[new_code_cell("plot()", outputs=outputs)])
    nbformat.validate(nbformat.from_dict(json.loads(json.dumps(nb))))


def test_a_clear_makes_room_under_the_cap_again():
    cell = build(
        display({"text/plain": "1"}),
        display({"text/plain": "2"}),
        msg("clear_output", wait=False),
        display({"text/plain": "3"}),
        display({"text/plain": "4"}),
        max_outputs=1,
    )

    texts = [o["data"]["text/plain"] for o in cell.to_json()]
    assert texts[0] == "3"
    assert texts[1].startswith("[1 more output(s) not stored")
    assert len(texts) == 2
