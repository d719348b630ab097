"""Sphinx configuration of the jupyter-xcsh docs (MyST markdown, as Jupyter projects build theirs).

Build: ``sphinx-build -W --keep-going -n docs docs/_build/html`` in an environment with the
``docs`` extra (``pip install -e ".[docs]"``). ``-W`` makes every warning an error, and ``-n``
reports every reference that does not resolve, so a broken link between pages, an anchor a page
does not have or a missing image fails the build: that is the docs' link checking.

Only links inside the repository are checked. Links to addresses outside it cannot be: CI has no
internet (``linkcheck`` would fail there for reasons that are not the docs'), so the docs do not
depend on outside addresses; ``tests/repo/test_docs_links.py`` also checks every markdown file's
relative links and anchors, the README's and CONTRIBUTING.md's included.
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

project = "jupyter-xcsh"
author = "jupyter-xcsh contributors"
copyright = "jupyter-xcsh contributors"
release = json.loads((ROOT / "package.json").read_text(encoding="utf-8"))["version"]
version = release

extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]

# GitHub's anchors for headings (``contract.md#22-addressing-cells``), so that the same links
# work when the markdown is read on GitHub and in the built site.
myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence"]

# Every warning is an error in CI (-W); no warning is silenced here.
nitpicky = True

html_theme = "pydata_sphinx_theme"
html_title = "jupyter-xcsh"
html_theme_options = {
    # No icon links, analytics or version switcher: nothing fetched from outside the site.
    "navigation_with_keys": False,
    "show_toc_level": 2,
}
html_static_path: list[str] = []
html_last_updated_fmt = None
