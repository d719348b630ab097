/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * Agent edits appear in notebooks that are open in the lab.
 *
 * The notebook tool saves through the server's contents manager, so the file on disk changes
 * under an open notebook. Left alone, the person's next save meets JupyterLab's "File Changed"
 * conflict dialog (and either loses the agent's edit or their own typing). Instead, on each
 * notebook event from the server, the *same cell operation* is applied to the open notebook's
 * model, addressed by cell id (index only for pre-4.5 notebooks), and the document's known
 * modification time is set to the file's new one, in one synchronous step:
 *
 * - unsaved typing elsewhere in the notebook survives (nothing is reloaded, the cursor stays),
 *   and the person's next save is not seen as a conflict: it writes both their change and the
 *   agent's;
 * - a notebook with no unsaved changes is instead loaded from the saved file, exactly (and
 *   stays clean) — unless the person starts typing while the file is fetched, in which case
 *   their keystrokes win and the cell operation is applied as above;
 * - a revert writes a whole cell (outputs, metadata, attachments), which the event does not
 *   carry: the cell is then taken from the saved file;
 * - when the operation cannot be placed (the person deleted that cell), nothing is
 *   acknowledged: their next save meets JupyterLab's own conflict dialog, so neither side is
 *   overwritten silently;
 * - a collaborative document (jupyter-collaboration) is left to the collaboration server, which
 *   reloads the shared document from disk itself; applying the operation here as well would
 *   duplicate cells.
 */

import type { Contents, Event } from '@jupyterlab/services';

import { NotebookEventSync } from './notebooksync';
import { parseEmission } from './panel/events';
import type { INotebookModel, NotebookPanel } from '@jupyterlab/notebook';

type ISharedNotebook = INotebookModel['sharedModel'];

/**
 * Longest source an event carries; a source this long may have been cut.
 */
export const MAX_EVENT_SOURCE = 64 * 1024;

/**
 * A finished, successful cell change reported by the server.
 */
export interface ICellChangeEvent {
  action: 'edit' | 'insert' | 'delete' | 'move';
  path: string;
  cellIndex: number;
  fromIndex: number | null;
  cellId: string | null;
  cellType: 'code' | 'markdown' | 'raw';
  source: string;
  lastModified: string | null;
  /** The call wrote a whole cell (a revert): follow it from the saved file. */
  restored: boolean;
}

/**
 * A whole nbformat cell, as a notebook stores it.
 */
export type WholeCell = Record<string, unknown>;

/**
 * What to do with an open notebook for one event.
 */
export type SyncPlan = 'apply' | 'skip';

const CHANGE_ACTIONS = new Set(['edit', 'insert', 'delete', 'move']);
const CELL_TYPES = new Set(['code', 'markdown', 'raw']);

/**
 * Read a successful cell change out of a raw event emission; `null` for anything else.
 */
export function parseCellChange(raw: unknown): ICellChangeEvent | null {
  const event = parseEmission(raw);
  if (
    event === null ||
    event.kind !== 'notebook' ||
    event.status !== 'ok' ||
    !CHANGE_ACTIONS.has(event.action) ||
    event.cellIndex === null
  ) {
    return null;
  }
  return {
    action: event.action as ICellChangeEvent['action'],
    path: event.path,
    cellIndex: event.cellIndex,
    fromIndex: event.fromIndex,
    cellId: event.cellId,
    cellType: CELL_TYPES.has(event.cellType ?? '')
      ? (event.cellType as ICellChangeEvent['cellType'])
      : 'code',
    source: event.source ?? '',
    lastModified: event.lastModified,
    restored: event.restored
  };
}

/**
 * Decide how an open notebook follows an agent change.
 */
export function planSync(state: { collaborative: boolean }): SyncPlan {
  return state.collaborative ? 'skip' : 'apply';
}

function findCell(
  notebook: ISharedNotebook,
  cellId: string | null,
  index: number
): number {
  if (cellId !== null) {
    const found = notebook.cells.findIndex(cell => cell.getId() === cellId);
    if (found >= 0) {
      return found;
    }
  }
  return index < notebook.cells.length ? index : -1;
}

function newCell(change: ICellChangeEvent, metadata: Record<string, unknown>) {
  const cell: Record<string, unknown> = {
    cell_type: change.cellType,
    source: change.source,
    metadata
  };
  if (change.cellId !== null) {
    cell.id = change.cellId;
  }
  if (change.cellType === 'code') {
    cell.outputs = [];
    cell.execution_count = null;
  }
  return cell as any;
}

/**
 * Apply an agent's cell change to a notebook's shared model; `false` when it cannot be placed.
 *
 * @param whole - For a change that wrote a whole cell (a revert): that cell as saved, put in
 *   place of the edited cell or inserted as it is.
 */
export function applyChange(
  notebook: ISharedNotebook,
  change: ICellChangeEvent,
  whole: WholeCell | null = null
): boolean {
  switch (change.action) {
    case 'insert': {
      if (
        change.cellId !== null &&
        findCell(notebook, change.cellId, -1) >= 0
      ) {
        return true; // already there (the event was seen twice)
      }
      const at = Math.min(change.cellIndex, notebook.cells.length);
      notebook.insertCell(at, (whole ?? newCell(change, {})) as any);
      return true;
    }
    case 'edit': {
      const at = findCell(notebook, change.cellId, change.cellIndex);
      if (at < 0) {
        return false;
      }
      const cell = notebook.cells[at];
      if (whole !== null) {
        notebook.transact(() => {
          notebook.deleteCell(at);
          notebook.insertCell(at, whole as any);
        });
        return true;
      }
      if (cell.cell_type === change.cellType) {
        cell.setSource(change.source);
        return true;
      }
      // A type conversion: the same cell (id, metadata) as the new type.
      const metadata = { ...(cell.getMetadata() as Record<string, unknown>) };
      notebook.transact(() => {
        notebook.deleteCell(at);
        notebook.insertCell(at, newCell(change, metadata));
      });
      return true;
    }
    case 'delete': {
      const at = findCell(notebook, change.cellId, change.cellIndex);
      if (at < 0) {
        return false;
      }
      notebook.deleteCell(at);
      return true;
    }
    case 'move': {
      const from = findCell(notebook, change.cellId, change.fromIndex ?? -1);
      if (from < 0) {
        return false;
      }
      notebook.moveCell(
        from,
        Math.min(change.cellIndex, notebook.cells.length - 1)
      );
      return true;
    }
  }
  return false;
}

/**
 * Tell an open document that the file's new modification time (and hash, when `saved` has the
 * key) are known, so its next save is not taken for a conflict with the agent's save.
 *
 * `DocumentRegistry.Context` exposes no setter for its contents model; the private field is
 * the one `Context` itself compares in `_maybeSave` (JupyterLab 4).
 */
export function acknowledgeSave(
  context: NotebookPanel['context'],
  saved: Partial<Contents.IModel>
): void {
  const current = context.contentsModel;
  if (current === null) {
    return;
  }
  (context as unknown as { _contentsModel: unknown })._contentsModel = {
    ...current,
    last_modified: saved.last_modified ?? current.last_modified,
    // A time without a hash: drop the old hash, or the document would compare against it.
    hash: 'hash' in saved ? saved.hash : current.hash,
    hash_algorithm:
      'hash' in saved ? saved.hash_algorithm : current.hash_algorithm
  };
}

/**
 * Keeps open notebooks in step with agent edits.
 */
export class LiveSync extends NotebookEventSync<ICellChangeEvent> {
  protected parse(emission: Event.Emission): ICellChangeEvent | null {
    return parseCellChange(emission);
  }

  protected readonly failure = 'could not show an agent edit';

  protected async follow(
    panel: NotebookPanel,
    change: ICellChangeEvent
  ): Promise<void> {
    const { context } = panel;
    if (context.isDisposed || !context.model) {
      return;
    }
    if (
      planSync({ collaborative: context.model.collaborative === true }) ===
      'skip'
    ) {
      return;
    }
    // The event's source may be cut, and a revert's outputs are not in it: take the saved cell.
    let whole: WholeCell | null = null;
    if (
      (change.source.length >= MAX_EVENT_SOURCE || change.restored) &&
      (change.action === 'edit' || change.action === 'insert')
    ) {
      whole = await this._savedCell(context.path, change);
      if (whole !== null) {
        change = { ...change, source: sourceText(whole.source) };
      }
      if (!change.restored) {
        whole = null; // only the source was cut: apply the change itself
      }
    }
    // Know the file's new state *before* touching the model, so that applying the edit and
    // acknowledging the agent's save are one synchronous step: a save by the person cannot
    // fall between them. The event's time is the file's; without a hash the document compares
    // times, and its next own save brings the hash back.
    const saved: Partial<Contents.IModel> =
      change.lastModified !== null
        ? { last_modified: change.lastModified, hash: undefined }
        : await this.app.serviceManager.contents.get(context.path, {
            content: false,
            hash: true
          });
    const model = context.model;
    if (!model.dirty && (await this._reload(panel))) {
      return;
    }
    if (applyChange(model.sharedModel, change, whole)) {
      acknowledgeSave(context, saved);
      return;
    }
    // Not acknowledged: the person's next save meets JupyterLab's conflict dialog.
    console.warn(
      `jupyter-xcsh: agent ${change.action} of cell ${change.cellIndex} in ` +
        `${change.path} has no matching cell here; saving will ask what to keep`
    );
  }

  /**
   * Load the saved file into a notebook with no unsaved changes; `false` if the person started
   * typing while it was fetched (their keystrokes win, and the cell operation is applied).
   */
  private async _reload(panel: NotebookPanel): Promise<boolean> {
    const { context } = panel;
    const saved = await this.app.serviceManager.contents.get(context.path, {
      content: true,
      type: 'notebook',
      hash: true
    });
    const model = context.model;
    if (context.isDisposed || model.dirty) {
      return false;
    }
    // As Context.revert does, but without a second fetch between the check and the load.
    model.fromJSON(saved.content);
    acknowledgeSave(context, saved);
    return true;
  }

  /**
   * The changed cell as saved (the event's copy of its source was cut, or it was written whole).
   */
  private async _savedCell(
    path: string,
    change: ICellChangeEvent
  ): Promise<WholeCell | null> {
    const model = await this.app.serviceManager.contents.get(path, {
      content: true,
      type: 'notebook'
    });
    const cells = (model.content?.cells ?? []) as WholeCell[];
    return (
      cells.find(c => change.cellId !== null && c.id === change.cellId) ??
      cells[change.cellIndex] ??
      null
    );
  }
}

/**
 * A cell source as one string (nbformat also stores it as a list of lines).
 */
function sourceText(source: unknown): string {
  if (Array.isArray(source)) {
    return source.join('');
  }
  return typeof source === 'string' ? source : '';
}
