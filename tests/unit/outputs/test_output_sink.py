"""OutputSink: counted, cut on line boundaries to its head and tail, spilled whole to an
artifact, shown as plain text."""

from __future__ import annotations

import os
import re
import tracemalloc

import pytest

from jupyter_xcsh.artifacts.store import ArtifactStore, ArtifactWriter, iter_line_range
from jupyter_xcsh.outputs.sink import (
    DEFAULT_HEAD_LINES,
    DEFAULT_MAX_BYTES,
    DEFAULT_TAIL_LINES,
    OutputSink,
    SinkResult,
    count_newlines,
    format_size,
    truncation_notice,
)
from jupyter_xcsh.settings import XcshSettings


@pytest.fixture
def store(tmp_path):
    return ArtifactStore(str(tmp_path))


class CountingOpener:
    """Opens real artifacts and remembers them."""

    def __init__(self, store: ArtifactStore) -> None:
        self.store = store
        self.writers: list[ArtifactWriter] = []

    def __call__(self) -> ArtifactWriter:
        writer = self.store.create("python")
        self.writers.append(writer)
        return writer


def read_artifact(store: ArtifactStore, result: SinkResult) -> bytes:
    assert result.artifact_id is not None
    with open(store.resolve(result.artifact_id), "rb") as f:
        return f.read()


def numbered(count: int, start: int = 1) -> str:
    """``count`` lines ``line <n>`` numbered from ``start``, each ending with a newline."""
    return "".join(f"line {n}\n" for n in range(start, start + count))


def body(result: SinkResult) -> str:
    """The text shown after the notice of a cut output."""
    assert result.notice is not None
    first, rest = result.output.split("\n", 1)
    assert first == result.notice
    return rest


# Counters


def test_no_output_counts_zero_lines_and_bytes():
    result = OutputSink().dump()
    assert (result.output, result.total_lines, result.total_bytes) == ("", 0, 0)
    assert (result.output_lines, result.output_bytes, result.truncated) == (0, 0, False)


def test_total_lines_are_newlines_plus_one():
    sink = OutputSink()
    for chunk in ["one\ntw", "o\n", "three"]:
        sink.push(chunk)
    assert sink.dump().total_lines == 3


def test_a_trailing_newline_starts_one_more_line():
    sink = OutputSink()
    sink.push("a\n")
    assert sink.dump().total_lines == 2


def test_total_bytes_count_utf8_bytes_not_characters():
    sink = OutputSink()
    sink.push("é€🎉")
    result = sink.dump()
    assert result.total_bytes == 2 + 3 + 4
    assert result.output_bytes == 9


def test_empty_chunks_change_nothing():
    sink = OutputSink()
    sink.push("")
    assert sink.dump().total_lines == 0


# What is shown


def test_output_that_fits_is_returned_whole_and_not_truncated():
    sink = OutputSink(max_bytes=5)
    sink.push("ab")
    sink.push("cde")
    result = sink.dump()
    assert (result.output, result.truncated, result.notice) == ("abcde", False, None)


def test_the_default_limits_are_8_KiB_20_head_lines_and_60_tail_lines():
    assert (DEFAULT_MAX_BYTES, DEFAULT_HEAD_LINES, DEFAULT_TAIL_LINES) == (8192, 20, 60)
    settings = XcshSettings()
    assert (
        settings.max_output_bytes,
        settings.output_head_lines,
        settings.output_tail_lines,
    ) == (DEFAULT_MAX_BYTES, DEFAULT_HEAD_LINES, DEFAULT_TAIL_LINES)
    sink = OutputSink()
    sink.push(numbered(80))
    assert sink.dump().output == numbered(80)  # 80 lines: whole
    sink = OutputSink()
    sink.push(numbered(81))
    result = sink.dump()
    assert result.truncated
    assert body(result) == numbered(20) + "[... line 21 left out ...]\n" + numbered(60, 22)


def test_too_many_lines_keep_the_first_and_the_last_with_the_gap_marked():
    sink = OutputSink(head_lines=2, tail_lines=3)
    sink.push(numbered(10))
    result = sink.dump()
    assert result.truncated
    assert body(result) == (
        "line 1\nline 2\n[... lines 3-7 left out ...]\nline 8\nline 9\nline 10\n"
    )
    # The counters count the output's lines shown, not the notice or the marker.
    assert (result.output_lines, result.output_bytes) == (6, len(numbered(2) + numbered(3, 8)))
    assert (result.total_lines, result.total_bytes) == (11, len(numbered(10)))


