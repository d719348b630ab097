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
 * - nothing is reloaded: the view does not jump, the active cell and the cursor stay, and the
 *   lab's "edited since it ran" prompt marks survive;
 * - unsaved typing elsewhere in the notebook survives, and the person's next save is not seen
 *   as a conflict: it writes both their change and the agent's;
 * - a notebook with no unsaved changes stays clean: the file now holds what it shows;
 * - a revert writes a whole cell (outputs, metadata, attachments), which the event does not
 *   carry: the cell is then taken from the saved file;
 * - when the operation cannot be placed (the person deleted that cell), nothing is
 *   acknowledged: their next save meets JupyterLab's own conflict dialog, so neither side is
 *   overwritten silently; a notebook with no unsaved changes is then loaded from the file;
 * - a batch (several changes in one call, docs/developers/contract.md §2.11) is followed as one step: its changes are
 *   applied in order in one synchronous step, or the notebook is loaded from the file once;
 * - a collaborative document (jupyter-collaboration) is left to the collaboration server, which
 *   reloads the shared document from disk itself; applying the operation here as well would
 *   duplicate cells.
 */

import type { Contents, Event } from '@jupyterlab/services';

import { NotebookEventSync } from './notebooksync';
import type { ILiveSync } from './tokens';
import {
  parseEmission,
  type INotebookCallEvent,
  type INotebookChangeEvent
} from './core/events';
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
  /**
   * The event has only part of the new source, or none of it (cut to 64 KiB,
   * or left out of a large batch's event): take the cell from the saved file.
   */
  partial: boolean;
}

/**
 * The cell changes of one call on one notebook: a single change, or a
 * batch's in order.
 */
export interface ICellChanges {
  path: string;
  /** The call that made them. */
  callId: string;
  changes: ICellChangeEvent[];
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
  if (event === null || event.kind !== 'notebook' || event.status !== 'ok') {
    return null;
  }
  return cellChange(event, event.path, event.lastModified);
}

/**
 * Read the successful cell changes out of a raw event emission: one for a
 * single change, a batch's in order (docs/developers/contract.md §2.11); `null` for anything else, or
 * for a batch with a change that does not say where it was made.
 */
export function parseCellChanges(raw: unknown): ICellChangeEvent[] | null {
  const event = parseEmission(raw);
  if (event === null || event.kind !== 'notebook' || event.status !== 'ok') {
    return null;
  }
  if (event.changes === null) {
    const change = cellChange(event, event.path, event.lastModified);
    return change === null ? null : [change];
  }
  const changes = event.changes.map(c =>
    cellChange(c, event.path, event.lastModified)
  );
  if (changes.length === 0 || changes.some(c => c === null)) {
    return null;
  }
  return changes as ICellChangeEvent[];
}

