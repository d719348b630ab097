/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import type { INotebookCallEvent, INotebookChangeEvent } from './events';

// Which notebook calls can be undone: the review undoes them (review/undorequest.ts), the
// activity panel offers their Keep and Undo; both ask here.

/**
 * A change of a notebook call: the call itself, or one change of a batch.
 */
type Change = INotebookChangeEvent | INotebookCallEvent;

/**
 * The actions whose finished calls can be undone.
 */
const UNDOABLE = new Set(['edit', 'insert', 'delete', 'move']);

/**
 * Whether a call can be undone: a successful change that
 * changed something.
 */
export function canUndo(event: INotebookCallEvent): boolean {
  if (event.status !== 'ok') {
    return false;
  }
  if (event.changes !== null) {
    return event.action === 'batch' && event.changes.some(changedSomething);
  }
  return changedSomething(event);
}

/**
 * Whether a change changed the notebook (a move to where the cell was did
 * not): an undo has something to undo.
 */
export function changedSomething(change: Change): boolean {
  if (!UNDOABLE.has(change.action) || change.cellIndex === null) {
    return false;
  }
  return !(change.action === 'move' && change.fromIndex === change.cellIndex);
}
