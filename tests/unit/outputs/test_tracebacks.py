"""fold_traceback: the frames that matter whole, library frames on one line, repeats collapsed."""

from __future__ import annotations

import pytest

from jupyter_xcsh.execution.kernel.messages import error_output
from jupyter_xcsh.outputs.tracebacks import fold_traceback

SITE = "/srv/venv/lib/python3.11/site-packages"

#: IPython 9's traceback of a pandas KeyError (colours left out), as its list's lines.
KEY_ERROR = [
    "-" * 75,
    "KeyError                                  Traceback (most recent call last)",
    f"File {SITE}/pandas/core/indexes/base.py:3816, in Index.get_loc(self, key)\n"
    "   3815 try:\n"
    "-> 3816     return self._engine.get_loc(casted_key)\n"
    "   3817 except KeyError as err:\n",
    "File pandas/_libs/index.pyx:172, in pandas._libs.index.IndexEngine.get_loc()\n"
    "--> 172 'Could not get source, probably due dynamically evaluated source code.'\n",
    "File pandas/_libs/hashtable_class_helper.pxi:7734, in "
    "pandas._libs.hashtable.PyObjectHashTable.get_item()\n"
    "-> 7734 'Could not get source, probably due dynamically evaluated source code.'\n",
    "KeyError: 'missing_column'",
    "\nThe above exception was the direct cause of the following exception:\n",
    "KeyError                                  Traceback (most recent call last)",
    "Cell In[7], line 3\n"
    "      1 import pandas as pd\n"
    "      2 df = pd.DataFrame({'a': [1]})\n"
    "----> 3 df['missing_column']\n",
    f"File {SITE}/pandas/core/frame.py:4330, in DataFrame.__getitem__(self, key)\n"
    "   4329                 return self._getitem_multilevel(key)\n"
    "-> 4330             indexer = self.columns.get_loc(key)\n",
    f"File {SITE}/pandas/core/indexes/base.py:3823, in Index.get_loc(self, key)\n"
    "   3822         raise InvalidIndexError(key) from err\n"
    "-> 3823     raise KeyError(key) from err\n"
    "   3824 except TypeError:\n",
    "KeyError: 'missing_column'",
]


def recursion(frames: int) -> list[str]:
    frame = "Cell In[8], line 2, in f(n)\n      1 def f(n):\n----> 2     return f(n + 1)\n"
    return [
        "RecursionError                            Traceback (most recent call last)",
        "Cell In[8], line 3\n      1 def f(n):\n      2     return f(n + 1)\n----> 3 f(0)\n",
        *[frame] * frames,
        "RecursionError: maximum recursion depth exceeded",
    ]


def test_library_frames_become_one_line_and_the_users_and_the_last_frames_stay_whole():
    folded = fold_traceback("\n".join(KEY_ERROR))

    assert folded.text == (
        "Traceback (most recent call last):\n"
        "File pandas/core/indexes/base.py:3816, in Index.get_loc(self, key)\n"
        "File pandas/_libs/index.pyx:172, in pandas._libs.index.IndexEngine.get_loc()\n"
        "File pandas/_libs/hashtable_class_helper.pxi:7734, in "
        "pandas._libs.hashtable.PyObjectHashTable.get_item()\n"
        "KeyError: 'missing_column'\n"
        "\n"
        "The above exception was the direct cause of the following exception:\n"
        "\n"
        "Traceback (most recent call last):\n"
        "Cell In[7], line 3\n"
        "      1 import pandas as pd\n"
        "      2 df = pd.DataFrame({'a': [1]})\n"
        "----> 3 df['missing_column']\n"
        "\n"
        "File pandas/core/frame.py:4330, in DataFrame.__getitem__(self, key)\n"
        "\n"
        f"File {SITE}/pandas/core/indexes/base.py:3823, in Index.get_loc(self, key)\n"
        "   3822         raise InvalidIndexError(key) from err\n"
        "-> 3823     raise KeyError(key) from err\n"
        "   3824 except TypeError:\n"
        "\n"
        "KeyError: 'missing_column'"
    )
    assert (folded.folded, folded.library_frames, folded.repeated_frames) == (True, 4, 0)
    assert "Could not get source" not in folded.text


@pytest.mark.slow
def test_a_recursion_shows_the_repeated_frame_once_and_says_how_many_times_it_repeated():
    folded = fold_traceback("\n".join(recursion(2975)))

    assert folded.text == (
        "Traceback (most recent call last):\n"
        "Cell In[8], line 3\n"
        "      1 def f(n):\n"
        "      2     return f(n + 1)\n"
        "----> 3 f(0)\n"
        "\n"
        "Cell In[8], line 2, in f(n)\n"
        "      1 def f(n):\n"
        "----> 2     return f(n + 1)\n"
        "[... previous frame repeated 2974 times]\n"
        "\n"
        "RecursionError: maximum recursion depth exceeded"
    )
    assert (folded.repeated_frames, folded.library_frames) == (2974, 0)


