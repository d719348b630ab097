"""The repository explains itself: no citation of a document outside it, none that dangles.

The contract lives in ``docs/developers/contract.md`` (and ``jupyter_xcsh/rest-api.yml``). Code,
tests and docs cite it as ``docs/developers/contract.md §<n>`` or ``§<n>.<m>``; each such citation
must name a heading that exists, and each link to ``contract.md#<anchor>`` an anchor GitHub
renders for a heading.
No tracked file may cite the brief the project started from, which is not in the repository.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CONTRACT = REPO / "docs" / "developers" / "contract.md"

#: Folders never searched when git cannot list the tracked files (a source tree without .git).
UNTRACKED_DIRS = {
    ".git",
    ".cache",
    "node_modules",
    "lib",
    "dist",
    "build",
    "test-artifacts",
    "workspace",
    "__pycache__",
}

#: Ways of citing the outside brief (spelt in pieces, so that this file does not cite it).
OUTSIDE = [("SPEC", " §"), ("SPEC", ".md"), ("..", "/shared")]

#: ``docs/developers/contract.md §2``, ``§2.11``, ``§2, §3``, ``§2-§4``: each section cited.
CITATION = re.compile(r"docs/developers/contract\.md((?:[ ,\-]+§\d+(?:\.\d+)?)+)")
SECTION = re.compile(r"§(\d+(?:\.\d+)?)")
HEADING = re.compile(r"^(#{2,3}) (\d+(?:\.\d+)?)\.? ", re.MULTILINE)
LINK = re.compile(r"contract\.md#([\w\-]+)|\]\(#([\w\-]+)\)")


def tracked_files() -> list[Path]:
    """The files git tracks (outside node_modules), else every file of the source tree."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True
        ).stdout
        names = [name for name in out.decode().split("\0") if name]
    except (OSError, subprocess.CalledProcessError):
        names = []
        for root, dirs, files in os.walk(REPO):
            dirs[:] = [d for d in dirs if d not in UNTRACKED_DIRS and not d.startswith(".venv")]
            rel = Path(root).relative_to(REPO)
            if rel == Path("jupyter_xcsh/labextension"):
                dirs[:] = []
                continue
            names += [str(rel / name) for name in files]
    return [
        REPO / name
        for name in names
        if not name.startswith("node_modules") and (REPO / name).is_file()
    ]


def line_of(text: str, offset: int) -> int:
    """The 1-based line number of ``offset`` in ``text``."""
    return text.count("\n", 0, offset) + 1


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a markdown heading's text."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def contract_headings() -> tuple[set[str], set[str]]:
    """The numbered sections of the contract (``"2"``, ``"2.11"``) and every heading's anchor."""
    text = CONTRACT.read_text(encoding="utf-8")
    sections = {m.group(2) for m in HEADING.finditer(text)}
    anchors = {
        github_anchor(line.lstrip("#")) for line in text.splitlines() if re.match(r"#{1,6} ", line)
    }
    return sections, anchors


@pytest.fixture(scope="module")
def files() -> dict[Path, str]:
    """Every tracked file's text (binary files decoded leniently)."""
    return {path: path.read_bytes().decode("utf-8", "replace") for path in tracked_files()}


def test_the_files_are_listed(files: dict[Path, str]) -> None:
    assert CONTRACT in files or CONTRACT.is_file()
    assert REPO / "jupyter_xcsh" / "rest-api.yml" in files
    assert len(files) > 100


def test_no_file_cites_a_document_outside_the_repository(files: dict[Path, str]) -> None:
    found = [
        f"{path.relative_to(REPO)}:{line_of(text, text.index(a + b))}: {a + b}"
        for path, text in files.items()
        for a, b in OUTSIDE
        if a + b in text
    ]
    assert not found, "cite the contract or rest-api.yml instead:\n" + "\n".join(found)


def test_the_contract_numbers_its_sections_in_order() -> None:
    sections, _ = contract_headings()
    tops = sorted(int(s) for s in sections if "." not in s)
    assert tops == list(range(1, len(tops) + 1)), tops
    for section in sections:
        if "." in section:
            assert section.split(".")[0] in sections, f"§{section} outside a numbered section"


def test_every_citation_of_the_contract_names_a_section_it_has(files: dict[Path, str]) -> None:
    sections, _ = contract_headings()
    cited: dict[str, list[str]] = {}
    for path, text in files.items():
        for match in CITATION.finditer(text):
            line = line_of(text, match.start())
            for number in SECTION.findall(match.group(1)):
                cited.setdefault(number, []).append(f"{path.relative_to(REPO)}:{line}")
    assert len(cited) > 10, "the code cites the contract"
    missing = {number: where for number, where in cited.items() if number not in sections}
    assert not missing, f"cited sections docs/developers/contract.md does not have: {missing}"


def test_every_link_into_the_contract_names_a_heading(files: dict[Path, str]) -> None:
    _, anchors = contract_headings()
    broken = []
    for path, text in files.items():
        own = path == CONTRACT
        for match in LINK.finditer(text):
            anchor = match.group(1) or (match.group(2) if own else None)
            if anchor is not None and anchor not in anchors:
                broken.append(f"{path.relative_to(REPO)}: #{anchor}")
    assert not broken, "links to headings the contract does not have:\n" + "\n".join(broken)


def test_no_file_cites_the_contract_at_its_old_place(files: dict[Path, str]) -> None:
    # The contract moved under docs/developers/ (issue 42); a citation of the old path would
    # escape the checks above. Spelt in pieces, so that this file does not cite it.
    old = "docs/" + "contract.md"
    found = [
        f"{path.relative_to(REPO)}:{line_of(text, match.start())}"
        for path, text in files.items()
        for match in re.finditer(rf"(?<![\w/]){re.escape(old)}", text)
    ]
    assert not found, "cite docs/developers/contract.md instead:\n" + "\n".join(found)
