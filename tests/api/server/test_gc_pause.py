"""The cyclic garbage collector off while an edit and a read parse and sign (issue 14).

The pause itself is tested in tests/unit/notebook/storage/test_gcpause.py.
"""

from __future__ import annotations

import gc
import json

from jupyter_xcsh.notebook.storage import gcpause
from jupyter_xcsh.notebook.storage.document import NotebookDocument
from jupyter_xcsh.notebook.storage.trust import NotebookTrust
from tests.support.notebooks import jupyter_text, sample_notebook


async def test_an_edit_and_a_read_parse_and_sign_with_the_collector_off(
    notebook_tool, jp_root_dir, monkeypatch, collector_on
):
    (jp_root_dir / "pause.ipynb").write_text(jupyter_text(sample_notebook()), encoding="utf-8")
    (jp_root_dir / "read.ipynb").write_text(jupyter_text(sample_notebook()), encoding="utf-8")
    seen: list[tuple[str, bool]] = []
    parse, signature = NotebookDocument.parse.__func__, NotebookTrust.signature

    def recording_parse(cls, text):
        seen.append(("parse", gc.isenabled()))
        return parse(cls, text)

    def recording_signature(self, data):
        seen.append(("signature", gc.isenabled()))
        return signature(self, data)

    monkeypatch.setattr(NotebookDocument, "parse", classmethod(recording_parse))
    monkeypatch.setattr(NotebookTrust, "signature", recording_signature)
    body = {"notebook_path": "pause.ipynb", "action": "edit", "cell_index": 0, "content": "x = 1"}
    status, result = await notebook_tool(body)
    assert status == 200, result
    # (A read of pause.ipynb now would reuse the notebook the edit wrote: no parse.)
    status, result = await notebook_tool({"notebook_path": "read.ipynb", "action": "read"})
    assert status == 200, result
    assert seen == [("parse", False), ("signature", False), ("parse", False)]
    assert gc.isenabled()
    assert gcpause._PAUSE._holders == 0
    saved = json.loads((jp_root_dir / "pause.ipynb").read_text())
    assert "".join(saved["cells"][0]["source"]) == "x = 1"
