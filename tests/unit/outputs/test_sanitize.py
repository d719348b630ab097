"""sanitize(): terminal escapes and control characters never reach the caller."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jupyter_xcsh.outputs import sink
from jupyter_xcsh.outputs.sink import sanitize

ESC = "\x1b"


def test_plain_text_tabs_and_newlines_pass_through_unchanged():
    text = "col1\tcol2\nünïcödé ✓ 日本語 🎉\n"
    assert sanitize(text) == text


def test_csi_colour_sequences_are_removed():
    assert sanitize(f"{ESC}[31mred{ESC}[0m plain") == "red plain"


def test_csi_with_private_parameters_and_intermediates_is_removed():
    assert sanitize(f"a{ESC}[?25lb{ESC}[?2004hc{ESC}[1 qd") == "abcd"


def test_csi_cursor_movement_and_erase_sequences_are_removed():
    assert sanitize(f"10%{ESC}[2K{ESC}[1G20%{ESC}[A") == "10%20%"


def test_osc_terminated_by_bel_is_removed():
    assert sanitize(f"a{ESC}]0;window title\x07b") == "ab"


def test_osc_terminated_by_st_is_removed():
    link = f"{ESC}]8;;https://example.org{ESC}\\link{ESC}]8;;{ESC}\\"
    assert sanitize(f"see {link}!") == "see link!"


def test_osc_terminated_by_c1_st_is_removed():
    assert sanitize(f"a{ESC}]2;t\x9cb") == "ab"


@pytest.mark.parametrize(
    ("introducer", "kind"), [("P", "DCS"), ("X", "SOS"), ("^", "PM"), ("_", "APC")]
)
def test_string_sequences_terminated_by_st_are_removed(introducer, kind):
    assert sanitize(f"a{ESC}{introducer}{kind} payload;1;2{ESC}\\b") == "ab"


@pytest.mark.parametrize("final", ["7", "8", "c", "M", "=", ">", "D", "E"])
def test_two_character_escape_sequences_are_removed(final):
    assert sanitize(f"a{ESC}{final}b") == "ab"


def test_escape_sequences_with_intermediates_such_as_charset_selection_are_removed():
    # tput sgr0 emits ESC ( B before its CSI.
    assert sanitize(f"a{ESC}(B{ESC}[mb{ESC}#8c") == "abc"


def test_unterminated_csi_loses_only_its_esc():
    assert sanitize(f"a{ESC}[12") == "a[12"


def test_unterminated_osc_loses_only_its_esc():
    assert sanitize(f"a{ESC}]0;title\nnext line") == "a]0;title\nnext line"


def test_unterminated_dcs_loses_only_its_esc():
    assert sanitize(f"a{ESC}Pdata") == "aPdata"


def test_lone_esc_at_the_end_is_dropped():
    assert sanitize(f"done{ESC}") == "done"


def test_every_carriage_return_is_dropped():
    assert sanitize("a\r\nb\rc\r") == "a\nbc"


@pytest.mark.parametrize("code", [c for c in range(0x20) if c not in (0x09, 0x0A)])
def test_c0_controls_other_than_tab_and_newline_are_dropped(code):
    # Followed by a tab, so that ESC does not start a sequence.
    assert sanitize(f"a{chr(code)}\tb") == "a\tb"


def test_del_is_dropped():
    assert sanitize("a\x7fb") == "ab"


@pytest.mark.parametrize("code", range(0x80, 0xA0))
def test_c1_controls_are_dropped(code):
    assert sanitize(f"a{chr(code)}b") == "ab"


def test_characters_next_to_the_control_ranges_are_kept():
    assert sanitize("\x20~\xa0¡") == " ~\xa0¡"


def test_sanitizing_twice_changes_nothing_more():
    once = sanitize(f"{ESC}[1mbold{ESC}[0m\r\n{ESC}]0;t\x07\x00x")
    assert sanitize(once) == once == "bold\nx"


def test_the_shared_examples_are_what_sanitize_leaves():
    # escapes.json is the one definition, the lab's terminal text included: its examples are
    # checked by the lab's tests too (labextension/src/__tests__/terminal.spec.ts).
    data = json.loads((Path(sink.__file__).parent / "escapes.json").read_text(encoding="utf-8"))
    assert data["examples"]
    for text, expected in data["examples"]:
        assert sanitize(text) == expected, text