def test_the_notice_comes_first_with_the_lines_the_size_what_is_shown_and_the_artifact(store):
    sink = OutputSink(head_lines=2, tail_lines=3, open_artifact=lambda: store.create("python"))
    sink.push(numbered(5000))
    result = sink.dump()
    assert (
        result.output.split("\n")[0]
        == result.notice
        == (
            f"[Output truncated: 5000 lines, {format_size(len(numbered(5000)))}; showing lines 1-2 "
            f"and 4998-5000. Full output: artifact://{result.artifact_id} (read it with the "
            "artifact tool, offset/limit in lines)]"
        )
    )
    assert truncation_notice(result) == result.notice


def test_a_timeouts_notice_comes_before_the_cut_notice():
    sink = OutputSink(head_lines=1, tail_lines=1)
    sink.push(numbered(3))
    result = sink.dump(notice="Command timed out after 5 seconds")
    lines = result.output.split("\n")
    assert lines[0] == "[Command timed out after 5 seconds]"
    assert lines[1] == result.notice
    assert lines[2:] == ["line 1", "[... line 2 left out ...]", "line 3", ""]


def test_the_lines_shown_are_numbered_as_the_artifact_pages_them(store):
    sink = OutputSink(head_lines=3, tail_lines=4, open_artifact=lambda: store.create("python"))
    for i in range(1, 1001):  # lines of different lengths, pushed in odd pieces
        sink.push(f"{i}:" + "ab" * (i % 7))
        sink.push("\n")
    result = sink.dump()
    assert "showing lines 1-3 and 997-1000" in result.notice
    with open(store.resolve(result.artifact_id), "rb") as f:
        page = b"".join(iter_line_range(f, 997, 4)).decode()
    assert body(result).endswith("...]\n" + page)


def test_a_cut_never_starts_inside_a_line_even_past_the_memory_window():
    # The window of the stream's end kept in memory starts inside a line: it is left out.
    lines = [f"{i}:" + "x" * (i % 97) for i in range(20_000)]
    sink = OutputSink(max_bytes=1024, head_lines=2, tail_lines=10)
    sink.push("\n".join(lines) + "\n")
    shown = body(sink.dump()).split("\n")
    assert shown[:2] == lines[:2]
    assert shown[2].startswith("[... lines 3-")
    assert all(line in lines for line in shown[3:-1])
    assert shown[-2] == lines[-1]


def test_a_cut_never_leaves_part_of_an_escape_sequence():
    link = "\x1b]8;;http://example.org/a/long/link\x1b\\link\x1b]8;;\x1b\\"
    for pad in range(0, 80):  # the start and the end of the windows fall everywhere
        text = "x" * pad + f"\x1b[31mred\x1b[0m {link} " * 500 + "x" * pad + "\n"
        for piece in (61, len(text)):
            sink = OutputSink(max_bytes=1024)
            for i in range(0, len(text), piece):
                sink.push(text[i : i + piece])
            shown = re.sub(r"\[\.\.\. [a-z ]+ of line 1 left out \.\.\.\]", "", body(sink.dump()))
            # What is left is whole words, or a word cut at a character for the budget.
            assert set(re.sub(r"[a-z ]", "", shown)) <= {"\n"}, (pad, piece, shown)
            assert "[" not in shown and "m" not in shown.replace("red", "").replace("link", "")


def test_no_escape_or_control_character_reaches_the_text_shown():
    raw = "".join(f"\x1b[3{i % 8}mstep {i}\x1b[0m\x07\x00\r\n" for i in range(500))
    for limits in ({}, {"head_lines": 5, "tail_lines": 5}, {"max_bytes": 64}):
        sink = OutputSink(**limits)
        sink.push(raw)
        output = sink.dump().output
        assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", output), limits


def test_a_carriage_return_overwrites_its_line_as_in_a_terminal():
    sink = OutputSink()
    sink.push("".join(f"\r{i:3d}%|{'#' * (i // 10):<10}|" for i in range(101)) + "\r\ndone\r\n")
    assert sink.dump().output == "100%|##########|\ndone\n"


