/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * How a reviewed change is undone, behind one interface so that ways can be chained: first an
 * undo inside a collaboration room (`POST /api/xcsh/notebook/undo`, which keeps what the person
 * typed after the agent), and when no room holds the call, the guarded undo: a notebook tool
 * call built from the change's event that the server (and the open notebook) refuse when
 * someone changed the cell since.
 */

import type { ServerConnection } from '@jupyterlab/services';
import type { TranslationBundle } from '@jupyterlab/translation';

import type { INotebookCell } from '../client';
import type { INotebookCallEvent, INotebookChangeEvent } from '../core/events';
import {
  type IOpenCell,
  parseCellArtifact,
  refusalMessage,
  undoRequest,
  undoUnavailable,
  staleInOpenNotebook
} from './undorequest';
import { XcshResponseError } from '../request';
import type { IXcshClient } from '../tokens';
import { UNTRANSLATED } from '../translation';
import { undoInRoom } from './room';

/**
 * What to undo: a call, or only its change to one cell.
 */
export interface IUndoTarget {
  /** The notebook's path. */
  path: string;
  /** The agent call. */
  callId: string;
  /** The cell; `null` for every change of the call. */
  cellId: string | null;
  /** The call's event, reduced to that cell's changes when `cellId` is given. */
  event: INotebookCallEvent;
}

/**
 * How an undo went.
 */
export type UndoOutcome =
  /** Undone; `by` is the call that undid it, when there was one. */
  | { state: 'done'; by: string | null }
  /**
   * Refused: someone changed the cell since (nothing was changed); `detail`: the server's
   * own words, when it refused.
   */
  | { state: 'refused'; message: string; detail?: string }
  /** It could not be done (a network error, an event without what an undo needs). */
  | { state: 'failed'; message: string }
  /** This way cannot undo the change: try the next one. */
  | { state: 'fallback' };

/**
 * One way of undoing an agent's change.
 */
export interface IUndoer {
  /** Undo a change, or say why not (or that another way must). */
  undo(target: IUndoTarget): Promise<UndoOutcome>;
}

/**
 * Try each way in order, until one does not fall back.
 */
export class ChainedUndoer implements IUndoer {
  /**
   * Chain ways of undoing, the preferred first.
   */
  constructor(private readonly undoers: readonly IUndoer[]) {}

  async undo(target: IUndoTarget): Promise<UndoOutcome> {
    for (const undoer of this.undoers) {
      const outcome = await undoer.undo(target);
      if (outcome.state !== 'fallback') {
        return outcome;
      }
    }
    return { state: 'fallback' };
  }
}

/**
 * Undo inside a collaboration room, through `POST /api/xcsh/notebook/undo`; falls back when no
 * room holds the call (404, reason `not-held`), or when the server has no such endpoint.
 *
 * Only for a notebook the lab has open in a room (`inRoom`): without one no room can hold the
 * call, and asking would only be answered 404 (a failed request in the console and the server's
 * log at each undo); the guarded undo is then the way, at once.
 */
export class RoomUndoer implements IUndoer {
  /**
   * Use the server of `settings`; `inRoom` says whether the lab has the notebook open in a
   * collaboration room.
   */
  constructor(
    private readonly settings: ServerConnection.ISettings,
    private readonly trans: TranslationBundle = UNTRANSLATED,
    private readonly inRoom: (path: string) => boolean = () => true
  ) {}

  async undo(target: IUndoTarget): Promise<UndoOutcome> {
    if (!this.inRoom(target.path)) {
      return { state: 'fallback' };
    }
    return roomUndo(target, this.settings, this.trans);
  }
}

/**
 * Ask the server to undo an agent call (or its change to one cell) inside the collaboration
 * room that holds it; `fallback` when none does (404).
 */