function cellChange(
  event: INotebookCallEvent | INotebookChangeEvent,
  path: string,
  lastModified: string | null
): ICellChangeEvent | null {
  if (!CHANGE_ACTIONS.has(event.action) || event.cellIndex === null) {
    return null;
  }
  return {
    action: event.action as ICellChangeEvent['action'],
    path,
    cellIndex: event.cellIndex,
    fromIndex: event.fromIndex,
    cellId: event.cellId,
    cellType: CELL_TYPES.has(event.cellType ?? '')
      ? (event.cellType as ICellChangeEvent['cellType'])
      : 'code',
    source: event.source ?? '',
    partial: event.source === null || event.source.length >= MAX_EVENT_SOURCE,
    lastModified,
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
 * Apply the changes of one call (a batch's, in order) to a notebook's shared
 * model, each with the whole cell it wrote (or `null`), in one synchronous
 * step: no save of the person's falls between them. Each change finds the
 * cells as the previous one left them (the model's cell list follows its
 * shared document at the end of each transaction, so they are not wrapped in
 * one). Returns the first change that cannot be placed (the rest are then not
 * applied), or `null`.
 */
export function applyChanges(
  notebook: ISharedNotebook,
  steps: readonly [ICellChangeEvent, WholeCell | null][]
): ICellChangeEvent | null {
  for (const [change, whole] of steps) {
    if (!applyChange(notebook, change, whole)) {
      return change;
    }
  }
  return null;
}

/**
 * Tell an open document that the file's new modification time (and hash, when `saved` has the
 * key) are known, so its next save is not taken for a conflict with the agent's save. Whether
 * it could.
 *
 * `DocumentRegistry.Context` exposes no setter for its contents model; the private field is
 * the one `Context` itself compares in `_maybeSave` (JupyterLab 4). It is written only when
 * it holds what the public `contentsModel` (a copy of it) reads, checked on every call: on
 * another context nothing is changed, and the person's next save may ask about the file
 * changed on disk, as JupyterLab does for any change made outside it.
 */
export function acknowledgeSave(
  context: NotebookPanel['context'],
  saved: Partial<Contents.IModel>
): boolean {
  const current = context.contentsModel;
  const internal = context as unknown as {
    _contentsModel?: Partial<Contents.IModel> | null;
  };
  const held = internal._contentsModel;
  if (
    current === null ||
    typeof held !== 'object' ||
    held === null ||
    held.path !== current.path ||
    held.last_modified !== current.last_modified
  ) {
    return false;
  }
  internal._contentsModel = {
    ...current,
    last_modified: saved.last_modified ?? current.last_modified,
    // A time without a hash: drop the old hash, or the document would compare against it.
    hash: 'hash' in saved ? saved.hash : current.hash,
    hash_algorithm:
      'hash' in saved ? saved.hash_algorithm : current.hash_algorithm
  };
  return true;
}

/**
 * Keeps open notebooks in step with agent edits.
 */
export class LiveSync
  extends NotebookEventSync<ICellChanges>
  implements ILiveSync
{
  private _followed = new Set<string>();
  private _waiting = new Map<string, Set<() => void>>();

  protected parse(emission: Event.Emission): ICellChanges | null {
    const changes = parseCellChanges(emission);
    const callId = parseEmission(emission)?.callId ?? '';
    return changes === null ? null : { path: changes[0].path, callId, changes };
  }

  /**
   * Resolves once the open notebooks have followed the call `callId` (a notebook tool call the
   * lab made itself, such as an undo, whose next step needs the open notebook as the call left
   * it); after `timeout` ms at the latest (an event that never comes must not block).
   */
  whenFollowed(callId: string, timeout = 10_000): Promise<void> {
    if (this._followed.has(callId)) {
      return Promise.resolve();
    }
    return new Promise(resolve => {
      const waiting = this._waiting.get(callId) ?? new Set<() => void>();
      this._waiting.set(callId, waiting);
      const done = () => {
        clearTimeout(timer);
        waiting.delete(done);
        if (waiting.size === 0 && this._waiting.get(callId) === waiting) {
          this._waiting.delete(callId);
        }
        resolve();
      };
      const timer = setTimeout(done, timeout);
      waiting.add(done);
    });
  }

  protected followed(event: ICellChanges): void {
    this._followed.add(event.callId);
    if (this._followed.size > LiveSync.MAX_FOLLOWED) {
      const oldest = this._followed.values().next().value;
      if (oldest !== undefined) {
        this._followed.delete(oldest);
      }
    }
    for (const done of [...(this._waiting.get(event.callId) ?? [])]) {
      done();
    }
  }

  protected readonly failure = 'could not show an agent edit';

  protected async follow(
    panel: NotebookPanel,
    { changes }: ICellChanges
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
    const steps: [ICellChangeEvent, WholeCell | null][] = [];
    for (const change of changes) {
      steps.push(await this._withSavedCell(context.path, change));
    }
    // Know the file's new state *before* touching the model, so that applying the edit and
    // acknowledging the agent's save are one synchronous step: a save by the person cannot
    // fall between them. The event's time is the file's; without a hash the document compares
    // times, and its next own save brings the hash back.
    const lastModified = changes[0].lastModified;
    const saved: Partial<Contents.IModel> =
      lastModified !== null
        ? { last_modified: lastModified, hash: undefined }
        : await this.app.serviceManager.contents.get(context.path, {
            content: false,
            hash: true
          });
    const model = context.model;
    const wasDirty = model.dirty;
    const failed = applyChanges(model.sharedModel, steps);
    if (failed === null) {
      acknowledgeSave(context, saved);
      if (!wasDirty) {
        model.dirty = false; // the file holds exactly this change
      }
      return;
    }
    if (!wasDirty) {
      // Nothing of the person's to lose: show the file as saved.
      model.dirty = false;
      if (await this._reload(panel)) {
        return;
      }
    }
    const change = failed;
    // Not acknowledged: the person's next save meets JupyterLab's conflict dialog.
    console.warn(
      `jupyter-xcsh: agent ${change.action} of cell ${change.cellIndex} in ` +
        `${change.path} has no matching cell here; saving will ask what to keep`
    );
  }

  /**
   * A change ready to apply: a cut source completed from the saved file, and
   * the whole cell a revert wrote (the event carries neither).
   */
  private async _withSavedCell(
    path: string,
    change: ICellChangeEvent
  ): Promise<[ICellChangeEvent, WholeCell | null]> {
    if (
      !(change.partial || change.restored) ||
      (change.action !== 'edit' && change.action !== 'insert')
    ) {
      return [change, null];
    }
    const whole = await this._savedCell(path, change);
    if (whole !== null) {
      change = { ...change, source: sourceText(whole.source), partial: false };
    }
    // Only the source was cut: apply the change itself.
    return [change, change.restored ? whole : null];
  }

  /**
   * Load the saved file into a notebook with no unsaved changes; `false` if the person started
   * typing while it was fetched (their keystrokes win).
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
 * The namespace for {@link LiveSync} statics.
 */
export namespace LiveSync {
  /** How many followed calls are remembered (an undo waits on its own, at once). */
  export const MAX_FOLLOWED = 200;
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
