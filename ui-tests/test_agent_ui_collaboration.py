"""The agent UI of docs/developers/contract.md §10.2 with jupyter-collaboration installed: each open
notebook is a shared document (``-m collaboration``; ``scripts/check.sh`` runs these in its
second environment).

The same tests as without it: the status bar item, the cell marks and every undo from the
activity panel must behave the same when the open notebook is a collaborative document, which
the lab's livesync leaves to the collaboration server.
"""

from __future__ import annotations

import importlib.util

import pytest
from test_agent_at_a_glance import (
    test_a_mark_is_nothing_to_click_and_inserted_cells_are_marked,
    test_an_agent_edit_marks_the_cell_until_the_person_types_in_it,
    test_status_bar_counts_a_running_call_and_opens_the_panel_on_it,
)
from test_notebook_batches import (
    test_a_batch_is_one_call_listing_its_changes_and_undone_as_one,
)
from test_panel_undo import (
    test_an_undo_after_the_person_typed_in_the_cell,
    test_an_undo_of_a_cell_changed_since_is_refused_by_the_server,
    test_undo_a_delete_restores_the_cell_with_its_outputs,
    test_undo_a_move_restores_the_file_and_the_open_notebook,
    test_undo_a_type_change_brings_the_outputs_back,
    test_undo_an_edit_restores_the_file_and_the_open_notebook,
    test_undo_an_insert_restores_the_file_and_the_open_notebook,
)

pytestmark = pytest.mark.collaboration

__all__ = [
    "test_a_batch_is_one_call_listing_its_changes_and_undone_as_one",
    "test_a_mark_is_nothing_to_click_and_inserted_cells_are_marked",
    "test_an_agent_edit_marks_the_cell_until_the_person_types_in_it",
    "test_an_undo_after_the_person_typed_in_the_cell",
    "test_an_undo_of_a_cell_changed_since_is_refused_by_the_server",
    "test_status_bar_counts_a_running_call_and_opens_the_panel_on_it",
    "test_undo_a_delete_restores_the_cell_with_its_outputs",
    "test_undo_a_move_restores_the_file_and_the_open_notebook",
    "test_undo_a_type_change_brings_the_outputs_back",
    "test_undo_an_edit_restores_the_file_and_the_open_notebook",
    "test_undo_an_insert_restores_the_file_and_the_open_notebook",
]


@pytest.fixture(autouse=True)
def _collaborative_notebooks(lab_page):
    """Fail fast in an environment without jupyter-collaboration; check notebooks are shared."""
    assert importlib.util.find_spec("jupyter_collaboration") is not None, (
        "run these tests in an environment with jupyter-collaboration"
    )
    yield
    page = lab_page.page
    collaborative = page.evaluate(
        """() => {
          const widget = window.jupyterapp.shell.currentWidget;
          const model = widget && widget.context && widget.context.model;
          return model ? model.collaborative === true : null;
        }"""
    )
    assert collaborative in (True, None)  # None: the test left no notebook in front
