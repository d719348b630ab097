"""The file the tool writes atomically, stamped out of the racy window so its status is kept."""

from __future__ import annotations

import os
import stat
import time

import pytest

from jupyter_xcsh.notebook.storage.atomic import _settle_modification_time
from jupyter_xcsh.notebook.storage.cache import RACY_NS


def _status(mtime_ns: int) -> os.stat_result:
    """A regular file's status whose modification time is ``mtime_ns``."""
    fields = [stat.S_IFREG | 0o644, 1, 1, 1, 0, 0, 10, 0, 0, 0]
    return os.stat_result((*fields, 0.0, mtime_ns / 1e9, 0.0, 0, mtime_ns, 0))


@pytest.mark.parametrize(
    ("replaced_ago_ns", "moved"),
    [(None, True), (10**9, True), (0, False), (-(10**9), False)],
    ids=["new file", "older file", "file written now", "file of the future"],
)
def test_a_saved_file_is_stamped_before_the_racy_window_never_before_the_file_it_replaces(
    tmp_path, replaced_ago_ns, moved
):
    path = tmp_path / "a.ipynb"
    path.write_text("{}", encoding="utf-8")
    written = os.stat(path).st_mtime_ns
    now = time.time_ns()
    replaced = None if replaced_ago_ns is None else _status(now - replaced_ago_ns)
    fd = os.open(path, os.O_RDWR)
    try:
        _settle_modification_time(fd, replaced)
    finally:
        os.close(fd)
    after = time.time_ns()
    mtime = os.stat(path).st_mtime_ns
    if moved:
        assert now - RACY_NS - 10**8 < mtime < after - RACY_NS  # out of the racy window
        assert replaced is None or mtime > replaced.st_mtime_ns
    else:
        assert mtime == written


def test_a_file_of_whole_second_times_keeps_the_time_it_was_written_with(tmp_path):
    path = tmp_path / "a.ipynb"
    path.write_text("{}", encoding="utf-8")
    written = os.stat(path).st_mtime_ns
    fd = os.open(path, os.O_RDWR)
    try:
        _settle_modification_time(fd, _status((time.time_ns() // 10**9 - 60) * 10**9))
    finally:
        os.close(fd)
    assert os.stat(path).st_mtime_ns == written