def test_a_single_huge_line_keeps_its_start_and_end_at_character_boundaries():
    text = "é€🎉" * 50_000  # 450 KB on one line, no newline
    sink = OutputSink(max_bytes=1000, head_lines=1, tail_lines=3)
    sink.push(text)
    result = sink.dump()
    assert "[Output truncated: 1 line, 439.5KB; showing line 1 (long lines cut)." in result.notice
    start, end = body(result).split(" [... middle of line 1 left out ...] ")
    assert text.startswith(start) and text.endswith(end)
    assert len(start.encode()) <= 250 and len(end.encode()) <= 750  # head 1/4, tail 3/4
    assert len(start.encode()) > 240 and len(end.encode()) > 740


def test_a_line_longer_than_its_ends_share_is_cut_inside_and_says_so():
    long = "y" * 5000
    sink = OutputSink(max_bytes=1024, head_lines=3, tail_lines=3)
    sink.push(f"{long}\na\nb\nc\nd\n{long}\n")
    shown = body(sink.dump()).split("\n")
    assert re.fullmatch(r"y{100,} \[\.\.\. rest of line 1 left out \.\.\.\]", shown[0])
    assert shown[1] == "[... lines 2-5 left out ...]"
    assert re.fullmatch(r"\[\.\.\. start of line 6 left out \.\.\.\] y{100,}", shown[2])
    assert shown[3:] == [""]


def test_a_long_line_after_others_is_left_out_whole_rather_than_cut():
    long = "y" * 5000
    sink = OutputSink(max_bytes=1024, head_lines=3, tail_lines=3)
    sink.push(f"a\n{long}\nb\nc\n{long}\nd\ne\n")
    assert body(sink.dump()) == "a\n[... lines 2-5 left out ...]\nd\ne\n"


def test_the_byte_budget_is_shared_by_head_and_tail_in_proportion_to_their_lines():
    sink = OutputSink(max_bytes=4000, head_lines=10, tail_lines=30)
    sink.push("".join(f"{i:03d}" + "z" * 96 + "\n" for i in range(1000)))  # 100-byte lines
    result = sink.dump()
    assert "showing lines 1-10 and 971-1000" in result.notice  # 1000 + 3000 bytes: all fit
    sink = OutputSink(max_bytes=2000, head_lines=10, tail_lines=30)
    sink.push("".join(f"{i:03d}" + "z" * 96 + "\n" for i in range(1000)))
    result = sink.dump()
    assert "showing lines 1-5 and 986-1000" in result.notice  # 500 + 1500 bytes
    assert result.output_bytes <= 2000


def test_no_head_lines_shows_only_the_tail():
    sink = OutputSink(head_lines=0, tail_lines=2)
    sink.push(numbered(5))
    assert body(sink.dump()) == "[... lines 1-3 left out ...]\nline 4\nline 5\n"


def test_no_tail_lines_shows_only_the_head():
    sink = OutputSink(head_lines=2, tail_lines=0)
    sink.push(numbered(5))
    assert body(sink.dump()) == "line 1\nline 2\n[... lines 3-5 left out ...]"


def test_no_line_limit_cuts_by_bytes_alone_keeping_whole_lines_of_the_tail():
    sink = OutputSink(max_bytes=20, head_lines=0, tail_lines=0)
    sink.push(numbered(100))  # "line 98\nline 99\nline 100\n" is 24 bytes: two lines fit
    result = sink.dump()
    assert body(result) == "[... lines 1-98 left out ...]\nline 99\nline 100\n"
    assert "showing lines 99-100" in result.notice


def test_multibyte_characters_are_never_split():
    sink = OutputSink(max_bytes=7, head_lines=0, tail_lines=0)
    text = "日本語テキスト" * 50
    for ch in text:
        sink.push(ch)
    result = sink.dump()
    assert body(result) == "[... start of line 1 left out ...] " + text[-2:]  # 6 bytes fit


def test_the_tail_is_cut_forward_to_a_character_boundary_across_chunks():
    # 'a' + '€' (3 bytes) + 'b' = 5 bytes; a 3-byte tail would start inside the euro sign.
    sink = OutputSink(max_bytes=4, keep_bytes=4, head_lines=0, tail_lines=0)
    sink.push("a€")
    sink.push("bc")
    result = sink.dump()
    assert body(result) == "[... start of line 1 left out ...] bc"
    assert result.output_bytes == 2


def test_truncated_is_visible_while_pushing():
    sink = OutputSink(max_bytes=5)
    sink.push("abcde")
    assert not sink.truncated
    sink.push("f")
    assert sink.truncated


