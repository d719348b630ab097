/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * How a finished notebook change is undone without a room (pure: no I/O): the guarded undo.
 *
 * An undo is an ordinary notebook tool call built from the change's event alone: an edit is
 * undone by writing the whole cell as it was, an insert by deleting the cell, a delete by
 * inserting the whole cell as it was at its index, a move by moving the cell back. Every undo
 * that touches a cell the call left carries `expected_source_hash` of the state the call left
 * (docs/developers/contract.md §3.2), so the server refuses (409) when someone changed that cell since, and nothing is
 * overwritten. The undo is the person's change, never listed as an agent's.
 * A batch is undone by one batch: each change's undo, last change first, so that every
 * change finds the notebook as it left it, and the server refuses the whole undo (nothing
 * applied) when any of its cells changed since.
 */

import type { TranslationBundle } from '@jupyterlab/translation';

import type {
  INotebookBatchRequest,
  INotebookCell,
  INotebookChange,
  INotebookRequest
} from '../client';
import { UNTRANSLATED } from '../translation';
import type { INotebookCallEvent, INotebookChangeEvent } from '../core/events';
import { Limits } from '../core/events';
import { canUndo, changedSomething } from '../core/undoable';

/**
 * The stale-edit preconditions of docs/developers/contract.md §3.2 an undo sends.
 */
export interface IPreconditions {
  /** The addressed cell must still have this source hash. */
  expected_source_hash?: string;
}

/**
 * The notebook tool request of an undo: one change's, or a batch's.
 */
export type UndoRequest =
  (INotebookRequest & IPreconditions) | INotebookBatchRequest;

/**
 * What an undo needs of one change: a single change's event, or one change
 * of a batch's.
 */
type Change = INotebookChangeEvent | INotebookCallEvent;

/**
 * Why a change cannot be undone after all, or
 * `null` when it can.
 */
export function undoUnavailable(
  event: INotebookCallEvent,
  trans: TranslationBundle = UNTRANSLATED
): string | null {
  if (!canUndo(event)) {
    return trans.__('Only a finished change of a notebook can be undone.');
  }
  if (event.changes !== null) {
    for (const [k, change] of event.changes.entries()) {
      const reason = isNoOp(change)
        ? null
        : changedSomething(change)
          ? changeUnavailable(change, trans)
          : trans.__('The server did not say which cell it changed.');
      if (reason !== null) {
        return trans.__('Change %1: %2', k + 1, reason);
      }
    }
    return null;
  }
  return changeUnavailable(event, trans);
}

/**
 * A move that left its cell where it was: a batch's undo skips it.
 */
function isNoOp(change: Change): boolean {
  return (
    change.action === 'move' &&
    change.cellIndex !== null &&
    change.fromIndex === change.cellIndex
  );
}

function changeUnavailable(
  event: Change,
  trans: TranslationBundle
): string | null {
  if (event.action === 'move' && event.fromIndex === null) {
    return trans.__(
      'The server did not say where the cell was before it moved.'
    );
  }
  if (
    (event.action === 'edit' || event.action === 'delete') &&
    event.previousCell === null &&
    event.previousCellArtifactId === null
  ) {
    return trans.__(
      'The server did not keep the cell as it was before this call.'
    );
  }
  if (event.action !== 'delete' && event.sourceHash === null) {
    return trans.__(
      'The server did not report the source hash this call left, so an undo could overwrite a later change.'
    );
  }
  return null;
}

/**
 * The notebook tool request that undoes a change, or a batch.
 *
 * @param event - The change, for which {@link undoUnavailable} is null.
 * @param previousCell - edit and delete: the cell as it was before the call
 *   (the event's, or the one fetched from its artifact); for a batch, one
 *   per change (`null` for an insert or a move).
 */
export function undoRequest(
  event: INotebookCallEvent,
  previousCell: INotebookCell | null | readonly (INotebookCell | null)[]
): UndoRequest {
  if (event.changes !== null) {
    const cells = Array.isArray(previousCell) ? previousCell : [];
    const changes: INotebookChange[] = [];
    event.changes.forEach((change, k) => {
      if (!isNoOp(change)) {
        const undo: INotebookChange = changeUndo(
          change,
          event.path,
          cells[k] ?? null
        );
        delete undo.notebook_path; // the batch's
        changes.unshift(undo);
      }
    });
    return { notebook_path: event.path, changes };
  }
  return changeUndo(
    event,
    event.path,
    Array.isArray(previousCell) ? null : (previousCell as INotebookCell | null)
  );
}

/**
 * The request that undoes one change of the notebook at `path`.
 */