export async function roomUndo(
  target: IUndoTarget,
  settings: ServerConnection.ISettings,
  trans: TranslationBundle = UNTRANSLATED
): Promise<UndoOutcome> {
  try {
    const outcome = await undoInRoom(
      target.path,
      target.callId,
      target.cellId,
      settings
    );
    switch (outcome.kind) {
      case 'undone':
        // Undone inside the room: no notebook tool call of its own.
        return { state: 'done', by: null };
      case 'not-held':
        return { state: 'fallback' };
      case 'already-undone':
        return {
          state: 'refused',
          message: trans.__('Not undone: %1', outcome.message)
        };
    }
  } catch (error) {
    if (error instanceof XcshResponseError) {
      const status = error.response.status;
      if (status === 404 || status === 405) {
        // A change the room cannot take back alone (cell-not-changed), or a server without
        // the endpoint: the guarded undo can.
        return { state: 'fallback' };
      }
      if (status === 409) {
        return {
          state: 'refused',
          message: trans.__('Not undone: %1', error.message)
        };
      }
    }
    return failed(error, trans);
  }
}

/**
 * The guarded undo: undo a change by a notebook tool call built from its event, refused when
 * someone changed the cell since (in the open notebook, or on the server).
 */
export class GuardedUndoer implements IUndoer {
  /**
   * Undo through `client`; `openCells` gives the cells of an open notebook (`null` when it is
   * not open).
   */
  constructor(
    private readonly client: Pick<IXcshClient, 'notebook' | 'getArtifact'>,
    private readonly openCells: (path: string) => IOpenCell[] | null,
    private readonly trans: TranslationBundle = UNTRANSLATED,
    private readonly followed: (callId: string) => Promise<void> = () =>
      Promise.resolve()
  ) {}

  async undo(target: IUndoTarget): Promise<UndoOutcome> {
    const trans = this.trans;
    const event = target.event;
    try {
      const unavailable = undoUnavailable(event, trans);
      if (unavailable !== null) {
        return {
          state: 'failed',
          message: trans.__('Cannot undo: %1', unavailable)
        };
      }
      const open = this.openCells(event.path);
      const stale =
        open === null ? null : staleInOpenNotebook(event, open, trans);
      if (stale !== null) {
        return {
          state: 'refused',
          message: trans.__(
            'Not undone: %1 Keep the change, or undo your own edit first.',
            stale
          )
        };
      }
      const previous =
        event.changes !== null
          ? await Promise.all(event.changes.map(c => this._cellBefore(c)))
          : await this._cellBefore(event);
      const result = await this.client.notebook(undoRequest(event, previous));
      if (open !== null) {
        // The next undo (of an earlier call on the same cell, in an undo of a turn) checks the
        // open notebook: it must show this one first, or the check sees the cell as changed.
        await this.followed(result.callId);
      }
      return { state: 'done', by: result.callId };
    } catch (error) {
      if (error instanceof XcshResponseError && error.response.status === 409) {
        return {
          state: 'refused',
          message: refusalMessage(error.reason, trans),
          detail: error.message
        };
      }
      return failed(error, trans);
    }
  }

  private _cellBefore(
    change: INotebookCallEvent | INotebookChangeEvent
  ): Promise<INotebookCell | null> {
    return cellBefore(change, this.client, this.trans);
  }
}

function failed(error: unknown, trans: TranslationBundle): UndoOutcome {
  const message = error instanceof Error ? error.message : String(error);
  return { state: 'failed', message: trans.__('Undo failed: %1', message) };
}

/**
 * The whole cell an edit or a delete changed, as it was before (from the event, or from the
 * artifact it was kept in when too large for it); `null` for the other actions.
 */
export async function cellBefore(
  change: INotebookCallEvent | INotebookChangeEvent,
  client: Pick<IXcshClient, 'getArtifact'>,
  trans: TranslationBundle
): Promise<INotebookCell | null> {
  if (change.action !== 'edit' && change.action !== 'delete') {
    return null;
  }
  if (change.previousCell !== null) {
    return change.previousCell as unknown as INotebookCell;
  }
  const text = await client.getArtifact(change.previousCellArtifactId ?? '');
  const cell = parseCellArtifact(text);
  if (cell === null) {
    throw new Error(trans.__('The kept cell could not be read.'));
  }
  return cell;
}
