"""The repository's markdown links resolve inside it, and the docs send no reader outside it.

Every ``*.md`` of the repository (tracked, or new and not ignored: never ``node_modules/`` or a
``.venv*``) is parsed as GitHub renders it: each relative link and image must name a file or
folder of the repository, and each ``#anchor`` a heading of the markdown file it points into
(GitHub's anchors, which the Sphinx site makes too: ``myst_heading_anchors`` in ``docs/conf.py``).
The docs site's build (``sphinx-build -W -n``) catches the same inside ``docs/``; this test
covers the README, CONTRIBUTING.md, CHANGELOG.md and every other markdown file as well, and runs
in the main suite. Links to addresses outside the repository cannot be checked offline, so the
docs use none (but placeholders such as ``hub.example.org``), and no file says "see <an outside
address>" as the place to read this project's own behaviour. Every ``XcshSettings`` setting is
in the operators' configuration page.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from jupyter_xcsh.settings import XcshSettings

REPO = Path(__file__).resolve().parents[2]
CONFIGURATION = REPO / "docs" / "operators" / "configuration.md"

#: Folders never searched when git cannot list the files (a source tree without .git).
SKIPPED_DIRS = {
    "node_modules",
    "lib",
    "dist",
    "build",
    "_build",
    "test-artifacts",
    "workspace",
    "__pycache__",
    "labextension",  # jupyter_xcsh/labextension: the built lab extension
}

#: Hosts that stand for "yours" in examples: never a place to read anything.
PLACEHOLDER_HOSTS = re.compile(
    r"^(127\.0\.0\.1|localhost|\[::1\]|<[^>]*>|([\w-]+\.)*example\.(org|com|net))(:\d+)?$"
)

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
CODE_SPAN = re.compile(r"(`+)(?:.+?)\1")
#: ``[text](target "title")`` and ``![alt](target)``: the text may hold one level of brackets, the
#: target one level of parentheses, or be written ``<target>``.
INLINE_LINK = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]"
    r"\(\s*(<[^>]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)(?:\s+\"[^\"]*\")?\s*\)"
)
REFERENCE_DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
HTML_LINK = re.compile(r"<(?:a|img)\s[^>]*?(?:href|src)\s*=\s*\"([^\"]*)\"", re.IGNORECASE)
#: "see https://…", "See [the docs](https://…)", "(see: <https://…>)".
SEE_URL = re.compile(
    r"\bsee\b\W{0,6}(?:\[[^\]]*\]\(\s*<?|<)?(https?://(?:<[^>\s]*>|[^\s)<>\]\"'`])+)", re.I
)


def markdown_files() -> list[Path]:
    """Every markdown file of the repository: tracked, or new and not ignored by git."""
    return [path for path in repository_files() if path.suffix == ".md"]


def repository_files() -> list[Path]:
    """The files git tracks or would track (outside node_modules), else a walk of the tree."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=REPO,
            capture_output=True,
            check=True,
        ).stdout
        names = sorted({name for name in out.decode().split("\0") if name})
    except (OSError, subprocess.CalledProcessError):
        names = []
        for root, dirs, files in os.walk(REPO):
            dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS and not d.startswith(".")]
            rel = Path(root).relative_to(REPO)
            names += [str(rel / name) for name in files]
    return [
        REPO / name
        for name in names
        if not name.startswith("node_modules")
        and not name.startswith(".venv")
        and (REPO / name).is_file()
    ]