function changeUndo(
  event: Change,
  path: string,
  previousCell: INotebookCell | null
): INotebookRequest & IPreconditions & INotebookChange {
  const where =
    event.cellId !== null
      ? { cell_id: event.cellId }
      : { cell_index: event.cellIndex ?? 0 };
  const precondition: IPreconditions =
    event.sourceHash !== null ? { expected_source_hash: event.sourceHash } : {};
  switch (event.action) {
    case 'edit':
      return {
        action: 'edit',
        notebook_path: path,
        ...where,
        cell: required(previousCell),
        ...precondition
      };
    case 'insert':
      return {
        action: 'delete',
        notebook_path: path,
        ...where,
        ...precondition
      };
    case 'delete':
      return {
        action: 'insert',
        notebook_path: path,
        cell_index: event.cellIndex ?? 0,
        cell: required(previousCell)
      };
    case 'move':
      return {
        action: 'move',
        notebook_path: path,
        ...where,
        to_index: event.fromIndex ?? 0,
        ...precondition
      };
  }
  throw new Error(`A ${event.action} call cannot be undone`);
}

function required(cell: INotebookCell | null): INotebookCell {
  if (cell === null) {
    throw new Error('The cell as it was before the call is unknown');
  }
  return cell;
}

/**
 * Read the cell-as-it-was kept in an artifact; `null` when the text is not a
 * cell.
 */
export function parseCellArtifact(text: string): INotebookCell | null {
  try {
    const value = JSON.parse(text) as unknown;
    if (
      typeof value === 'object' &&
      value !== null &&
      !Array.isArray(value) &&
      typeof (value as Record<string, unknown>).cell_type === 'string'
    ) {
      return value as INotebookCell;
    }
  } catch {
    // Not JSON: not a cell.
  }
  return null;
}

/**
 * A cell of a notebook open in the lab, as the check before an undo sees it.
 */
export interface IOpenCell {
  id: string;
  source: string;
}

/**
 * Why an undo would overwrite work in a notebook open in the lab (a clause
 * that follows "Not undone: "), or `null`.
 *
 * Without a collaborative document the server checks the saved file, which
 * does not have the person's unsaved typing; this check looks at the open
 * notebook itself, so that typing is never overwritten either.
 *
 * @param event - The change to undo.
 * @param cells - The cells of the open notebook, in order.
 */
export function staleInOpenNotebook(
  event: INotebookCallEvent,
  cells: readonly IOpenCell[],
  trans: TranslationBundle = UNTRANSLATED
): string | null {
  if (event.changes === null) {
    return staleChange(event, cells, trans);
  }
  // Only the last change of each cell says what the batch left in it; a
  // batch addressed by index is left to the server's check.
  const seen = new Set<string>();
  for (let k = event.changes.length - 1; k >= 0; k--) {
    const change = event.changes[k];
    const id = change.action === 'delete' ? deletedId(change) : change.cellId;
    if (id === null || seen.has(id) || isNoOp(change)) {
      continue;
    }
    seen.add(id);
    const stale = staleChange(change, cells, trans);
    if (stale !== null) {
      return stale;
    }
  }
  return null;
}

/**
 * The id of the cell a delete removed (kept in the cell as it was, or said
 * by the event when that cell went to an artifact), or `null`.
 */
function deletedId(change: Change): string | null {
  const id = change.previousCell?.id;
  return typeof id === 'string' ? id : change.cellId;
}

function staleChange(
  event: Change,
  cells: readonly IOpenCell[],
  trans: TranslationBundle
): string | null {
  if (event.action === 'delete') {
    const id = deletedId(event);
    if (id !== null && cells.some(cell => cell.id === id)) {
      return trans.__('the cell is in the open notebook again.');
    }
    return null;
  }
  const index =
    event.cellId !== null
      ? cells.findIndex(cell => cell.id === event.cellId)
      : (event.cellIndex ?? -1);
  const cell = index >= 0 ? cells[index] : undefined;
  if (cell === undefined) {
    return trans.__(
      'the cell was deleted in the open notebook after this call.'
    );
  }
  // A cut source (the server sends at most 64 KiB) can only be compared in part.
  const left = event.source;
  if (left === null) {
    return null;
  }
  const changed =
    left.length >= Limits.SOURCE_CHARS
      ? !cell.source.startsWith(left)
      : cell.source !== left;
  return changed
    ? trans.__('the cell was changed in the open notebook after this call.')
    : null;
}

/**
 * What the panel says when the server refused an undo (409), by reason.
 */
export function refusalMessage(
  reason: string | null,
  trans: TranslationBundle = UNTRANSLATED
): string {
  switch (reason) {
    case 'stale_cell':
      return trans.__('Not undone: the cell was changed after this call.');
    case 'stale_notebook':
      return trans.__('Not undone: the notebook was changed after this call.');
    case 'cell_exists':
      return trans.__('Not undone: the cell is in the notebook again.');
    default:
      return trans.__('Not undone: the notebook is not as this call left it.');
  }
}