def test_a_mutual_recursion_collapses_its_cycle_of_frames():
    g = "Cell In[9], line 1, in g(n)\n----> 1 def g(n): return h(n)\n"
    h = "Cell In[9], line 2, in h(n)\n----> 2 def h(n): return g(n)\n"
    folded = fold_traceback("\n".join([*[g, h] * 500, "RecursionError: maximum recursion"]))

    assert "[... previous 2 frames repeated 499 times]" in folded.text
    assert folded.text.count("def g(n)") == 1 and folded.repeated_frames == 998


def test_two_repeats_are_not_collapsed():
    folded = fold_traceback("\n".join(recursion(2)))
    assert folded.text.count("Cell In[8], line 2, in f(n)") == 2
    assert not folded.folded


def test_a_recursion_inside_a_library_ends_with_its_last_frame_whole():
    frame = (
        f"File {SITE}/lib/walk.py:10, in walk(node)\n"
        "      9 def walk(node):\n"
        "---> 10     walk(node.child)\n"
    )
    folded = fold_traceback("\n".join(["Cell In[1], line 1\n----> 1 walk(x)\n", *[frame] * 50]))

    lines = folded.text.split("\n")
    assert lines[3:5] == [
        "File lib/walk.py:10, in walk(node)",
        "[... previous frame repeated 48 times]",
    ]
    assert lines[6:] == [f"File {SITE}/lib/walk.py:10, in walk(node)", *frame.split("\n")[1:3]]


def test_pythons_own_format_is_folded_too():
    text = (
        "Traceback (most recent call last):\n"
        '  File "/home/me/work/train.py", line 12, in <module>\n'
        "    main()\n"
        '  File "/usr/lib/python3.11/json/__init__.py", line 346, in loads\n'
        "    return _default_decoder.decode(s)\n"
        "           ^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        '  File "/usr/lib/python3.11/json/decoder.py", line 355, in raw_decode\n'
        "    raise JSONDecodeError('Expecting value', s, err.value) from None\n"
        "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)"
    )
    assert fold_traceback(text).text == (
        "Traceback (most recent call last):\n"
        '  File "/home/me/work/train.py", line 12, in <module>\n'
        "    main()\n"
        "\n"
        'File "json/__init__.py", line 346, in loads\n'
        "\n"
        '  File "/usr/lib/python3.11/json/decoder.py", line 355, in raw_decode\n'
        "    raise JSONDecodeError('Expecting value', s, err.value) from None\n"
        "\n"
        "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)"
    )


def test_a_syntax_error_and_another_languages_error_are_left_as_they_are():
    syntax = "  Cell In[5], line 1\n    x = = 1\n        ^\n\nSyntaxError: invalid syntax"
    assert fold_traceback(syntax).text == syntax
    r_error = "Error in log(-1): NaNs produced\nCalls: f -> g\nExecution halted"
    folded = fold_traceback(r_error)
    assert (folded.text, folded.folded) == (r_error, False)


def test_escapes_never_remain_in_the_folded_text():
    coloured = "\x1b[36mCell\x1b[39m\x1b[36m \x1b[39m\x1b[32mIn[2]\x1b[39m\x1b[32m, line 1\x1b[39m"
    folded = fold_traceback(coloured + "\n----> 1 1/0\n\n\x1b[31mZeroDivisionError\x1b[39m: x")
    assert folded.text == "Cell In[2], line 1\n----> 1 1/0\n\nZeroDivisionError: x"


def test_the_notice_says_what_was_folded_and_names_the_full_text():
    folded = fold_traceback("\n".join(KEY_ERROR))
    assert folded.notice("ID") == (
        "[Traceback folded: 4 library frames on one line; full traceback: artifact://ID]"
    )
    both = fold_traceback("\n".join([KEY_ERROR[2], *recursion(5)]))
    assert both.notice(None) == (
        "[Traceback folded: 1 library frame on one line, 4 repeated frames collapsed]"
    )


def test_an_error_message_keeps_every_line_in_its_structure_and_saves_the_full_text():
    saved: list[str] = []

    def save(text: str) -> str:
        saved.append(text)
        return "20260101T000000-0123456789ab"

    coloured = [f"\x1b[31m{line}\x1b[39m" for line in KEY_ERROR]
    content = {"ename": "KeyError", "evalue": "'missing_column'", "traceback": coloured}
    text, error = error_output(content, save)

    assert error == {
        "ename": "KeyError",
        "evalue": "'missing_column'",
        "traceback": KEY_ERROR,  # every line, escapes removed
        "artifactId": "20260101T000000-0123456789ab",
    }
    assert saved == ["\n".join(KEY_ERROR) + "\n"]
    assert text.startswith(
        "[Traceback folded: 4 library frames on one line; full traceback: "
        "artifact://20260101T000000-0123456789ab]\nTraceback (most recent call last):\n"
    )
    assert text.endswith("KeyError: 'missing_column'\n") and "\x1b" not in text


def test_an_error_nothing_was_folded_from_saves_nothing():
    content = {"ename": "ZeroDivisionError", "evalue": "x", "traceback": ["ZeroDivisionError: x"]}
    text, error = error_output(content, lambda text: "never")
    assert (text, "artifactId" in error) == ("ZeroDivisionError: x\n", False)
