"""The notary's signature of a parsed notebook, and its trust kept across the tool's saves.

A trusted notebook stays trusted when the tool saves it (``jupyter trust`` semantics,
:class:`NotebookTrust`). A notebook is trusted when the contents manager's notary knows the
signature of its content. Every edit changes that signature, and the tool saves notebook text as
a file (to keep every untouched byte), which skips the signing a notebook save does. So the tool
checks the signature before the change and, when the notebook was trusted, signs the changed
notebook — what ``jupyter trust`` would do — and never signs a notebook that was not trusted.
The signature is the notary's (``NotebookNotary.compute_signature``: an HMAC over every key and
value, keys sorted) of the notebook as nbformat reads it — transient fields stripped — computed
on the already parsed notebook: the HMAC digests the same bytes whether a source is a list of
lines or their joined text, so reading the file again with nbformat is not needed, and feeding
the digest a few joined strings instead of one piece at a time halves the cost on large
notebooks; the digest of one segment runs on another thread while the next one is walked.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from hmac import HMAC
from typing import Any

from nbformat import NotebookNode
from nbformat.sign import NotebookNotary

from jupyter_xcsh.memory import hand_over

#: Strings of the notebook walked before their bytes go to the digest thread (~2-4 MB).
SEGMENT_PIECES = 16384

#: One thread runs every HMAC update, in submission order (so each digest's parts in order).
_DIGESTER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="xcsh-signature")

#: Notebook metadata nbformat drops when it reads a notebook (``strip_transient``).
_TRANSIENT = ("orig_nbformat", "orig_nbformat_minor", "signature")


def _as_read(data: dict[str, Any]) -> NotebookNode | None:
    """The notebook as ``nbformat.reads`` sees it, sharing all but the changed containers."""
    metadata = data.get("metadata")
    cells = data.get("cells")
    if not isinstance(metadata, dict) or not isinstance(cells, list):
        return None
    if not isinstance(data.get("nbformat"), int):
        return None
    stripped_cells = []
    for cell in cells:
        meta = cell.get("metadata") if isinstance(cell, dict) else None
        if isinstance(meta, dict) and "trusted" in meta:
            cell = {**cell, "metadata": {k: v for k, v in meta.items() if k != "trusted"}}
        stripped_cells.append(cell)
    return NotebookNode(  # type: ignore[no-untyped-call]
        {
            **data,
            "metadata": {k: v for k, v in metadata.items() if k not in _TRANSIENT},
            "cells": stripped_cells,
        }
    )


def _pieces(value: Any, into: list[str]) -> None:
    """Collect what ``nbformat.sign.yield_everything`` yields, as strings, in the same order."""
    if isinstance(value, str):
        into.append(value)
    elif isinstance(value, dict):
        for key in sorted(value):
            into.append(key)
            _pieces(value[key], into)
    elif isinstance(value, list):
        if len(value) > LONG_LIST and set(map(type, value)) == {str}:
            into.extend(value)  # output lines: at C speed, not an iteration each
            return
        for item in value:
            if isinstance(item, str):
                into.append(item)
            else:
                _pieces(item, into)
    else:
        into.append(str(value))


#: A list longer than this is checked for holding only strings at once (``_pieces``).
LONG_LIST = 256
#: Most characters of the notebook encoded at once for its signature (``_encoded``).
FEED_CHARS = 4 << 20


def _encoded(pieces: list[str]) -> Iterator[bytes]:
    """``pieces`` joined and encoded, at most about ``FEED_CHARS`` characters at a time.

    Joining and encoding hold the GIL: a segment holding a cell with 50 MB of outputs (one
    long string, or half a million lines walked in one go) held it, and with it the event
    loop, for ~100 ms at once; even the sum of half a million lengths is 20-30 ms of one C
    call. So the pieces are taken ``SEGMENT_PIECES`` at a time, joined at C speed (a longer
    piece is cut), and what is joined is encoded once ``FEED_CHARS`` are reached. The digest of
    the bytes in order is the same.
    """
    run: list[str] = []
    size = 0
    for start in range(0, len(pieces), SEGMENT_PIECES):
        chunk = pieces[start : start + SEGMENT_PIECES]
        chars = sum(map(len, chunk))
        if chars <= FEED_CHARS:  # pieces of ordinary lengths: at once
            run.append("".join(chunk))
            size += chars
        else:
            for piece in chunk:
                for cut in range(0, len(piece), FEED_CHARS):
                    part = piece[cut : cut + FEED_CHARS] if len(piece) > FEED_CHARS else piece
                    run.append(part)
                    size += len(part)
                    if size >= FEED_CHARS:
                        yield "".join(run).encode("utf8")
                        run, size = [], 0
                        hand_over()
        if size >= FEED_CHARS:
            yield "".join(run).encode("utf8")
            run, size = [], 0
            hand_over()
    if run:
        yield "".join(run).encode("utf8")


def _hmac(notary: Any, notebook: NotebookNode) -> str:
    """``NotebookNotary.compute_signature``, fed with a few long strings.

    The cells are walked a segment at a time; each segment's bytes go to ``_DIGESTER``, whose
    thread runs the HMAC (which releases the GIL) while this thread walks the next segment.
    """
    digest = HMAC(notary.secret, digestmod=notary.digestmod)
    top = {k: v for k, v in notebook.items() if k != "metadata"}
    top["metadata"] = {k: v for k, v in notebook["metadata"].items() if k != "signature"}
    pieces: list[str] = []
    fed: list[Future[None]] = []

    def feed() -> None:
        for data in _encoded(pieces):
            fed.append(_DIGESTER.submit(digest.update, data))
        pieces.clear()

    try:
        for key in sorted(top):
            pieces.append(key)
            value = top[key]
            if not isinstance(value, list):
                _pieces(value, pieces)
                continue
            for item in value:  # the cells, cut into segments between two cells
                if isinstance(item, str):
                    pieces.append(item)
                else:
                    _pieces(item, pieces)
                if len(pieces) >= SEGMENT_PIECES:
                    feed()
        feed()
    finally:
        for done in fed:  # one worker runs them in order: all of them before the digest is read
            done.result()
    return digest.hexdigest()


class NotebookTrust:
    """Check and renew notebook signatures with a contents manager's notary.

    ``signature`` is CPU work (run it off the event loop); ``is_trusted`` and ``sign`` touch
    the notary's database, which belongs to the event loop's thread.
    """

    def __init__(self, contents_manager: Any) -> None:
        self.notary = getattr(contents_manager, "notary", None)

    def signature(self, data: dict[str, Any]) -> str | None:
        """The notary's signature of a parsed notebook; None when there is no notary or notebook."""
        if self.notary is None:
            return None
        notebook = _as_read(data)
        if notebook is None or notebook.nbformat < 3:
            return None
        try:
            if type(self.notary).compute_signature is NotebookNotary.compute_signature:
                return _hmac(self.notary, notebook)
            return str(self.notary.compute_signature(notebook))  # a notary of its own kind
        except Exception:  # not JSON-like data: such a notebook cannot have been signed
            return None

    def state(self) -> Any:
        """A token that differs whenever the notary's store may have changed; None if unknown.

        For nbformat's SQLite store: the changes made through its connection and SQLite's
        ``data_version`` (which changes when another connection — another process's ``jupyter
        trust`` — commits). A notebook found not trusted stays so while the token is equal and
        the notebook unchanged, so its signature need not be computed again (``store.py``).
        """
        store = getattr(self.notary, "store", None)
        db = getattr(store, "db", None)
        if not isinstance(db, sqlite3.Connection):
            return None
        try:
            (version,) = db.execute("PRAGMA data_version").fetchone()
        except sqlite3.Error:
            return None
        return (id(store), id(db), db.total_changes, version)

    def is_trusted(self, signature: str | None) -> bool:
        """Whether the notary has signed a notebook with this signature."""
        if self.notary is None or signature is None:
            return False
        return bool(self.notary.store.check_signature(signature, self.notary.algorithm))

    def sign(self, signature: str | None) -> None:
        """Record a signature as trusted, as ``jupyter trust`` does."""
        if self.notary is not None and signature is not None:
            self.notary.store.store_signature(signature, self.notary.algorithm)
