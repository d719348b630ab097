"""Convert the HTML of a rich display to basic, readable markdown (stdlib only)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

__all__ = ["html_to_markdown"]

_BLOCKS = {"p", "div", "section", "article", "header", "footer", "blockquote", "figure", "hr"}
_SKIP = {"script", "style", "head", "title", "template"}
_SPACES = re.compile(r"[ \t\r\n\f\v]+")


class _MarkdownWriter(HTMLParser):
    """Walk the HTML once, writing markdown for the handful of elements an agent needs."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.skip = 0
        self.pre = 0
        self.lists: list[list[int]] = []  # per open list: [is_ordered, next_number]
        self.links: list[str | None] = []
        self.table: list[list[str]] | None = None
        self.row: list[str] | None = None
        self.cell: list[str] | None = None

    # -- writing -------------------------------------------------------------------------
    def write(self, text: str) -> None:
        if self.cell is not None:
            self.cell.append(text)
        else:
            self.out.append(text)

    def newline(self, count: int = 1) -> None:
        if self.cell is not None:
            self.cell.append(" ")
            return
        text = "".join(self.out)
        stripped = text.rstrip(" ")
        have = len(stripped) - len(stripped.rstrip("\n"))
        if not stripped:
            return
        self.out = [stripped + "\n" * max(0, count - have)]

    # -- parser callbacks ----------------------------------------------------------------
    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP:
            self.skip += 1
        elif self.skip:
            return
        elif tag in {"h1", "h2", "h3", "h4", "h5", "h6"}:
            self.newline(2)
            self.write("#" * int(tag[1]) + " ")
        elif tag in {"strong", "b"}:
            self.write("**")
        elif tag in {"em", "i"}:
            self.write("*")
        elif tag == "code" and not self.pre:
            self.write("`")
        elif tag == "pre":
            self.newline(2)
            self.write("```\n")
            self.pre += 1
        elif tag == "a":
            self.links.append(dict(attrs).get("href"))
            self.write("[")
        elif tag in {"ul", "ol"}:
            self.newline(1 if self.lists else 2)
            self.lists.append([tag == "ol", 1])
        elif tag == "li":
            self.newline()
            indent = "  " * max(0, len(self.lists) - 1)
            if self.lists and self.lists[-1][0]:
                self.write(f"{indent}{self.lists[-1][1]}. ")
                self.lists[-1][1] += 1
            else:
                self.write(f"{indent}- ")
        elif tag == "br":
            self.newline()
        elif tag == "table":
            self.newline(2)
            self.table = []
        elif tag == "tr" and self.table is not None:
            self.row = []
        elif tag in {"td", "th"} and self.row is not None:
            self.cell = []
        elif tag in _BLOCKS:
            self.newline(2)
            if tag == "hr":
                self.write("---")
                self.newline(2)
            elif tag == "blockquote":
                self.write("> ")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self.skip = max(0, self.skip - 1)
        elif self.skip:
            return
        elif tag in {"h1", "h2", "h3", "h4", "h5", "h6"}:
            self.newline(2)
        elif tag in {"strong", "b"}:
            self.write("**")
        elif tag in {"em", "i"}:
            self.write("*")
        elif tag == "code" and not self.pre:
            self.write("`")
        elif tag == "pre" and self.pre:
            self.pre -= 1
            self.newline()
            self.write("```")
            self.newline(2)
        elif tag == "a" and self.links:
            href = self.links.pop()
            self.write(f"]({href})" if href else "]")
        elif tag in {"ul", "ol"} and self.lists:
            self.lists.pop()
            self.newline(1 if self.lists else 2)
        elif tag in {"td", "th"} and self.row is not None and self.cell is not None:
            self.row.append(_SPACES.sub(" ", "".join(self.cell)).strip().replace("|", "\\|"))
            self.cell = None
        elif tag == "tr" and self.table is not None and self.row is not None:
            self.table.append(self.row)
            self.row = None
        elif tag == "table" and self.table is not None:
            rows, self.table = self.table, None
            self.write(_format_table(rows))
            self.newline(2)
        elif tag in _BLOCKS:
            self.newline(2)

    def handle_data(self, data: str) -> None:
        if self.skip:
            return
        if self.pre:
            self.write(data)
            return
        text = _SPACES.sub(" ", data)
        if self.cell is None and (not self.out or self.out[-1].endswith("\n")):
            text = text.lstrip(" ")
        if text:
            self.write(text)


def _format_table(rows: list[list[str]]) -> str:
    rows = [r for r in rows if r]
    if not rows:
        return ""
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + " --- |" * width]
    lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    return "\n".join(lines)


def html_to_markdown(html: str) -> str:
    """Return basic markdown for ``html``: headings, emphasis, links, lists, code and tables."""
    writer = _MarkdownWriter()
    writer.feed(html)
    writer.close()
    text = "".join(writer.out)
    lines = [line.rstrip() for line in text.split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip("\n") + "\n"