def test_memory_stays_bounded_by_the_limit_whatever_the_volume(store):
    chunk = ("x" * 99 + "\n") * 655  # about 64 KiB
    sink = OutputSink(max_bytes=51200, open_artifact=lambda: store.create("python"))
    sink.push(chunk)
    sink.push(chunk)  # the stream spills: the artifact's file buffer is allocated
    tracemalloc.start()
    try:
        start, _ = tracemalloc.get_traced_memory()
        for _ in range(300):  # about 19 MB
            sink.push(chunk)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    result = sink.dump()
    assert result.total_bytes == 302 * len(chunk)
    # The kept end (twice max_bytes), the head (at most max_bytes), one encoded chunk and a
    # little bookkeeping.
    assert peak - start < 3 * 51200 + 2 * len(chunk)


# Spilling to an artifact


def test_output_that_fits_creates_no_artifact(store):
    opener = CountingOpener(store)
    sink = OutputSink(max_bytes=10, open_artifact=opener)
    sink.push("0123456789")
    result = sink.dump()
    assert opener.writers == []
    assert result.artifact_id is None and result.artifact_path is None
    assert not os.path.exists(store.os_folder)


def test_the_first_overflow_opens_one_artifact_holding_everything_byte_exact(store):
    opener = CountingOpener(store)
    # The first two chunks fit (38 bytes); the third overflows.
    chunks = ["first \x1b[31mred\x1b[0m\r\n", "é€🎉 second\n", "third " * 10, "\x00end"]
    sink = OutputSink(max_bytes=40, open_artifact=opener)
    sink.push(chunks[0])
    sink.push(chunks[1])
    assert opener.writers == []
    for chunk in chunks[2:]:
        sink.push(chunk)
    result = sink.dump()
    assert len(opener.writers) == 1
    assert read_artifact(store, result) == "".join(chunks).encode("utf-8")


def test_the_result_names_the_artifact_by_id_and_contents_path(store):
    opener = CountingOpener(store)
    sink = OutputSink(max_bytes=4, open_artifact=opener)
    sink.push("0123456789")
    result = sink.dump()
    writer = opener.writers[0]
    assert result.artifact_id == writer.id
    assert result.artifact_path == f".xcsh-artifacts/{writer.id}.python.log"


def test_dump_closes_the_artifact(store):
    opener = CountingOpener(store)
    sink = OutputSink(max_bytes=4, open_artifact=opener)
    sink.push("0123456789")
    sink.dump()
    assert opener.writers[0].closed
    assert not store.is_writing(opener.writers[0].id)


def test_close_keeps_the_artifact_and_is_idempotent(store):
    opener = CountingOpener(store)
    sink = OutputSink(max_bytes=4, open_artifact=opener)
    sink.push("0123456789")
    sink.close()
    sink.close()
    assert opener.writers[0].closed
    with open(opener.writers[0].os_path, "rb") as f:
        assert f.read() == b"0123456789"


def test_pushing_after_dump_is_an_error():
    sink = OutputSink()
    sink.dump()
    with pytest.raises(RuntimeError):
        sink.push("late")


def test_without_an_artifact_opener_a_cut_output_says_the_rest_was_not_kept():
    sink = OutputSink(head_lines=1, tail_lines=1)
    sink.push("1\n2\n3\n4\n")
    result = sink.dump()
    assert (result.truncated, result.artifact_id) == (True, None)
    assert result.output == (
        "[Output truncated: 4 lines, 8B; showing lines 1 and 4. The rest was not kept]\n"
        "1\n[... lines 2-3 left out ...]\n4\n"
    )


def test_an_artifact_that_cannot_be_created_leaves_the_ends(caplog):
    def failing_open() -> ArtifactWriter:
        raise OSError(28, "No space left on device")

    sink = OutputSink(head_lines=1, tail_lines=1, open_artifact=failing_open)
    sink.push("1\n2\n3\n")
    result = sink.dump()
    assert (body(result), result.artifact_id) == ("1\n[... line 2 left out ...]\n3\n", None)
    assert result.notice.endswith("The rest was not kept]")
    assert "Could not create an output artifact" in caplog.text


