"""OutputSink: counted, bounded to its tail, spilled whole to an artifact, sanitized once."""

from __future__ import annotations

import os
import tracemalloc

import pytest

from jupyter_xcsh.outputs.artifacts import ArtifactStore, ArtifactWriter
from jupyter_xcsh.outputs.sink import (
    OutputSink,
    SinkResult,
    count_newlines,
    format_size,
    truncation_notice,
)


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


# Bounded tail


def test_output_that_fits_is_returned_whole_and_not_truncated():
    sink = OutputSink(max_bytes=5)
    sink.push("ab")
    sink.push("cde")
    result = sink.dump()
    assert (result.output, result.truncated) == ("abcde", False)


def test_past_the_limit_only_the_tail_is_kept():
    sink = OutputSink(max_bytes=5)
    sink.push("abc")
    sink.push("def")
    result = sink.dump()
    assert (result.output, result.truncated) == ("bcdef", True)
    assert (result.total_bytes, result.output_bytes) == (6, 5)


def test_truncated_is_visible_while_pushing():
    sink = OutputSink(max_bytes=5)
    sink.push("abcde")
    assert not sink.truncated
    sink.push("f")
    assert sink.truncated


def test_a_single_chunk_larger_than_the_limit_keeps_its_tail():
    sink = OutputSink(max_bytes=4)
    sink.push("0123456789")
    assert sink.dump().output == "6789"


def test_the_tail_is_cut_forward_to_a_character_boundary_across_chunks():
    # 'a' + '€' (3 bytes) + 'b' = 5 bytes; a 3-byte tail would start inside the euro sign.
    sink = OutputSink(max_bytes=4)
    sink.push("a€")
    sink.push("bc")
    result = sink.dump()
    assert result.output == "bc"
    assert result.output_bytes == 2


def test_the_tail_of_one_large_chunk_is_cut_forward_to_a_character_boundary():
    sink = OutputSink(max_bytes=5)
    sink.push("x🎉🎉")  # 1 + 4 + 4 bytes; the last 5 bytes start inside the first emoji
    assert sink.dump().output == "🎉"


def test_multibyte_characters_are_never_split():
    sink = OutputSink(max_bytes=7)
    text = "日本語テキスト" * 50
    for ch in text:
        sink.push(ch)
    output = sink.dump().output
    assert output == text[-2:]  # 6 bytes; 9 would not fit


def test_memory_stays_bounded_by_the_limit_whatever_the_volume(store):
    chunk = ("x" * 99 + "\n") * 655  # about 64 KiB
    sink = OutputSink(max_bytes=51200, open_artifact=lambda: store.create("python"))
    sink.push(chunk)  # the first push allocates the artifact's file buffer
    tracemalloc.start()
    try:
        start, _ = tracemalloc.get_traced_memory()
        for _ in range(300):  # about 19 MB
            sink.push(chunk)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    result = sink.dump()
    assert result.total_bytes == 301 * len(chunk)
    # The kept tail, one encoded chunk and a little bookkeeping.
    assert peak - start < 2 * 51200 + 2 * len(chunk)


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
    assert result.artifact_path == f"xcsh-artifacts/{writer.id}.python.log"


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


def test_without_an_artifact_opener_overflow_keeps_only_the_tail():
    sink = OutputSink(max_bytes=4)
    sink.push("0123456789")
    result = sink.dump()
    assert (result.output, result.truncated, result.artifact_id) == ("6789", True, None)


def test_an_artifact_that_cannot_be_created_leaves_the_tail(caplog):
    def failing_open() -> ArtifactWriter:
        raise OSError(28, "No space left on device")

    sink = OutputSink(max_bytes=4, open_artifact=failing_open)
    sink.push("0123456789")
    result = sink.dump()
    assert (result.output, result.artifact_id) == ("6789", None)
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

    sink = OutputSink(max_bytes=4, open_artifact=open_then_fill_disk)
    for chunk in ["0123", "4567", "89", "ab"]:
        sink.push(chunk)
    result = sink.dump()
    assert (result.output, result.artifact_id, result.artifact_path) == ("89ab", None, None)
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
    assert (result.output, result.artifact_id, result.artifact_path) == ("6789", None, None)
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
    sink = OutputSink(max_bytes=4, open_artifact=lambda: store.create("python"))
    sink.push("a\nb\nc\n")
    result = sink.dump()
    assert result.to_json() == {
        "output": "b\nc\n",
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


def test_truncation_notice_names_the_lines_shown_the_limit_and_the_artifact(store):
    sink = OutputSink(max_bytes=20, open_artifact=lambda: store.create("python"))
    for i in range(1, 101):
        sink.push(f"line {i}\n")
    result = sink.dump()
    # 100 newlines: 101 lines, the last empty; the 20-byte tail holds 3 newlines.
    assert result.output.endswith("line 99\nline 100\n")
    assert result.output_lines == 4
    assert truncation_notice(result, 51200) == (
        f"[Showing lines 98-101 of 101 (50.0KB limit). "
        f"Read artifact://{result.artifact_id} for full output]"
    )


def test_truncation_notice_is_none_for_whole_output():
    sink = OutputSink()
    sink.push("short")
    assert truncation_notice(sink.dump(), 51200) is None


def test_truncation_notice_without_an_artifact_only_names_the_lines():
    sink = OutputSink(max_bytes=4)
    sink.push("1\n2\n3\n4\n")
    assert truncation_notice(sink.dump(), 4) == "[Showing lines 3-5 of 5 (4B limit)]"


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
    sink = OutputSink(max_bytes=8, on_chunk=seen.append, chunk_interval=60, clock=FakeClock())
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
    assert result.output.encode() == data[-999:]  # 1000 bytes, cut forward to a boundary
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
