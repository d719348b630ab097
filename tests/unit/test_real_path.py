"""``paths.real_path``: always ``os.path.realpath``'s answer, for less when no part is a link."""

from __future__ import annotations

import os

import pytest

from jupyter_xcsh import paths
from jupyter_xcsh.paths import real_path

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the lean check is POSIX's")


@pytest.fixture
def tree(tmp_path):
    """``root/sub/file``, a folder ``outside`` and the real path of ``tmp_path``."""
    base = tmp_path.resolve()
    (base / "root" / "sub").mkdir(parents=True)
    (base / "root" / "sub" / "file").write_text("x")
    (base / "outside").mkdir()
    (base / "outside" / "secret").write_text("s")
    return base


def spellings(base):
    root = str(base / "root")
    return [
        root,
        root + "/",
        root + "//",
        root + "/sub/file",
        root + "/sub/./file",
        root + "/sub/../sub/file",
        root + "//sub/file",
        root + "/missing/deeper",
        "/" + root,  # two leading slashes: kept by normpath, one for realpath
        "/",
        os.path.relpath(root),
    ]


def test_every_spelling_without_links_is_realpaths_answer(tree):
    for path in spellings(tree):
        assert real_path(path) == os.path.realpath(path), path


def test_a_link_made_later_is_followed_as_realpath_follows_it(tree):
    root = tree / "root"
    before = real_path(str(root / "link" / "secret"))
    assert before == str(root / "link" / "secret")

    (root / "link").symlink_to(tree / "outside")  # made after the first answer

    path = str(root / "link" / "secret")
    assert real_path(path) == os.path.realpath(path) == str(tree / "outside" / "secret")
    # A link higher up, to a folder holding the same names, is followed too.
    (tree / "alias").symlink_to(root)
    for path in spellings(tree):
        aliased = path.replace(str(root), str(tree / "alias"))
        assert real_path(aliased) == os.path.realpath(aliased), aliased


def test_a_link_loop_and_a_link_to_a_missing_file_are_realpaths_answer(tree):
    root = tree / "root"
    (root / "a").symlink_to(root / "b")
    (root / "b").symlink_to(root / "a")
    (root / "dangling").symlink_to(tree / "nowhere")
    for name in ("a", "a/x", "dangling", "dangling/x"):
        path = str(root / name)
        assert real_path(path) == os.path.realpath(path), path


def test_a_path_without_links_costs_no_realpath(tree, monkeypatch):
    calls = []
    realpath = os.path.realpath
    monkeypatch.setattr(
        paths.os.path, "realpath", lambda p, **kw: calls.append(p) or realpath(p, **kw)
    )
    assert real_path(str(tree / "root" / "sub" / "file")) == str(tree / "root" / "sub" / "file")
    assert calls == []
    (tree / "root" / "link").symlink_to(tree / "outside")
    assert real_path(str(tree / "root" / "link")) == str(tree / "outside")
    assert calls == [str(tree / "root" / "link")]