def test_an_artifact_that_fails_mid_stream_is_removed_rather_than_left_partial(store, caplog):
    writers: list[ArtifactWriter] = []

    def open_then_fill_disk() -> ArtifactWriter:
        writer = store.create("python")
        writers.append(writer)
        real_write = writer.write
        calls = iter(range(1_000))

        def write(data: bytes) -> None:
            if next(calls) == 2:
                raise OSError(28, "No space left on device")
            real_write(data)

        writer.write = write  # type: ignore[method-assign]
        return writer

    # The stream spills past 8 bytes in memory: the third write to the artifact fails.
    sink = OutputSink(max_bytes=4, open_artifact=open_then_fill_disk)
    for chunk in ["0123", "4567", "89", "ab"]:
        sink.push(chunk)
    result = sink.dump()
    assert (result.artifact_id, result.artifact_path) == (None, None)
    assert result.output.endswith(" ab") and result.notice.endswith("The rest was not kept]")
    assert not os.path.exists(writers[0].os_path)
    assert "removing it" in caplog.text


def test_an_artifact_that_cannot_be_finished_is_removed(store, caplog):
    writers: list[ArtifactWriter] = []

    def open_then_fail_on_close() -> ArtifactWriter:
        writer = store.create("python")
        writers.append(writer)
        real_close = writer.close

        def close() -> None:
            real_close()
            raise OSError(28, "No space left on device")

        writer.close = close  # type: ignore[method-assign]
        return writer

    sink = OutputSink(max_bytes=4, open_artifact=open_then_fail_on_close)
    sink.push("0123456789")
    result = sink.dump()
    assert (result.artifact_id, result.artifact_path) == (None, None)
    assert result.output.endswith(" 89") and result.notice.endswith("The rest was not kept]")
    assert not os.path.exists(writers[0].os_path)
    assert "Could not finish output artifact" in caplog.text


# Sanitizing and the notice


def test_dump_sanitizes_the_visible_text_but_counts_the_raw_stream():
    sink = OutputSink()
    sink.push("\x1b[32mok\x1b[0m\r\n")
    result = sink.dump()
    assert result.output == "ok\n"
    assert (result.total_bytes, result.output_bytes) == (len("\x1b[32mok\x1b[0m\r\n"), 3)
    assert (result.total_lines, result.output_lines) == (2, 2)


def test_a_notice_is_prefixed_on_its_own_line_and_not_counted():
    sink = OutputSink()
    sink.push("partial")
    result = sink.dump(notice="Command timed out after 5 seconds")
    assert result.output == "[Command timed out after 5 seconds]\npartial"
    assert (result.output_lines, result.output_bytes) == (1, 7)


def test_to_json_uses_camel_case_keys(store):
    sink = OutputSink(head_lines=1, tail_lines=1, open_artifact=lambda: store.create("python"))
    sink.push("a\nb\nc\n")
    result = sink.dump()
    assert result.to_json() == {
        "output": result.notice + "\na\n[... line 2 left out ...]\nc\n",
        "truncated": True,
        "totalLines": 4,
        "totalBytes": 6,
        "outputLines": 3,
        "outputBytes": 4,
        "artifactId": result.artifact_id,
        "artifactPath": result.artifact_path,
    }


def test_to_json_leaves_out_the_artifact_when_there_is_none():
    sink = OutputSink()
    sink.push("x")
    assert "artifactId" not in sink.dump().to_json()


@pytest.mark.parametrize(
    ("size", "text"),
    [(0, "0B"), (1023, "1023B"), (1024, "1.0KB"), (51200, "50.0KB"), (1536 * 1024, "1.5MB")],
)
def test_format_size_writes_sizes_like_50_0KB(size, text):
    assert format_size(size) == text


def test_format_size_goes_up_to_gigabytes():
    assert format_size(3 * 1024**3) == "3.0GB"


def test_truncation_notice_is_none_for_whole_output():
    sink = OutputSink()
    sink.push("short")
    assert truncation_notice(sink.dump()) is None


def test_the_artifact_is_opened_when_the_output_shown_is_cut_though_memory_held_it(store):
    opener = CountingOpener(store)
    sink = OutputSink(head_lines=1, tail_lines=1, open_artifact=opener)
    sink.push("\x1b[1mone\x1b[0m\ntwo\nthree\n")  # far within memory, but three lines
    result = sink.dump()
    assert len(opener.writers) == 1
    assert read_artifact(store, result) == b"\x1b[1mone\x1b[0m\ntwo\nthree\n"
    assert f"artifact://{result.artifact_id}" in result.notice


# Live chunks


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_with_no_interval_every_chunk_is_delivered_raw():
    seen: list[str] = []
    sink = OutputSink(on_chunk=seen.append, chunk_interval=0)
    for chunk in ["a", "\x1b[31mb\r", "c"]:
        sink.push(chunk)
    assert seen == ["a", "\x1b[31mb\r", "c"]