def prose_lines(text: str) -> Iterator[tuple[int, str]]:
    """The lines of a markdown text outside fenced code blocks, with their 1-based numbers."""
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        opening = FENCE.match(line)
        if fence is None:
            if opening:
                fence = opening.group(1)
                continue
            yield number, line
        elif opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence):
            fence = None


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading's text (links and emphasis rendered as their text)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of a markdown file's headings (GitHub's, with -1, -2 for repeats)."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    text = path.read_text(encoding="utf-8")
    for _, line in prose_lines(text):
        match = HEADING.match(line)
        if not match:
            continue
        anchor = github_anchor(match.group(2))
        count = seen.get(anchor, 0)
        seen[anchor] = count + 1
        found.add(anchor if count == 0 else f"{anchor}-{count}")
    found |= set(re.findall(r"<a\s+(?:id|name)=\"([^\"]+)\"", text))
    return found


def links(text: str) -> Iterator[tuple[int, str]]:
    """Every link and image target of a markdown text, outside code, with its line number."""
    for number, line in prose_lines(text):
        prose = CODE_SPAN.sub("", line)
        for match in INLINE_LINK.finditer(prose):
            yield number, match.group(1).strip("<>")
        definition = REFERENCE_DEFINITION.match(prose)
        if definition:
            yield number, definition.group(1).strip("<>")
        for match in HTML_LINK.finditer(prose):
            yield number, match.group(1)


def is_outside(target: str) -> bool:
    """Whether a link target is an address outside the repository (not a placeholder)."""
    parts = urlsplit(target)
    if not parts.scheme:
        return False
    if parts.scheme not in ("http", "https"):
        return True
    return not PLACEHOLDER_HOSTS.match(parts.netloc)


def broken_links(path: Path, anchors_of=anchors) -> list[str]:
    """What is wrong with the links of one markdown file (an empty list when nothing is)."""
    problems = []
    text = path.read_text(encoding="utf-8")
    where = path.relative_to(REPO) if path.is_relative_to(REPO) else path
    for number, target in links(text):
        if not target or target.startswith("mailto:"):
            continue
        if urlsplit(target).scheme:
            if is_outside(target):
                problems.append(f"{where}:{number}: a link outside the repository: {target}")
            continue
        file_part, _, anchor = target.partition("#")
        destination = (path.parent / unquote(file_part)).resolve() if file_part else path
        if file_part:
            if not destination.is_relative_to(REPO) and path.is_relative_to(REPO):
                problems.append(f"{where}:{number}: leaves the repository: {target}")
                continue
            if not destination.exists():
                problems.append(f"{where}:{number}: no such file: {target}")
                continue
        if anchor and destination.suffix == ".md" and anchor not in anchors_of(destination):
            problems.append(f"{where}:{number}: no heading #{anchor} in {destination.name}")
    return problems


def outside_references(path: Path) -> list[str]:
    """Places where a file says "see <an outside address>"."""
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return []
    where = path.relative_to(REPO) if path.is_relative_to(REPO) else path
    return [
        f"{where}:{text.count(chr(10), 0, match.start()) + 1}: {match.group(0)}"
        for match in SEE_URL.finditer(text)
        if is_outside(match.group(1))
    ]


# -- the repository ------------------------------------------------------------------------------


def test_the_markdown_is_found() -> None:
    names = {path.relative_to(REPO).as_posix() for path in markdown_files()}
    assert {"README.md", "CONTRIBUTING.md", "CHANGELOG.md", "docs/index.md"} <= names
    assert "docs/developers/contract.md" in names
    assert not any(name.startswith(("node_modules/", ".venv")) for name in names)


def test_every_link_of_the_markdown_resolves_inside_the_repository() -> None:
    cache: dict[Path, set[str]] = {}

    def cached(path: Path) -> set[str]:
        if path not in cache:
            cache[path] = anchors(path)
        return cache[path]

    problems = [problem for path in markdown_files() for problem in broken_links(path, cached)]
    assert not problems, "broken links:\n" + "\n".join(problems)


def test_no_file_sends_the_reader_outside_for_the_project_s_behaviour() -> None:
    # This file holds examples of what the check finds, to test the check itself.
    files = [path for path in repository_files() if path != Path(__file__).resolve()]
    found = [hit for path in files for hit in outside_references(path)]
    assert not found, "say it in the repository instead:\n" + "\n".join(found)


def test_the_readme_is_short_and_shows_the_lab() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200
    images = [target for _, target in links(readme) if target.endswith(".png")]
    assert images and all((REPO / image).is_file() for image in images)


def test_every_setting_is_in_the_configuration_page() -> None:
    page = CONFIGURATION.read_text(encoding="utf-8")
    missing = [name for name in XcshSettings.class_traits(config=True) if f"`{name}`" not in page]
    assert not missing, f"settings missing from {CONFIGURATION.relative_to(REPO)}: {missing}"


# -- the checker itself, on markdown made here ---------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text(
        "# Page\n\n## The python tool — `POST /api/xcsh/python`\n\n## Again\n\n## Again\n\n"
        "```bash\n# not a heading\n```\n",
        encoding="utf-8",
    )
    (tmp_path / "image.png").write_bytes(b"\x89PNG")
    return tmp_path


def write(tree: Path, text: str) -> Path:
    path = tree / "README.md"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_checker_accepts_good_links(tree: Path) -> None:
    path = write(
        tree,
        "[a](docs/page.md) [b](docs/page.md#the-python-tool--post-apixcshpython) "
        "[c](docs/page.md#again-1) ![d](image.png) [e](#top)\n\n# Top\n\n"
        "[f]: docs/page.md#again\n"
        "`[code](missing.md)`\n\n```\n[fenced](missing.md)\n```\n"
        "[g](http://127.0.0.1:8888/lab) [h](https://hub.example.org/hub/token)\n",
    )
    assert broken_links(path) == []


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[a](docs/missing.md)", "no such file"),
        ("![a](missing.png)", "no such file"),
        ("[a](docs/page.md#not-a-heading)", "no heading #not-a-heading"),
        ("[a](docs/page.md#not-a-heading-1)", "no heading"),
        ("[a](#nowhere)", "no heading #nowhere"),
        ("[a]: docs/gone.md", "no such file"),
        ('<img src="gone.png">', "no such file"),
        ("[a](https://pypi.org/project/x/)", "a link outside the repository"),
    ],
)
def test_the_checker_finds_a_broken_link(tree: Path, text: str, problem: str) -> None:
    problems = broken_links(write(tree, text + "\n"))
    assert len(problems) == 1 and problem in problems[0], problems


def test_a_heading_in_a_code_block_is_no_anchor(tree: Path) -> None:
    assert "not-a-heading" not in anchors(tree / "docs" / "page.md")
    assert {"page", "again", "again-1"} <= anchors(tree / "docs" / "page.md")


@pytest.mark.parametrize(
    ("text", "outside"),
    [
        ("# see https://jupyter-server.readthedocs.io/en/latest/ for the rules", True),
        ("See [the docs](https://example.io/docs).", True),
        ("(see: <https://github.com/x/y#readme>)", True),
        ("see http://127.0.0.1:8888/api/xcsh/mcp", False),
        ("see https://<hub>/hub/token", False),
        ("see docs/developers/contract.md §4", False),
    ],
)
def test_see_an_outside_address_is_found(tmp_path: Path, text: str, outside: bool) -> None:
    path = tmp_path / "module.py"
    path.write_text(text + "\n", encoding="utf-8")
    assert bool(outside_references(path)) is outside