def test_chunks_within_the_interval_are_coalesced_and_delivered_later():
    seen: list[str] = []
    clock = FakeClock()
    sink = OutputSink(on_chunk=seen.append, chunk_interval=0.25, clock=clock)
    sink.push("a")  # the first chunk goes out at once
    clock.now += 0.1
    sink.push("b")
    clock.now += 0.1
    sink.push("c")
    assert seen == ["a"]
    clock.now += 0.1  # 0.3 s after the last delivery
    sink.push("d")
    assert seen == ["a", "bcd"]


def test_flush_chunks_delivers_what_is_pending():
    seen: list[str] = []
    clock = FakeClock()
    sink = OutputSink(on_chunk=seen.append, chunk_interval=1.0, clock=clock)
    sink.push("a")
    sink.push("b")
    sink.flush_chunks()
    sink.flush_chunks()
    assert seen == ["a", "b"]


def test_dump_delivers_the_last_pending_chunks():
    seen: list[str] = []
    sink = OutputSink(on_chunk=seen.append, chunk_interval=60, clock=FakeClock())
    sink.push("a")
    sink.push("b")
    sink.push("c")
    sink.dump()
    assert seen == ["a", "bc"]


def test_pending_chunks_are_delivered_early_rather_than_outgrow_the_limit():
    seen: list[str] = []
    sink = OutputSink(
        max_bytes=8, keep_bytes=8, on_chunk=seen.append, chunk_interval=60, clock=FakeClock()
    )
    for chunk in ["a", "bcd", "efgh", "ijklm", "n"]:
        sink.push(chunk)
    assert seen == ["a", "bcdefghijklm"]
    assert "".join(seen) + "n" == "abcdefghijklmn"


def test_a_huge_chunk_is_counted_kept_and_spilled_exactly_like_small_ones(tmp_path):
    # Larger than the encode slice, with multi-byte characters straddling slice boundaries.
    text = ("é" * 700_000 + "\n") * 3
    store = ArtifactStore(str(tmp_path))
    sink = OutputSink(max_bytes=1000, open_artifact=lambda: store.create("python"))
    sink.push(text)
    result = sink.dump()
    data = text.encode()
    assert (result.total_bytes, result.total_lines) == (len(data), 4)
    shown = re.sub(r" ?\[\.\.\. [a-z0-9 -]+ left out \.\.\.\] ?", "", body(result))
    assert set(shown) == {"é", "\n"} and shown.endswith("é\n")  # whole characters only
    assert "showing lines 1 and 3 (long lines cut)" in result.notice
    with open(store.resolve(result.artifact_id), "rb") as f:
        assert f.read() == data


def test_pushing_a_huge_chunk_never_holds_a_second_full_size_copy(tmp_path):
    chunk = "x" * (32 * 1024 * 1024)
    store = ArtifactStore(str(tmp_path))
    sink = OutputSink(max_bytes=51200, open_artifact=lambda: store.create("python"))
    tracemalloc.start()
    try:
        sink.push(chunk)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    sink.close()
    # Encoded a slice at a time: a few MB at most, not another 32 MB.
    assert peak < 8 * 1024 * 1024


@pytest.mark.parametrize("line_length", [1, 2, 10, 31, 33, 40, 100, 1000, 100_000])
def test_newlines_are_counted_exactly_whatever_the_line_length(line_length):
    for size in (0, 100, 4095, 4096, 65536, 200_001):
        data = (b"a" * (line_length - 1) + b"\n") * (size // line_length + 1)
        data = data[:size]
        assert count_newlines(data) == data.count(b"\n")
    mixed = b"\n" * 3000 + b"x" * 3000 + b"\nabc\n" * 500
    assert count_newlines(mixed) == mixed.count(b"\n")


def test_a_snapshot_names_an_artifact_that_already_holds_everything_pushed(store):
    sink = OutputSink(max_bytes=1024, open_artifact=lambda: store.create("python"))
    sink.push("x" * 10_000)  # spilled, but far less than the artifact's write buffer
    partial = sink.snapshot()  # e.g. a result while the cell waits for input
    assert partial.artifact_id is not None
    with open(store.resolve(partial.artifact_id), "rb") as f:
        assert f.read() == b"x" * 10_000
    sink.push("y")
    assert sink.dump().total_bytes == 10_001
